-- SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
-- One /v1/check of a rule that counts in a window (layout: central),
-- decided in the store: every node runs this same script on the same key,
-- and Redis runs one script at a time, so the fleet decides each client
-- as one node would. Time is the store's clock (ms; µs for log members),
-- so the nodes' clocks do not matter. Slices are aligned to that clock's
-- epoch (Unix time), not to the kernel's TAI.
--
-- KEYS[1]  the client's state for this algorithm
-- ARGV[1]  N >= 1: count a request of N units if it fits whole; 0: only
--          read
-- ARGV[2]  algorithm: sliding, sliding-plain, fixed, sliding-counter,
--          sliding-log
-- ARGV[3]  limit, ARGV[4] window (ms), ARGV[5] slice (ms)
-- Returns {allowed, used, remaining, retry_after_ms, reset_ms} with the
-- meaning of user/state/client_view.h: used and remaining after the check,
-- retry until a request of N (1 for a read) fits (0: it fits now), reset
-- until the count
-- next falls (0: nothing counted).
--
-- What each algorithm keeps, and its bound (the same decisions as
-- include/sl_algo.h makes for one node, with the fleet as that node):
--   sliding-log      sorted set of accept times: exact, one member per
--                    accept in the window (memory grows with the limit)
--   sliding          hash of 12 records (first accept, count, sequence),
--                    closed early at limit / 10 + 1: at most 1.1 x the
--                    limit in any window, never a false reject
--   sliding-plain    hash slice index -> count: the last N slices
--   sliding-counter  the same, and slice N + 1 back weighted
--   fixed            hash {w: window index, c: count}
-- Every key expires once nothing in it can count, so idle clients vanish.

if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local units = tonumber(ARGV[1])
local alg = ARGV[2]
local L, W, S = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if not units or units < 0 or units % 1 ~= 0 or
   not L or not W or not S or L < 1 or W < 1 or S < 1 or S > W then
  return redis.error_reply('ERR slicelimit check_sliding: bad arguments')
end

local take = units > 0
if not take then units = 1 end
-- the log keeps one member per accept: it counts requests
if alg == 'sliding-log' and units > 1 then
  return redis.error_reply('ERR slicelimit check_sliding: sliding-log counts requests')
end

local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(now_us / 1000)
local NEVER = math.huge

local function answer(allowed, used, retry, reset)
  local remaining = L - used
  if remaining < 0 then remaining = 0 end
  if retry < 0 then retry = 0 end
  if reset < 0 then reset = 0 end
  return {allowed, used, remaining, retry, reset}
end

-- ---- sliding-log: exact ----
if alg == 'sliding-log' then
  -- the window is (now - W, now]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.0f', now - W))
  local used = redis.call('ZCARD', key)
  local allowed = 0
  if used + 1 <= L then
    allowed = 1
    if take then
      -- one member per accept: the µs time, moved on if taken
      local m = now_us
      while redis.call('ZSCORE', key, string.format('%.0f', m)) do m = m + 1 end
      redis.call('ZADD', key, string.format('%.0f', now), string.format('%.0f', m))
      redis.call('PEXPIRE', key, string.format('%.0f', W + 1))
      used = used + 1
    end
  end
  local retry, reset = 0, 0
  if used > 0 then
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    reset = tonumber(first[2]) + W - now
  end
  if used + 1 > L then
    -- one fits once the (used - L + 1)th oldest accept has left
    local e = redis.call('ZRANGE', key, used - L, used - L, 'WITHSCORES')
    retry = tonumber(e[2]) + W - now
  end
  return answer(allowed, used, retry, reset)
end

-- ---- the rest keep a hash ----
local st = {}
local h = redis.call('HGETALL', key)
for i = 1, #h, 2 do st[h[i]] = tonumber(h[i + 1]) end

local tally, charge	-- tally(at[, n]) -> used, first time the count falls
			-- (the counter: first time n units fit)

if alg == 'fixed' then
  tally = function(at)
    local w, c = st.w, st.c or 0
    -- a window ahead of now: the clock stepped back; it still counts
    if not w or c == 0 or w < math.floor(at / W) then return 0, NEVER end
    return c, (w + 1) * W
  end
  charge = function()
    local w = math.floor(now / W)
    if not st.w or st.w < w then st.w, st.c = w, 0 end
    st.c = (st.c or 0) + units
    redis.call('HSET', key, 'w', string.format('%.0f', st.w), 'c', string.format('%.0f', st.c))
    redis.call('PEXPIRE', key, string.format('%.0f', (st.w + 1) * W - now + 1))
  end

elseif alg == 'sliding-plain' or alg == 'sliding-counter' then
  local n = math.ceil(W / S)
  if n > 64 then n = 64 end
  local slots = {}
  for f, v in pairs(st) do
    local d = tonumber(f)
    if d and v then slots[d] = v end
  end
  -- slices ago; a slice ahead of now (the clock stepped back) is now
  local function back(d, cur)
    if cur < d then return 0 end
    return cur - d
  end
  if alg == 'sliding-plain' then
    tally = function(at)
      local cur, used, exp = math.floor(at / S), 0, NEVER
      for d, c in pairs(slots) do
        local b = back(d, cur)
        if c > 0 and b < n then
          used = used + c
          exp = math.min(exp, (cur + n - b) * S)
        end
      end
      return used, exp
    end
  else
    -- estimate = full + oldest * (S - e) / S, e = time into this slice;
    -- used is its floor, so used + n <= L exactly when
    -- estimate < L - n + 1; the time returned is when n units fit (one
    -- unless the retry walk asks for more)
    tally = function(at, n_fit)
      local room = L - (n_fit or 1) + 1
      local cur, full, oldest = math.floor(at / S), 0, 0
      for d, c in pairs(slots) do
        local b = back(d, cur)
        if b < n then full = full + c elseif b == n then oldest = oldest + c end
      end
      local e = at % S
      local start = at - e
      local used = full + math.floor(oldest * (S - e) / S)
      if full == 0 and oldest == 0 then return 0, NEVER end
      if full >= room or oldest == 0 then return used, start + S end
      -- the first e' with oldest * (S - e') < (room - full) * S
      local need = math.ceil((room - full) * S / oldest)
      local e_min = 0
      if S + 1 > need then e_min = S + 1 - need end
      if e_min < S then return used, start + e_min end
      return used, start + S
    end
  end
  charge = function()
    local cur = math.floor(now / S)
    slots[cur] = (slots[cur] or 0) + units
    redis.call('HINCRBY', key, string.format('%.0f', cur), units)
    for d in pairs(slots) do
      if back(d, cur) > n then
        redis.call('HDEL', key, string.format('%.0f', d))
        slots[d] = nil
      end
    end
    -- the counter weighs the slice n back too: one slice more
    redis.call('PEXPIRE', key, string.format('%.0f', (cur + n + 1) * S - now + 1))
  end

elseif alg == 'sliding' then
  local R = 12				-- SL_RECORDS
  local function count(i) return st['c' .. i] or 0 end
  local function age(i, at)
    local a = at - (st['f' .. i] or at)
    if a < 0 then return 0 end	-- the clock stepped back: counts as now
    return a
  end
  local function live(i, at) return count(i) > 0 and age(i, at) < W end
  -- a record counts in full while its first accept is in (at - W, at]
  tally = function(at)
    local used, exp = 0, NEVER
    for i = 1, R do
      if live(i, at) then
        used = used + count(i)
        exp = math.min(exp, at + W - age(i, at))
      end
    end
    return used, exp
  end
  -- sl_sliding_charge with the fleet's accepts as the sequence
  charge = function(used)
    local cap = math.floor(L / (R - 2)) + 1
    local nlive, free = 0, nil
    for i = 1, R do
      if count(i) > 0 and not live(i, now) then st['c' .. i] = 0 end
      if count(i) > 0 then nlive = nlive + 1 elseif not free then free = i end
    end
    local seq = st.seq or 0
    local cur = st.cur
    if not cur or cur < 1 or cur > R or cur % 1 ~= 0 then cur = 1 end
    local open = false
    if count(cur) == 0 then
      open = true
    elseif seq - (st['s' .. cur] or 0) >= cap then
      open = true
    else
      -- a slice boundary closes the record too, while the records left
      -- cover the closes by count the rest of the limit may need
      local first = now - age(cur, now)
      local left = L - used - cap
      if left < 0 then left = 0 end
      local needed = math.ceil(left / cap)
      if math.floor(first / S) ~= math.floor(now / S) and
         nlive + 1 + needed <= R then
        open = true
      end
    end
    if open and (count(cur) == 0 or free) then
      if count(cur) > 0 then cur = free end
      st['f' .. cur], st['s' .. cur], st.cur = now, seq, cur
    end
    st['c' .. cur] = count(cur) + units
    st.seq = seq + units
    local args = {}
    for f, v in pairs(st) do
      args[#args + 1] = f
      args[#args + 1] = string.format('%.0f', v)
    end
    redis.call('HSET', key, unpack(args))
    -- every record's first accept is at most now
    redis.call('PEXPIRE', key, string.format('%.0f', W + 1))
  end

else
  return redis.error_reply('ERR slicelimit check_sliding: unknown algorithm')
end

local used, exp = tally(now)
local allowed = 0
if used + units <= L then
  allowed = 1
  if take then
    charge(used)
    used, exp = tally(now)
  end
end
local reset = 0
if exp ~= NEVER then reset = exp - now end
local retry = 0
if used + units > L then
  -- walk the times the count falls until the request fits
  local at = now
  local fits = false
  for _ = 1, 200 do
    local u, e = tally(at, units)
    if u + units <= L then fits = true break end
    if e == NEVER or e <= at then break end
    at = e
  end
  if not fits then at = now + W end
  retry = at - now
end
return answer(allowed, used, retry, reset)
