#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# nginx in front of an app, asking slicelimit's HTTP API per request
# (auth_request), with the shipped packaging/nginx-slicelimit.conf as it
# is: nginx, slicelimit (`run --config`, no device) and the app (a
# `return 200` server of this test's nginx) run in the server namespace;
# curl clients in the client namespace send X-Api-Key. Within the quota:
# 200 from the app with the RateLimit headers; over it: 429 with
# Retry-After, the app never asked; other keys unaffected; after the 3 s
# window: 200 again; slicelimit gone: 500 (fail closed). slicelimit runs
# on a bpffs of its own (lib.sh): no other run can touch it.
#
# Usage: test_nginx.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" nginx curl unshare
REPO=$(cd "$here/../.." && pwd)
SHIPPED=$REPO/packaging/nginx-slicelimit.conf
[ -f "$SHIPPED" ] || die "$SHIPPED is missing"

NGX=$SL_TMP/nginx
GW=http://$SRV4		# nginx, port 80 (the shipped file's), from the clients
SLSOCK=/run/slicelimit/api.sock	# slicelimit's API (this run's private /run/slicelimit)
SLAPI=http://localhost
mkdir -p "$NGX"

# the shipped file's assumptions: slicelimit on its socket with a rule
# "api", the app on 127.0.0.1:3000; here 'api' allows 3 per 3 s. nginx's
# worker runs as root here: the socket's default mode (0660, root's
# group) lets it in; nobody else's
cat >"$SL_TMP/rules.yaml" <<'EOF'
rules:
  - name: api
    source: 100::/64
    limit: 3
    window: 3s
EOF
cat >"$SL_TMP/config.yaml" <<EOF
devices: []
rules: $SL_TMP/rules.yaml
http:
  socket: $SLSOCK
EOF
cat >"$NGX/nginx.conf" <<EOF
# test_nginx.sh: the shipped example, included as it is, and the app
worker_processes 1;
user root;
events { worker_connections 256; }
http {
    access_log $NGX/access.log;
    client_body_temp_path $NGX/client_body;
    proxy_temp_path $NGX/proxy;
    fastcgi_temp_path $NGX/fastcgi;
    uwsgi_temp_path $NGX/uwsgi;
    scgi_temp_path $NGX/scgi;

    server {	# the app
        listen 127.0.0.1:3000;
        access_log $NGX/app.log;
        location / {
            default_type text/plain;
            return 200 "hello from the app\n";
        }
    }

    include $SHIPPED;
}
EOF
NGINX_ARGS=(-p "$NGX/" -e "$NGX/error.log" -c "$NGX/nginx.conf"
	-g "daemon off; pid $NGX/nginx.pid;")

# ---- helpers ----



# get KEY [PATH]: one request through nginx from the client namespace, with
# X-Api-Key: KEY unless KEY is "-"; prints the status; headers and body in
# $SL_TMP/hdr and $SL_TMP/body
get() {
	local key=$1 path=${2:-/orders} h=()
	[ "$key" = - ] || h=(-H "X-Api-Key: $key")
	: >"$SL_TMP/hdr"
	: >"$SL_TMP/body"
	in_client curl -s -m 5 -o "$SL_TMP/body" -D "$SL_TMP/hdr" \
		-w '%{http_code}' "${h[@]}" "$GW$path"
}

# rl WANT_STATUS GOT_STATUS REMAINING: "ok", or what is wrong with the
# last answer's RateLimit headers for rule 'api' (3 per 3 s): policy, the
# remaining count, a reset (or, denied, Retry-After) of 1..3 s that all
# headers agree on, Retry-After only on a 429
rl() {
	"$SL_PY" - "$SL_TMP/hdr" "$@" <<'EOF'
import sys
path, want, got, rem = sys.argv[1:]
text = open(path, newline="").read().replace("\r\n", "\n")
h = {}
for line in text.strip().split("\n")[1:]:
    k, _, v = line.partition(":")
    h[k.strip().lower()] = v.strip()
bad = [] if got == want else [f"status {got}, want {want}"]
t = h.get("x-ratelimit-reset")
if t not in ("1", "2", "3"):
    bad.append(f"X-RateLimit-Reset {t!r}, want 1..3")
for name, v in (("ratelimit-policy", '"api";q=3;w=3'),
                ("ratelimit", f'"api";r={rem};t={t}'),
                ("x-ratelimit-limit", "3"),
                ("x-ratelimit-remaining", rem),
                ("retry-after", t if want == "429" else None)):
    if h.get(name) != v:
        bad.append(f"{name}: {h.get(name)!r}, want {v!r}")
print("; ".join(bad) or "ok")
EOF
}

# hdr NAME: a header of the last answer ("" if absent)
hdr() {
	"$SL_PY" - "$SL_TMP/hdr" "$1" <<'EOF'
import sys
text = open(sys.argv[1], newline="").read().replace("\r\n", "\n")
h = {}
for line in text.strip().split("\n")[1:]:
    k, _, v = line.partition(":")
    h[k.strip().lower()] = v.strip()
print(h.get(sys.argv[2].lower(), ""))
EOF
}

app_requests() { wc -l <"$NGX/app.log"; }

# ---- the tests, in the order they run ----

test_nginx_config_is_valid() {
	tap_check "nginx -t of a config including packaging/nginx-slicelimit.conf as it is" \
		in_server nginx -t "${NGINX_ARGS[@]}"
}

start_all() {
	local i code
	sl_bg SLD nsenter --net="/run/netns/$NS_S" "$SL_BIN" run \
		--config "$SL_TMP/config.yaml" 2>"$SL_TMP/sl.log"
	sl_bg NGINX nsenter --net="/run/netns/$NS_S" nginx "${NGINX_ARGS[@]}"
	for i in $(seq 1 100); do
		code=$(in_server curl -s -m 2 -o /dev/null -w '%{http_code}' --unix-socket "$SLSOCK" "$SLAPI/metrics")
		[ "$code" = 200 ] && break
		kill -0 "$SLD" 2>/dev/null || break
		sleep 0.1
	done
	[ "$code" = 200 ] || die "slicelimit did not start: $(cat "$SL_TMP/sl.log")"
	for i in $(seq 1 50); do
		code=$(get -)
		[ "$code" = 401 ] && return 0
		kill -0 "$NGINX" 2>/dev/null || break
		sleep 0.1
	done
	die "nginx did not start: $(cat "$NGX/error.log")"
}

test_within_quota_200_from_the_app() {
	local i out="" code
	for i in 2 1 0; do
		code=$(get alice)
		out="$out|$code $(head -c 40 "$SL_TMP/body") $(rl 200 "$code" "$i")"
	done
	tap_eq "alice, 3 requests under limit 3: 200 from the app, with RateLimit-Policy, RateLimit and X-RateLimit-* passed through (remaining 2, 1, 0), no Retry-After" \
		"$out" "|200 hello from the app ok|200 hello from the app ok|200 hello from the app ok"
}

test_over_quota_429_with_retry_after() {
	local code before
	before=$(app_requests)
	code=$(get alice)
	tap_eq "alice's 4th request: 429 with Retry-After 1..3 s, RateLimit-Policy, RateLimit r=0;t=Retry-After, X-RateLimit-Remaining 0, X-RateLimit-Reset = Retry-After" \
		"$(rl 429 "$code" 0)" ok
	RETRY_AFTER=$(hdr Retry-After)
	tap_eq "... a JSON body {\"error\"} (Content-Type application/json)" \
		"$(json_get "bool(d['error'])" "$SL_TMP/body" 2>&1)/$(hdr Content-Type)" \
		"True/application/json"
	tap_eq "... and the app was never asked" "$(app_requests)" "$before"
	code=$(get alice)
	tap_eq "alice again: 429 again" "$code" 429
	tap_eq "slicelimit counted alice's 3 allowed requests only (GET /v1/clients/alice: used 3)" \
		"$(in_server curl -s -m 5 --unix-socket "$SLSOCK" "$SLAPI/v1/clients/alice?rule=api" | json_get "d['used']")" 3
}

test_other_keys_unaffected() {
	local code
	code=$(get bob)
	tap_eq "bob, another key, meanwhile: 200 from the app, remaining 2, no Retry-After" \
		"$code $(head -c 40 "$SL_TMP/body") $(rl 200 "$code" 2)" \
		"200 hello from the app ok"
}

test_keys_refused_by_the_gateway() {
	tap_eq "no X-Api-Key: 401, slicelimit not asked" "$(get -)" 401
	tap_eq "an X-Api-Key with a space: 401 (not URL-safe)" "$(get 'a b')" 401
	tap_eq "an X-Api-Key smuggling a parameter ('x&rule=other'): 401" "$(get 'x&rule=other')" 401
	tap_eq "an X-Api-Key of 257 characters: 401" "$(get "$(head -c 257 /dev/zero | tr '\0' k)")" 401
	tap_eq "the check location is internal: GET /_slicelimit is 404" "$(get alice /_slicelimit)" 404
}

test_concurrent_requests_through_nginx() {
	local key=burst-$$ args=() i codes
	for i in $(seq 1 12); do args+=(-o /dev/null "$GW/orders"); done
	codes=$(in_client curl -s --no-progress-meter -m 10 -Z --parallel-max 12 \
		--parallel-immediate -w '%{http_code}\n' -H "X-Api-Key: $key" \
		"${args[@]}" 2>/dev/null | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
	tap_eq "12 concurrent requests of one fresh key under limit 3: exactly 3 got 200 and 9 got 429" \
		"$codes" "200:3 429:9 "
}

test_window_passes_again() {
	local code
	[ "$RETRY_AFTER" -ge 1 ] 2>/dev/null && [ "$RETRY_AFTER" -le 3 ] || RETRY_AFTER=3
	sleep "$RETRY_AFTER"
	code=$(get alice)
	tap_eq "after sleeping Retry-After (${RETRY_AFTER}s of the 3 s window) alice gets through again: 200 from the app" \
		"$code $(head -c 40 "$SL_TMP/body")" "200 hello from the app"
	[ "$code" = 200 ] || diag "nginx: $(tail -3 "$NGX/error.log")" \
		"slicelimit: $(tail -3 "$SL_TMP/sl.log")"
}

test_slicelimit_metrics_match_the_gateway() {
	local m
	m=$(in_server curl -s -m 5 --unix-socket "$SLSOCK" "$SLAPI/metrics")
	tap_eq "slicelimit's /metrics: the 403s it gave nginx = the 429s clients got (2 alice + 9 burst)" \
		"$(printf '%s\n' "$m" | "$SL_PY" -c '
import sys
for line in sys.stdin:
    k, _, v = line.strip().rpartition(" ")
    if k == "slicelimit_http_responses_total{code=\"401_403\"}":
        print(int(float(v)))')" 11
}

test_slicelimit_down_fails_closed() {
	local code
	sl_stop "$SLD"
	tap_eq "slicelimit stops on SIGTERM: exit 0, its pins removed" "$STOP_RC/$(pins_gone)" 0/gone
	code=$(get bob)
	tap_eq "with slicelimit gone nginx answers 500 (fails closed, as the example says)" "$code" 500
}

test_nginx_stops_cleanly() {
	sl_stop "$NGINX" QUIT	# graceful: the master waits for its worker
	tap_eq "nginx stops on SIGQUIT, exit 0" "$STOP_RC" 0
	# with slicelimit stopped its socket is gone: nginx logs that
	# connect() as crit (ENOENT), the fail-closed case tested above
	tap_eq "nginx's error log has no emerg/alert/crit/warn lines (but the socket missing while slicelimit was down)" \
		"$(grep -E '\[(emerg|alert|crit|warn)\]' "$NGX/error.log" |
			grep -v -c -F "connect() to unix:$SLSOCK failed (2: No such file or directory)")" 0
	grep -E '\[(emerg|alert|crit|warn)\]' "$NGX/error.log" | head -3 | while read -r l; do diag "$l"; done
}

main() {
	local start=$SECONDS
	sl_netns_setup
	test_nginx_config_is_valid
	start_all
	test_within_quota_200_from_the_app
	test_over_quota_429_with_retry_after
	test_other_keys_unaffected
	test_keys_refused_by_the_gateway
	test_concurrent_requests_through_nginx
	test_window_passes_again
	test_slicelimit_metrics_match_the_gateway
	test_slicelimit_down_fails_closed
	test_nginx_stops_cleanly
	tap_elapsed "$start" 180
	tap_done
}

sl_run main
