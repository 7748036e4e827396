#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench_xdp's goals (make bench, RESULTS-micro.txt): each goal's ratio is
# its case's median over its floor's median from the same run, its
# verdict follows the ratio, and the no-rule path is held against the
# parse-only floor (bench/floor.bpf.c floor_parse), which runs beside
# XDP_DROP and the bare counter. A short run (one round of 1,000
# packets, about 15 s): the figures are noise, the arithmetic is not.
# Root (BPF_PROG_TEST_RUN).
#
#   tests/replay/test_bench_goals.sh [BUILD_DIR]    (TAP lines)
set -u
build=${1:-build}
BENCH=$build/bench/bench_xdp
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
[ -x "$BENCH" ] || { echo "not ok - $BENCH: no binary (make $BENCH)"; exit 1; }
tmp=$(mktemp /tmp/slicelimit-bench-goals.XXXXXX)
trap 'rm -f "$tmp"' EXIT
if ! "$BENCH" --rounds 1 --packets 1000 --json >"$tmp" 2>/dev/null; then
	echo "not ok - bench_xdp --rounds 1 --packets 1000 --json failed"
	exit 1
fi
"$PY" - "$tmp" <<'EOF_PY'
import json
import sys

o = json.load(open(sys.argv[1]))
failed = False


def ok(cond, what, diag=""):
    global failed
    print(("ok - " if cond else "not ok - ") + what)
    if not cond:
        failed = True
        print("#   " + str(diag))


PARSE = "floor: parse only (Eth, VLAN, IP, L4), XDP_PASS"
FLOORS = {"x XDP_DROP": "floor: XDP_DROP only",
          "x counter": "floor: per-source LRU per-CPU count",
          "x parse-only floor": PARSE}
cases = {c["name"]: c for c in o["cases"]}
new = {c["name"]: c for c in o["new_sources"]}
ok([c["name"] for c in o["cases"][:3]] == list(FLOORS.values()),
   "the three floors lead the cases: XDP_DROP, the bare counter, the parse-only floor",
   [c["name"] for c in o["cases"][:3]])
ok(PARSE in cases and all(abs(c.get("x_parse", float("nan")) - c["median_ns"] / cases[PARSE]["median_ns"]) < 1e-9
       for c in o["cases"]),
   "every case's x_parse is its median over the parse-only floor's")
goals = {g["path"]: g for g in o["goals"]}
g = goals.get("no rule matched", {})
ok(g.get("floor") == "x parse-only floor" and g.get("at_most") == 1.25,
   "the no-rule goal: <= 1.25 x the parse-only floor", g)
for g in o["goals"]:
    if g["floor"] == "x counter insert":
        want = new[g["case"]]["median_ns"] / new["floor: bare counter's insert (LRU, full)"]["median_ns"]
    else:
        want = cases[g["case"]]["median_ns"] / cases[FLOORS[g["floor"]]]["median_ns"]
    ok(abs(g["ratio"] - want) < 1e-9 and g["met"] == (want <= g["at_most"]),
       f"goal '{g['path']}': {g['ratio']:.2f} = the run's median over {g['floor']}'s, "
       f"met {g['met']} against {g['at_most']}", (g, want))
sys.exit(1 if failed else 0)
EOF_PY
