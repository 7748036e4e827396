#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench/macro/summary.py's goal rows computed from the run's medians, not
copied: a synthetic run (data.tsv as bench_macro.sh writes it), two
variants of it, each goal's ratio and verdict read from goals_json and
checked against the medians of the input; the accept tables' headings in
RESULTS; a run whose accept case drops packets refused. TAP lines.

    bench_summary.py SUMMARY_PY
"""
import json
import os
import subprocess
import sys
import tempfile

from replay_tap import failed, tap

SUMMARY = sys.argv[1]
CLK = 100
RX = 1_000_000		# packets per case: ns/pkt = softirq ticks x 10


def row(kind, n, mech, rnd, ns, dropped=0):
    """A data.tsv line: RX packets in 0.5 s, ns/pkt softirq, `dropped` of them."""
    ticks = ns * RX * CLK // 1_000_000_000
    gen = json.dumps({"sent": RX, "elapsed_ns": 500_000_000, "threads": 1, "calls": 1})
    a = "1000 2000 0 0 0 0"
    b = f"{1000 + ticks} {2000 + ticks} {RX} {dropped} {dropped} {RX - dropped}"
    return f"{kind}\t4\t{n}\t{mech}\t{rnd}\t{gen}\t{a}\t{b}\n"


# ns/pkt per round for each (kind, N, mechanism): three rounds, the
# median the middle one
BASE = {
    ("tput", 1000): {"slicelimit": (280, 300, 900), "floor-count": (90, 100, 110),
                     "xdp-drop": (40, 50, 60), "nft-netdev": (700, 800, 900),
                     "nft-inet": (500, 600, 700), "ipt-hashlimit": (650, 700, 750)},
    ("accept", 1000): {"slicelimit": (500, 520, 2000), "floor-count": (300, 310, 320),
                       "xdp-pass": (250, 260, 270), "xdp-drop": (40, 50, 60),
                       "nft-netdev": (900, 1000, 1100), "nft-inet": (900, 950, 1000),
                       "ipt-hashlimit": (800, 900, 1000)},
}


def run(cases, drops=None):
    """summary.py over the cases; (exit status, goals, RESULTS text)."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "data.tsv"), "w") as f:
            f.write(row("cal", 1000, "xdp-drop", 1, 30))
            for (kind, n), mechs in cases.items():
                for mech, per_round in mechs.items():
                    for r, ns in enumerate(per_round, 1):
                        d = (drops or {}).get((kind, n, mech), 0)
                        if mech == "xdp-drop":
                            d = RX
                        f.write(row(kind, n, mech, r, ns, d))
        results = os.path.join(tmp, "RESULTS.md")
        gj = os.path.join(tmp, "goals.json")
        p = subprocess.run([sys.executable, SUMMARY, tmp, results, f"clk_tck={CLK}",
                            "tcp_rounds=0", "cal_cpus=0", "gen_cpus=0",
                            f"goals_json={gj}"], capture_output=True, text=True)
        goals = json.load(open(gj)) if os.path.exists(gj) else []
        text = open(results).read() if os.path.exists(results) else ""
        return p.returncode, goals, text, p.stderr


def find(goals, table, n):
    return [g for g in goals if g["table"] == table and g["n"] == n]


def medians(cases, kind, n):
    return {m: sorted(v)[1] for m, v in cases[(kind, n)].items()}


def check(cases, label):
    rc, goals, text, err = run(cases)
    tap(rc == 0, f"{label}: summary.py writes RESULTS", err)
    tap("### IPv4, N = 1,000 sources, every source within its limit" in text,
        f"{label}: the accept table's heading, beside the over-limit table")
    over, acc = medians(cases, "tput", 1000), medians(cases, "accept", 1000)
    want = {
        ("over limit", "slicelimit / bare counter"): (over["slicelimit"] / over["floor-count"], 1.5),
        ("over limit", "slicelimit / the cheaper of nft meter and hashlimit"):
            (over["slicelimit"] / min(over[m] for m in ("nft-netdev", "nft-inet", "ipt-hashlimit")), 0.5),
        ("within limit", "slicelimit / bare counter, both passing"):
            (acc["slicelimit"] / acc["floor-count"], 2),
        ("within limit, above XDP_PASS", "the same above the XDP_PASS floor (the programs' own share)"):
            ((acc["slicelimit"] - acc["xdp-pass"]) / (acc["floor-count"] - acc["xdp-pass"]), 2),
    }
    for (table, what), (ratio, bound) in want.items():
        got = [g for g in find(goals, table, 1000) if g["what"] == what]
        tap(len(got) == 1 and abs(got[0]["ratio"] - ratio) < 0.01 and
            got[0]["at_most"] == bound and got[0]["met"] == (ratio <= bound),
            f"{label}: {table}, N = 1,000, {what}: {ratio:.2f} against {bound}, "
            f"{'met' if ratio <= bound else 'missed'}", json.dumps(got))
    return goals


g1 = check(BASE, "run A")
# run B: slicelimit twice as fast on both paths, every other figure the same
fast = {k: dict(v) for k, v in BASE.items()}
fast[("tput", 1000)]["slicelimit"] = (100, 110, 120)
fast[("accept", 1000)]["slicelimit"] = (280, 290, 300)
g2 = check(fast, "run B")
tap([g["met"] for g in g1] != [g["met"] for g in g2],
    "a goal's verdict follows the run's figures (run A misses what run B meets)",
    json.dumps([g1, g2]))

rc, _, text, err = run(BASE, {("accept", 1000, "nft-inet"): RX // 2})
tap(rc == 1 and "dropped" in err and not text,
    "an accept case that drops half its packets (a source over its limit): the run refused",
    err)
sys.exit(1 if failed() else 0)
