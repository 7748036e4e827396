#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Detach leaves nothing it made:
#
#   1. A TC attach onto a device without a clsact qdisc creates one; the
#      detach takes it away again. A clsact qdisc that was there before
#      (tc qdisc add) stays after the detach.
#   2. An XDP attach through libxdp on a bpffs without libxdp's directory
#      makes it; the detach of the last XDP device removes it, unless it
#      holds something else.
#   3. detach --all with nothing attached says so ({"error": "nothing is
#      attached ..."}) and exits 1, as detach DEV does.
#
# Usage: test_detach.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" tc

# clsact DEV: "clsact" when the device has the qdisc, else "none"
clsact() {
	if in_server tc -j qdisc show dev "$1" | json_get "any(q['kind'] == 'clsact' for q in d)" |
		grep -q True; then echo clsact; else echo none; fi
}

xdp_dir() { if [ -d /sys/fs/bpf/xdp ]; then echo there; else echo gone; fi; }

test_tc_detach_removes_its_clsact() {
	tap_eq "before: $VETH_S has no clsact qdisc" "$(clsact "$VETH_S")" none
	sl attach "$VETH_S" --mode tc >/dev/null 2>&1 || tap_fail "attach --mode tc"
	tap_eq "attach --mode tc created one" "$(clsact "$VETH_S")" clsact
	sl detach "$VETH_S" >/dev/null || tap_fail "detach"
	tap_eq "detach took it away again, with the pins" \
		"$(clsact "$VETH_S")/$(pins_gone)" none/gone
}

test_tc_detach_keeps_a_clsact_it_found() {
	in_server tc qdisc add dev "$VETH_S" clsact || tap_fail "tc qdisc add clsact"
	sl attach "$VETH_S" --mode tc >/dev/null 2>&1 || tap_fail "attach --mode tc"
	sl detach "$VETH_S" >/dev/null || tap_fail "detach"
	tap_eq "a clsact qdisc that was there before the attach stays after the detach" \
		"$(clsact "$VETH_S")" clsact
	in_server tc qdisc del dev "$VETH_S" clsact
}

test_xdp_detach_removes_libxdp_dir() {
	tap_eq "before: no libxdp directory on this run's bpffs" "$(xdp_dir)" gone
	sl attach "$VETH_S" --mode xdp-generic >/dev/null 2>&1 || tap_fail "attach --mode xdp-generic"
	sl attach lo --mode xdp-generic >/dev/null 2>&1 || tap_fail "attach lo --mode xdp-generic"
	tap_eq "two XDP attaches through libxdp made it" "$(xdp_dir)" there
	sl detach lo >/dev/null || tap_fail "detach lo"
	sl detach "$VETH_S" >/dev/null || tap_fail "detach"
	tap_eq "the detach of the last removes it, and the pins" \
		"$(xdp_dir)/$(pins_gone)" gone/gone
	# another program's use of the directory (a dispatcher's pins): kept
	sl attach "$VETH_S" --mode xdp-generic >/dev/null 2>&1 || tap_fail "attach --mode xdp-generic"
	mkdir /sys/fs/bpf/xdp/other
	sl detach "$VETH_S" >/dev/null || tap_fail "detach"
	tap_eq "a libxdp directory that holds something else stays" \
		"$(xdp_dir)/$(pins_gone)" there/gone
	rmdir /sys/fs/bpf/xdp/other /sys/fs/bpf/xdp
}

test_detach_all_with_nothing_attached() {
	local out rc=0 rc_dev=0
	out=$(sl -j detach --all 2>/dev/null) || rc=$?
	sl -j detach "$VETH_S" >/dev/null 2>&1 || rc_dev=$?
	tap_eq "detach --all with nothing attached: says so, exit 1 as detach DEV" \
		"$rc/$rc_dev/$(printf '%s' "$out" | json_get "d['error'].startswith('nothing is attached')")" \
		"1/1/True"
}

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	test_tc_detach_removes_its_clsact
	test_tc_detach_keeps_a_clsact_it_found
	test_xdp_detach_removes_libxdp_dir
	test_detach_all_with_nothing_attached
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
