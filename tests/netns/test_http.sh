#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The service, `slicelimit run --config FILE`, and its HTTP API, asked with
# curl inside the server namespace: the rate-limit headers and their
# numbers, 429 and deny_status, a real 3 s window running out, read-only
# lookups, IP keys shared with the kernel's state, bad requests, concurrent
# checks of one key, /metrics, SIGHUP with a good and a bad rule file, and
# SIGTERM. Then the shipped packaging/config.yaml and rules.yaml run under
# the systemd unit's capability set, enforcing on the veth.
#
# Usage: test_http.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl setpriv unshare
REPO=$(cd "$here/../.." && pwd)

API=http://127.0.0.1:8080	# in the server namespace: no clash with the host
SENT=$SL_TMP/sent		# "STATUS METHOD PATH" of every answer, for /metrics

cat >"$SL_TMP/rules.yaml" <<'EOF'
rules:
  - name: api
    limit: 5
    window: 60s
  - name: short
    limit: 2
    window: 3s
  - name: ip
    limit: 10
    window: 60s
    api_key_is_address: true
  - name: conc
    limit: 20
    window: 60s
    exempt: [10.1.0.0/16]
    api_key_is_address: true
  - name: tb
    algorithm: token-bucket
    limit: 6
    window: 6s
EOF
# SIGHUP: 'api' raised to 8, a rule 'added'
sed 's/limit: 5$/limit: 8/' "$SL_TMP/rules.yaml" >"$SL_TMP/rules2.yaml"
cat >>"$SL_TMP/rules2.yaml" <<'EOF'
  - name: added
    limit: 2
    window: 60s
EOF
# one bad field: the whole file must be refused on SIGHUP
sed 's/limit: 8$/limit: 0/' "$SL_TMP/rules2.yaml" >"$SL_TMP/invalid.yaml"
cp "$SL_TMP/rules.yaml" "$SL_TMP/running.yaml"
cat >"$SL_TMP/config.yaml" <<EOF
devices: []
rules: $SL_TMP/running.yaml
http:
  listen: 127.0.0.1:8080
  token_file: $SL_API_TOKEN_FILE
  connections_per_ip: 100  # the concurrent checks' bursts, from one address
  timeout: 2s              # idle connections: test_http_server_protocol
EOF

# ---- reading answers (headers, JSON, Prometheus text) with python ----

cat >"$SL_TMP/h.py" <<'EOF'
import json, sys

def headers(path):
    """the last header block curl -D wrote (after any 100 Continue)"""
    text = open(path, newline="").read().replace("\r\n", "\n")
    blocks = [b for b in text.split("\n\n") if b.strip()]
    h = {}
    for line in blocks[-1].split("\n")[1:] if blocks else []:
        k, _, v = line.partition(":")
        h[k.strip().lower()] = v.strip()
    return h

def header(path, name):
    return headers(path).get(name.lower(), "")

def body(path):
    try:
        return json.load(open(path))
    except ValueError:
        return None

def rl(hdr, bdy, got, want, rule, limit, window, used, allowed):
    """a check's (or a lookup's) answer against what it must say"""
    limit, window, used = int(limit), int(window), int(used)
    allowed = allowed == "True"
    h, b, bad = headers(hdr), body(bdy), []
    if got != want:
        bad.append(f"status {got}, want {want}")
    if not isinstance(b, dict):
        return "; ".join(bad + ["body is not a JSON object: " + open(bdy).read()[:200]])
    rem = max(limit - used, 0)
    for k, v in dict(allowed=allowed, rule=rule, limit=limit, window_s=window,
                     used=used, remaining=rem).items():
        if b.get(k) != v:
            bad.append(f"body {k}={b.get(k)!r}, want {v!r}")
    if h.get("content-type") != "application/json":
        bad.append(f"Content-Type {h.get('content-type')!r}")
    if allowed:
        t = b.get("reset_s")
        lo = 0 if used == 0 else 1      # nothing counted: nothing to reset
        if not isinstance(t, int) or not lo <= t <= window:
            bad.append(f"body reset_s={t!r}, want {lo}..{window}")
        if b.get("retry_after_s") != 0:
            bad.append(f"body retry_after_s={b.get('retry_after_s')!r}, want 0")
        if "retry-after" in h:
            bad.append("Retry-After on an allowed answer")
    else:
        t = b.get("retry_after_s")
        if not isinstance(t, int) or not 1 <= t <= window:
            bad.append(f"body retry_after_s={t!r}, want 1..{window}")
        if got == "200":        # a lookup: only a denial says Retry-After
            if "retry-after" in h:
                bad.append("Retry-After on a 200")
        elif h.get("retry-after") != str(t):
            bad.append(f"Retry-After {h.get('retry-after')!r}, want {t}")
    for name, v in (("ratelimit-policy", f'"{rule}";q={limit};w={window}'),
                    ("ratelimit", f'"{rule}";r={rem};t={t}'),
                    ("x-ratelimit-limit", str(limit)),
                    ("x-ratelimit-remaining", str(rem)),
                    ("x-ratelimit-reset", str(t))):
        if h.get(name) != v:
            bad.append(f"{name}: {h.get(name)!r}, want {v!r}")
    return "; ".join(bad) or "ok"

def err(hdr, bdy, got, want):
    """an error answer: the status and a JSON {"error": "..."}"""
    h, b, bad = headers(hdr), body(bdy), []
    if got != want:
        bad.append(f"status {got}, want {want}")
    if h.get("content-type") != "application/json":
        bad.append(f"Content-Type {h.get('content-type')!r}")
    if not isinstance(b, dict) or not isinstance(b.get("error"), str) or not b["error"]:
        bad.append("body is not {\"error\": \"...\"}: " + open(bdy).read()[:200])
    return "; ".join(bad) or "ok"

def prom(path):
    """Prometheus text -> {"name{labels}": value}"""
    m = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            m[k] = float(v)
    return json.dumps(m)

def sent(path):
    """what /metrics must count for the answers in path"""
    c = {"200": 0, "401_403": 0, "429": 0, "4xx": 0, "5xx": 0, "checks": 0}
    for line in open(path):
        code, method, url = line.split()
        n = int(code)
        if n == 0:
            continue            # never reached the service
        k = ("200" if n == 200 else "401_403" if n in (401, 403) else
             "429" if n == 429 else "4xx" if n // 100 == 4 else
             "5xx" if n // 100 == 5 else "other")
        c[k] = c.get(k, 0) + 1
        # timed: every counting check that was decided (not an unknown
        # rule's 404, nor a 503)
        if url.startswith("/v1/check") and n in (200, 401, 403, 429):
            c["checks"] += 1
    return json.dumps(c)

print(globals()[sys.argv[1]](*sys.argv[2:]))
EOF
h() { "$SL_PY" "$SL_TMP/h.py" "$@"; }

# hdr NAME: a header of the last answer ("" if absent)
hdr() { h header "$SL_TMP/hdr" "$1"; }

# body EXPR: EXPR of the last answer's JSON body (d)
body() { json_get "$1" "$SL_TMP/body"; }

# ---- requests ----

# req METHOD PATH [curl options]: one request to the API from inside the
# server namespace; prints the status; headers in $SL_TMP/hdr, body in
# $SL_TMP/body; logged in $SENT for the /metrics checks
req() {
	local method=$1 path=$2 code m
	shift 2
	: >"$SL_TMP/hdr"
	: >"$SL_TMP/body"
	m=(-X "$method")
	[ "$method" = HEAD ] && m=(-I)	# -X HEAD would wait for a body
	code=$(in_server curl -s -m 5 "${m[@]}" -o "$SL_TMP/body" \
		-D "$SL_TMP/hdr" -w '%{http_code}' "${SL_API_ARGS[@]}" "$@" "$API$path")
	echo "$code $method $path" >>"$SENT"
	echo "$code"
}

# check_rl DESC WANT_STATUS RULE LIMIT WINDOW USED ALLOWED METHOD PATH [opts]
check_rl() {
	local desc=$1 want=$2 rule=$3 limit=$4 window=$5 used=$6 allowed=$7 code
	shift 7
	code=$(req "$@")
	tap_eq "$desc" "$(h rl "$SL_TMP/hdr" "$SL_TMP/body" "$code" "$want" \
		"$rule" "$limit" "$window" "$used" "$allowed")" ok
}

# check_err DESC WANT_STATUS METHOD PATH [opts]
check_err() {
	local desc=$1 want=$2 code
	shift 2
	code=$(req "$@")
	tap_eq "$desc" "$(h err "$SL_TMP/hdr" "$SL_TMP/body" "$code" "$want")" ok
}

# post_json RULE KEY: curl options of a JSON check body
post_json() {
	printf -- '-H\nContent-Type: application/json\n--data-binary\n{"rule": "%s", "key": "%s"}\n' "$1" "$2"
}

# ---- the service ----


# start_service VAR LOG [CMD-PREFIX...]: start slicelimit run --config
# $SL_TMP/config.yaml in the server namespace and wait (bounded) until the
# API answers; the pid goes to VAR
start_service() {
	local var=$1 log=$2
	shift 2
	sl_service_start "$var" "$log" "$SL_TMP/config.yaml" "$@"
	echo "200 GET /metrics" >>"$SENT"
}

# ---- the tests, in the order they run ----

test_within_limit_headers_carry_the_numbers() {
	local i code out=""
	for i in 1 2 3 4 5; do
		code=$(req GET "/v1/check?rule=api&key=alice")
		out="$out $(h rl "$SL_TMP/hdr" "$SL_TMP/body" "$code" 200 api 5 60 "$i" True)"
	done
	tap_eq "5 checks of 'alice' under limit 5: each 200, body used 1..5, RateLimit-Policy \"api\";q=5;w=60, RateLimit r=4..0, X-RateLimit-Limit/-Remaining/-Reset agree, no Retry-After" \
		"$out" " ok ok ok ok ok"
}

test_over_limit_429_and_deny_status() {
	check_rl "the 6th check: 429 with Retry-After 1..60 s = body retry_after_s = RateLimit t = X-RateLimit-Reset, remaining 0" \
		429 api 5 60 5 False GET "/v1/check?rule=api&key=alice"
	check_rl "deny_status=403: 403 with the same headers" \
		403 api 5 60 5 False GET "/v1/check?rule=api&key=alice&deny_status=403"
	check_rl "deny_status=401: 401 with the same headers" \
		401 api 5 60 5 False GET "/v1/check?rule=api&key=alice&deny_status=401"
	check_rl "another key is not affected by alice's denials (bob: 200, used 1)" \
		200 api 5 60 1 True GET "/v1/check?rule=api&key=bob"
	check_rl "GET /v1/clients/alice: the 3 denials counted nothing (used 5); 200, allowed false, retry_after_s = RateLimit t, no Retry-After (only a denial has it)" \
		200 api 5 60 5 False GET "/v1/clients/alice?rule=api"
	tap_eq "HEAD /v1/check is 405 and counts nothing (bob still used 1)" \
		"$(req HEAD "/v1/check?rule=api&key=bob")/$(req GET "/v1/clients/bob?rule=api" >/dev/null; body "d['used']")" \
		"405/1"
}

test_passes_again_after_retry_after() {
	local code ra
	# rule 'short': 2 per 3 s
	req GET "/v1/check?rule=short&key=ivan" >/dev/null
	req GET "/v1/check?rule=short&key=ivan" >/dev/null
	check_rl "rule short (2 per 3 s), the 3rd check: 429 with Retry-After 1..3 s" \
		429 short 2 3 2 False GET "/v1/check?rule=short&key=ivan"
	ra=$(hdr Retry-After)
	[ "$ra" -ge 1 ] 2>/dev/null && [ "$ra" -le 3 ] || ra=3
	sleep "$ra"
	code=$(req GET "/v1/check?rule=short&key=ivan")
	tap_eq "after sleeping its Retry-After (${ra}s) the key passes again: 200, allowed" \
		"$code/$(body "d['allowed']")" "200/True"
}

test_token_bucket_headers() {
	# limit 6 per 6 s: a bucket of 6 refilled at 1 token a second
	check_rl "token-bucket rule: 200, limit 6 (the bucket), used 1, RateLimit t = X-RateLimit-Reset = reset_s within 1..6 s" \
		200 tb 6 6 1 True GET "/v1/check?rule=tb&key=bucket"
}

test_post_get_and_read_only_lookup() {
	local out="" opts
	check_rl "GET /v1/clients/carol of a key never checked: 200, used 0, remaining 5" \
		200 api 5 60 0 True GET "/v1/clients/carol?rule=api"
	mapfile -t opts < <(post_json api carol)
	check_rl "POST /v1/check with a JSON body {\"rule\",\"key\"}: 200, used 1" \
		200 api 5 60 1 True POST /v1/check "${opts[@]}"
	check_rl "GET /v1/check?rule=&key= of the same key: the same client, used 2" \
		200 api 5 60 2 True GET "/v1/check?rule=api&key=carol"
	check_rl "POST /v1/check with query parameters and no body: used 3" \
		200 api 5 60 3 True POST "/v1/check?rule=api&key=carol"
	out="$(req GET "/v1/clients/carol?rule=api" >/dev/null; body "d['used']")"
	out="$out $(req GET "/v1/clients/carol?rule=api" >/dev/null; body "d['used']")"
	out="$out $(req GET "/v1/clients/carol?rule=api" >/dev/null; body "d['used']")"
	tap_eq "GET /v1/clients/carol three times counts nothing (used 3 3 3)" "$out" "3 3 3"
	check_rl "the next check after the lookups: used 4" \
		200 api 5 60 4 True GET "/v1/check?rule=api&key=carol"
	mapfile -t opts < <(post_json ip "user 1/x")
	req POST /v1/check "${opts[@]}" >/dev/null
	req GET "/v1/check?rule=ip&key=user+1%2Fx" >/dev/null
	tap_eq "a key with a space and a slash: JSON \"user 1/x\", query user+1%2Fx and path user%201%2Fx are one client (used 2)" \
		"$(req GET "/v1/clients/user%201%2Fx?rule=ip" >/dev/null; body "d['used']")" 2
}

test_ip_key_shares_the_kernel_state() {
	local i q opts
	for i in 1 2 3; do req GET "/v1/check?rule=ip&key=10.77.0.9" >/dev/null; done
	q=$(sl -j query 10.77.0.9 --rule ip)
	tap_eq "3 checks of key 10.77.0.9: slicelimit query 10.77.0.9 --json sees the same client (used 3, remaining 7)" \
		"$(printf '%s' "$q" | json_get "(d[0]['client'], d[0]['used'], d[0]['remaining'])")" \
		"('10.77.0.9', 3, 7)"
	tap_eq "... and the API's /v1/clients/10.77.0.9 says used 3 too" \
		"$(req GET "/v1/clients/10.77.0.9?rule=ip" >/dev/null; body "d['used']")" 3
	mapfile -t opts < <(post_json ip 2001:db8:1::1)
	req POST /v1/check "${opts[@]}" >/dev/null
	req GET "/v1/check?rule=ip&key=2001:db8:1::2" >/dev/null
	tap_eq "IPv6 keys 2001:db8:1::1 and ::2 are one /64 client: query 2001:db8:1::99 says used 2" \
		"$(sl -j query 2001:db8:1::99 --rule ip | json_get "(d[0]['client'], d[0]['used'])")" \
		"('2001:db8:1::/64', 2)"
}

test_bad_requests_are_json_errors() {
	check_err "unknown rule: 404" 404 GET "/v1/check?rule=nope&key=x"
	check_err "unknown rule in /v1/clients: 404" 404 GET "/v1/clients/x?rule=nope"
	check_err "missing key: 400" 400 GET "/v1/check?rule=api"
	check_err "missing rule: 400" 400 GET "/v1/check?key=x"
	check_err "POST body without a key: 400" 400 POST /v1/check \
		-H 'Content-Type: application/json' --data-binary '{"rule": "api"}'
	check_err "non-JSON body: 400" 400 POST /v1/check --data-binary 'rule=api&key=x'
	check_err "a JSON array body: 400" 400 POST /v1/check --data-binary '[1, 2]'
	check_err "deny_status=500: 400" 400 GET "/v1/check?rule=api&key=x&deny_status=500"
	check_err "a JSON object followed by junk: 400" 400 POST /v1/check \
		--data-binary '{"rule": "api", "key": "g"} garbage'
	check_err "a key with a NUL byte in it: 400" 400 POST /v1/check \
		--data-binary '{"rule": "api", "key": "x\u0000y"}'
	check_err "a key that is a number ({\"key\": 123}): 400" 400 POST /v1/check \
		--data-binary '{"rule": "api", "key": 123}'
	tap_eq "... the error says 'key' must be a string (not that it is missing)" \
		"$(body "d['error'].startswith(\"'key' must be a string\")")" True
	check_err "a field the API does not know (\"weight\": 5): 400, not ignored" 400 POST /v1/check \
		--data-binary '{"rule": "api", "key": "c", "weight": 5}'
	tap_eq "... the error names the field and lists the known ones, cost among them" \
		"$(body "d['error'].startswith(\"unknown field 'weight'\") and \"'cost'\" in d['error']")" True
	tap_eq "... and nothing was counted for key c" \
		"$(req GET "/v1/clients/c?rule=api" >/dev/null; body "d['used']")" 0
	check_err "a key of 257 bytes: 400" 400 GET \
		"/v1/check?rule=api&key=$(head -c 257 /dev/zero | tr '\0' k)"
	# a valid JSON body of exactly 4096 bytes, then one byte more (white
	# space pads it: a field the API does not know is refused)
	big() {
		"$SL_PY" -c 'import json, sys
n = int(sys.argv[1]); s = json.dumps({"rule": "ip", "key": "padded"})
sys.stdout.write("{" + " " * (n - len(s)) + s[1:])' "$1" \
			>"$SL_TMP/big.json"
	}
	big 4096
	check_rl "a JSON body of exactly 4096 bytes is accepted: 200" \
		200 ip 10 60 1 True POST /v1/check --data-binary "@$SL_TMP/big.json"
	big 4097
	check_err "a body of 4097 bytes: 413" 413 POST /v1/check --data-binary "@$SL_TMP/big.json"
	head -c 100000 /dev/zero | tr '\0' x >"$SL_TMP/big.json"
	check_err "a body of 100000 bytes: 413" 413 POST /v1/check --data-binary "@$SL_TMP/big.json"
	check_err "DELETE /v1/check: 405" 405 DELETE "/v1/check?rule=api&key=x"
	check_err "PUT /v1/check: 405" 405 PUT /v1/check --data-binary '{"rule": "api", "key": "x"}'
	check_err "POST /v1/clients/x: 405" 405 POST "/v1/clients/x?rule=api"
	check_err "POST /metrics: 405" 405 POST /metrics
	check_err "unknown path /v2/check: 404" 404 GET "/v2/check?rule=api&key=x"
	check_err "unknown path /: 404" 404 GET /
	if kill -0 "$SLD" 2>/dev/null; then
		check_rl "the service is alive after the bad requests and still answers (dave: 200)" \
			200 api 5 60 1 True GET "/v1/check?rule=api&key=dave"
	else
		tap_fail "the service is alive after the bad requests" "$(tail -5 "$SL_TMP/sl.log")"
	fi
}

# post_cost RULE KEY COST: curl options of a JSON check body with a cost
# (COST as JSON text: 4, "4", 4.0, ...)
post_cost() {
	printf -- '-H\nContent-Type: application/json\n--data-binary\n{"rule": "%s", "key": "%s", "cost": %s}\n' "$1" "$2" "$3"
}

test_check_costs_charge_their_units() {
	local opts c out="" codes=""
	# rule ip: limit 10 per 60 s
	mapfile -t opts < <(post_cost ip costly 4)
	check_rl "cost 4 (JSON body) of a fresh key under limit 10: 200, used 4, RateLimit r=6" \
		200 ip 10 60 4 True POST /v1/check "${opts[@]}"
	check_rl "cost 4 again: 200, used 8, remaining 2" \
		200 ip 10 60 8 True POST /v1/check "${opts[@]}"
	check_rl "cost 4 a third time (4+4+4 > 10): 429, nothing charged (used 8, remaining 2), Retry-After = retry_after_s" \
		429 ip 10 60 8 False POST /v1/check "${opts[@]}"
	mapfile -t opts < <(post_cost ip costly 2)
	check_rl "... while cost 2 then fits: 200, used 10, remaining 0" \
		200 ip 10 60 10 True POST /v1/check "${opts[@]}"
	check_rl "query form: GET /v1/check?...&cost=3 of a fresh key: used 3" \
		200 ip 10 60 3 True GET "/v1/check?rule=ip&key=costq&cost=3"
	check_rl "query form: POST /v1/check?...&cost=2 without a body: used 5" \
		200 ip 10 60 5 True POST "/v1/check?rule=ip&key=costq&cost=2"
	check_rl "no cost: one unit (used 6)" \
		200 ip 10 60 6 True GET "/v1/check?rule=ip&key=costq"
	# rule tb: a bucket of 6, one token back a second: emptied, a cost of
	# N fits again in N s, so its Retry-After is N s, not 1
	check_rl "token-bucket: cost 6 takes the whole bucket: 200, used 6" \
		200 tb 6 6 6 True GET "/v1/check?rule=tb&key=costtb&cost=6"
	req GET "/v1/check?rule=tb&key=costtb&cost=3" >/dev/null
	out="$(body "d['retry_after_s']")/$(hdr Retry-After)"
	req GET "/v1/check?rule=tb&key=costtb&cost=1" >/dev/null
	out="$out $(body "d['retry_after_s']")/$(hdr Retry-After)"
	tap_eq "... then cost 3 is refused with Retry-After 3 (when 3 tokens are back), cost 1 with Retry-After 1" \
		"$out" "3/3 1/1"
	for c in '"4"' 4.0 -1 0 11 4294967297 true null; do
		mapfile -t opts < <(post_cost ip costbad "$c")
		codes="$codes $(req POST /v1/check "${opts[@]}"):$(body "\"'cost'\" in d.get('error', '')")"
	done
	for c in 0 -1 abc 1.5 11 '' 99999999999; do
		codes="$codes $(req GET "/v1/check?rule=ip&key=costbad&cost=$c"):$(body "\"'cost'\" in d.get('error', '')")"
	done
	tap_eq "bad costs (body \"4\", 4.0, -1, 0, 11 > limit, 2^32+1, true, null; query 0, -1, abc, 1.5, 11, empty, 99999999999): each 400 with a JSON error naming 'cost'" \
		"$codes" "$(printf ' 400:True%.0s' $(seq 1 15))"
	tap_eq "... and they charged nothing: GET /v1/clients/costbad says used 0" \
		"$(req GET "/v1/clients/costbad?rule=ip" >/dev/null; body "d['used']")" 0
	req GET "/v1/check?rule=ip&key=10.77.0.50&cost=7" >/dev/null
	tap_eq "rule ip (api_key_is_address): cost 7 of key 10.77.0.50 is 7 units of the kernel's client (query --json: used 7, remaining 3)" \
		"$(sl -j query 10.77.0.50 --rule ip | json_get "(d[0]['client'], d[0]['used'], d[0]['remaining'])")" \
		"('10.77.0.50', 7, 3)"
}

# burst OUT METHOD KEY: 20 parallel checks of KEY in one curl, in the
# background (bounded by -m 10); "STATUS METHOD PATH" lines go to OUT
burst() {
	local out=$1 method=$2 key=$3 args=() i
	if [ "$method" = POST ]; then
		args=(--data-binary "{\"rule\": \"conc\", \"key\": \"$key\"}")
		for i in $(seq 1 20); do args+=(-o /dev/null "$API/v1/check"); done
	else
		for i in $(seq 1 20); do
			args+=(-o /dev/null "$API/v1/check?rule=conc&key=$key")
		done
	fi
	nsenter --net="/run/netns/$NS_S" curl -s --no-progress-meter -m 10 \
		-Z --parallel-max 20 --parallel-immediate \
		-w "%{http_code} $method /v1/check\n" "${args[@]}" >"$out" 2>"$out.err" &
	BURST_PIDS+=("$!")
}

test_exempt_addresses_are_exempt_from_checks() {
	local i codes=""
	for i in $(seq 1 22); do
		codes="$codes $(req GET "/v1/check?rule=conc&key=10.1.2.3")"
	done
	tap_eq "22 checks of an address the rule exempts (limit 20): all 200" \
		"$(echo $codes | tr ' ' '\n' | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')" \
		"200:22 "
}

test_concurrent_checks_lose_no_update() {
	local key=burst-$$ p codes
	# 4 curls x 20 parallel transfers = 80 checks at once, GET and POST,
	# of one fresh key under limit 20
	BURST_PIDS=()
	burst "$SL_TMP/burst1" POST "$key"
	burst "$SL_TMP/burst2" GET "$key"
	burst "$SL_TMP/burst3" POST "$key"
	burst "$SL_TMP/burst4" GET "$key"
	for p in "${BURST_PIDS[@]}"; do wait "$p"; done
	cat "$SL_TMP"/burst[1-4] >>"$SENT"
	codes=$(cat "$SL_TMP"/burst[1-4] | cut -d' ' -f1 | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
	tap_eq "80 concurrent checks (GET and POST) of one key under limit 20: exactly 20 got 200 and 60 got 429" \
		"$codes" "200:20 429:60 "
	tap_eq "... and the key's state says used 20, remaining 0" \
		"$(req GET "/v1/clients/$key?rule=conc" >/dev/null; body "(d['used'], d['remaining'])")" \
		"(20, 0)"
	BURST_KEY=$key
}

test_metrics_count_what_was_sent() {
	local want code missing
	want=$(h sent "$SENT")	# before this request, which /metrics counts after
	code=$(req GET /metrics)
	cp "$SL_TMP/body" "$SL_TMP/metrics.txt"
	tap_eq "GET /metrics: 200, Content-Type text/plain" \
		"$code/$(hdr Content-Type | cut -d';' -f1)" "200/text/plain"
	h prom "$SL_TMP/metrics.txt" >"$SL_TMP/metrics.json"
	m() { json_get "d.get('$1', 'missing')" "$SL_TMP/metrics.json"; }
	missing=$(json_get "' '.join('%s/%s=%s' % (r, o, d.get(k)) for r in ('api', 'short', 'ip', 'conc', 'tb') for o in ('passed', 'dropped', 'shadow_dropped', 'exempt') for k in ['slicelimit_rule_packets_total{rule=\"%s\",outcome=\"%s\"}' % (r, o)] if d.get(k) != 0)" "$SL_TMP/metrics.json")
	tap_eq "per-rule packet counters: every outcome of every rule (api, short, ip, conc, tb) present, 0 (no device: no packets)" \
		"${missing:-all there}" "all there"
	tap_eq "slicelimit_rules 5" "$(m slicelimit_rules)" 5.0
	tap_eq "HTTP responses by code = what this test got (200, 401_403, 429, 4xx, 5xx)" \
		"$(json_get "[int(d.get('slicelimit_http_responses_total{code=\"%s\"}' % c, -1)) for c in ('200', '401_403', '429', '4xx', '5xx')]" "$SL_TMP/metrics.json")" \
		"$(printf '%s' "$want" | json_get "[d[c] for c in ('200', '401_403', '429', '4xx', '5xx')]")"
	tap_eq "latency histogram: _count = +Inf bucket = the checks sent ($(printf '%s' "$want" | json_get "d['checks']"))" \
		"$(m slicelimit_http_check_duration_seconds_count)/$(m 'slicelimit_http_check_duration_seconds_bucket{le="+Inf"}')" \
		"$(printf '%s' "$want" | json_get "'%.1f/%.1f' % (d['checks'], d['checks'])")"
	tap_eq "latency histogram: buckets cumulative (never decreasing), sum > 0" \
		"$(json_get "(lambda b: b == sorted(b) and len(b) == 11 and d['slicelimit_http_check_duration_seconds_sum'] > 0)([v for k, v in d.items() if k.startswith('slicelimit_http_check_duration_seconds_bucket')])" "$SL_TMP/metrics.json")" \
		True
}

# The server's own decisions, over raw TCP (python): pipelined requests
# answered in order, a head split across reads, a head over 8192 bytes
# (431), a bad Content-Length (400), a chunked body (411), Expect:
# 100-continue, HEAD without a body, and an idle connection closed after
# the timeout (2 s): tests/netns/http_proto.py.

test_http_server_protocol() {
	local out
	out=$(in_server env SL_API_TOKEN="$SL_API_TOKEN" "$SL_PY" "$here/http_proto.py")
	pj() { printf '%s' "$out" | json_get "$1"; }
	tap_eq "3 pipelined requests in one write: 3 answers in order (200 pipe-1 used 1, 200 pipe-2, 200 pipe-1 lookup used 1)" \
		"$(pj "d.get('pipelined')")" "[[200, \"pipe-1\", 1], [200, \"pipe-2\", 1], [200, \"pipe-1\", 1]]"
	tap_eq "a head sent in three parts: one answer, 200, for its key" \
		"$(pj "d.get('split')")" "[200, \"split\"]"
	tap_eq "Expect: 100-continue: 100, then the body's answer 200 on the same connection" \
		"$(pj "d.get('continue')")" "[100, 200, \"cont\"]"
	tap_eq "HEAD /healthz: fields and Content-Length, no body (the next answer on the connection is whole)" \
		"$(pj "d.get('head')")" "[503, true, \"after-head\"]"
	tap_eq "HTTP/1.0 with Connection: keep-alive: 200 with Connection: keep-alive, and the connection serves the next request" \
		"$(pj "d.get('http10')")" "[200, \"keep-alive\", 200, \"after-10\"]"
	tap_eq "a head over 8192 bytes: 431, a JSON error, Connection: close, closed" \
		"$(pj "d.get('big_head')")" "[431, true, \"close\", true]"
	tap_eq "Content-Length: 1x: 400, a JSON error, Connection: close, closed" \
		"$(pj "d.get('bad_length')")" "[400, true, \"close\", true]"
	tap_eq "a chunked body: 411 (a Content-Length is needed), Connection: close, closed" \
		"$(pj "d.get('chunked')")" "[411, true, \"close\", true]"
	tap_eq "half a head, then nothing (slowloris): closed after the idle timeout (2 s) and its sweep (1 s)" \
		"$(pj "d.get('idle_closed') and 2 <= d.get('idle_after_s') <= 4")" True
}

test_sighup_applies_a_changed_rule_file() {
	local i
	sl -j rules list >"$SL_TMP/list1.json"
	cp "$SL_TMP/rules2.yaml" "$SL_TMP/running.yaml"
	kill -HUP "$SLD"
	for i in $(seq 1 50); do
		sl -j rules list >"$SL_TMP/list2.json" 2>/dev/null
		[ "$(json_get "len(d['rules'])" "$SL_TMP/list2.json" 2>/dev/null)" = 6 ] && break
		sleep 0.1
	done
	tap_eq "SIGHUP with a changed file: rules list --json shows the new set, api at limit 8" \
		"$(json_get "[(r['name'], r['limit']) for r in d['rules']]" "$SL_TMP/list2.json")" \
		'[["api", 8], ["short", 2], ["ip", 10], ["conc", 20], ["tb", 6], ["added", 2]]'
	check_rl "the API answers for the new rule 'added' (limit 2)" \
		200 added 2 60 1 True GET "/v1/check?rule=added&key=erin"
	check_rl "the API uses the raised limit: api, a fresh key, X-RateLimit-Limit 8" \
		200 api 8 60 1 True GET "/v1/check?rule=api&key=frank"
	tap_eq "a rule whose name is unchanged keeps its clients across the reload (conc: used 20)" \
		"$(req GET "/v1/clients/$BURST_KEY?rule=conc" >/dev/null; body "d['used']")" 20
}

test_sighup_with_invalid_files_keeps_the_rules() {
	local last="[s['reloads_applied'], s['reloads_refused'], s['last_refused']['file'], s['last_refused']['error']]"
	cp "$SL_TMP/invalid.yaml" "$SL_TMP/running.yaml"
	kill -HUP "$SLD"
	if wait_state "$last" "[1, 1, \"$SL_TMP/running.yaml\", \"not valid\"]"; then
		tap_ok "SIGHUP with an invalid rule file: status --json counts the reload refused, running.yaml not valid"
	else
		tap_fail "SIGHUP with an invalid rule file: status --json counts the reload refused, running.yaml not valid" \
			"$(service_state s)" "$(tail -5 "$SL_TMP/sl.log")"
	fi
	sl -j rules list >"$SL_TMP/list3.json"
	tap_eq "... it is still running and rules list --json is unchanged" \
		"$(kill -0 "$SLD" 2>/dev/null && echo running)/$(cmp -s "$SL_TMP/list2.json" "$SL_TMP/list3.json" && echo same)" \
		"running/same"
	check_rl "... and the API still uses the running rules (api: limit 8, 'added' answers)" \
		200 api 8 60 1 True GET "/v1/check?rule=api&key=grace"
	check_rl "... ('added' still answers: erin used 2)" \
		200 added 2 60 2 True GET "/v1/check?rule=added&key=erin"
	cp "$SL_TMP/config.yaml" "$SL_TMP/config.good"
	printf 'devices: [\nrules: {\n' >"$SL_TMP/config.yaml"
	kill -HUP "$SLD"
	wait_state "$last" "[1, 2, \"$SL_TMP/config.yaml\", \"not valid\"]" ||
		diag "no refusal of the broken config: $(service_state s) $(tail -3 "$SL_TMP/sl.log")"
	sl -j rules list >"$SL_TMP/list4.json"
	tap_eq "SIGHUP with an unparsable config: refused (status --json: config.yaml not valid), still running, the same rules" \
		"$(service_state "$last")/$(kill -0 "$SLD" 2>/dev/null && echo running)/$(cmp -s "$SL_TMP/list2.json" "$SL_TMP/list4.json" && echo same)" \
		"[1, 2, \"$SL_TMP/config.yaml\", \"not valid\"]/running/same"
	cp "$SL_TMP/config.good" "$SL_TMP/config.yaml"
}

test_sigterm_stops_and_unpins() {
	sl_stop "$SLD"
	tap_eq "SIGTERM: the service exits 0" "$STOP_RC" 0
	tap_eq "... and, with no devices, removes its pins (status: nothing loaded)" \
		"$(pins_gone)/$(sl -j status | json_get "d['loaded']")" "gone/False"
	tap_eq "... and the API is gone" \
		"$(in_server curl -s -m 2 -o /dev/null -w '%{http_code}' "$API/metrics")" "000"
}

# The shipped packaging/: rules.yaml is valid; config.yaml (its device and
# rule path replaced) runs under the unit's CapabilityBoundingSet and
# enforces on the veth; API checks and packets meet in one client.
test_shipped_config_under_the_units_capabilities() {
	local caps bset names client=${CLIENT4[0]} c
	tap_check "slicelimit rules check packaging/rules.yaml" \
		"$SL_BIN" rules check "$REPO/packaging/rules.yaml"
	cp "$REPO/packaging/rules.yaml" "$SL_TMP/shipped-rules.yaml"
	sed -e "s|name: eth0|name: $VETH_S|" \
		-e "s|rules: /etc/slicelimit/rules.yaml|rules: $SL_TMP/shipped-rules.yaml|" \
		"$REPO/packaging/config.yaml" >"$SL_TMP/config.yaml"
	tap_eq "packaging/config.yaml names eth0, /etc/slicelimit/rules.yaml and the socket /run/slicelimit/api.sock, no TCP (replaced here)" \
		"$(grep -c -e "name: $VETH_S" -e "rules: $SL_TMP/shipped-rules.yaml" -e '^  socket: /run/slicelimit/api.sock ' -e '^  listen:' "$SL_TMP/config.yaml")" 3
	# the shipped API is the socket (this run's private /run/slicelimit)
	API=http://localhost
	SL_API_ARGS=(--unix-socket /run/slicelimit/api.sock)
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$REPO/packaging/slicelimit.service.in")
	bset=-all
	for c in $caps; do
		c=${c#CAP_}
		bset="$bset,+${c,,}"
	done
	tap_eq "packaging/slicelimit.service.in: CapabilityBoundingSet=CAP_BPF CAP_NET_ADMIN CAP_SYS_ADMIN and the drop's" \
		"$caps" "CAP_BPF CAP_NET_ADMIN CAP_SYS_ADMIN CAP_SETUID CAP_SETGID CAP_SETPCAP"
	start_service SLD2 "$SL_TMP/sl2.log" setpriv --bounding-set="$bset"
	tap_eq "with only those capabilities it attaches $VETH_S (XDP, native)" \
		"$(in_server ip -j link show "$VETH_S" | json_get "d[0].get('xdp', {}).get('mode')")" 1
	names=$(sed -n 's/^  - name: \([^ ]*\)$/\1/p' "$REPO/packaging/rules.yaml" | paste -sd' ')
	tap_eq "... and runs the shipped rules ($names)" \
		"$(sl -j rules list | json_get "' '.join(r['name'] for r in d['rules'])")" "$names"
	sl_recv_start dns udp "$SRV4" 53
	sl_send "$client" "$SRV4" 53 5 >/dev/null || tap_fail "sl-traffic sent 5 packets"
	sl_recv_stop dns
	tap_eq "5 DNS packets from $client all arrive (rule dns, limit 300)" \
		"$(received dns "$client")" 5
	check_rl "an API check of key $client under rule dns (no api_key_is_address) is a key of its own: used 1" \
		200 dns 300 60 1 True GET "/v1/check?rule=dns&key=$client"
	tap_eq "... and the packets' client is untouched: slicelimit query $client --rule dns --json says used 5" \
		"$(sl -j query "$client" --rule dns | json_get "d[0]['used']")" 5
	check_rl "the rule 'api' of the nginx example answers: limit 100" \
		200 api 100 60 1 True GET "/v1/check?rule=api&key=nginx-client"
	req GET /metrics >/dev/null
	h prom "$SL_TMP/body" >"$SL_TMP/metrics.json"
	tap_eq "/metrics: rule dns passed 5 packets, dropped 0 (the API check is no packet); api matched none" \
		"$(json_get "[int(d['slicelimit_rule_packets_total{rule=\"%s\",outcome=\"%s\"}' % k]) for k in (('dns', 'passed'), ('dns', 'dropped'), ('api', 'passed'), ('api', 'dropped'))]" "$SL_TMP/metrics.json")" \
		"[5, 0, 0, 0]"
	tap_eq "status --json: this service (its pid) attached $VETH_S, no reload yet" \
		"$(sl -j status | json_get "[[x['device'], x['service']] for x in d['devices']] + [d['service']['pid'] == $SLD2, d['service']['reloads_applied']]")" \
		"[[\"$VETH_S\", \"attached\"], true, 0]"
	kill -HUP "$SLD2"
	wait_state "s['reloads_applied']" 1 || diag "no reload: $(service_state s) $(tail -3 "$SL_TMP/sl2.log")"
	tap_eq "ExecReload's SIGHUP under those capabilities: reloaded (status --json: 1 applied, 0 refused), still running" \
		"$(service_state "[s['reloads_applied'], s['reloads_refused']]")/$(kill -0 "$SLD2" 2>/dev/null && echo running)" \
		"[1, 0]/running"
	sl_stop "$SLD2"
	tap_eq "SIGTERM: exit 0, $VETH_S detached, the pins removed" \
		"$STOP_RC/$(in_server ip -j link show "$VETH_S" | json_get "'xdp' in d[0]")/$(pins_gone)" \
		"0/False/gone"
}

main() {
	local start=$SECONDS
	sl_netns_setup
	: >"$SENT"
	start_service SLD "$SL_TMP/sl.log"
	test_within_limit_headers_carry_the_numbers
	test_over_limit_429_and_deny_status
	test_passes_again_after_retry_after
	test_token_bucket_headers
	test_post_get_and_read_only_lookup
	test_ip_key_shares_the_kernel_state
	test_bad_requests_are_json_errors
	test_check_costs_charge_their_units
	test_exempt_addresses_are_exempt_from_checks
	test_concurrent_checks_lose_no_update
	test_metrics_count_what_was_sent
	test_http_server_protocol
	test_sighup_applies_a_changed_rule_file
	test_sighup_with_invalid_files_keeps_the_rules
	test_sigterm_stops_and_unpins
	test_shipped_config_under_the_units_capabilities
	tap_elapsed "$start" 180
	tap_done
}

sl_run main
