#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Every CPU deciding one client at once, on real traffic: a veth pair with
# two queues, native XDP on the server end, and two hping3 --flood senders
# at one client address, pinned to CPUs 0 and 1 (taskset), for a bounded
# time each. The client's veth end steers CPU 0's packets to queue 0 and
# CPU 1's to queue 1 (XPS); veth runs the peer's XDP program in the NAPI
# of that queue, on the sending CPU, so the two floods are decided on two
# CPUs at once. The test checks that they were (the program's per-CPU
# packet counters, sl_global_stats, from bpftool's JSON), and then the
# bound per rule (include/sl_algo.h):
#
#   token-bucket, capacity 20,000, refill 1/s: passed <= 20,000 + the
#       seconds since the bucket's first packet + CPUs - 1;
#   sliding and fixed, limit 20,000 per hour: passed <= 20,000 + CPUs - 1;
#
# from `slicelimit stats -j` (passed), never more than the receiver
# counted arriving plus what its socket dropped, and every rule reached its
# limit (the flood was enough to test it). Before the bucket's arrival
# time moved by compare-and-swap the bucket passed 20,068 to 20,190.
#
# Usage: test_cpus_flood.sh BUILD_DIR   (prints TAP lines)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" hping3 taskset timeout

LIMIT=20000
FLOOD_S=3		# each flood, per sender
NCPU=2			# the senders' CPUs: 0 and 1
PORT_BUCKET=9100
PORT_SLIDING=9101
PORT_FIXED=9102

# sl_netns_setup's set-up, with a veth pair of two queues each way and
# XPS on the client end: tx queue N for CPU N.
setup_two_queues() {
	local ns q
	ip netns add "$NS_C" || die "ip netns add $NS_C"
	ip netns add "$NS_S" || die "ip netns add $NS_S"
	ip link add "$VETH_C" numtxqueues 2 numrxqueues 2 netns "$NS_C" \
		type veth peer name "$VETH_S" numtxqueues 2 numrxqueues 2 \
		netns "$NS_S" || die "cannot create the veth pair of 2 queues"
	for ns in "$NS_C" "$NS_S"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$NS_S" addr add "$SRV4/24" dev "$VETH_S"
	ip -n "$NS_C" addr add "${CLIENT4[0]}/24" dev "$VETH_C"
	ip -n "$NS_C" link set "$VETH_C" up || die "link up $VETH_C"
	ip -n "$NS_S" link set "$VETH_S" up || die "link up $VETH_S"
	# ip netns exec mounts the namespace's own sysfs, where the queues are
	for q in 0 1; do
		ip netns exec "$NS_C" sh -c \
			"echo $((1 << q)) > /sys/class/net/$VETH_C/queues/tx-$q/xps_cpus" ||
			die "cannot steer CPU $q to tx queue $q (XPS)"
	done
	# the flood's packets are sent to one address: resolve it once
	in_client ping -c 1 -W 2 "$SRV4" >/dev/null || die "no path to $SRV4"
}

write_rules() {
	cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - name: bucket
    protocol: udp
    ports: $PORT_BUCKET
    algorithm: token-bucket
    limit: $LIMIT
    window: 1h
    bucket_capacity: $LIMIT
    refill_per_s: 1
  - {name: sliding, protocol: udp, ports: $PORT_SLIDING, limit: $LIMIT, window: 1h}
  - {name: fixed, protocol: udp, ports: $PORT_FIXED, limit: $LIMIT, window: 1h, algorithm: fixed}
EOF
}

# packets per CPU the program has seen (sl_global_stats), as "n0 n1"
per_cpu_packets() {
	in_server bpftool -j map dump pinned "$SL_PIN/sl_global_stats" |
		"$SL_PY" -c '
import json, sys
d = json.load(sys.stdin)
by = {v["cpu"]: v["value"]["packets"] for v in d[0]["formatted"]["values"]}
print(by.get(0, 0), by.get(1, 0))
'
}

# the receiver's datagrams that its socket dropped (UDP RcvbufErrors)
rcvbuf_errors() {
	in_server cat /proc/net/snmp |
		awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }'
}

rule_passed() {
	sl -j stats | json_get "[r['passed'] for r in d['rules'] if r['rule'] == '$1'][0]"
}

# flood RULE PORT: two hping3 floods at PORT, CPUs 0 and 1, FLOOD_S each;
# then the checks of the rule's bound
flood() {
	local rule=$1 port=$2 bound=$3 before after a0 a1 b0 b1 passed got
	local start drops0 drops1 p0 p1 cpu
	read -r b0 b1 <<<"$(per_cpu_packets)"
	drops0=$(rcvbuf_errors)
	sl_recv_start "$rule" udp "$SRV4" "$port" $((FLOOD_S + 10))
	start=$SECONDS
	for cpu in 0 1; do
		sl_bg "FLOOD_$cpu" nsenter --net="/run/netns/$NS_C" \
			timeout "$FLOOD_S" taskset -c "$cpu" \
			hping3 --udp -p "$port" --flood -q "$SRV4" >/dev/null 2>&1
	done
	sl_wait "$FLOOD_0" >/dev/null 2>&1
	sl_wait "$FLOOD_1" >/dev/null 2>&1
	sl_recv_stop "$rule"
	read -r a0 a1 <<<"$(per_cpu_packets)"
	drops1=$(rcvbuf_errors)
	p0=$((a0 - b0))
	p1=$((a1 - b1))
	passed=$(rule_passed "$rule")
	got=$(received "$rule" "${CLIENT4[0]}")
	diag "$rule: CPU 0 decided $p0 packets, CPU 1 $p1; passed $passed" \
		"(bound $bound), received $got, receive buffer drops $((drops1 - drops0))," \
		"$((SECONDS - start)) s"
	if [ "$p0" -ge 1000 ] && [ "$p1" -ge 1000 ]; then
		tap_ok "$rule: both CPUs decided the flood (CPU 0: $p0, CPU 1: $p1)"
	else
		tap_fail "$rule: both CPUs decided the flood (CPU 0: $p0, CPU 1: $p1)" \
			"the senders did not land on two RX queues: the test proves nothing"
	fi
	if [ "$passed" -ge "$LIMIT" ] && [ "$passed" -le "$bound" ]; then
		tap_ok "$rule: passed $passed of a $LIMIT limit under two CPUs (at most $bound)"
	else
		tap_fail "$rule: passed $passed of a $LIMIT limit under two CPUs (want $LIMIT..$bound)"
	fi
	if [ "$got" -le "$passed" ] &&
	   [ "$((got + drops1 - drops0))" -ge "$passed" ]; then
		tap_ok "$rule: the receiver got what passed ($got, and $((drops1 - drops0)) its socket dropped)"
	else
		tap_fail "$rule: the receiver got what passed" \
			"received $got, socket drops $((drops1 - drops0)), passed $passed"
	fi
}

main() {
	local start=$SECONDS t0
	sl_claim_pins 30
	setup_two_queues
	write_rules
	tap_check "attach $VETH_S --mode xdp" sl attach "$VETH_S" --mode xdp
	tap_eq "the veth runs the program in driver (native) mode" \
		"$(in_server ip -j link show "$VETH_S" | json_get "d[0].get('xdp', {}).get('mode')")" "1"
	t0=$SECONDS
	tap_check "rules apply" sl rules apply "$SL_TMP/rules.yaml"
	# the bucket refills a unit a second from its first packet, at most
	# the flood's seconds and one for the set-up
	flood bucket "$PORT_BUCKET" $((LIMIT + FLOOD_S + 1 + NCPU - 1))
	diag "bucket: $((SECONDS - t0)) s since the apply"
	flood sliding "$PORT_SLIDING" $((LIMIT + NCPU - 1))
	flood fixed "$PORT_FIXED" $((LIMIT + NCPU - 1))
	tap_elapsed "$start" 60
	tap_done
}

sl_run main
