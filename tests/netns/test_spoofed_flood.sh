#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A spoofed random-source flood over a real veth pair must not reset what
# slicelimit knows of a client. Rule: udp port 9020, limit 100 per 10
# minutes. A real client sends 150 (100 pass); then two
# `hping3 --rand-source --flood` senders (one per CPU) send to the same
# port for a bounded time, each packet from a new random source; then the
# client sends 150 more. In one window it may pass at most 100 + 10 of
# the 300. The client table is made small (--clients 1024) so that, before
# probation, a few seconds of flood evicted the client and it passed 100
# again.
#
# Usage: test_spoofed_flood.sh BUILD_DIR      (prints TAP lines)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" hping3 taskset timeout

PORT=9020
LIMIT=100
BURST=150
CLIENTS=1024		# the client table
FLOOD_SECONDS=${SL_FLOOD_SECONDS:-3}
CLIENT=${CLIENT4[0]}

# stat EXPR: EXPR over stats --json's "global" object g
stat() {
	sl -j stats | json_get "(lambda g: $1)(d['global'])"
}

# burst NAME: BURST datagrams from the client, counted by a receiver
# NAME that runs only meanwhile (the flood's sources are not counted)
burst() {
	local out
	sl_recv_start "$1" udp "$SRV4" "$PORT" 20
	out=$(sl_send "$CLIENT" "$SRV4" "$PORT" "$BURST" 2>&1) ||
		tap_fail "sl-traffic sent all $BURST datagrams from $CLIENT" "$out"
	sl_recv_stop "$1"
}

# flood: two spoofed random-source senders, one per CPU, for
# FLOOD_SECONDS (timeout ends them; sl_wait reaps them)
flood() {
	local cpu pids=() p
	for cpu in 0 1; do
		sl_bg p nsenter --net="/run/netns/$NS_C" taskset -c "$cpu" \
			timeout "$FLOOD_SECONDS" hping3 --udp -p "$PORT" \
			--rand-source --flood -q "$SRV4" >"$SL_TMP/hping$cpu.log" 2>&1
		pids+=("$p")
	done
	for p in "${pids[@]}"; do
		sl_wait "$p" 2>/dev/null
	done
}

test_flood_does_not_reset_a_known_client() {
	local before after packets0 packets1 created0 created1 displaced used
	cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - {name: flood, protocol: udp, ports: $PORT, limit: $LIMIT, window: 10m}
EOF
	tap_check "attach $VETH_S --mode xdp --clients $CLIENTS" \
		sl attach "$VETH_S" --mode xdp --clients "$CLIENTS"
	tap_check "rules apply (udp $PORT, limit $LIMIT per 10 minutes)" \
		sl rules apply "$SL_TMP/rules.yaml"

	burst before
	before=$(received before "$CLIENT")
	tap_eq "before the flood: $LIMIT of $BURST from $CLIENT arrive" "$before" "$LIMIT"

	packets0=$(stat "g['packets']")
	created0=$(stat "g['new_clients']")
	flood
	packets1=$(stat "g['packets']")
	created1=$(stat "g['new_clients']")
	displaced=$(stat "g.get('newcomers_displaced', 0)")
	diag "flood: $((packets1 - packets0)) spoofed packets in ${FLOOD_SECONDS}s," \
		"client states created $((created1 - created0)), probation entries displaced $displaced"
	if [ $((packets1 - packets0)) -gt $((4 * CLIENTS)) ]; then
		tap_ok "the flood sent more sources than the table holds ($((packets1 - packets0)) > 4 x $CLIENTS)"
	else
		tap_fail "the flood sent more sources than the table holds" \
			"$((packets1 - packets0)) packets in ${FLOOD_SECONDS}s"
	fi

	burst after
	after=$(received after "$CLIENT")
	diag "the client: $before of $BURST before the flood, $after of $BURST after"
	if [ $((before + after)) -le $((LIMIT + LIMIT / 10)) ]; then
		tap_ok "in one window: $((before + after)) of $((2 * BURST)) arrive (at most $((LIMIT + LIMIT / 10)))"
	else
		tap_fail "in one window: at most $((LIMIT + LIMIT / 10)) of $((2 * BURST)) arrive" \
			"got $before before and $after after the flood: the flood reset the client"
	fi
	used=$(sl -j query "$CLIENT" --rule flood | json_get "d[0]['used']")
	tap_eq "query: the client's state still counts its $LIMIT" "$used" "$LIMIT"
	# the flood shows in the counters; it made a client state only for
	# the few random sources that came up twice while still on probation
	if [ "$displaced" -gt 0 ] &&
	   [ $(((created1 - created0) * 1000)) -lt $((packets1 - packets0)) ]; then
		tap_ok "stats: the flood displaced probation entries; client states made for under 0.1% of its packets"
	else
		tap_fail "stats: the flood displaced probation entries; client states made for under 0.1% of its packets" \
			"displaced $displaced, states made $((created1 - created0)) for $((packets1 - packets0)) packets"
	fi
}

main() {
	local start
	sl_claim_pins 30
	start=$SECONDS
	sl_netns_setup
	test_flood_does_not_reset_a_known_client
	tap_elapsed "$start" 60
	tap_done
}

sl_run main
