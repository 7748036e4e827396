#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A compromised node, against a running service (node 1, layout bounded)
# over real UDP: node 2's secret key in the attacker's hands, datagrams
# sealed for node 1 with node 2's pair key, every header field chosen
# (sync_forge.py), sent from node 2's configured address and port in the
# client namespace. Node 1's config names three peers, nodes 2, 4 and 5
# at CLIENT4[1], [2] and [7], each with its public key; no real peer
# runs: the test speaks for them, each datagram sealed with its own
# sender's key.
#
#   1. node 2 claims 2^32-1 units for a client: cut to what a node can
#      accept in a round (the even share, 10 of the quota 22), counted;
#      the client still gets through once node 2 is quiet (10 of 20);
#   2. node 2 "restarted" with incarnation 2^64-1: refused (future), and
#      node 2's next datagram of its real incarnation is merged;
#   3. a datagram of node 2 dated 4.9 s ahead is merged; node 1 restarts
#      (sync.state_dir keeps its replay state) and the same bytes again
#      are refused as stale;
#   4. node 2 reports 520 junk clients (the view holds 512): past its
#      share (512 / 4: three peers and node 1's own reports) they are
#      refused and counted against it, and node 4's report of a real
#      client still goes in;
#   5. node 2 claims node ids 100-139: refused as the datagram is opened
#      (rejected_unknown_peer, once each), no slot taken; node 5, heard
#      for the first time, from its own address: in.
#
# Usage: test_sync_peers.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl

API=http://127.0.0.1:8080
FORGE=$here/sync_forge.py
NODE2=${CLIENT4[1]}		# node 2's configured address
NODE4=${CLIENT4[2]}		# node 4's
NODE5=${CLIENT4[7]}		# node 5's: heard only after the strangers
VICTIM=${CLIENT4[3]}		# the client node 2 claims is over its limit
REPLAYED=${CLIENT4[5]}		# the client of the datagram replayed
REAL=${CLIENT4[6]}		# the client node 4 reports after the junk
SYNC=$SRV4:7400

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - name: web
    protocol: udp
    ports: 7001
    limit: 20
    window: 60s
EOF
declare -A PK		# node -> its public key
for n in 1 2 4 5; do
	PK[$n]=$("$SL_BIN" sync keygen --out "$SL_TMP/ident$n") ||
		tap_fail "sync keygen of node $n"
done
write_config() {	# [STATE_DIR line]
	sl_config xdp-generic "$SL_TMP/rules.yaml" "clients: 512
sync:
  node: 1
  layout: bounded
  interval: 200ms
  listen: $SYNC
  peers:
    - {node: 2, address: $NODE2:7400, public_key: ${PK[2]}}
    - {node: 4, address: $NODE4:7400, public_key: ${PK[4]}}
    - {node: 5, address: $NODE5:7400, public_key: ${PK[5]}}
  identity_file: $SL_TMP/ident1
$1"
}

forge() {		# NODE ARGS...: one sync_forge.py send, sealed by node
	local n=$1	# NODE (its own key) and sent from its address
	shift
	in_client "$SL_PY" "$FORGE" send --identity "$SL_TMP/ident$n" \
		--sender "$n" --to-pk "${PK[1]}" --src "$(node_addr "$n"):7400" \
		--dst "$SYNC" "$@"
}

node_addr() {		# NODE: its configured address
	case $1 in
	2) echo "$NODE2" ;;
	4) echo "$NODE4" ;;
	5) echo "$NODE5" ;;
	esac
}

sync_field() {		# EXPR over status -j's sync object
	sl -j status | json_get "(lambda s: $1)(d['sync'])"
}

peer_field() {		# NODE FIELD: a field of a peer in status -j (none: -)
	sync_field "([p.get('$2', '-') for p in s['peers'] if p['node'] == $1] or ['-'])[0]"
}

rule_stat() {		# FIELD: a counter of the rule web
	sl -j stats | json_get "[r['$1'] for r in d['rules'] if r['rule'] == 'web'][0]"
}

# peer_units ADDR: the peers' units node 1's view holds of ADDR
peer_units() {
	bpftool -j map dump pinned "$SL_PIN/sl_peer_view" | "$SL_PY" -c '
import ipaddress, json, sys
want = list(ipaddress.IPv6Address("::ffff:" + sys.argv[1]).packed)
print(sum(s["count"] - s.get("own", 0) for e in json.load(sys.stdin)
          if e["formatted"]["key"]["addr"]["byte"] == want
          for s in e["formatted"]["value"]["slot"]))' "$1"
}

poll() {		# TRIES CMD...: until CMD succeeds, 0.1 s apart
	local n=$1 i
	shift
	for i in $(seq 1 "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

is() { [ "$("${@:2}")" = "$1" ]; }	# WANT CMD...: CMD prints WANT

start_service() {
	sl_bg SVC nsenter --net="/run/netns/$NS_S" "$SL_BIN" run \
		--config "$SL_TMP/config.yaml" 2>>"$SL_TMP/svc.log"
	sl_service_wait "$SVC" "$SL_TMP/svc.log"
}

SEQ2=1			# node 2's next sequence number
INC2=0			# node 2's incarnation (its start, TAI ns)

test_units_cut_to_a_round() {
	local v
	SEQ2=$(forge 2 --node 2 --inc "$INC2" --seq "$SEQ2" \
		--entry "$VICTIM" web 4294967295)
	poll 20 is 10 peer_units "$VICTIM"
	# the counters reach status when the sync thread publishes them,
	# which may be after the view has the units
	poll 20 is 1 sync_field "s.get('clamped_entries')"
	tap_eq "2^32-1 units from node 2: cut to the even share of a round (22 - 2) / 2, counted" \
		"$(peer_units "$VICTIM")/$(sync_field "s.get('clamped_entries')")" "10/1"
	sleep 0.6	# node 2 quiet for two rounds: node 1 decides alone
	v=$(rule_stat passed)
	sl_send "$VICTIM" "$SRV4" 7001 20 >/dev/null || tap_fail "sl-traffic sent 20 from $VICTIM"
	tap_eq "... and $VICTIM still gets the rest of its limit through node 1: 10 of 20" \
		"$(($(rule_stat passed) - v))" 10
}

test_incarnation_far_ahead_refused() {
	local f r m
	f=$(sync_field "s['rejected_future']")
	r=$(sync_field "s['rejected_replayed']")
	m=$(peer_field 2 messages)
	forge 2 --node 2 --inc 18446744073709551615 --seq 1 >/dev/null
	poll 20 is "$((f + 1))" sync_field "s['rejected_future']"
	SEQ2=$(forge 2 --node 2 --inc "$INC2" --seq "$SEQ2")
	poll 20 is "$((m + 1))" peer_field 2 messages
	tap_eq "node 2 at incarnation 2^64-1: refused as from the future; its real incarnation's next datagram merged, none refused as replayed" \
		"$(($(sync_field "s['rejected_future']") - f))/$(($(peer_field 2 messages) - m))/$(($(sync_field "s['rejected_replayed']") - r))" \
		"1/1/0"
}

test_unknown_nodes_do_not_keep_node_5_out() {
	local u
	u=$(sync_field "s['rejected_unknown_peer']")
	forge 2 --node 100-139 --inc "$INC2" --seq 1 >/dev/null
	poll 20 is "$((u + 40))" sync_field "s['rejected_unknown_peer']"
	forge 5 --node 5 --inc "$INC2" --seq 1 >/dev/null
	poll 20 is 1 peer_field 5 messages
	tap_eq "node 2 claiming node ids 100-139: refused as opened (rejected_unknown_peer, once each), no slot; node 5 then, from its own address: heard" \
		"$(($(sync_field "s['rejected_unknown_peer']") - u))/$(peer_field 5 messages)/$(sync_field "len([p for p in s['peers'] if p['node'] >= 100])")" \
		"40/1/0"
}

test_junk_flood_does_not_crowd_out_node_4() {
	SEQ2=$(forge 2 --node 2 --inc "$INC2" --seq "$SEQ2" --junk 520)
	poll 30 is "$((520 - 512 / 4))" peer_field 2 view_refused
	forge 4 --node 4 --inc "$INC2" --seq 1 --entry "$REAL" web 5 >/dev/null
	poll 20 is 5 peer_units "$REAL"
	tap_eq "node 2's 520 junk clients: $((512 / 4)) in (its share: the view's 512 over 4 writers), the rest refused and counted; node 4's report of $REAL: in" \
		"$(peer_field 2 view_refused)/$(sync_field "s.get('peer_view_capped')")/$(peer_units "$REAL")/$(sync_field "s['peer_view_full']")" \
		"$((520 - 512 / 4))/$((520 - 512 / 4))/5/0"
}

test_replayed_after_restart_refused() {
	local i sent
	sent=$(date +%s%3N)
	SEQ2=$(forge 2 --node 2 --inc "$INC2" --seq "$SEQ2" --ahead 4900 \
		--save "$SL_TMP/ahead.bin" --entry "$REPLAYED" web 3)
	poll 20 is 3 peer_units "$REPLAYED"
	tap_eq "a datagram of node 2 dated 4.9 s ahead: merged" "$(peer_units "$REPLAYED")" 3
	sl_stop "$SVC"
	# the bytes again from the moment node 1 starts, every 50 ms, until
	# its sync thread has judged one (refused as stale, or merged)
	sl_bg SVC nsenter --net="/run/netns/$NS_S" "$SL_BIN" run \
		--config "$SL_TMP/config.yaml" 2>>"$SL_TMP/svc.log"
	for i in $(seq 1 100); do
		in_client "$SL_PY" "$FORGE" replay --src "$NODE2:7400" --dst "$SYNC" \
			"$SL_TMP/ahead.bin"
		[ "$(sync_field "s['rejected_stale'] + len(s['peers'])" 2>/dev/null)" \
			-gt 0 ] 2>/dev/null && break
		sleep 0.05
	done
	sl_service_wait "$SVC" "$SL_TMP/svc.log"
	i=$(($(date +%s%3N) - sent))
	# refused before its own date, it cannot be for having been sent
	# before node 1 started: only the replay state refuses it then
	if [ "$i" -lt 4900 ]; then
		diag "node 1 judged it $i ms after it was sent, before its date: the replay state refused it"
	else
		diag "node 1 judged it $i ms after it was sent, past its date: the restart was too slow to tell the replay state from the start's own bound"
	fi
	tap_eq "node 1 restarted: the same bytes again, sent while it starts, are refused as stale and merge nothing" \
		"$(sync_field "s['rejected_stale'] >= 1")/$(peer_units "$REPLAYED")" "True/0"
	# the cost: node 1 takes nothing dated before that datagram's date
	# (what it may have taken before the restart); wait it out
	while [ "$(date +%s%3N)" -le "$((sent + 5000))" ]; do sleep 0.1; done
}

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	mkdir -p "$SL_TMP/state"
	write_config "  state_dir: $SL_TMP/state"
	if ! "$SL_BIN" run --check --config "$SL_TMP/config.yaml" >/dev/null 2>&1; then
		diag "this build takes no sync.state_dir: its replay state is in memory only"
		write_config ""
	fi
	INC2=$(($("$SL_PY" "$FORGE" tai_ns) - 1000000000))
	start_service
	# each case stands on its own on a build without the limits too:
	# the restart (a fresh view) before the junk, the table of node ids
	# filled last
	test_units_cut_to_a_round
	test_incarnation_far_ahead_refused
	test_replayed_after_restart_refused
	test_junk_flood_does_not_crowd_out_node_4
	test_unknown_nodes_do_not_keep_node_5_out
	sl_stop "$SVC"
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
