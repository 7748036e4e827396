#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The verbs operators reach for, against a running service and real
# traffic through a veth pair:
#
#   1. GET /healthz: 200 {"status": "ok"} while a device runs the program
#      with rules; 503 with the reason when its device was taken away
#      (detach --force), 200 again after the service's reload.
#   2. reset ADDR --rule NAME: a client over its limit passes again at
#      once (its count starts from zero), and -j names what was forgotten;
#      a client with nothing to forget is not an error.
#   3. query ADDR on a per_port rule without --port lists every port the
#      client has state for; reset --port N forgets only that port.
#   4. stats --reset zeroes the counters, and stats shows when
#      ("reset_ms_ago"; null before any reset).
#   5. Sync trouble (a peer down, refused datagrams) is logged once per
#      change of state, not only counted.
#   6. The block and allow lists: block drops a client's packets before
#      any rule (v4 and a v6 prefix), lists/stats/events/metrics count it;
#      an entry survives SIGHUP, rules apply and a restart of the service;
#      --for ends in the data path while no service runs; the HTTP API
#      changes the lists for a caller with the token and answers 401
#      without it; bad input changes nothing; block and unblock run in
#      parallel leave the maps consistent.
#
# Usage: test_verbs.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl

API=http://127.0.0.1:8080
CLIENT=${CLIENT4[0]}

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - { name: flood, protocol: udp, ports: 7001, limit: 5, window: 60s }
  - { name: perport, protocol: udp, ports: 7002-7010, limit: 100, window: 60s, key: { per_port: true } }
EOF
sl_config xdp-generic "$SL_TMP/rules.yaml"

# healthz: "CODE BODY" of GET /healthz
healthz() {
	in_server curl -s -m 2 -w ' %{http_code}' "$API/healthz"
}

used() {		# ADDR RULE [PORT]
	sl -j query "$1" --rule "$2" ${3:+--port "$3"} | json_get "d[0]['used']"
}

test_healthz_ok() {
	local out
	out=$(healthz)
	tap_eq "GET /healthz with the device attached and rules: 200 {\"status\": \"ok\"}" \
		"${out##* }/$(printf '%s' "${out% *}" | json_get "d")" '200/{"status": "ok"}'
}

test_reset_client() {
	local out
	sl_send "$CLIENT" "$SRV4" 7001 10 >/dev/null || tap_fail "sl-traffic sent 10 packets"
	sl_send "$CLIENT" "$SRV4" 7001 3 >/dev/null || tap_fail "sl-traffic sent 3 packets"
	tap_eq "a client over its limit (5 of 5): 3 more packets are not counted" \
		"$(used "$CLIENT" flood)" 5
	out=$(sl -j reset "$CLIENT" --rule flood)
	tap_eq "reset ADDR --rule flood -j: the one client state forgotten, named" \
		"$(printf '%s' "$out" | json_get "d['reset']")" \
		"[{\"client\": \"$CLIENT\", \"rule\": \"flood\"}]"
	sl_send "$CLIENT" "$SRV4" 7001 3 >/dev/null || tap_fail "sl-traffic sent 3 packets"
	tap_eq "... it passes again at once: 3 packets counted from zero" \
		"$(used "$CLIENT" flood)" 3
	out=$(sl -j reset "${CLIENT4[3]}")
	tap_eq "reset of a client with no state: exit 0, nothing forgotten" \
		"$?/$(printf '%s' "$out" | json_get "d['reset']")" "0/[]"
}

test_query_lists_ports() {
	local out
	sl_send "$CLIENT" "$SRV4" 7002 2 >/dev/null || tap_fail "sl-traffic sent 2 packets"
	sl_send "$CLIENT" "$SRV4" 7003 3 >/dev/null || tap_fail "sl-traffic sent 3 packets"
	out=$(sl -j query "$CLIENT" --rule perport)
	tap_eq "query on a per_port rule without --port: a row per port the client used" \
		"$(printf '%s' "$out" | json_get "sorted([r['client'], r['used']] for r in d)")" \
		"[[\"$CLIENT port 7002\", 2], [\"$CLIENT port 7003\", 3]]"
	out=$(sl -j reset "$CLIENT" --rule perport --port 7002)
	tap_eq "reset --port 7002: only that port forgotten" \
		"$(printf '%s' "$out" | json_get "[r['client'] for r in d['reset']]")/$(sl -j query "$CLIENT" --rule perport | json_get "[r['client'] for r in d]")" \
		"[\"$CLIENT port 7002\"]/[\"$CLIENT port 7003\"]"
}

test_stats_reset() {
	local before after
	before=$(sl -j stats | json_get "[d['reset_ms_ago'], sum(r['passed'] for r in d['rules']) > 0, d['global']['packets'] > 0]")
	tap_eq "stats before any reset: reset_ms_ago null, counters counting" \
		"$before" "[null, true, true]"
	sl -j stats --reset >/dev/null || tap_fail "stats --reset exited 0"
	# packets since the reset: only what the kernel itself may send on
	# the veth meanwhile (neighbour discovery, listener reports: counted
	# as link control or non-IP), nothing of the test's
	after=$(sl -j stats | json_get "[d['reset_ms_ago'] is not None and d['reset_ms_ago'] < 10000, sum(r['passed'] + r['dropped'] for r in d['rules']), d['global']['packets'] - d['global']['icmp_control'] - d['global']['non_ip']]")
	tap_eq "stats --reset: every counter zero, and stats shows the reset's time" \
		"$after" "[true, 0, 0]"
	sl_send "$CLIENT" "$SRV4" 7003 4 >/dev/null || tap_fail "sl-traffic sent 4 packets"
	tap_eq "... and they count on from zero (4 passed under perport)" \
		"$(sl -j stats | json_get "[r['passed'] for r in d['rules'] if r['rule'] == 'perport'][0]")" 4
}

test_healthz_unavailable() {
	local out i
	sl detach --force "$VETH_S" >/dev/null 2>&1 || tap_fail "detach --force"
	out=$(healthz)
	tap_eq "GET /healthz with the device detached: 503, status unavailable, the reason says so" \
		"${out##* }/$(printf '%s' "${out% *}" | json_get "[d['status'], 'no device' in d['reason']]")" \
		'503/["unavailable", true]'
	kill -HUP "$SVC"
	for i in $(seq 1 50); do
		[ "$(sl_api_code /healthz)" = 200 ] && break
		sleep 0.1
	done
	tap_eq "... 200 again once the reload attached it" "$(sl_api_code /healthz)" 200
}

# sync trouble is logged once per change of state, not only counted: a
# peer that never answers is "down" once; a burst of malformed datagrams
# is one "refusing" line, its end one more
test_sync_trouble_logged_once() {
	local svc i n
	"$SL_BIN" sync keygen --out "$SL_TMP/sync.identity" >/dev/null ||
		tap_fail "sync keygen"
	PEER_PK=$("$SL_BIN" sync keygen --out "$SL_TMP/peer.identity") ||
		tap_fail "sync keygen of the peer"
	cat >"$SL_TMP/sync.yaml" <<EOF2
devices:
  - { name: $VETH_S, mode: xdp-generic }
rules: $SL_TMP/rules.yaml
http:
  listen: 127.0.0.1:8080
  token_file: $SL_API_TOKEN_FILE
sync:
  node: 1
  interval: 200ms
  listen: $SRV4:7400
  peers: [{node: 2, address: ${CLIENT4[0]}:7400, public_key: $PEER_PK}]
  identity_file: $SL_TMP/sync.identity
  state_dir: $SL_TMP/state
EOF2
	sl_service_start svc "$SL_TMP/sync.log" "$SL_TMP/sync.yaml"
	sleep 2.5	# the grace (4 intervals), then a look a second
	in_client "$SL_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(20):
    s.sendto(b"not a sync datagram", (sys.argv[1], 7400))' "$SRV4"
	for i in $(seq 1 30); do
		[ "$(grep -c 'no datagram refused' "$SL_TMP/sync.log")" -ge 1 ] && break
		sleep 0.1
	done
	n=$(sl -j status | json_get "d['sync']['rejected_malformed']")
	tap_eq "a peer that never answers: logged down once; 20 malformed datagrams: counted, one 'refusing' line, and its end one" \
		"$(grep -c 'sync: 0 of 1 peers up' "$SL_TMP/sync.log")/$n/$(grep -c 'sync: refusing datagrams' "$SL_TMP/sync.log")/$(grep -c 'no datagram refused' "$SL_TMP/sync.log")" \
		"1/20/1/1"
	sl_stop "$svc"
}

# ---- 6. the block and allow lists ----

LCLIENT=${CLIENT4[4]}
LPORT=7009		# perport: limit 100, so the rules pass what is sent here

# through SRC COUNT [DST]: how many of COUNT datagrams from SRC reached a
# receiver on the server
through() {
	local dst=${3:-$SRV4}
	sl_recv_start lst udp "$dst" "$LPORT" 10
	sl_send "$1" "$dst" "$LPORT" "$2" >/dev/null || tap_fail "sl-traffic sent $2 packets from $1"
	sl_recv_stop lst
	received lst "$1"
}

lists_json() {		# EXPR over d = lists -j
	sl -j lists | json_get "$1"
}

# entries pinned in a list map, ended ones too (what no command hides)
pinned_entries() {	# MAP
	bpftool -j map dump pinned "$SL_PIN/$1" | json_get "len(d)"
}

lists_service() {	# VAR LOG: start the service on lists.yaml
	sl_bg "$1" nsenter --net="/run/netns/$NS_S" "$SL_BIN" run \
		--config "$SL_TMP/lists.yaml" 2>>"$2"
	sl_service_wait "${!1}" "$2"
}

test_lists_block_cli() {
	local before
	before=$(sl -j stats | json_get "d['rules']")
	sl -j block "$LCLIENT" --reason "abuse" >/dev/null
	tap_eq "block ADDR --reason: exit 0" "$?" 0
	tap_eq "a blocked client's 10 datagrams: none arrives; another client's 5 all do" \
		"$(through "$LCLIENT" 10)/$(through "${CLIENT4[5]}" 5)" "0/5"
	tap_eq "lists -j: the entry, its reason, no end, 10 hits" \
		"$(lists_json "[[e['kind'], e['prefix'], e['reason'], e['expires_ms'], e['remaining_ms'], e['hits']] for e in d['lists']]")" \
		'[["block", "'"$LCLIENT"'", "abuse", null, null, 10]]'
	tap_eq "stats -j: lists.blocked 10, lists.block_entries 1; no rule counted the blocked ones" \
		"$(sl -j stats | json_get "[d['lists']['blocked'], d['lists']['block_entries'], sum(r['passed'] + r['dropped'] for r in d['rules'])]")" \
		"[10, 1, 5]"
	tap_eq "events -j: the block's drop, kind block_list, rule block-list, the client" \
		"$(sl -j events --count 1 --timeout 3s | json_get "[d['kind'], d['rule'], d['client']]")" \
		'["block_list", "block-list", "'"$LCLIENT"'"]'
	tap_eq "/metrics: slicelimit_list_packets_total{list=\"block\"} 10" \
		"$(in_server curl -s -m 2 "$API/metrics" | grep -c '^slicelimit_list_packets_total{list="block"} 10$')" 1
	sl -j block fd77:0:0:1::/64 >/dev/null
	tap_eq "block of a v6 /64: its client's datagrams drop; unblock: they arrive" \
		"$(through "${CLIENT6[0]}" 4 "$SRV6")/$(sl -j unblock fd77:0:0:1::/64 | json_get "d['removed']")/$(through "${CLIENT6[0]}" 4 "$SRV6")" \
		"0/block/4"
	sl -j allow "$LCLIENT" >/dev/null
	tap_eq "allow of a blocked client: allow wins, its datagrams arrive; disallow: dropped again" \
		"$(through "$LCLIENT" 3)/$(sl -j disallow "$LCLIENT" >/dev/null; through "$LCLIENT" 3)" "3/0"
}

test_lists_survive() {	# SVC: the running service's pid
	local svc=$1 i
	kill -HUP "$svc"
	for i in $(seq 1 30); do
		grep -q 'reloaded' "$SL_TMP/lists.log" && break
		sleep 0.1
	done
	tap_eq "after SIGHUP: still blocked" "$(through "$LCLIENT" 3)" 0
	sl rules apply --force "$SL_TMP/rules.yaml" >/dev/null 2>&1 || tap_fail "rules apply --force"
	tap_eq "after rules apply: still blocked, and listed" \
		"$(through "$LCLIENT" 3)/$(lists_json "len(d['lists'])")" "0/1"
}

test_lists_http() {
	local out code
	out=$(in_server curl -s -m 2 -X PUT -d '{"for": "1h", "reason": "api"}' \
		-w ' %{http_code}' "$API/v1/lists/block/${CLIENT4[6]}")
	tap_eq "PUT /v1/lists/block/ADDR with the token: 200, the entry" \
		"${out##* }/$(printf '%s' "${out% *}" | json_get "[d['added'], d['prefix'], d['expires_ms'] > 0]")" \
		'200/["block", "'"${CLIENT4[6]}"'", true]'
	tap_eq "... its datagrams drop; GET /v1/lists shows it with its reason" \
		"$(through "${CLIENT4[6]}" 3)/$(in_server curl -s -m 2 "$API/v1/lists" | json_get "[e['reason'] for e in d['lists'] if e['prefix'] == '${CLIENT4[6]}']")" \
		'0/["api"]'
	# -q first: curl reads no .curlrc, so no token is sent
	code=$(in_server curl -q -s -m 2 -o /dev/null -w '%{http_code}' -X DELETE \
		"$API/v1/lists/block/${CLIENT4[6]}")
	tap_eq "DELETE over TCP without the token: 401, the entry stays" \
		"$code/$(lists_json "len(d['lists'])")" "401/2"
	code=$(in_server curl -q -s -m 2 -o /dev/null -w '%{http_code}' -X PUT \
		"$API/v1/lists/block/${CLIENT4[7]}")
	tap_eq "PUT over TCP without the token: 401, nothing added" \
		"$code/$(lists_json "len(d['lists'])")" "401/2"
	out=$(in_server curl -s -m 2 -X PUT -d '{"for": 5' -w ' %{http_code}' \
		"$API/v1/lists/block/${CLIENT4[7]}")
	tap_eq "a bad JSON body: 400 with a JSON error, nothing added" \
		"${out##* }/$(printf '%s' "${out% *}" | json_get "'error' in d")/$(lists_json "len(d['lists'])")" \
		"400/True/2"
	out=$(in_server curl -s -m 2 -X PUT -d '{"for": "-5s"}' -w ' %{http_code}' \
		"$API/v1/lists/block/${CLIENT4[7]}")
	code=$(in_server curl -s -m 2 -o /dev/null -w '%{http_code}' -X PUT \
		"$API/v1/lists/block/300.1.1.1")
	tap_eq "a bad duration and a bad address over HTTP: 400 each, nothing added" \
		"${out##* }/$code/$(lists_json "len(d['lists'])")" "400/400/2"
	out=$(in_server curl -s -m 2 -X DELETE -w ' %{http_code}' \
		"$API/v1/lists/block/${CLIENT4[6]}")
	tap_eq "DELETE with the token: 200; its datagrams arrive again" \
		"${out##* }/$(through "${CLIENT4[6]}" 3)" "200/3"
}

test_lists_bad_input() {
	local rc1 rc2 rc3 rc4 reason
	reason=$(head -c 10240 /dev/zero | tr '\0' x)
	sl block 300.1.1.1 >/dev/null 2>&1; rc1=$?
	sl block "${CLIENT4[7]}" --for -5s >/dev/null 2>&1; rc2=$?
	sl block "${CLIENT4[7]}" --reason "$reason" >/dev/null 2>&1; rc3=$?
	sl block 10.77.0.1/16 >/dev/null 2>&1; rc4=$?
	tap_eq "block 300.1.1.1, --for -5s, a 10k reason, host bits past the prefix: exit 2 each, nothing added" \
		"$rc1/$rc2/$rc3/$rc4/$(lists_json "len(d['lists'])")" "2/2/2/2/1"
	tap_eq "... and the usage error as JSON under -j" \
		"$(sl -j block 300.1.1.1 2>/dev/null | json_get "'not an IPv4 or IPv6' in d['error']")" "True"
	sl unblock "${CLIENT4[7]}" >/dev/null 2>&1
	tap_eq "unblock of what is not on the list: exit 1" "$?" 1
}

test_lists_parallel() {
	local a b i
	# two writers at once, each ending on a block: both entries, each
	# with its note, whatever the interleaving
	( for i in $(seq 1 15); do sl block 198.51.100.0/24 >/dev/null; sl unblock 198.51.100.0/24 >/dev/null; done; sl block 198.51.100.0/24 >/dev/null ) &
	a=$!
	( for i in $(seq 1 15); do in_server curl -s -m 2 -o /dev/null -X PUT "$API/v1/lists/block/2001:db8::/32"; in_server curl -s -m 2 -o /dev/null -X DELETE "$API/v1/lists/block/2001:db8::/32"; done; in_server curl -s -m 2 -o /dev/null -X PUT "$API/v1/lists/block/2001:db8::/32" ) &
	b=$!
	wait "$a" "$b"
	tap_eq "block/unblock from the CLI and PUT/DELETE over HTTP at once: 3 entries, 3 notes, still enforced" \
		"$(lists_json "sorted(e['prefix'] for e in d['lists'])")/$(pinned_entries sl_block_list)/$(pinned_entries sl_list_notes)/$(through "$LCLIENT" 3)" \
		'["'"$LCLIENT"'", "198.51.100.0/24", "2001:db8::/32"]/3/3/0'
}

test_lists() {
	local l1 l2 l3
	cat >"$SL_TMP/lists.yaml" <<EOF2
devices:
  - { name: $VETH_S, mode: xdp-generic }
rules: $SL_TMP/rules.yaml
keep_attached: true
http:
  listen: 127.0.0.1:8080
  token_file: $SL_API_TOKEN_FILE
EOF2
	lists_service l1 "$SL_TMP/lists.log"
	test_lists_block_cli
	test_lists_survive "$l1"
	sl_stop "$l1"
	lists_service l2 "$SL_TMP/lists.log"
	tap_eq "after a restart of the service: still blocked, and listed" \
		"$(through "$LCLIENT" 3)/$(lists_json "[e['prefix'] for e in d['lists']]")" \
		'0/["'"$LCLIENT"'"]'
	sl -j block "${CLIENT4[7]}" --for 2s >/dev/null
	tap_eq "block --for 2s: dropped at once" "$(through "${CLIENT4[7]}" 3)" 0
	sl_stop "$l2"
	sleep 2.1
	tap_eq "--for 2s with no service running: the entry still pinned, and its client's datagrams arrive" \
		"$(pinned_entries sl_block_list)/$(through "${CLIENT4[7]}" 3)" "2/3"
	tap_eq "lists hides the ended entry and removes it" \
		"$(lists_json "len(d['lists'])")/$(pinned_entries sl_block_list)" "1/1"
	lists_service l3 "$SL_TMP/lists.log"
	test_lists_http
	test_lists_bad_input
	test_lists_parallel
	sl_stop "$l3"
	sl detach --all >/dev/null 2>&1 || tap_fail "detach --all"
	sl block "$LCLIENT" >/dev/null 2>&1
	tap_eq "block with nothing loaded: exit 1" "$?" 1
}

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	sl_service_start SVC "$SL_TMP/svc.log"
	test_healthz_ok
	test_reset_client
	test_query_lists_ports
	test_stats_reset
	test_healthz_unavailable
	sl_stop "$SVC"
	tap_eq "the service stopped: exit 0, nothing pinned" "$STOP_RC/$(pins_gone)" "0/gone"
	test_sync_trouble_logged_once
	test_lists
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
