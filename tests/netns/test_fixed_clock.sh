#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A short fixed window at the host's real clock: the window number
# (TAI ms / window) of a 500 ms window is past 2^31 today, where a fresh
# client's state once looked a window ahead and held the client off for
# good after its first window.
#
#   Rule {protocol: udp, ports: 9030, limit: 3, window: 500ms,
#   algorithm: fixed} on a real veth; a client sends three bursts of 10
#   datagrams two seconds apart, each well inside one window. Each burst
#   passes exactly 3 (the rule's counters, and the receiver: 9 in all),
#   and `query --json` right after the last burst says what the kernel
#   holds: used 3, remaining 0, Retry-After until the window's end.
#
# Usage: test_fixed_clock.sh BUILD_DIR  (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}"

PORT=9030
WINDOW_MS=500

# The rule's windows start at multiples of 500 ms of TAI, which is UTC
# plus a whole number of seconds: at .000 and .500 of each UTC second.
ms_into_window() { echo $(( $(date +%s%N) / 1000000 % WINDOW_MS )); }

# wait until 30..150 ms into a window: a burst, the stats and the query
# then fit in it
wait_window_start() {
	local i
	for i in $(seq 1 200); do
		local at
		at=$(ms_into_window)
		[ "$at" -ge 30 ] && [ "$at" -lt 150 ] && return 0
		sleep 0.01
	done
	return 1
}

passed() { sl -j stats | json_get "[r['passed'] for r in d['rules'] if r['rule'] == 'fixed-short'][0]"; }
dropped() { sl -j stats | json_get "[r['dropped'] for r in d['rules'] if r['rule'] == 'fixed-short'][0]"; }

test_short_fixed_window_at_todays_clock() {
	local b p0 d0 p1 d1 got=() window_ok=yes client=${CLIENT4[0]} q t_end

	cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - name: fixed-short
    protocol: udp
    ports: $PORT
    limit: 3
    window: ${WINDOW_MS}ms
    algorithm: fixed
EOF
	tap_check "attach" sl attach "$VETH_S" --mode xdp-generic
	tap_check "rules apply of the 500 ms fixed rule" sl rules apply "$SL_TMP/rules.yaml"
	sl_recv_start r udp "$SRV4" "$PORT" 30
	for b in 1 2 3; do
		[ "$b" -gt 1 ] && sleep 2
		wait_window_start || window_ok=no
		p0=$(passed); d0=$(dropped)
		sl_send "$client" "$SRV4" "$PORT" 10 >/dev/null ||
			tap_fail "burst $b: sl-traffic send"
		if [ "$b" -eq 3 ]; then
			# at once, in the window the burst was counted in
			q=$(sl -j query "$client" --rule fixed-short)
			t_end=$(ms_into_window)
		fi
		p1=$(passed); d1=$(dropped)
		got+=("$((p1 - p0))/$((d1 - d0))")
	done
	sl_recv_stop r
	[ "$window_ok" = yes ] || diag "could not start a burst 30..150 ms into a window"
	tap_eq "each burst of 10 two seconds apart: 3 passed, 7 dropped (rule counters)" \
		"${got[*]}" "3/7 3/7 3/7"
	tap_eq "the receiver got 9 in all" "$(received r "$client")" 9
	diag "query after the last burst ($t_end ms into its window): $q"
	tap_eq "query --json after the last burst agrees with the kernel: used 3, remaining 0, Retry-After within the window" \
		"$(printf '%s' "$q" | json_get "(d[0]['used'], d[0]['remaining'], 0 < d[0]['retry_after_ms'] <= $WINDOW_MS)")" \
		"(3, 0, True)"
}

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	test_short_fixed_window_at_todays_clock
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
