#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Several nodes counting the same clients together (sync: delayed-sync over
# UDP, every 200 ms), on real traffic.
#
# The fleet (multinode_lib.sh): each node a network and a mount namespace
# running `slicelimit run`, syncing over a bridge; the client namespace
# reaches every node with the same source addresses.
#
#   1. at start every node hears all its peers;
#   2. a client flooding all nodes at once at 9 x its limit rate gets at
#      most 1.1 x its limit through, fleet-wide, in every window, and not
#      less than half of it;
#   3. a compliant client (80 % of its limit, spread over the nodes) loses
#      nothing through the flood, the kill, the restart and the partition;
#   4. kill -9 of a daemon mid-flood: its XDP program keeps enforcing with
#      the pinned maps; the restart adopts them (log, same program), is
#      heard again, reports what the node accepted while its daemon was
#      dead, and not again what its peers already had;
#   5. a node cut off the sync link is seen down by its peers, fails open
#      for a compliant client, and is seen up once reconnected;
#   6. only configured peers are admitted, each proving who it is: a
#      datagram sealed by node 3 claiming node 2, one sealed with a random
#      key (both sent from node 2's own address and port), node 2's
#      correctly sealed datagram sent from another address or port, an
#      unconfigured node id (no peer slot taken), malformed and replayed
#      datagrams are each counted by their reason and change no count; a
#      real datagram of node 2 carries no client address in clear; and at
#      the end node 2's correctly sealed claim is merged (the control).
#
# Why a 20 s window, and so a one-minute test: between two rounds every
# node accepts the headroom it last saw, so delayed sync lets through about
# what the other nodes accept in half an interval: (N-1)/N x 9 L/W x 0.1 s,
# 3.4 % of the limit at W = 20 s, but 14 % at W = 5 s, where no
# implementation of the layout could keep 1.1 x (the design study sizes it
# for W = 60 s, where it is 1 %).
#
# Why delayed-sync and not `layout: bounded` (the all-node burst under
# bounded is test_bounded_burst.sh): run with SL_LAYOUT=bounded, the
# compliant client still loses nothing, and the flood stays within 1.1 x
# (208 and 207 of 220 per window), but 7 checks fail, each a new client
# sent to one node at once (the 'exact' rule's 50, 60, 100 of 100): bounded
# passes a first contact only 1.1 x limit / 4 nodes (27) until the next
# round shows where the client is, which is that layout's documented price
# (include/sl_peer.h), not what these phases check.
#
# Usage: test_multinode.sh BUILD_DIR   (prints TAP lines: ok - / not ok -)
#        SL_NODES=8 test_multinode.sh BUILD_DIR   (3..16 nodes; default 4)
#        SL_LAYOUT=bounded test_multinode.sh BUILD_DIR   (the nodes' layout)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}"
# shellcheck source=multinode_lib.sh
. "$here/multinode_lib.sh"
mn_init
ROGUE=10.98.0.99		# the client namespace's address on the bridge
DEAD=$NODES			# the node whose daemon is killed
CUT=3				# the node cut off the sync link

# Rule 'flood' (port 9) is the one the flood and the compliant client run
# against. Rule 'exact' (port 11) has a 60 s window: nothing ages out while
# the test runs, so its counts are exact.
W=20
LIMIT=200
FLOOD_PPS=$((9 * LIMIT / W))		# fleet-wide: 9 x the limit rate
STEADY_PPS=$((8 * LIMIT / W / 10))	# fleet-wide: 80 % of the limit rate
FLOOD_S=$((2 * W + 3))			# the flood: two windows, and the kill
KILL_AT=$((2 * W)).5			# after two whole windows
STEADY_S=$((2 * W + 8))			# the compliant client: past the restart
# Peers' units used to count from the start of the peer slice (W / 15,
# aligned to the TAI epoch) in which they were accepted, so they left the
# peer view up to one slice before they left the window (1.34 x here). The
# flood starts 43 % into a slice, where that mattered most (a flood
# starting with a slice, as the design study's Model B trace does, hid
# it).
PEER_SLICE_MS=$(((W * 1000 + 14) / 15))
ALIGN_MS=$((PEER_SLICE_MS * 43 / 100))

FLOOD=10.97.0.5			# abusive, towards every node
STEADY=10.97.0.6		# compliant, towards every node, then node $CUT
FRESH=10.97.0.7			# forged counts claim it is over its limit
CONTROL=10.97.0.8		# correctly sealed counts say it is over its limit
BURST=10.97.0.9			# at node $DEAD while its daemon is dead
REPORTED=10.97.0.10		# reported before the kill: counted once

# ---- setup ----

setup_network() {
	mn_setup_network "$FLOOD" "$STEADY" "$FRESH" "$CONTROL" "$BURST" "$REPORTED"
	# the client on the sync link too: the forger
	ip link add rogue netns "$NS_C" type veth peer name prg netns "$NS_B" ||
		die "cannot create the rogue link"
	ip -n "$NS_B" link set prg master br0 up
	ip -n "$NS_C" addr add "$ROGUE/24" dev rogue
	ip -n "$NS_C" link set rogue up
}

write_configs() {
	cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - { name: flood, protocol: udp, ports: 9, limit: $LIMIT, window: ${W}s }
  - { name: exact, protocol: udp, ports: 11, limit: 100, window: 60s }
EOF
	mn_write_configs "${SL_LAYOUT:-delayed-sync}"
}

# ---- 2. the flood (with 3. the compliant client alongside) ----

T_START=""			# when the senders started (now_s)
T_KILL=""			# when node $DEAD's daemon was killed
PROG_BEFORE=""			# the XDP program on node $DEAD before the kill

flood_start() {
	local i rate steady_rate count steady_count
	rate=$(awk -v a="$FLOOD_PPS" -v n="$NODES" 'BEGIN { print a / n }')
	steady_rate=$(awk -v a="$STEADY_PPS" -v n="$NODES" 'BEGIN { print a / n }')
	count=$(awk -v r="$rate" -v s="$FLOOD_S" 'BEGIN { printf "%d", r * s }')
	steady_count=$(awk -v r="$steady_rate" -v s="$STEADY_S" 'BEGIN { printf "%d", r * s }')
	for i in $(seq 1 "$NODES"); do recv_ts_start "$i" 9 rx 90; done
	diag "flood: $FLOOD to each of the $NODES nodes at $rate pps ($FLOOD_PPS fleet-wide: 9 x $LIMIT/${W}s) for ${FLOOD_S}s, from ${ALIGN_MS} ms into a ${PEER_SLICE_MS} ms peer slice; $STEADY to each at $steady_rate pps ($STEADY_PPS fleet-wide: 80 % of its limit) for ${STEADY_S}s"
	"$SL_PY" "$MN_PY" align "$PEER_SLICE_MS" "$ALIGN_MS"
	T_START=$(now_s)
	for i in $(seq 1 "$NODES"); do
		send_bg "flood$i" "$FLOOD" "$i" 9 "$count" "$rate"
		send_bg "steady$i" "$STEADY" "$i" 9 "$steady_count" "$steady_rate"
	done
}

# flood_check: after the senders are done and the receivers stopped
flood_check() {
	local i v t0 res sent=0 bad=""
	# 3. the compliant client at every node, through all of it
	for i in $(seq 1 "$NODES"); do
		[ "$(rx_count rx "$i" "$STEADY")" = "$(sent_by "steady$i")" ] ||
			bad="$bad node $i: $(rx_count rx "$i" "$STEADY") of $(sent_by "steady$i");"
	done
	tap_eq "compliant: $STEADY ($STEADY_PPS pps fleet-wide) lost nothing at any node through the flood, the kill and the restart" \
		"${bad:- none lost}" " none lost"

	# The accounting. Every datagram XDP passes reaches the node's
	# receiver, which keeps the kernel's time of it: checked here, the
	# receivers got exactly the rule's passed counter on every node.
	bad=""
	for i in $(seq 1 "$NODES"); do
		v=$(rule_stat "$i" flood passed)
		[ "$(rx_count rx "$i")" = "$v" ] || bad="$bad node $i: received $(rx_count rx "$i"), passed $v;"
	done
	tap_eq "accounting: every node's receiver got exactly what its XDP program passed (rule flood: passed)" \
		"${bad:- all equal}" " all equal"

	# Honest nodes each accept at most what a node may of a client, so
	# no peer's entry was cut, however many rounds it was spread over
	# (the cut is over what the view still counts of a peer).
	bad=""
	for i in $(seq 1 "$NODES"); do
		v=$(sln "$i" -j status | json_get "d['sync']['clamped_entries']")
		[ "$v" = 0 ] || bad="$bad node $i: $v;"
	done
	tap_eq "honest: no node cut a peer's entry through the flood, the kill and the restart (clamped_entries)" \
		"${bad:- none cut}" " none cut"

	# The windows start at the first flood datagram to arrive anywhere
	# (the namespaces share one clock) and end at the kill: after it, node
	# $DEAD counts alone (fail open, by design). 'fixed' counts each whole
	# window [t0 + kW, t0 + (k+1)W); 'sliding_max' is the busiest interval
	# (t - W, t]. The limit is sliding: every such interval must hold it,
	# the fixed ones among them.
	t0=$(first_arrival rx "$FLOOD")
	res=$(fleet_windows "$W" "$FLOOD" "$t0" "$T_KILL" rx)
	for i in $(seq 1 "$NODES"); do
		sent=$((sent + $(sent_by "flood$i")))
	done
	diag "flood: $sent sent; the first arrived $(ms_between "$T_START" "$t0") ms after the senders started"
	diag "flood: fleet-wide per ${W}s window: $(json_get "d['fixed']" <<<"$res"); busiest ${W}s interval: $(json_get "d['sliding_max']" <<<"$res"); first window: $(json_get "d['first_half']" <<<"$res") in its first half, $(json_get "d['early']" <<<"$res") in its second (before anything accepted could have aged out)"
	diag "flood: passed per node (node $DEAD's with the burst after the kill):$(for i in $(seq 1 "$NODES"); do printf ' %s' "$(rx_count rx "$i" "$FLOOD")"; done)"
	v=$(awk -v l="$LIMIT" -v s="$FLOOD_S" -v w="$W" 'BEGIN { printf "%d", l * s / w }')
	if [ "$sent" -ge $((8 * v)) ]; then
		tap_ok "flood: $sent datagrams sent in ${FLOOD_S}s, over 8 x the $v the limit allows"
	else
		tap_fail "flood: over 8 x the $v the limit allows were sent in ${FLOOD_S}s" "sent $sent"
	fi
	if [ "$(json_get "len(d['fixed'])" <<<"$res")" -ge 2 ]; then
		tap_ok "flood: the span before the kill holds $(json_get "len(d['fixed'])" <<<"$res") whole ${W}s windows"
	else
		tap_fail "flood: the span before the kill holds 2 whole ${W}s windows" "$res"
	fi
	# Any W-long interval, not only the windows: where counts age out,
	# every node takes the headroom until the next round, delayed sync's
	# own overshoot, which the 1.1 x leaves room for but a loaded
	# machine's lag can push past (rounds_bound)
	windows_check flood "$res" "$LIMIT" "$(rounds_bound "$LIMIT" "$FLOOD_PPS")" \
		"delayed sync's bound"
}

# ---- 4. kill -9 mid-flood, and the restart ----

test_kill9_keeps_enforcing() {
	local rc v pass drop
	# 60 of the 'exact' limit at node $DEAD, reported to its peers before
	# the kill: the restart must not report them again
	send "$REPORTED" "$DEAD" 11 60 --rate 0 || tap_fail "sl-traffic sent 60 from $REPORTED"
	poll 3 peer_units_is 1 "$REPORTED" 60
	tap_eq "before the kill node 1's peer view holds the 60 units of $REPORTED that node $DEAD accepted" \
		"$(peer_units 1 "$REPORTED")" 60

	sleep_until "$(awk -v a="$T_START" -v b="$KILL_AT" 'BEGIN { printf "%.3f", a + b }')"
	PROG_BEFORE=$(prog_id "$DEAD")
	T_KILL=$(now_s)
	kill -KILL "${DAEMON[DEAD]}"
	rc=0
	{ sl_wait "${DAEMON[DEAD]}" || rc=$?; } 2>/dev/null	# no "Killed" from bash
	tap_eq "kill -9 of node $DEAD's daemon $(ms_between "$T_START" "$T_KILL") ms into the flood (exit 137)" "$rc" 137

	# a client no peer has counted gets exactly the limit through
	v=$(rule_stat "$DEAD" exact passed)
	send "$BURST" "$DEAD" 11 150 --rate 0 || tap_fail "sl-traffic sent 150 from $BURST"
	tap_eq "daemon dead: node $DEAD's XDP program still enforces with the pinned maps ($BURST: 100 of 150 through)" \
		"$(stat_delta "$DEAD" exact passed "$v")" 100
	# and the flooding client, over its limit at node $DEAD alone: at most
	# the limit of 2 x the limit sent at once (with the flood still
	# running) gets through
	pass=$(rule_stat "$DEAD" flood passed)
	drop=$(rule_stat "$DEAD" flood dropped)
	send "$FLOOD" "$DEAD" 9 $((2 * LIMIT)) --rate 2000 ||
		tap_fail "sl-traffic sent $((2 * LIMIT)) from $FLOOD"
	pass=$(stat_delta "$DEAD" flood passed "$pass")
	drop=$(stat_delta "$DEAD" flood dropped "$drop")
	if [ "$pass" -le "$LIMIT" ] && [ "$drop" -ge "$LIMIT" ]; then
		tap_ok "daemon dead: node $DEAD's XDP program keeps dropping $FLOOD ($((2 * LIMIT)) more at once: $pass passed, $drop dropped)"
	else
		tap_fail "daemon dead: node $DEAD's XDP program keeps dropping $FLOOD ($((2 * LIMIT)) more at once: at most $LIMIT pass)" \
			"$pass passed, $drop dropped"
	fi
}

test_restart_adopts_and_is_heard() {
	local i v
	for i in $(seq 1 "$NODES"); do
		v=flood$i
		sl_wait "${!v}" || tap_fail "sl-traffic sent all of the flood to node $i"
	done
	if poll 5 seen_by_others "$DEAD" False; then
		tap_ok "its peers show node $DEAD down (${POLL_MS} ms after the flood ended)"
	else
		tap_fail "its peers show node $DEAD down within 5 s" "$POLL_OUT"
	fi

	tap_eq "dead: node $DEAD's status --json still shows the device its daemon attached, and that daemon gone" \
		"$(sln "$DEAD" -j status | json_get "[[x['device'], x['service']] for x in d['devices']] + [d['service']['running']]")" \
		'[["data", "attached"], false]'

	# the same config, in the same mount namespace
	start_daemon "$DEAD"
	wait_daemon "$DEAD"
	tap_eq "restart: status --json shows the new daemon running, and data adopted, not attached again" \
		"$(sln "$DEAD" -j status | json_get "[[x['device'], x['service']] for x in d['devices']] + [d['service']['pid'], d['service']['running']]")" \
		"[[\"data\", \"adopted\"], ${DAEMON[DEAD]}, true]"
	tap_eq "restart: the same XDP program on node $DEAD ($PROG_BEFORE), as status shows it too" \
		"$(prog_id "$DEAD")/$(sln "$DEAD" -j status | json_get "[x['prog_id'] for x in d['devices']]")" \
		"$PROG_BEFORE/[$PROG_BEFORE]"
	if poll 5 seen_by_others "$DEAD" True; then
		tap_ok "restart: its peers hear node $DEAD again (after ${POLL_MS} ms)"
	else
		tap_fail "restart: its peers hear node $DEAD again within 5 s" "$POLL_OUT"
	fi
	if poll 5 sees_all_peers "$DEAD"; then
		tap_ok "restart: node $DEAD hears all its peers (after ${POLL_MS} ms)"
	else
		tap_fail "restart: node $DEAD hears all its peers within 5 s" "$(peers_up "$DEAD")"
	fi
	tap_eq "restart: node $DEAD does not report again what its peers had (node 1's view of $REPORTED: 60)" \
		"$(peer_units 1 "$REPORTED")" 60
	v=$(rule_stat 1 exact passed)
	send "$REPORTED" 1 11 30 || tap_fail "sl-traffic sent 30 from $REPORTED"
	tap_eq "restart: so $REPORTED, at 60 + 30 of 100, gets all 30 through node 1" \
		"$(stat_delta 1 exact passed "$v")" 30
	poll 2 peer_units_is 2 "$BURST" 100
	tap_eq "restart: node $DEAD reports what it accepted while its daemon was dead (node 2's view of $BURST: 100)" \
		"$(peer_units 2 "$BURST")" 100
	v=$(rule_stat 2 exact dropped)
	send "$BURST" 2 11 20 || tap_fail "sl-traffic sent 20 from $BURST"
	tap_eq "restart: so $BURST, at its limit through node $DEAD, is dropped at node 2 (20 of 20)" \
		"$(stat_delta 2 exact dropped "$v")" 20
}

flood_finish() {
	local i v
	for i in $(seq 1 "$NODES"); do
		v=steady$i
		sl_wait "${!v}" || tap_fail "sl-traffic sent all of $STEADY to node $i"
	done
	recv_ts_stop
}

# ---- 5. partition ----

test_partition_fails_open() {
	local v d count=$((STEADY_PPS * 3))
	ip -n "$NS_B" link set "p$CUT" down
	# up: heard within 3 intervals (600 ms)
	if poll 3 seen_by_others "$CUT" False; then
		tap_ok "partition: node $CUT's peers show it down ${POLL_MS} ms after its bridge port went down"
	else
		tap_fail "partition: node $CUT's peers show it down within 3 s" "$POLL_OUT"
	fi
	if poll 3 sees_no_peer "$CUT"; then
		tap_ok "partition: node $CUT sees no peer up (after ${POLL_MS} ms)"
	else
		tap_fail "partition: node $CUT sees no peer up within 3 s" "$(peers_up "$CUT")"
	fi
	v=$(rule_stat "$CUT" flood passed)
	d=$(rule_stat "$CUT" flood dropped)
	send "$STEADY" "$CUT" 9 "$count" --rate "$STEADY_PPS" ||
		tap_fail "sl-traffic sent $count from $STEADY"
	tap_eq "partition: $STEADY, now only to node $CUT at $STEADY_PPS pps (80 % of its limit), gets all $count through (fail open)" \
		"$(stat_delta "$CUT" flood passed "$v")/$(stat_delta "$CUT" flood dropped "$d")" "$count/0"
	ip -n "$NS_B" link set "p$CUT" up
	if poll 5 seen_by_others "$CUT" True; then
		tap_ok "reconnected: node $CUT's peers show it up again (after ${POLL_MS} ms)"
	else
		tap_fail "reconnected: node $CUT's peers show it up again within 5 s" "$POLL_OUT"
	fi
	if poll 5 sees_all_peers "$CUT"; then
		tap_ok "reconnected: node $CUT sees all its peers up again (after ${POLL_MS} ms)"
	else
		tap_fail "reconnected: node $CUT sees all its peers up again within 5 s" "$(peers_up "$CUT")"
	fi
}

# ---- 6. who may send: forged, unknown, misplaced, malformed, replayed ----

REASONS="forged malformed replayed unknown_peer wrong_address"
rejected() {		# I: node I's refusals, by REASONS, "/"-separated
	sln "$1" -j status | json_get "'/'.join('%d' % d['sync']['rejected_' + r] for r in '$REASONS'.split())"
}

rejected_is() { [ "$(rejected "$1")" = "$2" ]; }

forge() {		# KIND ARGS...: one datagram from the client to node 1
	in_client "$SL_PY" "$MN_PY" send "$(node_sync 1)" "$SYNC_PORT" "$@"
}

# as_node2 PORT KIND ARGS...: one datagram to node 1 from node 2's own
# address (its sync port is the daemon's: bound beside it)
as_node2() {
	local port=$1
	shift
	nsenter --net="/run/netns/${NS_N[2]}" "$SL_PY" "$MN_PY" send \
		--from "$(node_sync 2):$port" "$(node_sync 1)" "$SYNC_PORT" "$@"
}

peer_ids() {		# I: the node ids in node I's peer table
	sln "$1" -j status | json_get "' '.join(str(p['node']) for p in d['sync']['peers'])"
}

test_only_configured_peers_admitted() {
	local before f m r u a want v ids
	# a real message of node 2 to node 1 that carries entries (the flood
	# runs), taken off the bridge
	if ! nsenter --net="/run/netns/$NS_B" "$SL_PY" "$MN_PY" capture p2 \
		"$(node_sync 1)" "$SYNC_PORT" 3 "$SL_TMP/captured.bin" 100; then
		tap_fail "captured a message of node 2 to node 1 on the bridge"
		return
	fi
	if "$SL_PY" "$MN_PY" absent "$SL_TMP/captured.bin" "$FLOOD" "$STEADY" \
		>"$SL_TMP/captured.hex"; then
		tap_ok "wire: node 2's datagram to node 1 ($(stat -c %s "$SL_TMP/captured.bin") bytes) holds neither $FLOOD nor $STEADY in clear"
	else
		tap_fail "wire: node 2's datagram to node 1 holds no client address in clear" \
			"$(cat "$SL_TMP/captured.hex")"
	fi
	sleep 0.2		# the original has long arrived
	before=$(rejected 1)
	ids=$(peer_ids 1)
	IFS=/ read -r f m r u a <<<"$before"
	# node 3's key, node 2's id, from node 2's address and port
	as_node2 "$SYNC_PORT" sealed "$SL_TMP/ident3" 3 "${PUBKEY[1]}" 1 2 \
		"$FRESH" exact 1000
	as_node2 "$SYNC_PORT" forged 2 "$FRESH" exact 1000	# a random key
	# node 2's own seal, but not from node 2's sync address
	forge sealed "$SL_TMP/ident2" 2 "${PUBKEY[1]}" 1 2 "$FRESH" exact 1000
	as_node2 $((SYNC_PORT + 1)) sealed "$SL_TMP/ident2" 2 "${PUBKEY[1]}" 1 2 \
		"$FRESH" exact 1000
	# a node id no config names, sealed by node 3
	forge sealed "$SL_TMP/ident3" 3 "${PUBKEY[1]}" 1 77 "$FRESH" exact 1000
	forge garbage 200			# no magic
	forge garbage 20			# shorter than a header and a tag
	forge truncated 2			# a heartbeat cut to 40 bytes
	forge garbage 1460			# longer than SL_WIRE_MAX (1452)
	# node 2's, a second time, from where it came
	as_node2 "$SYNC_PORT" replay "$SL_TMP/captured.bin"
	want="$((f + 2))/$((m + 4))/$((r + 1))/$((u + 1))/$((a + 2))"
	poll 3 rejected_is 1 "$want"
	diag "node 1 rejected ($REASONS): $before before, $(rejected 1) after; the replayed datagram had $(stat -c %s "$SL_TMP/captured.bin") bytes"
	tap_eq "sync port: 2 forged (node 3's key claiming node 2, a random key), 4 malformed, 1 replayed, 1 from an unknown node id, 2 from a wrong address (node 2's seal from the client, from node 2's other port), each counted as such" \
		"$(rejected 1)" "$want"
	tap_eq "unknown node id 77: no peer slot taken on node 1" \
		"$(peer_ids 1)" "$ids"
	tap_eq "forged: node 1's peer view holds nothing of $FRESH" "$(peer_units 1 "$FRESH")" 0
	v=$(rule_stat 1 exact passed)
	send "$FRESH" 1 11 50 || tap_fail "sl-traffic sent 50 from $FRESH"
	tap_eq "forged: $FRESH, claimed 1000 over its limit, still gets 50 of 50 through node 1" \
		"$(stat_delta 1 exact passed "$v")" 50
}

# The control, last (its fresh incarnation of node 2 makes node 1 refuse
# the real node 2's older one from then on): the same claim, sealed by
# node 2 and sent from its address, is taken; so the refused ones would
# have counted, had they been accepted. Taken as a node's round can be:
# cut to the limit and the predictive margin's fiftieth (100 + 2), what
# one node can accept in a round (clamped_entries).
test_sealed_claim_merged() {
	local v
	as_node2 "$SYNC_PORT" sealed "$SL_TMP/ident2" 2 "${PUBKEY[1]}" 1 2 \
		"$CONTROL" exact 1000
	poll 2 peer_units_is 1 "$CONTROL" 102
	v=$(rule_stat 1 exact dropped)
	send "$CONTROL" 1 11 20 || tap_fail "sl-traffic sent 20 from $CONTROL"
	tap_eq "control: the same claim for $CONTROL sealed by node 2, from its address, is merged (cut to 102, what a node accepts in a round) and drops 20 of 20" \
		"$(peer_units 1 "$CONTROL")/$(stat_delta 1 exact dropped "$v")" "102/20"
}

main() {
	local start=$SECONDS t
	setup_network
	write_configs
	mn_fleet_start
	diag "startup: $((SECONDS - start))s"; t=$SECONDS
	flood_start
	test_only_configured_peers_admitted
	test_kill9_keeps_enforcing
	test_restart_adopts_and_is_heard
	flood_finish
	flood_check
	diag "flood, forged datagrams, kill -9, restart: $((SECONDS - t))s"; t=$SECONDS
	test_partition_fails_open
	diag "partition: $((SECONDS - t))s"
	test_sealed_claim_merged
	tap_elapsed "$start" 85
	tap_done
}

sl_run main
