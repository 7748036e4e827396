-- SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
-- A sync round's push and read (user/sync/redis_round.c), atomic per call.
-- KEYS: client hashes. ARGV: node, slices to keep, then for each key:
-- expiry (ms), n, and n pairs (slice start, units) to add. Returns for
-- each key the other nodes' units per slice start, flat: {s, u, s, u}.
-- A key with n = 0 is only read: its expiry is left alone.
local node = ARGV[1]
local keep = tonumber(ARGV[2])
local a = 3
local out = {}
for i = 1, #KEYS do
  local k = KEYS[i]
  local ttl = tonumber(ARGV[a])
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  for j = 1, n do
    redis.call('HINCRBY', k, ARGV[a] .. ':' .. node, ARGV[a + 1])
    a = a + 2
  end
  local f = redis.call('HGETALL', k)
  local sum, starts = {}, {}
  for j = 1, #f, 2 do
    local s, who = string.match(f[j], '^(%d+):(%d+)$')
    local v = tonumber(f[j + 1])
    if s and v then
      if sum[s] == nil then
        sum[s] = 0
        starts[#starts + 1] = tonumber(s)
      end
      if who ~= node then sum[s] = sum[s] + v end
    end
  end
  if n > 0 then
    if #starts > keep then
      table.sort(starts, function(x, y) return x > y end)
      local oldest = starts[keep]
      for j = 1, #f, 2 do
        local s = string.match(f[j], '^(%d+):')
        if s == nil or tonumber(s) < oldest then
          redis.call('HDEL', k, f[j])
          if s then sum[s] = nil end
        end
      end
    end
    redis.call('PEXPIRE', k, ttl)
  end
  local r = {}
  for s, v in pairs(sum) do
    if v > 0 then
      r[#r + 1] = tonumber(s)
      r[#r + 1] = v
    end
  end
  out[i] = r
end
return out
