-- SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
-- The index of clients pushed lately (user/sync/redis_index.c).
-- KEYS: the index and its clock. ARGV: from (score), offset, limit (0:
-- read nothing), keep (µs; 0: no trim), then client ids to add. Reads
-- before adding, so a node does not read back what it adds. Returns
-- {now, {id, score, id, score, ...}} with now the score of this call,
-- strictly above every earlier call's (the store's clock may step back).
if redis.replicate_commands then redis.replicate_commands() end
local idx, clock = KEYS[1], KEYS[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', clock) or '0') or 0
if now <= last then now = last + 1 end
local nows = string.format('%.0f', now)
redis.call('SET', clock, nows)
local keep = tonumber(ARGV[4])
if keep > 0 then
  redis.call('ZREMRANGEBYSCORE', idx, '-inf',
             '(' .. string.format('%.0f', now - keep))
end
local got = {}
if tonumber(ARGV[3]) > 0 then
  got = redis.call('ZRANGEBYSCORE', idx, ARGV[1], '+inf', 'WITHSCORES',
                   'LIMIT', ARGV[2], ARGV[3])
end
for i = 5, #ARGV do
  redis.call('ZADD', idx, nows, ARGV[i])
end
if keep > 0 then
  local ms = math.floor(keep / 1000) + 1
  local mss = string.format('%.0f', ms)
  if redis.call('PTTL', idx) < ms then redis.call('PEXPIRE', idx, mss) end
  redis.call('PEXPIRE', clock, mss)
end
return {now, got}
