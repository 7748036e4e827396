-- SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
-- One /v1/check of a token-bucket rule, decided in the store (layout:
-- central): GCRA, as include/sl_algo.h decides it in the kernel, over one
-- theoretical arrival time (TAT) per client, in µs of the store's clock.
-- Every node runs this same script on the same key, and Redis runs one
-- script at a time, so no two checks anywhere can take the same token.
--
-- KEYS[1]  the client's TAT (a string; absent = a full bucket)
-- ARGV[1]  N >= 1: take N tokens if N are free (all or none); 0: only
--          read
-- ARGV[2]  capacity (tokens)
-- ARGV[3]  refill interval per token, µs (whole: the caller rounds)
-- Returns {allowed, used, remaining, retry_after_ms, reset_ms}:
--   used       tokens in use after the check, ceil((TAT - now) / T)
--   retry      until a request of N (1 for a read) fits (0: it fits now)
--   reset      until the next token comes back (0: the bucket is full)
-- The key expires when the bucket is full again, so an idle client
-- leaves nothing behind (and a missing key means exactly that).

if redis.replicate_commands then redis.replicate_commands() end
local units = tonumber(ARGV[1])
local cap = tonumber(ARGV[2])
local T = tonumber(ARGV[3])
if not units or units < 0 or units % 1 ~= 0 or not cap or not T or
   cap < 1 or T < 1 then
  return redis.error_reply('ERR slicelimit check_bucket: bad arguments')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '') or now
if tat < now then tat = now end
-- the store's clock stepped back, or a bucket left by a larger
-- capacity: never more than a full bucket in use
if tat - now > cap * T then tat = now + cap * T end

local take = units > 0
if not take then units = 1 end
-- accept N while TAT - now <= (capacity - N) * T
local allowed = 0
if tat - now <= (cap - units) * T then
  allowed = 1
  if take then
    tat = tat + units * T
    redis.call('SET', KEYS[1], string.format('%.0f', tat),
               'PX', string.format('%.0f', math.ceil((tat - now) / 1000) + 1))
  end
end

local over = tat - now
local used = math.floor((over + T - 1) / T)
local remaining = cap - used
if remaining < 0 then remaining = 0 end
local retry = 0
if over > (cap - units) * T then
  retry = math.ceil((over - (cap - units) * T) / 1000)
end
local reset = 0
if used > 0 then reset = math.ceil((over - (used - 1) * T) / 1000) end
return {allowed, used, remaining, retry, reset}
