-- SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
-- wrk script of bench/bench_http.sh: the requests of one case, and one
-- machine-readable result line at the end.
--
-- Configured by the environment (wrk's own arguments reach only init(),
-- too late to decide whether request() exists):
--   HC_MODE   sl-get   GET  /v1/check?rule=RULE&key=KEY          (slicelimit)
--             sl-post  POST /v1/check {"rule":RULE,"key":KEY}    (slicelimit)
--             ngx-get  GET  HC_PATH?key=KEY                      (nginx)
--   HC_RULE   the slicelimit rule (default api)
--   HC_PATH   the nginx location (default /under)
--   HC_KEYS   how many keys (default 1). With 1 the request is built once
--             and wrk sends it as is (no Lua per request); with more, the
--             requests are built in init() and request() walks them, each
--             thread from its own offset, so every key is hit in turn.
--
-- done() prints
--   RESULT requests=N duration_us=N rps=X p50_us=N p99_us=N non2xx=N
--          connect=N read=N write=N timeout=N
-- where non2xx counts responses with a status >= 400 (wrk's "status"
-- errors): 0 for an under-limit case, all but the first per key over it.

local mode = os.getenv("HC_MODE") or "sl-get"
local rule = os.getenv("HC_RULE") or "api"
local path = os.getenv("HC_PATH") or "/under"
local nkeys = tonumber(os.getenv("HC_KEYS") or "1") or 1

local function key_name(k)
	return string.format("client-%05d", k)
end

-- method, path, headers, body of the request for key number k
local function build(k)
	local key = key_name(k)
	-- slicelimit's API over TCP wants its bearer token on every request
	local auth = os.getenv("HC_TOKEN")
	local h = auth and { ["Authorization"] = "Bearer " .. auth } or {}
	if mode == "sl-get" then
		return "GET", "/v1/check?rule=" .. rule .. "&key=" .. key, h, nil
	elseif mode == "sl-post" then
		h["Content-Type"] = "application/json"
		return "POST", "/v1/check", h,
		       '{"rule":"' .. rule .. '","key":"' .. key .. '"}'
	elseif mode == "ngx-get" then
		return "GET", path .. "?key=" .. key, {}, nil
	end
	error("HC_MODE must be sl-get, sl-post or ngx-get, not " .. mode)
end

local reqs = {}
local pos = 0

-- Threads are numbered as they are set up, so that each starts its walk
-- over the keys somewhere else.
local next_thread = 0
function setup(thread)
	thread:set("thread_no", next_thread)
	next_thread = next_thread + 1
end

function init(args)
	if nkeys <= 1 then
		-- static: wrk.request() formats this once per thread
		local m, p, h, b = build(1)
		wrk.method, wrk.path, wrk.body = m, p, b
		for name, value in pairs(h) do
			wrk.headers[name] = value
		end
		return
	end
	for k = 1, nkeys do
		local m, p, h, b = build(k)
		reqs[k] = wrk.format(m, p, h, b)
	end
	pos = ((thread_no or 0) * 7919) % nkeys
end

if nkeys > 1 then
	function request()
		pos = pos % nkeys + 1
		return reqs[pos]
	end
end

function done(summary, latency, requests)
	local e = summary.errors
	local secs = summary.duration / 1e6
	io.write(string.format(
		"RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d " ..
		"non2xx=%d connect=%d read=%d write=%d timeout=%d\n",
		summary.requests, summary.duration,
		secs > 0 and summary.requests / secs or 0,
		latency:percentile(50), latency:percentile(99),
		e.status, e.connect, e.read, e.write, e.timeout))
end
