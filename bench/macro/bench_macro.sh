#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench/macro/bench_macro.sh BUILD_DIR: real packets over a veth pair
# between two network namespaces, slicelimit (native XDP on the receiving
# end) side by side with the XDP floors and with netfilter's per-source
# limiters, in one run on the same traffic.
#
# The traffic: sl-macro gen (bench/macro/macro.c) runs gen.bpf.c with
# BPF_PROG_TEST_RUN + BPF_F_TEST_XDP_LIVE_FRAMES on the sending veth end;
# it rewrites the source address of every frame (over N clients) and
# XDP_TX sends it to the peer. veth processes what it receives in NAPI on
# the CPU that sent it, so the receiver runs on the generator's CPU, in
# softirq, and is as fast as it can be: packets/s at the receiver is the
# mechanism's throughput, and softirq time (/proc/stat) / packets its CPU
# cost per packet.
#
# 1. Throughput, for N sources (IPv4 for every N of NS, IPv6 for V6_NS),
#    every mechanism in interleaved rounds (round 1: every N, every
#    mechanism, then round 2 ...). Each case is set up fresh, warmed with
#    2N + 200,000 packets (every source is known to the limiter and over
#    its limit) and then measured for SECS seconds with the traffic
#    stopped before and after each counter snapshot.
# 1a. The accept path, for every N of ACCEPT_NS (IPv4), in the same rounds:
#    the same traffic, every source within its limit. The limits are made
#    high (1,000,000 a second per source, far above what a source sends
#    here), not the traffic slow, so that every round sends as many packets
#    as the over-limit case and ns/packet compares. What is accepted goes
#    on to the stack (UDP, port 9, nobody listens), so the bare counter
#    here counts and passes (floor_count_pass), and an XDP_PASS floor
#    shows the stack's own share.
# 2. Accuracy under flood: a limit of 10/s with a burst of 60 and a 5 s
#    flood from one source from both CPUs (two generator threads, two veth
#    queues, so the receiver runs on both CPUs at once); what passes,
#    counted by each mechanism's own counters, against what is due.
#
# Refusing a table: before it writes RESULTS, summary.py checks the floors
# of the run. A calibration case first runs the XDP_DROP floor with the
# generator on every CPU of ACC_CPUS. Then the single-CPU XDP_DROP floor of
# every throughput and spoof group must reach FLOOR_MIN_MPPS and
# FLOOR_MIN_SHARE of the calibration's Mpps per generator CPU; every floor
# case must show softirq time; every case's receiver must have taken in
# RX_MIN_SHARE of what the generator sent (the flood beside the TCP
# clients, whose packets share its queues, FLOOD_MIN_MPPS at the
# receiver); and one quiet TCP request at least must have been answered.
# If not, it says why on stderr, leaves RESULTS as it was and exits 1 (and
# so does `make bench`).
#
# 3. A spoofed flood, in the same rounds: every frame a random source of
#    2^SPOOF_BITS (10.0.0.0/8), far more than the tables hold, through
#    slicelimit (per source 1/60s, continue, and 1000/s for the port, as
#    README advises against such a flood), the bare counter's insert path
#    (floor_count), XDP_DROP, the nft meters and hashlimit (each with the
#    same 1000/s total after it).
# 4. Real TCP clients (curl, a new connection per request, TCP_RATE/s)
#    to nginx in the receiving namespace, slicelimit attached with the
#    rules of 3 and a per-source tcp 80 rule the clients keep within;
#    TCP_ROUNDS rounds of TCP_REQS requests quiet, then the same during
#    the spoofed flood: answered requests and their latency.
#
# PROFILE=DIR (bench/macro/profile.sh): after each throughput or accept
# case's measured run, three more of SECS seconds on the case as it stands
# (its sources known, over or within their limit): `perf stat -a -A` with
# PERF_EVENTS (the hardware events where the PMU has them: a VM may have
# none), `perf record -a -g -e cpu-clock -c PERF_PERIOD` read by
# profile_report.py (the softirq's functions, ns per packet), and the
# kernel's BPF run-time statistics (kernel.bpf_stats_enabled for that run
# only, put back after) read by bpf_run_time.py; each in
# DIR/MODE.MECH.N.*, with what the receiver took in.
#
# The run happens in a private mount namespace with a bpffs of its own
# (slicelimit's pins are not the host's) and in two network namespaces
# named after our pid; the firewall rules live in our namespaces only and
# go with them. Writes bench/RESULTS-macro.md (RESULTS=FILE to change).
#
# Settings (environment): ROUNDS (3), SECS (1), NS ("1 1000 100000
# 1000000"), V6_NS (1000), CLIENTS (every table's size; by default
# 262,144, slicelimit's default, doubled until it holds N + N/32), GEN_CPUS (0),
# ACC_ROUNDS (3), ACC_SECS (5), ACC_CPUS (0,1), CAL_SECS (1),
# FLOOR_MIN_MPPS (0.5), FLOOR_MIN_SHARE (0.2), RX_MIN_SHARE (0.5),
# FLOOD_MIN_MPPS (0.05), ACCEPT_MAX_DROP (0.01: the share of an accept
# case's packets a mechanism may drop, else no source was within its
# limit and the run fails): the
# plausibility bounds (see "Refusing a table" below),
# MECHS and SPOOF_MECHS ("slicelimit xdp-drop floor-count nft-netdev
# nft-inet ipt-hashlimit"), ACCEPT_NS ("1000 100000 1000000"),
# ACCEPT_MECHS (MECHS and xdp-pass), SPOOF_BITS (24), TCP_ROUNDS (2, 0: none),
# TCP_REQS (300), TCP_RATE (100), WEB_LIMIT (5000),
# ACC_MECHS ("sl-bucket sl-sliding nft-netdev nft-inet ipt-nft ipt-legacy").

# shellcheck disable=SC2015 # "A && B || die": die exits
set -u

usage() {
	echo "usage: $0 BUILD_DIR   (e.g. $0 build, after make)" >&2
	exit 2
}
[ $# -eq 1 ] || usage

# A private mount namespace and bpffs (see lib.sh): our pins only.
if [ -z "${SLM_PRIVATE_BPFFS:-}" ]; then
	exec env SLM_PRIVATE_BPFFS=1 unshare --mount --propagation private \
		bash "$0" "$@"
fi
mount -t bpf bpf /sys/fs/bpf || { echo "bench_macro: cannot mount a private bpffs" >&2; exit 1; }

MACRO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$MACRO_DIR/../.." && pwd)
BUILD=$(readlink -f "$1")
SL_BIN=$BUILD/slicelimit
GEN=$BUILD/bench/macro/sl-macro
RESULTS=${RESULTS:-$TOP/bench/RESULTS-macro.md}

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-1}
NS=${NS-"1 1000 100000 1000000"}
V6_NS=${V6_NS-1000}
CLIENTS=${CLIENTS:-}		# table sizes; empty: per N, see table_size
GEN_CPUS=${GEN_CPUS:-0}
ACC_ROUNDS=${ACC_ROUNDS:-3}
ACC_SECS=${ACC_SECS:-5}
ACC_CPUS=${ACC_CPUS:-0,1}
CAL_SECS=${CAL_SECS:-1}
SPOOF_MECHS=${SPOOF_MECHS-"slicelimit xdp-drop floor-count nft-netdev nft-inet ipt-hashlimit"}
SPOOF_BITS=${SPOOF_BITS:-24}
SPOOF_BASE4=10.0.0.0	# spoofed sources: 10.0.0.0 + a random number below 2^SPOOF_BITS
WEB_LIMIT=${WEB_LIMIT:-5000}
TCP_ROUNDS=${TCP_ROUNDS:-2}
TCP_REQS=${TCP_REQS:-300}
TCP_RATE=${TCP_RATE:-100}
MECHS=${MECHS-"slicelimit xdp-drop floor-count nft-netdev nft-inet ipt-hashlimit"}
ACCEPT_NS=${ACCEPT_NS-"1000 100000 1000000"}
ACCEPT_MECHS=${ACCEPT_MECHS-"slicelimit xdp-drop xdp-pass floor-count nft-netdev nft-inet ipt-hashlimit"}
ACCEPT_RATE=1000000	# every limit of the accept cases, packets a second per source
PROFILE=${PROFILE:-}
PERF_EVENTS=${PERF_EVENTS:-cycles,instructions,cache-references,cache-misses,LLC-loads,LLC-load-misses,dTLB-loads,dTLB-load-misses,cpu-clock,context-switches,page-faults}
PERF_PERIOD=${PERF_PERIOD:-250000}	# ns of cpu-clock a sample
BPF_STATS_WAS=""	# kernel.bpf_stats_enabled as it was, put back by cleanup too
ACC_MECHS=${ACC_MECHS-"sl-bucket sl-sliding nft-netdev nft-inet ipt-nft ipt-legacy"}

P=slm$$
NS_C=${P}c
NS_S=${P}s
VC=${P}c0
VS=${P}s0
VH=${P}h0		# the generator's holding device (sending namespace)
SRV4=10.77.0.1
SRV6=fd77::1
CLI4=10.77.0.2		# the real TCP clients (curl) in the sending namespace
SRC4=10.200.0.0		# IPv4 sources: 10.200.0.0 + i
SRC6=2001:db8::1	# IPv6 sources: 2001:db8:i::1 (i in the /64 prefix)
CLK_TCK=$(getconf CLK_TCK)
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

die() { echo "bench_macro: $*" >&2; exit 1; }
log() { echo "# $*"; }

[ "$(id -u)" -eq 0 ] || die "needs root (namespaces, XDP)"
[ -x "$SL_BIN" ] || die "$1/slicelimit: no binary (make)"
if [ "$TCP_ROUNDS" -gt 0 ]; then
	for t in nginx curl; do
		command -v "$t" >/dev/null || die "$t not found (apt-get install nginx curl, or TCP_ROUNDS=0)"
	done
fi
for t in ip nsenter ethtool nft iptables ip6tables iptables-legacy clang bpftool gcc "$PY"; do
	command -v "$t" >/dev/null || die "$t not found (apt-get install nftables iptables ethtool)"
done
if [ -n "$PROFILE" ]; then
	command -v perf >/dev/null || die "perf not found (apt-get install --no-install-recommends linux-perf)"
	mkdir -p "$PROFILE" || die "cannot create $PROFILE"
	PROFILE=$(readlink -f "$PROFILE")
	BPF_STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled) || die "no kernel.bpf_stats_enabled"
fi

# ---- build the generator if make did not ----

build_gen() {
	local d=$BUILD/bench/macro cflags
	mkdir -p "$d" || return 1
	if [ ! -e "$BUILD/bench/floor.skel.h" ] || [ "$TOP/bench/floor.bpf.c" -nt "$BUILD/bench/floor.skel.h" ]; then
		make -s -C "$TOP" BUILD="$BUILD" "$BUILD/bench/floor.skel.h" || return 1
	fi
	if [ ! -e "$d/gen.skel.h" ] || [ "$MACRO_DIR/gen.bpf.c" -nt "$d/gen.skel.h" ]; then
		clang -g -O2 -target bpf -Wall -Werror -I"$TOP/include" -I"$TOP/bpf" \
			-I"/usr/include/$(uname -m)-linux-gnu" \
			-c "$MACRO_DIR/gen.bpf.c" -o "$d/gen.bpf.o" &&
		bpftool gen skeleton "$d/gen.bpf.o" name gen_bpf >"$d/gen.skel.h" || return 1
	fi
	if [ ! -x "$GEN" ] || [ "$MACRO_DIR/macro.c" -nt "$GEN" ] || [ "$d/gen.skel.h" -nt "$GEN" ]; then
		cflags=$(pkg-config --cflags libbpf 2>/dev/null)
		# shellcheck disable=SC2086
		gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
			$cflags -I"$BUILD/bench" -I"$d" "$MACRO_DIR/macro.c" -o "$GEN" \
			-lbpf -lelf -lz -lpthread || return 1
	fi
}
build_gen || die "cannot build $GEN"

TMP=$(mktemp -d "/tmp/$P.XXXXXX") || die "mktemp"
BODY=""
CLEANED=0

in_c() { nsenter --net="/run/netns/$NS_C" "$@"; }
in_s() { nsenter --net="/run/netns/$NS_S" "$@"; }

# ---- cleanup, in the parent ----

cleanup() {
	local i ns
	[ "$CLEANED" -eq 1 ] && return
	CLEANED=1
	trap - EXIT INT TERM
	if [ -n "$BODY" ]; then
		kill -TERM -- "-$BODY" 2>/dev/null
		wait "$BODY" 2>/dev/null
		for i in $(seq 1 100); do
			kill -0 -- "-$BODY" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$BODY" 2>/dev/null
	fi
	if [ -e "/run/netns/$NS_S" ]; then
		# our namespace only: its firewall, its XDP programs, our pins
		in_s "$SL_BIN" detach --all >/dev/null 2>&1
		in_s nft flush ruleset 2>/dev/null
		in_s iptables-legacy -t raw -F 2>/dev/null
		in_s ip6tables-legacy -t raw -F 2>/dev/null
	fi
	for ns in "$NS_C" "$NS_S"; do
		[ -e "/run/netns/$ns" ] && ip netns del "$ns"
	done
	[ -z "$BPF_STATS_WAS" ] || sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_WAS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# ---- setup ----

netns_setup() {
	ip netns add "$NS_C" && ip netns add "$NS_S" || die "ip netns add"
	# two queues each way: two sending CPUs land on two receiving queues
	ip link add "$VC" numtxqueues 2 numrxqueues 2 netns "$NS_C" type veth \
		peer name "$VS" numtxqueues 2 numrxqueues 2 netns "$NS_S" ||
		die "cannot create the veth pair"
	ip -n "$NS_S" link set lo up
	in_s sysctl -qw net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0
	ip -n "$NS_S" addr add "$SRV4/24" dev "$VS"
	ip -n "$NS_S" addr add "$SRV6/64" dev "$VS" nodad
	ip -n "$NS_C" addr add "$CLI4/24" dev "$VC"	# the real TCP clients'
	ip -n "$NS_C" link set "$VC" up && ip -n "$NS_S" link set "$VS" up || die "link up"
	# NAPI on the receiving veth without an XDP program (netfilter cases):
	# veth runs NAPI, and so can take XDP frames, when GRO is on
	in_s ethtool -K "$VS" gro on >/dev/null || die "ethtool -K $VS gro on"
	DST_MAC=$(ip -n "$NS_S" -br link show dev "$VS" | awk '{print $3}')
	# a device no packet reaches, where the generator keeps its program
	# attached for the run, so that its test runs need not wait two RCU
	# grace periods each (see macro.c; there is no dummy module here)
	ip link add "$VH" netns "$NS_C" type veth peer name "${VH}p" netns "$NS_C" ||
		die "cannot create the generator's holding device"
}

# ---- the mechanisms ----
# mech_up MECH FAMILY MODE: MODE tput (limit far below the offered rate),
# accept (ACCEPT_RATE per source, far above it), spoof, tcp, or acc (10/s
# burst 60, one source SRC_ACC); mech_down MECH FAMILY;
# mech_counts MECH FAMILY: "DROPPED PASSED" by the mechanism's own counters.

sl_rules() {		# MODE MECH
	case "$1/$2" in
	tput/*) echo '  - { name: flood, protocol: udp, ports: 9, limit: 1, window: 60s }' ;;
	accept/*) echo "  - { name: flood, protocol: udp, ports: 9, limit: $((ACCEPT_RATE * 60)), window: 60s }" ;;
	acc/sl-bucket) echo '  - { name: flood, protocol: udp, ports: 9, limit: 60, window: 6s, algorithm: token-bucket, bucket_capacity: 60, refill_per_s: 10 }' ;;
	acc/sl-sliding) echo '  - { name: flood, protocol: udp, ports: 9, limit: 600, window: 60s }' ;;
	spoof/* | tcp/*)
		# README's answer to a spoofed flood: each address its own
		# limit, the port a total; tcp adds the real clients' rule
		echo '  - { name: flood, protocol: udp, ports: 9, limit: 1, window: 60s, continue: true }'
		echo '  - { name: port-cap, protocol: udp, ports: 9, limit: 1000, window: 1s, key: { ipv4_prefix: 0, ipv6_prefix: 0 } }'
		if [ "$1" = tcp ]; then
			echo "  - { name: web, protocol: tcp, ports: 80, limit: $WEB_LIMIT, window: 1s }"
		fi
		;;
	esac
}

nft_file() {		# MECH FAMILY MODE
	local ip=ip fam hook limit size=$SIZE pass_match
	[ "$2" = 6 ] && ip=ip6
	if [ "$1" = nft-netdev ]; then
		fam=netdev hook="type filter hook ingress device \"$VS\" priority -500;"
	else
		fam=inet hook="type filter hook prerouting priority -300;"
	fi
	if [ "$3" = tput ] || [ "$3" = spoof ] || [ "$3" = accept ]; then
		limit="limit rate over 1/minute burst 1 packets"
		[ "$3" = accept ] && limit="limit rate over $ACCEPT_RATE/second burst $ACCEPT_RATE packets"
		pass_match="udp dport 9"
		# the spoofed flood: the port's total as well (sl_rules)
		[ "$3" = spoof ] && pass_match="udp dport 9 limit rate over 1000/second burst 1000 packets counter name \"c_drop\" drop
			udp dport 9"
	else
		limit="limit rate over 10/second burst 60 packets"
		pass_match="$ip saddr $SRC_ACC"
		size=65536
	fi
	cat <<-EOF
	table $fam slm {
		counter c_drop { }
		counter c_pass { }
		chain c {
			$hook policy accept;
			meter m size $size { $ip saddr $limit } counter name "c_drop" drop
			$pass_match counter name "c_pass"
		}
	}
	EOF
}

ipt_cmd() {		# MECH FAMILY: the iptables binary
	local b=iptables
	[ "$2" = 6 ] && b=ip6tables
	[ "$1" = ipt-legacy ] && b=$b-legacy
	echo "$b"
}

ipt_args() {		# MODE FAMILY: the hashlimit rule
	if [ "$1" = tput ] || [ "$1" = spoof ]; then
		echo "-m hashlimit --hashlimit-name slm$2 --hashlimit-mode srcip --hashlimit-above 1/minute --hashlimit-burst 1 --hashlimit-htable-size $SIZE --hashlimit-htable-max $SIZE -j DROP"
	elif [ "$1" = accept ]; then
		echo "-m hashlimit --hashlimit-name slm$2 --hashlimit-mode srcip --hashlimit-above $ACCEPT_RATE/sec --hashlimit-burst $ACCEPT_RATE --hashlimit-htable-size $SIZE --hashlimit-htable-max $SIZE -j DROP"
	else
		echo "-m hashlimit --hashlimit-name slma$2 --hashlimit-mode srcip --hashlimit-above 10/second --hashlimit-burst 60 -j DROP"
	fi
}

# note each mechanism's exact commands once, for the results
note_cmd() {		# KEY TEXT
	[ -e "$TMP/cmd.$1" ] || printf '%s\n' "$2" >"$TMP/cmd.$1"
}

mech_up() {
	local mech=$1 fam=$2 mode=$3 b
	case $mech in
	slicelimit | sl-*)
		printf 'rules:\n%s\n' "$(sl_rules "$mode" "$mech")" >"$TMP/rules.yaml"
		# attach first: --clients only counts at the first load, and
		# `rules apply` before attach would be that first load
		b=""
		{ [ "$mode" = tput ] || [ "$mode" = accept ]; } && b="--clients $SIZE"
		note_cmd "$mode.$mech" "$(printf 'nsenter --net=/run/netns/%s slicelimit attach %s %s\nnsenter --net=/run/netns/%s slicelimit rules apply rules.yaml   # rules:\n%s' \
			"$NS_S" "$VS" "$b" "$NS_S" "$(sl_rules "$mode" "$mech")")"
		# shellcheck disable=SC2086
		in_s "$SL_BIN" attach "$VS" $b >/dev/null &&
		in_s "$SL_BIN" rules apply "$TMP/rules.yaml" >/dev/null
		;;
	xdp-drop | xdp-pass | floor-count)
		b=${mech#xdp-}
		# within its limit, the counter passes what it counts
		[ "$mech" = floor-count ] && b=count && [ "$mode" = accept ] && b=count-pass
		note_cmd "$mode.$mech" "nsenter --net=/run/netns/$NS_S sl-macro floor $VS $b --max-entries SIZE   # bench/floor.bpf.c floor_${b/-/_}, native XDP (bpf_xdp_attach, XDP_FLAGS_DRV_MODE)"
		in_s "$GEN" floor "$VS" "$b" --max-entries "$SIZE"
		;;
	nft-*)
		nft_file "$mech" "$fam" "$mode" >"$TMP/slm.nft"
		note_cmd "$mode.$mech.$fam" "nft -f - <<EOF
$(cat "$TMP/slm.nft")
EOF"
		in_s nft -f "$TMP/slm.nft"
		;;
	ipt-*)
		b=$(ipt_cmd "$mech" "$fam")
		# shellcheck disable=SC2046
		in_s "$b" -t raw -A PREROUTING $(ipt_args "$mode" "$fam") || return 1
		if [ "$mode" = spoof ]; then
			# the port's total as well (sl_rules)
			in_s "$b" -t raw -A PREROUTING -p udp --dport 9 -m limit --limit 1000/second --limit-burst 1000 -j ACCEPT &&
			in_s "$b" -t raw -A PREROUTING -p udp --dport 9 -j DROP || return 1
			note_cmd "$mode.$mech.$fam" "$b -t raw -A PREROUTING $(ipt_args "$mode" "$fam")
$b -t raw -A PREROUTING -p udp --dport 9 -m limit --limit 1000/second --limit-burst 1000 -j ACCEPT
$b -t raw -A PREROUTING -p udp --dport 9 -j DROP"
			return 0
		fi
		in_s "$b" -t raw -A PREROUTING -p udp --dport 9
		note_cmd "$mode.$mech.$fam" "$b -t raw -A PREROUTING $(ipt_args "$mode" "$fam")
$b -t raw -A PREROUTING -p udp --dport 9     # counts what passes"
		;;
	*) die "unknown mechanism $mech" ;;
	esac
}

mech_down() {
	local mech=$1 fam=$2 b
	case $mech in
	slicelimit | sl-*) in_s "$SL_BIN" detach --all >/dev/null ;;
	xdp-drop | xdp-pass | floor-count) ip -n "$NS_S" link set dev "$VS" xdpdrv off ;;
	nft-netdev) in_s nft delete table netdev slm ;;
	nft-inet) in_s nft delete table inet slm ;;
	ipt-legacy) in_s "$(ipt_cmd "$mech" "$fam")" -t raw -F PREROUTING ;;
	ipt-*)
		# iptables-nft: its table is an nft table; delete it so no
		# empty base chain stays hooked for the next cases
		in_s "$(ipt_cmd "$mech" "$fam")" -t raw -F PREROUTING
		if [ "$fam" = 6 ]; then in_s nft delete table ip6 raw; else in_s nft delete table ip raw; fi
		;;
	esac
}

# the receiver's veth counters: "PACKETS XDP_DROPS" over its queues
veth_counts() {
	in_s ethtool -S "$VS" | awk '/rx_queue_[0-9]+_xdp_packets:/ { p += $2 }
		/rx_queue_[0-9]+_xdp_drops:/ { d += $2 } END { printf "%d %d\n", p, d }'
}

mech_counts() {
	local mech=$1 fam=$2 b
	if { [ "$MODE_NOW" = spoof ] || [ "$MODE_NOW" = tcp ]; } &&
		[ "$mech" != xdp-drop ] && [ "$mech" != xdp-pass ] && [ "$mech" != floor-count ]; then
		# one counting rule for every mechanism and whatever rule
		# dropped: passed = what reached UDP (see nft below)
		veth_counts | { read -r rx _; p=$(stack_passed "$fam"); echo "$((rx - p)) $p"; }
		return
	fi
	case $mech in
	slicelimit | sl-*)
		# the rule's object in json-c's compact output (python would
		# cost a quarter of a second a call on this machine)
		in_s "$SL_BIN" stats --json | grep -o '{"rule":"flood",[^}]*}' |
			sed -E 's/.*"passed":([0-9]+).*"dropped":([0-9]+).*/\2 \1/' ;;
	xdp-drop | xdp-pass | floor-count) veth_counts | awk '{ print $2, $1 - $2 }' ;;
	nft-*)
		if [ "$MODE_NOW" = tput ] || [ "$MODE_NOW" = accept ]; then
			# nft 1.0.6 reads the whole ruleset, every element of the
			# meter included, to print one counter: minutes for a
			# meter of 1,000,000 sources (and the buckets refill
			# meanwhile). So: passed = what reached UDP (every packet
			# that passes the meter ends as UdpNoPorts: nothing
			# listens on port 9), dropped = what veth took in - that
			veth_counts | { read -r rx _; p=$(stack_passed "$fam"); echo "$((rx - p)) $p"; }
			return
		fi
		b=inet
		[ "$mech" = nft-netdev ] && b=netdev
		echo "$(in_s nft list counter "$b" slm c_drop | awk '/packets/ { print $2 }')" \
		     "$(in_s nft list counter "$b" slm c_pass | awk '/packets/ { print $2 }')" ;;
	ipt-*)
		# (2>/dev/null: iptables-nft warns that legacy tables exist)
		in_s "$(ipt_cmd "$mech" "$fam")" -t raw -L PREROUTING -v -x -n 2>/dev/null |
			awk 'NR == 3 { d = $1 } NR == 4 { p = $1 } END { print d, p }' ;;
	esac
}

# stack_passed FAMILY: UDP datagrams to a port nobody listens on (port 9)
stack_passed() {
	if [ "$1" = 6 ]; then
		in_s awk '$1 == "Udp6NoPorts" { print $2 }' /proc/net/snmp6
	else
		in_s awk '/^Udp:/ && ++n == 2 { print $3 }' /proc/net/snmp
	fi
}

# softirq ticks (USER_HZ) of the CPUs in a comma list, and of all CPUs
softirq_ticks() {
	awk -v cpus="$1" 'BEGIN { n = split(cpus, c, ","); for (i = 1; i <= n; i++) want["cpu" c[i]] = 1 }
		$1 == "cpu" { all = $8 } ($1 in want) { s += $8 }
		END { printf "%d %d\n", s, all }' /proc/stat
}

snapshot() {		# MECH FAMILY: "SOFTIRQ_GEN SOFTIRQ_ALL RX XDPDROP DROPPED PASSED"
	echo "$(softirq_ticks "$CPUS_NOW") $(veth_counts) $(mech_counts "$1" "$2")"
}

gen_cmd() {		# FAMILY N CPUS --seconds S | --packets P; N = spoof: random sources
	local fam=$1 n=$2 cpus=$3 src=$SRC4 dst=$SRV4 who
	shift 3
	if [ "$fam" = 6 ]; then src=$SRC6 dst=$SRV6; fi
	who="--base4 ${BASE4:-$SRC4} --clients $n"
	[ "$n" = spoof ] && who="--base4 $SPOOF_BASE4 --spoof $SPOOF_BITS"
	echo "$GEN gen --dev $VC --dst-mac $DST_MAC --src $src --dst $dst $who --cpus $cpus --hold-dev $VH $*"
}

# table_size N: the size of every mechanism's per-source table for N
# sources: slicelimit's default (262,144), doubled until N fits with room
# to spare (preallocated LRU tables evict a little before they are full)
table_size() {
	local s=262144
	if [ -n "$CLIENTS" ]; then echo "$CLIENTS"; return; fi
	while [ "$s" -lt $(($1 + $1 / 32)) ]; do s=$((s * 2)); done
	echo "$s"
}

# ---- 1. throughput ----

tput_case() {		# ROUND FAMILY N MECH [MODE: tput (over limit) or accept]
	local r=$1 fam=$2 n=$3 mech=$4 mode=${5:-tput} a b out
	CPUS_NOW=$GEN_CPUS BASE4=$SRC4 SIZE=$(table_size "$n") MODE_NOW=$mode
	if ! mech_up "$mech" "$fam" "$mode"; then
		echo "bench_macro: $mech: setup failed" >&2
		mech_down "$mech" "$fam" 2>/dev/null
		return 1
	fi
	# shellcheck disable=SC2046
	in_c $(gen_cmd "$fam" "$n" "$GEN_CPUS" --packets $((2 * n + 200000))) >/dev/null ||
		echo "bench_macro: $mech: warm-up failed" >&2
	a=$(snapshot "$mech" "$fam")
	note_cmd "gen.tput.$fam" "nsenter --net=/run/netns/$NS_C $(gen_cmd "$fam" N "$GEN_CPUS" --seconds "$SECS")"
	# shellcheck disable=SC2046
	out=$(in_c $(gen_cmd "$fam" "$n" "$GEN_CPUS" --seconds "$SECS")) ||
		echo "bench_macro: $mech: generator failed" >&2
	b=$(snapshot "$mech" "$fam")
	[ -z "$PROFILE" ] || profile_runs "$fam" "$n" "$mech" "$mode"
	mech_down "$mech" "$fam"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$fam" "$n" "$mech" "$r" "$out" "$a" "$b" >>"$TMP/data.tsv"
	log "$(printf 'round %s IPv%s N=%-8s %-6s %-14s ' "$r" "$fam" "$n" "$mode" "$mech")$(case_line "$out" "$a" "$b")"
}

# case_line GEN_JSON SNAPSHOT_BEFORE SNAPSHOT_AFTER: one line for the log
case_line() {
	echo "$(echo "$1" | sed -E 's/.*"elapsed_ns": ([0-9]+).*/\1/') $2 $3" |
		awk -v hz="$CLK_TCK" '{ e = $1 / 1e9; rx = $10 - $4
		printf "rx %.2f Mpps, dropped %.2f Mpps, passed %d, softirq %.0f ns/pkt\n", rx / e / 1e6,
			($12 - $6) / e / 1e6, $13 - $7, ($8 - $2) * 1e9 / hz / (rx ? rx : 1) }'
}

# ---- the profile (PROFILE=DIR) ----

rx_now() { veth_counts | awk '{ print $1 }'; }

profile_runs() {	# FAMILY N MECH MODE: see PROFILE at the top
	local fam=$1 n=$2 d=$PROFILE/$4.$3.$2 a gen
	gen=$(gen_cmd "$fam" "$n" "$GEN_CPUS" --seconds "$SECS")
	a=$(rx_now)
	# shellcheck disable=SC2086
	perf stat -a -A -x, -o "$d.stat.csv" -e "$PERF_EVENTS" -- \
		nsenter --net="/run/netns/$NS_C" $gen >/dev/null 2>"$d.stat.err" ||
		echo "bench_macro: profile $4 $3: perf stat failed (see $d.stat.err)" >&2
	echo $(($(rx_now) - a)) >"$d.stat.packets"

	a=$(rx_now)
	# shellcheck disable=SC2086
	perf record -q -a -g -e cpu-clock -c "$PERF_PERIOD" -o "$d.perf.data" -- \
		nsenter --net="/run/netns/$NS_C" $gen >/dev/null 2>"$d.record.err" ||
		echo "bench_macro: profile $4 $3: perf record failed (see $d.record.err)" >&2
	echo $(($(rx_now) - a)) >"$d.record.packets"
	# read now, while the programs are loaded
	perf script -i "$d.perf.data" -F cpu,event,ip,sym >"$d.script" 2>/dev/null
	"$PY" "$MACRO_DIR/profile_report.py" "$d.script" "$GEN_CPUS" "$PERF_PERIOD" \
		"$(cat "$d.record.packets")" >"$d.report.md"

	bpftool -j prog show >"$d.progs.before"
	a=$(rx_now)
	sysctl -qw kernel.bpf_stats_enabled=1
	# shellcheck disable=SC2086
	nsenter --net="/run/netns/$NS_C" $gen >/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_WAS"
	echo $(($(rx_now) - a)) >"$d.bpfstats.packets"
	bpftool -j prog show >"$d.progs.after"
	in_s bpftool -j net show dev "$VS" >"$d.net.json"
	"$PY" "$MACRO_DIR/bpf_run_time.py" "$d.progs.before" "$d.progs.after" \
		"$d.net.json" "$(cat "$d.bpfstats.packets")" >"$d.bpfstats.md"
	log "profile $4 $3 N=$n: $(head -1 "$d.report.md")"
}

# ---- 3. spoofed flood ----

spoof_case() {		# ROUND MECH
	local r=$1 mech=$2 a b out
	CPUS_NOW=$GEN_CPUS SIZE=262144 MODE_NOW=spoof
	if ! mech_up "$mech" 4 spoof; then
		echo "bench_macro: spoof $mech: setup failed" >&2
		mech_down "$mech" 4 2>/dev/null
		return 1
	fi
	# fill every table (and slicelimit's probation ways) first
	# shellcheck disable=SC2046
	in_c $(gen_cmd 4 spoof "$GEN_CPUS" --packets $((2 * SIZE + 200000))) >/dev/null ||
		echo "bench_macro: spoof $mech: warm-up failed" >&2
	a=$(snapshot "$mech" 4)
	note_cmd "gen.spoof" "nsenter --net=/run/netns/$NS_C $(gen_cmd 4 spoof "$GEN_CPUS" --seconds "$SECS")"
	# shellcheck disable=SC2046
	out=$(in_c $(gen_cmd 4 spoof "$GEN_CPUS" --seconds "$SECS")) ||
		echo "bench_macro: spoof $mech: generator failed" >&2
	b=$(snapshot "$mech" 4)
	mech_down "$mech" 4
	printf 'spoof\t4\t%s\t%s\t%s\t%s\t%s\t%s\n' "$((1 << SPOOF_BITS))" "$mech" "$r" "$out" "$a" "$b" >>"$TMP/data.tsv"
	log "$(printf 'round %s spoofed flood %-14s ' "$r" "$mech")$(case_line "$out" "$a" "$b")"
}

# ---- 4. real TCP clients during a spoofed flood ----

# nginx in the receiving namespace, one process, serving one small file
nginx_up() {
	local i
	mkdir -p "$TMP/www" "$TMP/nginx" || return 1
	head -c 612 /dev/zero | tr '\0' x >"$TMP/www/f"
	cat >"$TMP/nginx.conf" <<-EOF
	daemon off;
	master_process off;
	worker_processes 1;
	pid $TMP/nginx/pid;
	error_log $TMP/nginx/error.log;
	events { worker_connections 1024; }
	http {
		access_log off;
		client_body_temp_path $TMP/nginx/body;
		proxy_temp_path $TMP/nginx/proxy;
		fastcgi_temp_path $TMP/nginx/fastcgi;
		uwsgi_temp_path $TMP/nginx/uwsgi;
		scgi_temp_path $TMP/nginx/scgi;
		server { listen $SRV4:80; root $TMP/www; }
	}
	EOF
	in_s nginx -p "$TMP/nginx" -c "$TMP/nginx.conf" &
	NGINX=$!
	for i in $(seq 1 50); do
		in_c curl -s -o /dev/null --max-time 1 "http://$SRV4/f" && return 0
		sleep 0.1
	done
	return 1
}

nginx_down() {
	[ -n "${NGINX:-}" ] || return 0
	kill "$NGINX" 2>/dev/null
	wait "$NGINX" 2>/dev/null
	NGINX=""
}

# TCP_REQS requests at TCP_RATE/s, each on a connection of its own
# (Connection: close), each bounded to 2 s; one "ROUND PHASE CODE SECONDS"
# line per request in tcp.tsv (code 000: no answer)
tcp_clients() {		# ROUND PHASE
	local a b
	a=$(tcp_drops)
	in_c curl -s --rate "$TCP_RATE/s" --connect-timeout 2 --max-time 2 \
		-H 'Connection: close' -o /dev/null -w "$1\t$2\t%{http_code}\t%{time_total}\n" \
		"http://$SRV4/f?[1-$TCP_REQS]" >>"$TMP/tcp.tsv"
	b=$(tcp_drops)
	echo "$1 $2 $a $b" | awk '{ printf "%s\t%s\t%d\t%d\t%d\n", $1, $2, $6 - $3, $7 - $4, $8 - $5 }' >>"$TMP/tcpdrops.tsv"
}

# "WEB_DROPPED RX_QUEUE_DROPS TX_DROPPED": what slicelimit's tcp 80 rule
# dropped (the clients' own rule), the receiving veth's rx_queue_*_drops
# and the sending veth's tx dropped (what either could not take or hand
# over; the flood's frames as well as the clients')
tcp_drops() {
	echo "$(in_s "$SL_BIN" stats --json | grep -o '{"rule":"web",[^}]*}' |
		sed -E 's/.*"dropped":([0-9]+).*/\1/')" \
	     "$(in_s ethtool -S "$VS" | awk '/rx_queue_[0-9]+_drops:/ { d += $2 } END { print d + 0 }')" \
	     "$(ip -n "$NS_C" -s -j link show dev "$VC" | grep -o '"tx":{[^}]*}' |
		sed -E 's/.*"dropped":([0-9]+).*/\1/')"
}

tcp_part() {
	local r flood secs a b out
	MODE_NOW=tcp CPUS_NOW=$GEN_CPUS SIZE=262144
	nginx_up || { echo "bench_macro: tcp: nginx does not answer" >&2; nginx_down; return 1; }
	mech_up slicelimit 4 tcp || { echo "bench_macro: tcp: setup failed" >&2; nginx_down; return 1; }
	note_cmd "tcp.clients" "nsenter --net=/run/netns/$NS_C curl -s --rate $TCP_RATE/s --connect-timeout 2 --max-time 2 -H 'Connection: close' -o /dev/null -w '%{http_code} %{time_total}\n' 'http://$SRV4/f?[1-$TCP_REQS]'
nsenter --net=/run/netns/$NS_S nginx -p DIR -c nginx.conf   # master_process off, one worker, a 612-byte file"
	secs=$(( TCP_REQS / TCP_RATE + 3 ))
	note_cmd "tcp.flood" "nsenter --net=/run/netns/$NS_C $(gen_cmd 4 spoof "$GEN_CPUS" --seconds "$secs")   # while the clients run"
	for r in $(seq 1 "$TCP_ROUNDS"); do
		tcp_clients "$r" quiet
		a=$(snapshot slicelimit 4)
		# shellcheck disable=SC2046
		in_c $(gen_cmd 4 spoof "$GEN_CPUS" --seconds "$secs") >"$TMP/flood.json" &
		flood=$!
		sleep 0.5
		tcp_clients "$r" flood
		wait "$flood" || echo "bench_macro: tcp: the flood's generator failed" >&2
		b=$(snapshot slicelimit 4)
		out=$(cat "$TMP/flood.json")
		printf 'flood\t4\t%s\tslicelimit\t%s\t%s\t%s\t%s\n' "$((1 << SPOOF_BITS))" "$r" "$out" "$a" "$b" >>"$TMP/data.tsv"
		log "tcp round $r: $(awk -v r="$r" '$1 == r { n[$2]++; if ($3 == 200) ok[$2]++ }
			END { printf "quiet %d/%d, flood %d/%d answered", ok["quiet"], n["quiet"], ok["flood"], n["flood"] }' "$TMP/tcp.tsv"); flood $(case_line "$out" "$a" "$b")"
	done
	mech_down slicelimit 4
	nginx_down
}

# ---- 0. calibration ----

# what the generator and the XDP_DROP floor reach on every CPU of
# ACC_CPUS, for summary.py's plausibility check of the floors
cal_case() {
	local a b out
	CPUS_NOW=$ACC_CPUS BASE4=$SRC4 SIZE=262144 MODE_NOW=tput
	mech_up xdp-drop 4 tput || { echo "bench_macro: calibration: setup failed" >&2; return 1; }
	a=$(snapshot xdp-drop 4)
	# shellcheck disable=SC2046
	out=$(in_c $(gen_cmd 4 1000 "$ACC_CPUS" --seconds "$CAL_SECS")) ||
		echo "bench_macro: calibration: generator failed" >&2
	b=$(snapshot xdp-drop 4)
	mech_down xdp-drop 4
	printf 'cal\t4\t1000\txdp-drop\t1\t%s\t%s\t%s\n' "$out" "$a" "$b" >>"$TMP/data.tsv"
	log "calibration: XDP_DROP, generator on CPUs $ACC_CPUS: $(case_line "$out" "$a" "$b")"
}

# ---- 2. accuracy ----

acc_case() {		# ROUND MECH INDEX
	local r=$1 mech=$2 i=$3 a b out
	SIZE=262144 MODE_NOW=acc
	# a source of its own per round and mechanism: no state carries over
	SRC_ACC=10.201.$r.$((i + 1)) BASE4=$SRC_ACC CPUS_NOW=$ACC_CPUS
	mech_up "$mech" 4 acc || { echo "bench_macro: $mech: setup failed" >&2; mech_down "$mech" 4; return 1; }
	a=$(snapshot "$mech" 4)
	note_cmd "gen.acc" "nsenter --net=/run/netns/$NS_C $(gen_cmd 4 1 "$ACC_CPUS" --seconds "$ACC_SECS")"
	# shellcheck disable=SC2046
	out=$(in_c $(gen_cmd 4 1 "$ACC_CPUS" --seconds "$ACC_SECS")) ||
		echo "bench_macro: $mech: generator failed" >&2
	sleep 0.1
	b=$(snapshot "$mech" 4)
	mech_down "$mech" 4
	printf 'acc\t4\t1\t%s\t%s\t%s\t%s\t%s\n' "$mech" "$r" "$out" "$a" "$b" >>"$TMP/data.tsv"
	log "accuracy round $r $mech: passed $(( $(echo "$b" | awk '{print $6}') - $(echo "$a" | awk '{print $6}') ))"
}

body() {
	local r n m i t0
	t0=$(date +%s)
	netns_setup
	log "veth $VC -> $VS (2 queues), generator CPUs $GEN_CPUS, $ROUNDS rounds x ${SECS}s per case"
	cal_case
	for r in $(seq 1 "$ROUNDS"); do
		for n in $NS; do
			for m in $MECHS; do
				tput_case "$r" 4 "$n" "$m"
			done
		done
		for n in $ACCEPT_NS; do
			for m in $ACCEPT_MECHS; do
				tput_case "$r" 4 "$n" "$m" accept
			done
		done
		for n in $V6_NS; do
			for m in $MECHS; do
				[ "$m" = floor-count ] && continue	# IPv4 only
				tput_case "$r" 6 "$n" "$m"
			done
		done
		for m in $SPOOF_MECHS; do
			spoof_case "$r" "$m"
		done
	done
	if [ "$TCP_ROUNDS" -gt 0 ]; then
		log "real TCP clients: $TCP_ROUNDS rounds of $TCP_REQS requests at $TCP_RATE/s, quiet then during a spoofed flood"
		tcp_part
	fi
	log "accuracy: ${ACC_SECS}s floods from one source on CPUs $ACC_CPUS, $ACC_ROUNDS rounds"
	for r in $(seq 1 "$ACC_ROUNDS"); do
		i=0
		for m in $ACC_MECHS; do
			acc_case "$r" "$m" "$i"
			i=$((i + 1))
		done
	done
	RUN_INFO=(
		"date=$(date -u '+%Y-%m-%d %H:%M UTC')"
		"kernel=$(uname -r)"
		"cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) x $(nproc)"
		"nft=$(nft -v)"
		"iptables=$(iptables -V) / $(iptables-legacy -V)"
		"slicelimit=$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)"
		"settings=$ROUNDS interleaved rounds x ${SECS}s per throughput case (after 2N+200000 warm-up packets), generator CPU(s) $GEN_CPUS; table sizes ${CLIENTS:-262144 for N <= 100000, 1048576 for N = 1000000}; accept path (every source within a limit of $ACCEPT_RATE/s) for N in ${ACCEPT_NS:-none} in the same rounds; spoofed flood over 2^$SPOOF_BITS sources in the same rounds; real TCP clients $TCP_ROUNDS rounds x $TCP_REQS requests at $TCP_RATE/s; accuracy $ACC_ROUNDS rounds x ${ACC_SECS}s on CPUs $ACC_CPUS"
		"clk_tck=$(getconf CLK_TCK)"
		"gen_cpus=$GEN_CPUS"
		"spoof_bits=$SPOOF_BITS"
		"web_limit=$WEB_LIMIT"
		"tcp_reqs=$TCP_REQS"
		"tcp_rounds=$TCP_ROUNDS"
		"tcp_rate=$TCP_RATE"
		"cal_cpus=$ACC_CPUS"
		"floor_min_mpps=${FLOOR_MIN_MPPS:-0.5}"
		"floor_min_share=${FLOOR_MIN_SHARE:-0.2}"
		"rx_min_share=${RX_MIN_SHARE:-0.5}"
		"flood_min_mpps=${FLOOD_MIN_MPPS:-0.05}"
		"accept_max_drop=${ACCEPT_MAX_DROP:-0.01}"
		"accept_rate=$ACCEPT_RATE"
		"elapsed=$(( $(date +%s) - t0 ))"
	)
	"$PY" "$MACRO_DIR/summary.py" "$TMP" "$RESULTS" "${RUN_INFO[@]}"
}

rc=0
set -m
(set +m; body) &
BODY=$!
set +m
wait "$BODY" || rc=$?
cleanup
exit "$rc"
