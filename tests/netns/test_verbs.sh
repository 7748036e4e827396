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
#
# Usage: test_verbs.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

sl_init "$build/slicelimit" "$build/tests/sl-traffic"
sl_need curl

API=http://127.0.0.1:8080
CLIENT=${CLIENT4[0]}

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - name: flood
    protocol: udp
    ports: 7001
    limit: 5
    window: 60s
  - name: perport
    protocol: udp
    ports: 7002-7010
    limit: 100
    window: 60s
    key: { per_port: true }
EOF
cat >"$SL_TMP/config.yaml" <<EOF
devices:
  - { name: $VETH_S, mode: xdp-generic }
rules: $SL_TMP/rules.yaml
http:
  listen: 127.0.0.1:8080
  token_file: $SL_API_TOKEN_FILE
EOF

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
	sl_bg svc nsenter --net="/run/netns/$NS_S" "$SL_BIN" run \
		--config "$SL_TMP/sync.yaml" 2>"$SL_TMP/sync.log"
	sl_service_wait "$svc" "$SL_TMP/sync.log"
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

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	sl_bg SVC nsenter --net="/run/netns/$NS_S" "$SL_BIN" run \
		--config "$SL_TMP/config.yaml" 2>"$SL_TMP/svc.log"
	sl_service_wait "$SVC" "$SL_TMP/svc.log"
	test_healthz_ok
	test_reset_client
	test_query_lists_ports
	test_stats_reset
	test_healthz_unavailable
	sl_stop "$SVC"
	tap_eq "the service stopped: exit 0, nothing pinned" "$STOP_RC/$(pins_gone)" "0/gone"
	test_sync_trouble_logged_once
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
