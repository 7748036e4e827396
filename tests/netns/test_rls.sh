#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Envoy's rate limit service (rls: in the config), asked by a real gRPC
# client (Debian's python3-grpcio, its stubs made at test time by
# python3-grpc-tools from proto/rls.proto) on the Unix socket and over TCP:
# under and over the limit, several descriptors in one call, hits_addend,
# unmatched descriptors (OK, counted in /metrics), the RateLimit headers,
# the token on TCP, one count shared with /v1/check, an answer's frames
# in one send() (strace); then malformed
# messages and HTTP/2 (bad protobuf, oversized and compressed messages,
# unknown methods, raw frames: a bad preface, garbage, a truncated
# message, huge headers, many streams), after which the service still
# answers. And a rule file whose envoy: block is wrong is refused.
#
# Usage: test_rls.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl
REPO=$(cd "$here/../.." && pwd)
"$SL_PY" -c 'import grpc, grpc_tools' 2>/dev/null ||
	die "python3-grpcio and python3-grpc-tools are needed (make deps)"

API=http://127.0.0.1:8080
SOCK=/run/slicelimit/rls.sock
TCP=127.0.0.1:8081

cat >"$SL_TMP/rules.yaml" <<'EOF'
rules:
  - name: login
    limit: 3
    window: 60s
    api_key_is_address: true
    envoy:
      domain: edge
      descriptor: [{key: remote_address}, {key: path, value: /login}]
      client_key: remote_address
  - name: perkey
    limit: 10
    window: 1h
    envoy:
      domain: edge
      descriptor: [{key: generic_key, value: api}, {key: x-api-key}]
      client_key: x-api-key
  - name: odd
    limit: 5
    window: 90s
    envoy: {domain: edge, descriptor: [{key: tenant}]}
EOF
sl_config none "$SL_TMP/rules.yaml" "rls:
  listen: $TCP
  token_file: $SL_API_TOKEN_FILE"

# stubs from the project's .proto, as a user of the service would make them
mkdir -p "$SL_TMP/stubs"
"$SL_PY" -m grpc_tools.protoc -I"$REPO/proto" --python_out="$SL_TMP/stubs" \
	--grpc_python_out="$SL_TMP/stubs" "$REPO/proto/rls.proto" ||
	die "grpc_tools.protoc failed on proto/rls.proto"

# rls OUT TARGET CALLS: the calls (JSON, rls_client.py) into OUT, asked
# from the server namespace
rls() {
	echo "$3" | in_server "$SL_PY" "$here/rls_client.py" "$SL_TMP/stubs" \
		"$2" >"$1" 2>"$1.err" || diag "$(tail -3 "$1.err")"
}
# q FILE EXPR: EXPR of the answers in FILE (d: the list of answers)
q() { json_get "$2" "$1"; }

login() {	# ADDR [PATH]: the login descriptor of ADDR
	echo "{\"entries\": [[\"remote_address\", \"$1\"], [\"path\", \"${2:-/login}\"]]}"
}
perkey() {	# KEY [HITS]
	echo "{\"entries\": [[\"generic_key\", \"api\"], [\"x-api-key\", \"$1\"]]${2:+, \"hits\": $2}}"
}

start_service() {
	sl_service_start SLD "$SL_TMP/sl.log"
	local i
	for i in $(seq 1 50); do
		[ -S "$SOCK" ] && return 0
		sleep 0.1
	done
	die "no rate limit service socket at $SOCK: $(tail -3 "$SL_TMP/sl.log")"
}

test_under_then_over_the_limit() {
	local f=$SL_TMP/a1.json c
	c="{\"domain\": \"edge\", \"descriptors\": [$(login 10.9.0.5)]}"
	rls "$f" "unix:$SOCK" "[$c, $c, $c, $c]"
	tap_eq "three calls within a limit of 3 are OK, the fourth OVER_LIMIT" \
		"$(q "$f" '[a["overall"] for a in d]')" \
		'["OK", "OK", "OK", "OVER_LIMIT"]'
	tap_eq "limit_remaining counts down to 0" \
		"$(q "$f" '[a["statuses"][0]["remaining"] for a in d]')" '[2, 1, 0, 0]'
	tap_eq "current_limit: the rule's name, its limit, the unit of its 60 s window" \
		"$(q "$f" '[d[0]["statuses"][0][k] for k in ("name", "limit", "unit")]')" \
		'["login", 3, "MINUTE"]'
	tap_eq "duration_until_reset: within the window, and when a unit fits once over" \
		"$(q "$f" 'all(0 < a["statuses"][0]["reset_s"] <= 60 for a in d)')" True
}

test_several_descriptors_one_over_is_over() {
	local f=$SL_TMP/a2.json
	rls "$f" "unix:$SOCK" "[{\"domain\": \"edge\", \"descriptors\": [$(login 10.9.0.5), $(perkey k1)]}]"
	tap_eq "one descriptor over, one within: overall OVER_LIMIT, each its own code" \
		"$(q "$f" '[d[0]["overall"]] + [s["code"] for s in d[0]["statuses"]]')" \
		'["OVER_LIMIT", "OVER_LIMIT", "OK"]'
	tap_eq "the headers speak for the descriptor over its limit" \
		"$(q "$f" 'd[0]["headers"]["RateLimit-Policy"]')" '"login";q=3;w=60'
}

test_hits_addend_charges_that_many() {
	local f=$SL_TMP/a3.json
	rls "$f" "unix:$SOCK" "[{\"domain\": \"edge\", \"hits\": 4, \"descriptors\": [$(perkey k2)]},
		{\"domain\": \"edge\", \"hits\": 4, \"descriptors\": [$(perkey k2 3)]},
		{\"domain\": \"edge\", \"hits\": 11, \"descriptors\": [$(perkey k2)]},
		{\"domain\": \"edge\", \"descriptors\": [$(perkey k2)]}]"
	tap_eq "hits_addend 4 (the call's), then 3 (the descriptor's wins), 11 (over the limit: refused, nothing charged), then 1" \
		"$(q "$f" '[(a["overall"], a["statuses"][0]["remaining"]) for a in d]')" \
		'[["OK", 6], ["OK", 3], ["OVER_LIMIT", 3], ["OK", 2]]'
}

test_unmatched_descriptors_are_ok_and_counted() {
	local f=$SL_TMP/a4.json before after
	before=$(in_server curl -s "$API/metrics" | awk '/^slicelimit_rls_descriptors_total\{result="unmatched"\}/ {print $2}')
	rls "$f" "unix:$SOCK" "[{\"domain\": \"nowhere\", \"descriptors\": [$(login 10.9.0.5)]},
		{\"domain\": \"edge\", \"descriptors\": [$(login 10.9.0.5 /home)]}]"
	tap_eq "an unknown domain and a value no rule names: OK, no current_limit" \
		"$(q "$f" '[(a["overall"], a["statuses"][0]["has_limit"]) for a in d]')" \
		'[["OK", false], ["OK", false]]'
	after=$(in_server curl -s "$API/metrics" | awk '/^slicelimit_rls_descriptors_total\{result="unmatched"\}/ {print $2}')
	tap_eq "/metrics counts the unmatched descriptors" "$((after - ${before:-0}))" 2
}

test_headers_and_window_without_a_unit() {
	local f=$SL_TMP/a5.json
	rls "$f" "unix:$SOCK" "[{\"domain\": \"edge\", \"descriptors\": [$(perkey k3)]},
		{\"domain\": \"edge\", \"descriptors\": [{\"entries\": [[\"tenant\", \"t1\"]]}]}]"
	tap_eq "response_headers_to_add: RateLimit-Policy and RateLimit as the HTTP API writes them" \
		"$(q "$f" '[d[0]["headers"][h] for h in ("RateLimit-Policy", "RateLimit")]')" \
		'["\"perkey\";q=10;w=3600", "\"perkey\";r=9;t=3600"]'
	tap_eq "a 1 h window is unit HOUR; a 90 s window no unit (UNKNOWN), its name the rule's" \
		"$(q "$f" '[d[0]["statuses"][0]["unit"], d[1]["statuses"][0]["unit"], d[1]["statuses"][0]["name"], d[1]["headers"]["RateLimit-Policy"]]')" \
		'["HOUR", "UNKNOWN", "odd", "\"odd\";q=5;w=90"]'
}

test_one_count_with_the_check_api() {
	local f=$SL_TMP/a6.json
	in_server curl -s -o /dev/null "$API/v1/check?rule=perkey&key=k4"
	in_server curl -s -o /dev/null "$API/v1/check?rule=perkey&key=k4"
	rls "$f" "unix:$SOCK" "[{\"domain\": \"edge\", \"descriptors\": [$(perkey k4)]}]"
	tap_eq "two /v1/check calls and one RLS call of one client: one count" \
		"$(q "$f" 'd[0]["statuses"][0]["remaining"]')" 7
	tap_eq "and /v1/clients/KEY reads what the RLS charged" \
		"$(in_server curl -s "$API/v1/clients/k4?rule=perkey" | json_get 'd["remaining"]')" 7
}

# The answers' frames leave gathered: the service's send() calls while
# one connection asks N calls one after the other, counted by strace on
# the service (nothing else sends while they run: no sync, the API idle).
test_an_answer_is_one_send() {
	local f=$SL_TMP/a12.json out=$SL_TMP/sends.txt calls="" i n=10 sp sends
	# strace is in the Makefile's DEB_PACKAGES: without it the count is
	# not taken, and that is a failure, not a pass
	if ! command -v strace >/dev/null; then
		tap_eq "strace is installed (make deps)" "missing" "installed"
		return
	fi
	for i in $(seq 1 $n); do
		calls+="${calls:+, }{\"domain\": \"edge\", \"descriptors\": [{\"entries\": [[\"tenant\", \"s$i\"]]}]}"
	done
	strace -f -qq -e trace=sendto,sendmsg,sendmmsg,writev -o "$out" -p "$SLD" 2>/dev/null &
	sp=$!
	for i in $(seq 1 50); do
		grep -q '^TracerPid:[[:space:]]*[1-9]' "/proc/$SLD/status" 2>/dev/null && break
		sleep 0.1
	done
	sleep 0.3	# strace attaches the service's other threads after its first
	rls "$f" "unix:$SOCK" "[$calls]"
	kill -INT "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	sends=$(grep -c -E 'send(to|msg|mmsg)\(|writev\(' "$out")
	diag "$sends send calls for $n answers"
	# one send an answer, and the connection's settings: a send a frame
	# would be three an answer
	tap_eq "$n calls on one connection: $n answers OK, in at most $((n * 3 / 2)) send() calls" \
		"$(q "$f" '[a["overall"] for a in d].count("OK")')/$([ "$sends" -le $((n * 3 / 2)) ] && echo few || echo "$sends")" \
		"$n/few"
}

test_tcp_needs_the_token() {
	local f=$SL_TMP/a7.json c
	c="\"domain\": \"edge\", \"descriptors\": [$(perkey k5)]"
	rls "$f" "$TCP" "[{$c}, {$c, \"token\": \"wrong\"}, {$c, \"token\": \"$SL_API_TOKEN\"}]"
	tap_eq "TCP: no token and a wrong one UNAUTHENTICATED, the right one OK" \
		"$(q "$f" '[a["grpc"] for a in d]')" \
		'["UNAUTHENTICATED", "UNAUTHENTICATED", "OK"]'
}

test_malformed_messages_get_grpc_errors() {
	local f=$SL_TMP/a8.json big pad
	big=$("$SL_PY" -c 'print("0a" * 70000)')
	# grpcio sends a message compressed only when that makes it smaller
	pad=$("$SL_PY" -c 'print("a" * 2000)')
	printf '%s' "[{\"raw\": \"ffffffff\"},
		{\"raw\": \"$big\"},
		{\"domain\": \"edge\", \"descriptors\": [$(perkey k6), {\"entries\": [[\"pad\", \"$pad\"]]}], \"compress\": true},
		{\"raw\": \"\", \"method\": \"/envoy.service.ratelimit.v3.RateLimitService/Other\"},
		{\"domain\": \"edge\"},
		{\"domain\": \"edge\", \"descriptors\": [$(perkey k6)]}]" >"$SL_TMP/calls8.json"
	rls "$f" "unix:$SOCK" "$(cat "$SL_TMP/calls8.json")"
	tap_eq "bad protobuf 3, over 64 KiB 8, compressed 12, unknown method 12, no descriptor 3; then a good call OK" \
		"$(q "$f" '[a["grpc"] for a in d]')" \
		'["INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "UNIMPLEMENTED", "UNIMPLEMENTED", "INVALID_ARGUMENT", "OK"]'
}

test_a_nul_byte_is_refused_not_cut() {
	local f=$SL_TMP/a10.json
	rls "$f" "unix:$SOCK" "[{\"domain\": \"edge\", \"descriptors\": [$(perkey 'k7\u0000x')]},
		{\"domain\": \"edge\", \"descriptors\": [$(perkey k7)]}]"
	tap_eq "a client key with a NUL byte: INVALID_ARGUMENT, and the key before it is not charged" \
		"$(q "$f" '[d[0]["grpc"], d[1]["statuses"][0]["remaining"]]')" \
		'["INVALID_ARGUMENT", 9]'
}

test_malformed_http2_never_takes_it_down() {
	local c f
	for c in bad_preface garbage_after_preface truncated_message \
		frame_length_lies huge_headers many_streams; do
		in_server "$SL_PY" "$here/rls_raw.py" 127.0.0.1 8081 \
			"$SL_API_TOKEN" "$c" >"$SL_TMP/raw-$c.json" 2>&1
	done
	tap_eq "a bad preface and garbage after the preface: the connection closed" \
		"$(q "$SL_TMP/raw-bad_preface.json" 'd["closed"]')/$(q "$SL_TMP/raw-garbage_after_preface.json" 'd["closed"]')" \
		"True/True"
	tap_eq "a message cut short of its length, and huge headers: the call answered without a message" \
		"$(q "$SL_TMP/raw-truncated_message.json" 'd["answered_1"]')/$(q "$SL_TMP/raw-huge_headers.json" 'd["answered_1"] or d["refused"] > 0 or d["goaway"]')" \
		"True/True"
	tap_eq "200 streams at once: those past the cap refused" \
		"$(q "$SL_TMP/raw-many_streams.json" 'd["refused"] >= 100 or d["goaway"]')" True
	f=$SL_TMP/a9.json
	rls "$f" "$TCP" "[{\"concurrent\": 40, \"call\": {\"domain\": \"edge\", \"descriptors\": [{\"entries\": [[\"tenant\", \"t9\"]]}], \"token\": \"$SL_API_TOKEN\"}}]"
	tap_eq "after all of it the service runs and answers 40 calls at once (5 OK, 35 OVER_LIMIT)" \
		"$(kill -0 "$SLD" && q "$f" 'sorted((a["grpc"], a["overall"]) for a in d[0]).count(("OK", "OK"))')" 5
}

test_sighup_answers_by_the_new_rules() {
	local f=$SL_TMP/a11.json
	# the tenant rule moves to the domain "inner"
	sed 's/envoy: {domain: edge, descriptor: \[{key: tenant}\]}/envoy: {domain: inner, descriptor: [{key: tenant}]}/' \
		"$SL_TMP/rules.yaml" >"$SL_TMP/rules.new" &&
		mv "$SL_TMP/rules.new" "$SL_TMP/rules.yaml"
	tap_eq "slicelimit reload: applied" \
		"$(in_server "$SL_BIN" reload --json | json_get 'd["reloaded"]')" True
	rls "$f" "unix:$SOCK" "[{\"domain\": \"inner\", \"descriptors\": [{\"entries\": [[\"tenant\", \"t2\"]]}]},
		{\"domain\": \"edge\", \"descriptors\": [{\"entries\": [[\"tenant\", \"t2\"]]}]}]"
	tap_eq "SIGHUP: the new envoy: blocks answer (domain inner counted), the old one no longer (edge unmatched)" \
		"$(q "$f" '[(a["statuses"][0]["has_limit"], a["statuses"][0].get("name")) for a in d]')" \
		'[[true, "odd"], [false, null]]'
}

test_bad_envoy_blocks_are_refused() {
	local bad=$SL_TMP/bad.yaml out rc=0
	cat >"$bad" <<'EOF'
rules:
  - name: a
    limit: 3
    envoy: {domain: edge, descriptor: [{key: k1}, {key: k2}], client_key: k3}
  - name: b
    limit: 3
    envoy: {descriptor: []}
EOF
	out=$("$SL_BIN" rules check "$bad" --json 2>/dev/null) || rc=$?
	tap_eq "rules check: a client_key that is no entry, no domain, no entries: exit 1, each named" \
		"$rc/$(echo "$out" | json_get 'sorted(p["field"] for p in d["problems"])')" \
		'1/["envoy.client_key", "envoy.descriptor", "envoy.domain"]'
}

main() {
	local start=$SECONDS
	sl_netns_setup
	start_service
	test_under_then_over_the_limit
	test_several_descriptors_one_over_is_over
	test_hits_addend_charges_that_many
	test_unmatched_descriptors_are_ok_and_counted
	test_headers_and_window_without_a_unit
	test_one_count_with_the_check_api
	test_an_answer_is_one_send
	test_tcp_needs_the_token
	test_malformed_messages_get_grpc_errors
	test_a_nul_byte_is_refused_not_cut
	test_malformed_http2_never_takes_it_down
	test_bad_envoy_blocks_are_refused
	test_sighup_answers_by_the_new_rules
	sl_stop "$SLD"
	tap_eq "SIGTERM: the service stops cleanly and removes its socket" \
		"$STOP_RC/$([ -e "$SOCK" ] && echo there || echo gone)" "0/gone"
	tap_elapsed "$start" 60
	tap_done
}

sl_run main
