#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Odd packet shapes on the real path: fragments, long IPv6 extension
# chains and ICMPv6 control, from a client namespace through a veth pair
# (MTU 1500) into a server namespace where slicelimit is attached, native
# XDP then TC. A shape must never take a client around its rule, and an
# `icmp` rule must never cut a client off from neighbour discovery.
#
#   - 30 UDP datagrams of 3,000 bytes (three fragments each, fragmented by
#     the client's own stack) against limit 5, over IPv4 and over IPv6:
#     exactly 5 arrive;
#   - 30 UDP packets behind 12 destination-options headers (scapy) against
#     limit 5: exactly 5 arrive;
#   - 10 IPv6 packets from ::ffff:A.B.C.D (scapy): dropped, counted
#     (mapped_v4), and the IPv4 client A.B.C.D then gets its 5 of 30;
#     10 frames behind 3 VLAN tags (XDP; 4 under TC, whose stack takes
#     one tag off first) dropped under the rule their addresses match
#     (vlan_deep_dropped);
#   - 10 pings against `{protocol: icmp, limit: 3}`, then both neighbour
#     caches flushed: the client still resolves the server over IPv6, and
#     UDP and TCP on ports without a rule still work.
#
# Usage: test_fragments.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" ping "$SL_PY"
"$SL_PY" -c 'import scapy.all' 2>/dev/null || die "python3-scapy not found (make deps)"

LIMIT=5
SENT=30
DGRAM=3000		# bytes of UDP payload: three fragments at MTU 1500

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - {name: frag, protocol: udp, ports: 9000, limit: $LIMIT, window: 60s}
  - {name: chain, protocol: udp, ports: 9001, limit: $LIMIT, window: 60s}
  - {name: ping, protocol: icmp, limit: 3, window: 60s}
EOF

FRAG4=${CLIENT4[0]}
FRAG6=${CLIENT6[0]}
CHAIN6=${CLIENT6[2]}
PING4=${CLIENT4[1]}
PING6=${CLIENT6[3]}	# a /64 of its own: the client the icmp rule limits
ODD4=${CLIENT4[2]}	# the IPv4 client a mapped IPv6 source names
ODD_SENT=10

# send_big SRC DST PORT COUNT SIZE: COUNT UDP datagrams of SIZE bytes from
# the client's own stack, which fragments them (IPv4 without DF); prints
# {"sent": N}
send_big() {
	in_client "$SL_PY" - "$@" <<'EOF'
import json, socket, sys, time
src, dst, port, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5])
v6 = ':' in dst
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
if not v6:
    s.setsockopt(socket.IPPROTO_IP, 10, 0)   # IP_MTU_DISCOVER: IP_PMTUDISC_DONT
s.bind((src, 0))
sent = 0
deadline = time.monotonic() + 10
for i in range(count):
    if time.monotonic() > deadline:
        break
    sent += s.sendto(bytes(size), (dst, port)) == size
    time.sleep(0.005)
print(json.dumps({"sent": sent}))
EOF
}

# scapy_send ARGS... <<SCRIPT: run the python SCRIPT (stdin) in the client
# namespace with ARGS, then the server end's MAC and the client device (the
# frame's destination and the device scapy sends it on) as its last two
scapy_send() {
	local mac
	mac=$(in_server ip -j link show "$VETH_S" | json_get "d[0]['address']")
	in_client "$SL_PY" - "$@" "$mac" "$VETH_C"
}

# send_chain SRC DST PORT COUNT HEADERS: COUNT UDP packets behind HEADERS
# destination-options headers, built and sent by scapy from the client
send_chain() {
	scapy_send "$@" <<'EOF'
import json, sys
from scapy.all import Ether, IPv6, IPv6ExtHdrDestOpt, UDP, Raw, sendp
src, dst, port, count, headers, mac, dev = sys.argv[1], sys.argv[2], \
    int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
p = IPv6(src=src, dst=dst)
for _ in range(headers):
    p = p / IPv6ExtHdrDestOpt()
p = Ether(dst=mac) / p / UDP(sport=40000, dport=port) / Raw(b"x" * 32)
sendp(p, iface=dev, count=count, inter=0.005, verbose=False)
print(json.dumps({"sent": count, "bytes": len(p)}))
EOF
}

# send_odd KIND SRC DST PORT COUNT: COUNT UDP packets built by scapy from
# the client: KIND mapped (IPv6 from ::ffff:SRC, SRC an IPv4 address) or
# vlanN (IPv4 behind N VLAN tags, 802.1ad outside)
send_odd() {
	scapy_send "$@" <<'EOF'
import json, sys
from scapy.all import Ether, Dot1Q, Dot1AD, IP, IPv6, UDP, Raw, sendp
kind, src, dst, port, count, mac, dev = sys.argv[1], sys.argv[2], \
    sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
l4 = UDP(sport=40000, dport=port) / Raw(b"x" * 32)
if kind == "mapped":
    p = Ether(dst=mac) / IPv6(src="::ffff:" + src, dst=dst) / l4
else:
    p = Ether(dst=mac) / Dot1AD(vlan=10)
    for i in range(int(kind[4:]) - 1):
        p = p / Dot1Q(vlan=20 + i)
    p = p / IP(src=src, dst=dst) / l4
sendp(p, iface=dev, count=count, inter=0.005, verbose=False)
print(json.dumps({"sent": count, "bytes": len(p)}))
EOF
}

snapshot_stats() { sl -j stats >"$SL_TMP/stats.json"; }

rule_stat() {		# RULE FIELD, of the last snapshot
	json_get "[r['$2'] for r in d['rules'] if r['rule'] == '$1'][0]" \
		"$SL_TMP/stats.json"
}

global_stat() {		# FIELD, of the last snapshot
	json_get "d['global']['$1']" "$SL_TMP/stats.json"
}

# neigh_state NS ADDR: the neighbour cache state of ADDR in NS ("none")
neigh_state() {
	ip -n "$1" -j -6 neigh show "$2" |
		json_get "(d[0]['state'][0] if d and d[0].get('state') else 'none')"
}

test_fragmented_datagrams_cut_to_limit() {	# MODE
	local m=$1 out
	sl_recv_start "frag4_$m" udp "$SRV4" 9000
	sl_recv_start "frag6_$m" udp "$SRV6" 9000
	out=$(send_big "$FRAG4" "$SRV4" 9000 "$SENT" "$DGRAM")
	tap_eq "$m: ipv4 client sent $SENT datagrams of $DGRAM bytes" \
		"$(printf '%s' "$out" | json_get "d['sent']")" "$SENT"
	out=$(send_big "$FRAG6" "$SRV6" 9000 "$SENT" "$DGRAM")
	tap_eq "$m: ipv6 client sent $SENT datagrams of $DGRAM bytes" \
		"$(printf '%s' "$out" | json_get "d['sent']")" "$SENT"
	sl_recv_stop "frag4_$m"
	sl_recv_stop "frag6_$m"
	tap_eq "$m: ipv4, $SENT fragmented datagrams against limit $LIMIT: exactly $LIMIT arrived" \
		"$(received "frag4_$m" "$FRAG4")" "$LIMIT"
	tap_eq "$m: ipv6, $SENT fragmented datagrams against limit $LIMIT: exactly $LIMIT arrived" \
		"$(received "frag6_$m" "$FRAG6")" "$LIMIT"
	snapshot_stats
	tap_eq "$m: rule frag dropped the other datagrams' first fragments" \
		"$(rule_stat frag dropped)" "$((2 * (SENT - LIMIT)))"
	tap_eq "$m: stats: first fragments, and the later ones of dropped datagrams dropped with them" \
		"$(global_stat frag_first)/$(global_stat frag_later_dropped)" \
		"$((2 * SENT))/$((4 * (SENT - LIMIT)))"
}

test_dstopts_chain_cut_to_limit() {		# MODE
	local m=$1 out
	sl_recv_start "chain_$m" udp "$SRV6" 9001
	out=$(send_chain "$CHAIN6" "$SRV6" 9001 "$SENT" 12)
	tap_eq "$m: scapy sent $SENT udp packets behind 12 destination-options headers" \
		"$(printf '%s' "$out" | json_get "d['sent']")" "$SENT"
	sl_recv_stop "chain_$m"
	tap_eq "$m: 12 destination-options headers, $SENT against limit $LIMIT: exactly $LIMIT arrived" \
		"$(received "chain_$m" "$CHAIN6")" "$LIMIT"
	snapshot_stats
	tap_eq "$m: rule chain counted them: passed/dropped" \
		"$(rule_stat chain passed)/$(rule_stat chain dropped)" \
		"$LIMIT/$((SENT - LIMIT))"
}

# IPv6 from ::ffff:A.B.C.D is dropped and counted, and the IPv4 client
# A.B.C.D keeps its whole allowance; frames with more VLAN tags than the
# parser walks are dropped under the rule their addresses match (TC
# sees one tag fewer: the stack takes the outer one into the skb first).
test_mapped_source_and_vlan_stack() {		# MODE
	local m=$1 out tags
	out=$(send_odd mapped "$ODD4" "$SRV6" 9000 "$ODD_SENT")
	tap_eq "$m: scapy sent $ODD_SENT ipv6 packets from ::ffff:$ODD4" \
		"$(printf '%s' "$out" | json_get "d['sent']")" "$ODD_SENT"
	sl_recv_start "odd4_$m" udp "$SRV4" 9000
	out=$(send_big "$ODD4" "$SRV4" 9000 "$SENT" 100)
	sl_recv_stop "odd4_$m"
	tap_eq "$m: after them, the ipv4 client $ODD4 still gets its $LIMIT of $SENT" \
		"$(received "odd4_$m" "$ODD4")" "$LIMIT"
	tags=4
	[ "$m" = xdp ] && tags=3
	out=$(send_odd "vlan$tags" "$ODD4" "$SRV4" 9000 "$ODD_SENT")
	snapshot_stats
	tap_eq "$m: mapped_v4 / vlan_deep / vlan_deep_dropped after $ODD_SENT mapped and $ODD_SENT $tags-tag frames" \
		"$(global_stat mapped_v4)/$(global_stat vlan_deep)/$(global_stat vlan_deep_dropped)" \
		"$ODD_SENT/$ODD_SENT/$ODD_SENT"
}

test_icmp_rule_leaves_neighbour_discovery() {	# MODE
	local m=$1 out state
	in_client ping -q -n -c 10 -i 0.05 -W 1 -I "$PING4" "$SRV4" >/dev/null 2>&1
	in_client ping -q -n -6 -c 10 -i 0.05 -W 1 -I "$PING6" "$SRV6" >/dev/null 2>&1
	snapshot_stats
	tap_eq "$m: 10 pings per family against an icmp rule of limit 3: passed/dropped" \
		"$(rule_stat ping passed)/$(rule_stat ping dropped)" "6/14"
	ip -n "$NS_C" neigh flush all
	ip -n "$NS_S" neigh flush all
	sl_recv_start "free_$m" udp "$SRV6" 9002
	sl_recv_start "tcp_$m" tcp "$SRV6" 9003
	sl_send "$PING6" "$SRV6" 9002 5 >/dev/null
	out=$(sl_send "$PING6" "$SRV6" 9003 3 --proto tcp --wait 900)
	sl_recv_stop "free_$m"
	sl_recv_stop "tcp_$m"
	state=$(neigh_state "$NS_C" "$SRV6")
	case $state in
	REACHABLE|STALE|DELAY|PROBE|PERMANENT)
		tap_ok "$m: after the flush the client resolved the server over ipv6 ($state)" ;;
	*)
		tap_fail "$m: after the flush the client resolved the server over ipv6" \
			"ip -6 neigh state of $SRV6: $state" ;;
	esac
	tap_eq "$m: then udp on a port without a rule: 5 of 5 arrived" \
		"$(received "free_$m" "$PING6")" 5
	tap_eq "$m: and tcp: 3 of 3 connections made" \
		"$(printf '%s' "$out" | json_get "d['connected']")/$(received "tcp_$m" "$PING6")" "3/3"
	snapshot_stats
	tap_eq "$m: stats: neighbour discovery passed as icmp control, never limited" \
		"$(json_get "d['global']['icmp_control'] > 0" "$SL_TMP/stats.json")" "True"
}

run_mode() {		# MODE
	tap_check "attach $VETH_S --mode $1" sl attach "$VETH_S" --mode "$1"
	# the neighbour caches filled before any rule: the first solicitation
	# after an attach can go unanswered, and the retry comes a second
	# later, after a fast sender's queued fragments are gone
	in_client ping -q -n -c 1 -W 3 "$SRV4" >/dev/null 2>&1
	in_client ping -q -n -6 -c 1 -W 3 "$SRV6" >/dev/null 2>&1
	tap_check "$1: rules apply" sl rules apply "$SL_TMP/rules.yaml"
	test_fragmented_datagrams_cut_to_limit "$1"
	test_dstopts_chain_cut_to_limit "$1"
	test_mapped_source_and_vlan_stack "$1"
	test_icmp_rule_leaves_neighbour_discovery "$1"
	# the last detach removes the pins: the next mode starts afresh
	tap_check "detach $VETH_S ($1)" sl detach "$VETH_S"
}

main() {
	local start=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	run_mode xdp
	run_mode tc
	tap_elapsed "$start" 60
	tap_done
}

sl_run main
