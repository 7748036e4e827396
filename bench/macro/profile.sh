#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench/macro/profile.sh BUILD_DIR [OUT_DIR]: where a packet's nanoseconds
# go at scale. bench_macro.sh's PROFILE mode on the 1,000,000-source case,
# every source over its limit and then every source within it, for
# slicelimit, the bare counter and the floors: each case measured as in
# `make bench` (one round), then perf stat, perf record -a -g over the
# softirq that runs XDP, and the kernel's BPF run-time statistics (see
# bench_macro.sh). Writes OUT_DIR (BUILD_DIR/bench/profile by default):
# MODE.MECH.N.report.md (the softirq's functions, self and total, ns per
# packet), .bpfstats.md (ns per program run), .stat.csv (perf stat),
# .perf.data, and RESULTS-macro.md (the cases' tables); prints the reports.
# Needs Debian's linux-perf. Settings: PROFILE_NS (1000000), SECS (3),
# PROFILE_MECHS ("slicelimit floor-count xdp-drop"), PROFILE_ACCEPT_MECHS
# ("slicelimit floor-count xdp-pass xdp-drop"; empty: no accept case),
# PERF_EVENTS, PERF_PERIOD (bench_macro.sh).
set -u
if [ $# -lt 1 ] || [ $# -gt 2 ]; then echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2; exit 2; fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${2:-$1/bench/profile}
mkdir -p "$out" || exit 1
out=$(readlink -f "$out")
n=${PROFILE_NS:-1000000}
accept_mechs=${PROFILE_ACCEPT_MECHS-"slicelimit floor-count xdp-pass xdp-drop"}
accept_ns=$n
[ -n "$accept_mechs" ] || accept_ns=""
PROFILE=$out NS=$n MECHS=${PROFILE_MECHS:-"slicelimit floor-count xdp-drop"} \
ACCEPT_NS=$accept_ns ACCEPT_MECHS=$accept_mechs V6_NS="" SPOOF_MECHS="" \
TCP_ROUNDS=0 ACC_ROUNDS=0 ROUNDS=1 SECS=${SECS:-3} RESULTS=$out/RESULTS-macro.md \
	"$here/bench_macro.sh" "$1" >"$out/bench_macro.log" || {
	echo "profile: bench_macro.sh failed (see $out/bench_macro.log)" >&2
	exit 1
}
for f in "$out"/*.report.md; do
	base=${f%.report.md}
	echo "== $(basename "$base")"
	cat "$f"
	echo
	cat "$base.bpfstats.md"
	echo
	grep -v '^#' "$base.stat.csv" | awk -F, 'NF > 3 && $1 == "CPU0" { print "perf stat CPU0: " $4 " = " $2 " " $3 }'
	echo
done
