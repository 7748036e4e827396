#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Secrets and reloads:
#
#   1. The sync identity_file (the node's secret key) is refused when its
#      group or other users may read it (run --check names the field),
#      accepted at mode 0600.
#   2. A reload whose rule apply fails (the new rules need more rule ids
#      than are free beside the running ones) puts back the device it had
#      attached: the service holds what it held, the rules are unchanged,
#      the reload counts as refused; `slicelimit reload` exits 1 with the
#      service's reason.
#   3. A reload that drops a device and adds one: the new one attached,
#      the old one detached once the new rules run; the stop then detaches
#      what the service holds now and unpins.
#      A reload onto a rule file or a config that is not valid exits 1
#      with the file's problems (file, line, field) in its error.
#   4. A config that asks for sync and cannot sync: an identity_file that
#      is missing (a typo), one that holds 3 bytes, a peer list naming this
#      node's own listen address: run --check exits 1 naming the field,
#      and run refuses to start. A service whose sync does not start (its
#      listen address is not on the host) is unhealthy: /healthz 503 with
#      the reason, status --json and /metrics say sync is down; so is one
#      whose rounds stop (the pinned last round made old), until they
#      come again.
#
# Usage: test_reload.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl tc

API=http://127.0.0.1:8080

# rules_file FILE PREFIX N: N rules named PREFIX0.. on one port
rules_file() {
	local i
	{
		echo "rules:"
		for i in $(seq 0 $(($3 - 1))); do
			printf '  - { name: %s%d, protocol: udp, ports: 9000, limit: 10 }\n' "$2" "$i"
		done
	} >"$1"
}

config() {		# FILE RULES DEVICE...
	local f=$1 r=$2 d
	shift 2
	{
		echo "devices:"
		for d; do echo "  - $d"; done
		echo "rules: $r"
		echo "http:"
		echo "  listen: 127.0.0.1:8080"
		echo "  token_file: $SL_API_TOKEN_FILE"
	} >"$f"
}

devices() { sl -j status | json_get "sorted(x['device'] for x in d['devices'])"; }
tc_filters() {		# DEV: our TC filters on DEV's ingress
	in_server tc -j filter show dev "$1" ingress 2>/dev/null |
		json_get "len([f for f in d if f.get('options', {}).get('bpf_name', '').startswith('sl_tc')])" 2>/dev/null || echo 0
}

test_identity_file_mode() {
	local out
	rules_file "$SL_TMP/small.yaml" r 2
	"$SL_BIN" sync keygen --out "$SL_TMP/sync.key" >/dev/null
	PEER_PK=$("$SL_BIN" sync keygen --out "$SL_TMP/peer.key")
	chmod 644 "$SL_TMP/sync.key"
	cat >"$SL_TMP/sync.yaml" <<EOF
rules: $SL_TMP/small.yaml
sync:
  node: 1
  listen: $SRV4:7400
  peers: [{node: 2, address: ${CLIENT4[0]}:7400, public_key: $PEER_PK}]
  identity_file: $SL_TMP/sync.key
EOF
	out=$("$SL_BIN" -j run --check --config "$SL_TMP/sync.yaml" 2>/dev/null)
	tap_eq "run --check of a sync identity at mode 0644 (what umask 022 makes): refused, the field named" \
		"$(printf '%s' "$out" | json_get "[d['ok'], [p['field'] for p in d['problems']]]")" \
		'[false, ["sync.identity_file"]]'
	chmod 640 "$SL_TMP/sync.key"
	out=$("$SL_BIN" -j run --check --config "$SL_TMP/sync.yaml" 2>/dev/null)
	tap_eq "... at mode 0640 (its group may read it): refused" \
		"$(printf '%s' "$out" | json_get "d['ok']")" False
	chmod 600 "$SL_TMP/sync.key"
	out=$("$SL_BIN" -j run --check --config "$SL_TMP/sync.yaml" 2>/dev/null)
	tap_eq "... at mode 0600: valid" "$(printf '%s' "$out" | json_get "d['ok']")" True
}

check_sync() {		# CONFIG: "rc/ok/fields/first message" of run --check --json
	local out rc=0
	out=$("$SL_BIN" -j run --check --config "$1" 2>/dev/null) || rc=$?
	printf '%s/%s' "$rc" "$(printf '%s' "$out" |
		json_get "'%s/%s/%s' % (d['ok'], [p['field'] for p in d['problems']], d['problems'][0]['message'] if d['problems'] else '')")"
}

sync_config() {		# FILE IDENTITY_FILE LISTEN PEER [DEVICE]
	local dev="devices: []"
	[ -z "${5:-}" ] || dev="devices: [{ name: $5, mode: xdp-generic }]"
	cat >"$1" <<EOF
$dev
rules: $SL_TMP/small.yaml
http:
  listen: 127.0.0.1:8080
  token_file: $SL_API_TOKEN_FILE
sync:
  node: 1
  listen: $3
  peers: [{node: 2, address: $4, public_key: $PEER_PK}]
  identity_file: $2
EOF
}

test_sync_that_cannot_run_refused_or_unhealthy() {
	local rc=0 svc code
	sync_config "$SL_TMP/typo.yaml" "$SL_TMP/sync.kye" "$SRV4:7400" "${CLIENT4[0]}:7400"
	tap_eq "run --check, identity_file a typo (sync.kye): exit 1, sync.identity_file named, the file cannot be read" \
		"$(check_sync "$SL_TMP/typo.yaml")" \
		"1/False/['sync.identity_file']/cannot read '$SL_TMP/sync.kye': No such file or directory; the UDP mesh needs this node's secret key"
	(umask 077; printf 'abc' >"$SL_TMP/short.key")
	sync_config "$SL_TMP/short.yaml" "$SL_TMP/short.key" "$SRV4:7400" "${CLIENT4[0]}:7400"
	tap_eq "run --check, a 3-byte key: exit 1, sync.identity_file named, holds no secret key" \
		"$(check_sync "$SL_TMP/short.yaml" | cut -d: -f1)" \
		"1/False/['sync.identity_file']/'$SL_TMP/short.key' holds no secret key"
	sync_config "$SL_TMP/self.yaml" "$SL_TMP/sync.key" "$SRV4:7400" "$SRV4:7400"
	tap_eq "run --check, peers naming this node's own listen address: exit 1, sync.peers[0].address named" \
		"$(check_sync "$SL_TMP/self.yaml")" \
		"1/False/['sync.peers[0].address']/'$SRV4:7400' is this node's own sync.listen: list the other nodes only"
	timeout 20 nsenter --net="/run/netns/$NS_S" "$SL_BIN" run \
		--config "$SL_TMP/typo.yaml" 2>"$SL_TMP/typo.log" || rc=$?
	tap_eq "run with the typo'd identity_file: refused at start (exit 1), nothing pinned" \
		"$rc/$(pins_gone)" "1/gone"

	# 192.0.2.99 is on no interface: the sync socket cannot bind
	sync_config "$SL_TMP/nobind.yaml" "$SL_TMP/sync.key" "192.0.2.99:7400" \
		"${CLIENT4[0]}:7400" "$VETH_S"
	sl_service_start svc "$SL_TMP/nobind.log" "$SL_TMP/nobind.yaml"
	code=$(in_server curl -s -m 2 -o "$SL_TMP/healthz.json" -w '%{http_code}' "$API/healthz")
	tap_eq "a service whose sync cannot start: /healthz 503, the reason says sync is down and why" \
		"$code/$(json_get "d['reason']" "$SL_TMP/healthz.json")" \
		"503/sync is down: cannot listen on 192.0.2.99:7400: Cannot assign requested address"
	tap_eq "... status --json: the service wants sync, sync_down says why" \
		"$(service_state "[s['sync_wanted'], s['sync_down']]")" \
		'[true, "cannot listen on 192.0.2.99:7400: Cannot assign requested address"]'
	tap_eq "... /metrics: slicelimit_sync_up 0" \
		"$(in_server curl -s -m 2 "$API/metrics" | awk '$1 == "slicelimit_sync_up" { print $2 }')" 0
	sl_stop "$svc"
	tap_eq "... it stops cleanly" "$STOP_RC/$(pins_gone)" "0/gone"
}

# set_last_round MS: the pinned sync status's updated_ms (TAI ms of the
# last round, at byte 16 of struct sl_sync_status) made MS
set_last_round() {
	local pin=/sys/fs/bpf/slicelimit/sl_sync_status
	# shellcheck disable=SC2046
	bpftool map update pinned "$pin" key 0 0 0 0 value $(bpftool -j map lookup \
		pinned "$pin" key 0 0 0 0 | "$SL_PY" -c 'import json, struct, sys
v = [int(x, 16) for x in json.load(sys.stdin)["value"]]
v[16:24] = struct.pack("<Q", int(sys.argv[1]))
print(" ".join(str(b) for b in v))' "$1")
}

tai_ms() { "$SL_PY" -c 'import time; print(int(time.clock_gettime(time.CLOCK_TAI) * 1000))'; }

# A sync that started and whose rounds stop is down as well: its rounds
# are every 60 s (at multiples of 60 s of TAI), and the last one is made
# to look 1970's, between two of them
test_sync_rounds_stopped_is_down() {
	local svc code i
	sync_config "$SL_TMP/slow.yaml" "$SL_TMP/sync.key" "$SRV4:7400" \
		"${CLIENT4[0]}:7400" "$VETH_S"
	sed -i 's/^  node: 1$/  node: 1\n  interval: 60s/' "$SL_TMP/slow.yaml"
	sl_service_start svc "$SL_TMP/slow.log" "$SL_TMP/slow.yaml"
	tap_eq "a service whose sync runs: status --json sync_down null, /metrics slicelimit_sync_up 1" \
		"$(service_state "s['sync_down']")/$(in_server curl -s -m 2 "$API/metrics" | awk '$1 == "slicelimit_sync_up" { print $2 }')" \
		"null/1"
	# not within 5 s of a round
	while [ $(( $(tai_ms) % 60000 )) -gt 55000 ]; do sleep 0.5; done
	set_last_round 1
	wait_state "s['sync_down']" "its rounds stopped (none for over 180000 ms)" ||
		tap_fail "status shows the stopped rounds within 5 s"
	code=$(in_server curl -s -m 2 -o "$SL_TMP/healthz.json" -w '%{http_code}' "$API/healthz")
	tap_eq "its rounds stopped: status --json sync_down says so, /healthz 503, /metrics slicelimit_sync_up 0" \
		"$(service_state "s['sync_down']")/$code/$(in_server curl -s -m 2 "$API/metrics" | awk '$1 == "slicelimit_sync_up" { print $2 }')" \
		"its rounds stopped (none for over 180000 ms)/503/0"
	set_last_round "$(tai_ms)"
	wait_state "s['sync_down']" null ||
		tap_fail "status shows the rounds again within 5 s"
	code=$(in_server curl -s -m 2 -o /dev/null -w '%{http_code}' "$API/healthz")
	tap_eq "... rounds again: sync_down null, /healthz 200, slicelimit_sync_up 1" \
		"$(service_state "s['sync_down']")/$code/$(in_server curl -s -m 2 "$API/metrics" | awk '$1 == "slicelimit_sync_up" { print $2 }')" \
		"null/200/1"
	sl_stop "$svc"
}

test_failed_reload_puts_devices_back() {
	local e0 rc=0
	rules_file "$SL_TMP/rules.yaml" r 1024
	rules_file "$SL_TMP/other.yaml" s 1024
	config "$SL_TMP/config.yaml" "$SL_TMP/rules.yaml" "{ name: $VETH_S, mode: xdp-generic }"
	sl_service_start SVC "$SL_TMP/svc.log"
	e0=$(sl -j status | json_get "d['rules_epoch']")
	# lo too, and 1024 rules of other names: no free ids beside the running
	config "$SL_TMP/config.yaml" "$SL_TMP/other.yaml" \
		"{ name: $VETH_S, mode: xdp-generic }" "{ name: lo, mode: tc }"
	kill -HUP "$SVC"
	wait_state "s['reloads_refused']" 1 ||
		tap_fail "the SIGHUP whose apply fails is counted refused within 5 s"
	tap_eq "... the device it attached is detached again: the service holds $VETH_S only, no filter on lo" \
		"$(devices)/$(tc_filters lo)/$(service_state "[x for x in [s['reloads_applied'], s['reloads_refused']]]")" \
		"[\"$VETH_S\"]/0/[0, 1]"
	tap_eq "... the running rules unchanged (epoch, r0 first)" \
		"$(sl -j status | json_get "d['rules_epoch']")/$(sl -j rules list | json_get "d['rules'][0]['name']")" \
		"$e0/r0"
	sl -j reload >"$SL_TMP/reload.json" 2>/dev/null || rc=$?
	tap_eq "slicelimit reload of the same: exit 1 with the service's reason, refused twice now" \
		"$rc/$(json_get "'cannot apply' in d['error']" "$SL_TMP/reload.json")/$(service_state "s['reloads_refused']")/$(devices)" \
		"1/True/2/[\"$VETH_S\"]"
}

test_reload_swaps_devices() {
	local rc=0
	config "$SL_TMP/config.yaml" "$SL_TMP/rules.yaml" "{ name: lo, mode: tc }"
	sl -j reload >/dev/null 2>&1 || rc=$?
	tap_eq "slicelimit reload, config dropping $VETH_S and adding lo: exit 0, lo attached (its filter there), $VETH_S detached" \
		"$rc/$(devices)/$(tc_filters lo)/$(in_server ip -j -d link show "$VETH_S" | json_get "'xdp' in d[0]")" \
		"0/[\"lo\"]/1/False"
	printf 'rules:\n  - name: bad\n    limit: 0\n' >"$SL_TMP/bad.yaml"
	config "$SL_TMP/config.yaml" "$SL_TMP/bad.yaml" "{ name: lo, mode: tc }"
	rc=0
	sl -j reload >"$SL_TMP/reload.json" 2>/dev/null || rc=$?
	tap_eq "slicelimit reload onto a rule file that is not valid: exit 1, the error carries its problems (file, line, field)" \
		"$rc/$(json_get "[(p['file'], p['line'], p['field']) for p in d['problems']]" "$SL_TMP/reload.json")" \
		"1/[[\"$SL_TMP/bad.yaml\", 3, \"limit\"]]"
	printf 'rules: %s\nclients: many\n' "$SL_TMP/rules.yaml" >"$SL_TMP/config.yaml"
	rc=0
	sl -j reload >"$SL_TMP/reload.json" 2>/dev/null || rc=$?
	tap_eq "... onto a config that is not valid: exit 1, its problems (file, line, field)" \
		"$rc/$(json_get "[(p['file'], p['line'], p['field']) for p in d['problems']]" "$SL_TMP/reload.json")" \
		"1/[[\"$SL_TMP/config.yaml\", 2, \"clients\"]]"
	config "$SL_TMP/config.yaml" "$SL_TMP/rules.yaml" "{ name: lo, mode: tc }"
	sl_stop "$SVC"
	tap_eq "the stop detaches what the service holds now (lo) and unpins" \
		"$STOP_RC/$(tc_filters lo)/$(pins_gone)" "0/0/gone"
}

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	test_identity_file_mode
	test_sync_that_cannot_run_refused_or_unhealthy
	test_sync_rounds_stopped_is_down
	test_failed_reload_puts_devices_back
	test_reload_swaps_devices
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
