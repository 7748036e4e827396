#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Upgrades that cannot misread a map, and a swap that fails half way:
#
#   1. A pinned map whose value has this build's type, sizes, max_entries
#      and flags but another BTF value type (a layout changed within the
#      same size; made here with a BTF of its own through the bpf syscall)
#      is reset and named by the upgrade, not reused with the old bytes.
#   2. A program swap that fails on the second of two devices (its clsact
#      qdisc deleted behind slicelimit's back) puts the first device back
#      on the old program: the kernel runs, and status records, the old
#      program id; reload exits 1.
#   3. The lists: an upgrade keeps their entries (and the rules: sl_config
#      keeps its layout); an instance pinned by a build before the lists
#      (none of their maps) upgrades, and the maps are made.
#
# Usage: test_upgrade.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" tc

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - { name: flood, protocol: udp, ports: 7001, limit: 100 }
EOF

# btf_map PATH VALUE_SIZE: pin at PATH a one-entry array of __u32 keys and
# VALUE_SIZE-byte values whose BTF value type is struct sl_other { __u8
# bytes[VALUE_SIZE]; }: every size of the real map, another type
btf_map() {
	"$SL_PY" - "$1" "$2" <<'EOF'
import ctypes, os, struct, sys
path, size = sys.argv[1].encode(), int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
SYS_bpf = 321		# x86_64
def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(SYS_bpf, cmd, buf, 128)
    if r < 0:
        sys.exit("bpf(%d): %s" % (cmd, os.strerror(ctypes.get_errno())))
    return r
strs = b"\0unsigned int\0unsigned char\0sl_other\0bytes\0"
off = lambda s: strs.index(s + b"\0")
types = b"".join([
    struct.pack("<III", off(b"unsigned int"), 1 << 24, 4), struct.pack("<I", 32),
    struct.pack("<III", off(b"unsigned char"), 1 << 24, 1), struct.pack("<I", 8),
    struct.pack("<III", 0, 3 << 24, 0), struct.pack("<III", 2, 1, size),
    struct.pack("<III", off(b"sl_other"), (4 << 24) | 1, size),
    struct.pack("<III", off(b"bytes"), 3, 0),
])
blob = struct.pack("<HBBIIIII", 0xeB9F, 1, 0, 24, 0, len(types), len(types), len(strs)) + types + strs
b = ctypes.create_string_buffer(blob, len(blob))
btf_fd = bpf(18, struct.pack("<QQIII", ctypes.addressof(b), 0, len(blob), 0, 0))
name = b"sl_sync_status".ljust(16, b"\0")
fd = bpf(0, struct.pack("<IIIIIII", 2, 4, size, 1, 0, 0, 0) + name +
         struct.pack("<IIIII", 0, btf_fd, 1, 4, 0))
p = ctypes.create_string_buffer(path)
bpf(6, struct.pack("<QII", ctypes.addressof(p), fd, 0))
EOF
}

prog_of() {		# DEV: the program id status records for DEV
	sl -j status | json_get "[x['prog_id'] for x in d['devices'] if x['device'] == '$1'][0]"
}
tc_prog_on() {		# DEV: the id of the TC ingress program the kernel runs
	in_server bpftool -j net show dev "$1" | json_get "[t['id'] for t in d[0]['tc']]"
}

test_btf_mismatch_resets_the_map() {
	local size out
	sl attach "$VETH_S" --mode xdp-generic >/dev/null 2>&1 || tap_fail "attach"
	sl rules apply "$SL_TMP/rules.yaml" >/dev/null || tap_fail "rules apply"
	size=$(bpftool -j map show pinned "$SL_PIN/sl_sync_status" | json_get "d['bytes_value']")
	rm "$SL_PIN/sl_sync_status"
	btf_map "$SL_PIN/sl_sync_status" "$size" || tap_fail "a map of another BTF value type pinned"
	tap_eq "the pinned sl_sync_status has every size of this build's, another BTF type" \
		"$(bpftool -j map show pinned "$SL_PIN/sl_sync_status" | json_get "[d['bytes_key'], d['bytes_value'], d['max_entries'], d['btf_id'] > 0]")" \
		"[4, $size, 1, true]"
	sl block 192.0.2.77 --reason kept >/dev/null || tap_fail "block"
	fake_old_build || tap_fail "bpftool wrote another build id into sl_build"
	out=$(sl -j reload 2>/dev/null)
	tap_eq "reload (another build's pins): the map of another value type is reset and named, the rest kept" \
		"$(printf '%s' "$out" | json_get "[d['upgraded'], d['last_upgrade']['maps_reset'], d['last_upgrade']['maps_kept'] > 5]")" \
		'[true, ["sl_sync_status"], true]'
	tap_eq "... the block list's entry and its reason with it, and the rules" \
		"$(sl -j lists | json_get "[[e['prefix'], e['reason']] for e in d['lists']]")/$(sl -j rules list | json_get "len(d['rules'])")" \
		'[["192.0.2.77", "kept"]]/1'
	sl detach --all >/dev/null 2>&1
}

# an instance a build before the lists pinned: none of their maps; the
# upgrade reads its devices without them and makes them
test_upgrade_from_a_build_without_lists() {
	local out m
	sl attach "$VETH_S" --mode xdp-generic >/dev/null 2>&1 || tap_fail "attach"
	sl rules apply "$SL_TMP/rules.yaml" >/dev/null || tap_fail "rules apply"
	for m in sl_allow_list sl_block_list sl_list_notes sl_list_stats; do
		rm "$SL_PIN/$m" || tap_fail "rm $m"
	done
	fake_old_build || tap_fail "bpftool wrote another build id into sl_build"
	out=$(sl -j reload 2>/dev/null)
	tap_eq "reload of an instance without the lists' maps: upgraded, nothing reset, the rules kept, block works" \
		"$(printf '%s' "$out" | json_get "[d['upgraded'], d['last_upgrade']['maps_reset']]")/$(sl -j rules list | json_get "len(d['rules'])")/$(sl -j block 192.0.2.78 | json_get "d['added']")" \
		'[true, []]/1/block'
	sl detach --all >/dev/null 2>&1
}

test_half_way_swap_puts_devices_back() {
	local order first last p_first rc=0
	sl attach "$VETH_S" --mode tc >/dev/null 2>&1 || tap_fail "attach $VETH_S --mode tc"
	sl attach lo --mode tc >/dev/null 2>&1 || tap_fail "attach lo --mode tc"
	sl rules apply "$SL_TMP/rules.yaml" >/dev/null || tap_fail "rules apply"
	# the order the upgrade swaps them in: sl_devices' own
	order=$(bpftool -j map dump pinned "$SL_PIN/sl_devices" |
		json_get "' '.join(bytes(int(x, 16) for x in e['value'][:16]).split(b'\\0')[0].decode() for e in d)")
	first=${order%% *}
	last=${order##* }
	p_first=$(prog_of "$first")
	# the second swap cannot succeed: its hook is gone
	in_server tc qdisc del dev "$last" clsact || tap_fail "tc qdisc del dev $last clsact"
	fake_old_build || tap_fail "bpftool wrote another build id into sl_build"
	sl -j reload >/dev/null 2>&1 || rc=$?
	tap_eq "a swap that fails on the second device ($last): reload exits 1" "$rc" 1
	tap_eq "... the first ($first) is back on the old program: the kernel runs it, status records it" \
		"$(tc_prog_on "$first")/$(prog_of "$first")" "[$p_first]/$p_first"
	tap_eq "... and the pins are the old build's still (same_build false)" \
		"$(sl -j status | json_get "d['program']['same_build']")" False
}

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	test_btf_mismatch_resets_the_map
	test_upgrade_from_a_build_without_lists
	test_half_way_swap_puts_devices_back
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
