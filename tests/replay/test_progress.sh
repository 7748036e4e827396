#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `slicelimit replay`'s progress line (user/util/progress.c): on a terminal, a
# long trace shows "replay: DONE/TOTAL requests (P%)" on stderr, redrawn in
# place and cleared at the end; stderr not a terminal, or --json, or
# --decisions, or a run shorter than the first redraw (0.5 s): not a byte.
# bench_xdp (make bench) shows its measurements the same way, and nothing
# off a terminal or with --json.
# The terminal is a pseudo-terminal from script(1) (util-linux), stdout
# redirected to a file so the typescript holds only stderr. Root (the
# replay runs the BPF program, BPF_PROG_TEST_RUN).
#
#   tests/replay/test_progress.sh [BUILD_DIR]    (TAP lines)
set -u
build=${1:-build}
SL=$(readlink -f "$build/slicelimit")
tmp=$(mktemp -d /tmp/slicelimit-progress.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
# shellcheck source=replay_tap.sh
. "$(dirname "$0")/replay_tap.sh"
N=1500000	# 3 to 5 s here: a redraw or more

command -v script >/dev/null || { echo "not ok - script(1) not found (util-linux)"; exit 1; }
[ -x "$SL" ] || { echo "not ok - $build/slicelimit: no binary (make)"; exit 1; }

# N requests of 200 clients, one a ms (awk: a python loop takes seconds)
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "%d 10.0.%d.%d\n", i, i % 4, i % 50 }' \
	>"$tmp/big.trace"
head -100 "$tmp/big.trace" >"$tmp/small.trace"

# on_tty NAME ARGS...: slicelimit ARGS with stderr (and stdin) on a
# pseudo-terminal, stdout to $tmp/NAME.out; what reached the terminal in
# $tmp/NAME.tty (script's typescript, less its header and footer lines)
on_tty() {
	local name=$1 cmd
	shift
	printf -v cmd '%q ' "$SL" "$@"
	script -qfec "$cmd >$tmp/$name.out" "$tmp/$name.ts" >/dev/null </dev/null
	"$PY" -c '
import re, sys
t = open(sys.argv[1], "rb").read()
t = t.split(b"\n", 1)[1] if b"\n" in t else b""
open(sys.argv[2], "wb").write(re.sub(rb"\n?Script done on [^\n]*\n?$", b"", t))' \
		"$tmp/$name.ts" "$tmp/$name.tty"
}

# progress FILE: the progress lines FILE holds, as "DONE/TOTAL" words
progress() {
	"$PY" -c '
import re, sys
t = open(sys.argv[1], "rb").read().decode()
print(" ".join("%s/%s" % m for m in re.findall(r"\rreplay: (\d+)/(\d+) requests \(\d+%\)\x1b\[K", t)))' "$1"
}

# bench_xdp: a short run, still several redraws long. libbpf writes its
# own notes to stderr, so what is checked is the progress lines alone.
BENCH=$(readlink -f "$build/bench/bench_xdp")
bench_args=(--rounds 3 --packets 300000 --clients 32768)
bench_lines() {		# FILE: how many progress lines of bench_xdp it holds
	"$PY" -c '
import re, sys
t = open(sys.argv[1], "rb").read().decode("latin-1")
print(len(re.findall(r"\rbench_xdp: \d+/\d+ measurements \(\d+%\)\x1b\[K", t)))' "$1"
}
# bench NAME ARGS...: bench_xdp ARGS, stderr to $tmp/NAME.err (nothing
# without the binary: its check says so)
bench() {
	local name=$1
	shift
	[ -x "$BENCH" ] || return 0
	"$BENCH" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
}
bench_tty() {		# NAME ARGS...: on_tty with bench_xdp
	[ -x "$BENCH" ] || return 0
	SL=$BENCH on_tty "$@"
}

# The runs, two at a time (each a core: bench_xdp pins itself to CPU 0, a
# replay does not), then the checks, in order. Every long run is as long
# as alone or longer, so a progress line that should not be there still
# has redraws' worth of time to appear. The 100-request run alone: it
# must end before the first redraw.
"$SL" replay "$tmp/big.trace" --limit 100 >"$tmp/plain.out" 2>"$tmp/plain.err" &
bench bench "${bench_args[@]}" &
wait
"$SL" -j replay "$tmp/big.trace" --limit 100 >"$tmp/json.out" 2>"$tmp/json.err" &
bench_tty benchtty "${bench_args[@]}" &
wait
on_tty tty replay "$tmp/big.trace" --limit 100 &
bench_tty benchjson "${bench_args[@]}" --json &
wait
on_tty ttyjson -j replay "$tmp/big.trace" --limit 100 &
on_tty ttydec replay "$tmp/big.trace" --limit 100 --decisions &
wait
on_tty ttysmall replay "$tmp/small.trace" --limit 100

# not on a terminal: exactly what it printed before progress existed
is "stderr not a terminal: replay of $N requests writes nothing to stderr" \
	"$(wc -c <"$tmp/plain.err")" 0
is "... nor with --json" "$(wc -c <"$tmp/json.err")" 0

p=$(progress "$tmp/tty.tty")
if [ -n "$p" ] && "$PY" -c '
import sys
w = [tuple(map(int, x.split("/"))) for x in sys.argv[1].split()]
sys.exit(not all(t == int(sys.argv[2]) and 0 < d < t for d, t in w)
         or [d for d, _ in w] != sorted(d for d, _ in w))' "$p" "$N"; then
	ok "stderr a terminal: progress lines 'replay: DONE/$N requests (P%)', DONE rising ($p)"
else
	not_ok "stderr a terminal: progress lines 'replay: DONE/$N requests (P%)', DONE rising" \
		"got: $(od -c "$tmp/tty.tty" | head -5)"
fi
is "... and the last thing on the terminal clears the line (\\r ESC[K)" \
	"$(tail -c 4 "$tmp/tty.tty" | od -An -c | tr -s ' ')" " \r 033 [ K"
is "... and stdout is byte-identical to the run without a terminal" \
	"$(cmp -s "$tmp/plain.out" "$tmp/tty.out" && echo same)" same

is "--json on a terminal: nothing on stderr, stdout the same JSON" \
	"$(wc -c <"$tmp/ttyjson.tty")/$(cmp -s "$tmp/json.out" "$tmp/ttyjson.out" && echo same)" "0/same"

is "--decisions on a terminal (a line per request already streams): no progress line" \
	"$(wc -c <"$tmp/ttydec.tty")" 0

is "a 100-request trace on a terminal, done before the first redraw: nothing on stderr" \
	"$(wc -c <"$tmp/ttysmall.tty")" 0

if [ -x "$BENCH" ]; then
	is "bench_xdp, stderr not a terminal: no progress line" \
		"$(bench_lines "$tmp/bench.err")" 0
	n=$(bench_lines "$tmp/benchtty.tty")
	if [ "$n" -gt 0 ]; then
		ok "bench_xdp, stderr a terminal: $n progress lines 'bench_xdp: DONE/TOTAL measurements (P%)'"
	else
		not_ok "bench_xdp, stderr a terminal: progress lines" \
			"got: $(od -c "$tmp/benchtty.tty" | head -5)"
	fi
	is "bench_xdp --json on a terminal: no progress line" \
		"$(bench_lines "$tmp/benchjson.tty")" 0
else
	not_ok "$build/bench/bench_xdp: no binary (make test builds it)"
fi

[ "$failed" -eq 0 ]
