#!/usr/bin/env python3
"""Every algorithm counted fleet-wide: 8 nodes beside 1, through the real
BPF program and sync engine (`slicelimit replay --nodes 8`).

For each algorithm, on 8 nodes with each client's requests spread by its
own run of the design study's generator (what --assign lcg:20260730 does
for a trace of one client), rounds every 200 ms, under delayed-sync,
predictive and bounded:
  - a steady over-limit client for two and a half windows (90/s against 600 per
    60 s; for token-bucket 15/s, 1.5 x its refill of 10/s, capacity 60)
    gets at most 1.1 x of what one node lets it have in any 60 s;
  - a compliant client is never rejected: the study's 10/s (600 per 60 s,
    at the limit) for the exact algorithms; for the weighted counter,
    whose estimate rejects even 10/s on one node, and for the bucket,
    9/s;
  - under bounded, the all-node burst (the limit, or the bucket's
    capacity, sent to each of the 8 nodes within 100 ms) gets at most
    1.1 x of what one node lets it have.
Every algorithm is a rule of one rule file (told apart by destination
port) and its clients addresses of their own, so each layout is one
replay of all of them: each node's copy of the program is loaded once per
layout, not once per algorithm, which is where the time of a replay of 8
nodes goes. Asserts on --json output; prints TAP lines. With --table,
docs/ACCURACY.md's table.

usage: fleet.py SLICELIMIT [--table]
"""
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from replay_json import replay_json
from replay_tap import failed, tap

SL = sys.argv[1] if len(sys.argv) > 1 else "build/slicelimit"
TABLE = "--table" in sys.argv
NODES = ["--nodes", "8", "--sync-interval", "200ms"]
LAYOUTS = ("delayed-sync", "predictive", "bounded")

WINDOW = {"limit": 600, "window": "60s"}
BUCKET = {"algorithm": "token-bucket", "limit": 60, "bucket_capacity": 60,
          "refill_per_s": 10, "window": "60s"}
# name, rule, over-limit rate, compliant rate (per second), burst per node
ALGOS = [
    ("sliding", WINDOW, 90, 10, 600),
    ("sliding-plain", {**WINDOW, "algorithm": "sliding-plain"}, 90, 10, 600),
    ("fixed", {**WINDOW, "algorithm": "fixed"}, 90, 10, 600),
    ("sliding-log", {**WINDOW, "algorithm": "sliding-log"}, 90, 10, 600),
    ("sliding-counter, 1 slice", {**WINDOW, "algorithm": "sliding-counter"}, 90, 9, 600),
    ("sliding-counter, 12 slices",
     {**WINDOW, "algorithm": "sliding-counter", "slices": 12}, 90, 9, 600),
    ("sliding-counter, 60 slices",
     {**WINDOW, "algorithm": "sliding-counter", "slices": 60}, 90, 9, 600),
    ("token-bucket", BUCKET, 15, 9, 60),
]
PORT0 = 1000     # algorithm a's rule matches port PORT0 + a


def study_nodes(n):
    """The study's node generator, as --assign lcg:20260730 runs it:
    s = s * 1103515245 + 12345 mod 2^32, node floor(s / 2^32 * 8), first
    request after the first step."""
    s, out = 20260730, []
    for _ in range(n):
        s = (s * 1103515245 + 12345) % 2**32
        out.append(s * 8 >> 32)
    return out


def client(a, role):
    """Algorithm a's over-limit (1), compliant (2) or burst (3) client."""
    return f"10.{a + 1}.0.{role}"


def trace(a, over, ok_rate, burst):
    """Algorithm a's three clients (keys of their own, they do not meet).
    Two spread over the nodes by their own run of the study's generator:
    the over-limit one for 150 s from 1.7 s into a peer slice (windows free
    up mid-slice), the compliant one for 120 s. The third sends `burst` to
    each node within 100 ms. Requests at whole ms, as (t, client, node,
    port)."""
    reqs = []
    for rate, seconds, start, role in ((over, 150, 1700, 1),
                                       (ok_rate, 120, 0, 2)):
        for i, node in enumerate(study_nodes(rate * seconds)):
            reqs.append((start + i * 1000 // rate, client(a, role), node,
                         PORT0 + a))
    reqs += [(i * 100 // (burst * 8), client(a, 3), i % 8, PORT0 + a)
             for i in range(burst * 8)]
    return reqs


def rules_yaml(path):
    with open(path, "w") as f:
        f.write("rules:\n")
        for a, (name, rule, _, _, _) in enumerate(ALGOS):
            f.write(f"  - name: r{a}\n    protocol: udp\n"
                    f"    ports: {PORT0 + a}\n")
            f.writelines(f"    {k}: {v}\n" for k, v in rule.items())


def replay(lines, args):
    """Per client, from slicelimit replay --json."""
    return {c["client"]: c for c in replay_json(SL, lines, args)["clients"]}


def main():
    reqs = sorted(r for a, (_, _, over, ok_rate, burst) in enumerate(ALGOS)
                  for r in trace(a, over, ok_rate, burst))
    with tempfile.TemporaryDirectory() as d:
        rules = os.path.join(d, "rules.yaml")
        rules_yaml(rules)
        # one node: the same requests, without the node column (which a
        # one-node replay would read as the CPU)
        runs = {"1 node": ([f"{t} {c} port={p}" for t, c, _, p in reqs],
                           ["--rules", rules])}
        lines = [f"{t} {c} {n} port={p}" for t, c, n, p in reqs]
        for layout in LAYOUTS:
            runs[layout] = (lines, ["--rules", rules] + NODES +
                            ["--layout", layout])
        try:
            with ThreadPoolExecutor(max_workers=2) as pool:
                futs = {k: pool.submit(replay, *v) for k, v in runs.items()}
                got = {k: f.result() for k, f in futs.items()}
        except Exception as e:  # a crash is a failure, not a skip
            tap(False, f"replay of every algorithm on 8 nodes: {e}")
            return 1
    # as (algorithm, run) -> {role: the client's result}
    res = {(name, k): {r: got[k][client(a, r)] for r in (1, 2, 3)}
           for a, (name, *_) in enumerate(ALGOS) for k in got}

    rows = ["| algorithm | over-limit client | 1 node: most in 60 s | " +
            " | ".join(f"8 nodes, {l}" for l in LAYOUTS) +
            " | compliant client: rejected on 8 nodes (" +
            " / ".join(LAYOUTS) + ") | burst to all 8 nodes: 1 node / bounded |",
            "|---|---|---|" + "---|" * len(LAYOUTS) + "---|---|"]
    for name, rule, over, ok_rate, burst in ALGOS:
        one = res[(name, "1 node")][1]["max_in_window"]
        cells = []
        for layout in LAYOUTS:
            got = res[(name, layout)][1]["max_in_window"]
            tap(got <= 1.1 * one,
                f"{name}, {over}/s on 8 nodes, {layout}: at most {got} in any "
                f"60 s, within 1.1 x of one node's {one}")
            cells.append(f"{got} ({got / one:.3f} x)")
        rejected = []
        for layout in LAYOUTS:
            c = res[(name, layout)][2]
            tap(c["rejected"] == 0 and c["accepted"] == ok_rate * 120,
                f"{name}, compliant {ok_rate}/s on 8 nodes, {layout}: "
                f"{c['rejected']} of {c['sent']} rejected (none)")
            rejected.append(str(c["rejected"]))
        b_one = res[(name, "1 node")][3]["max_in_window"]
        b_got = res[(name, "bounded")][3]["max_in_window"]
        tap(b_got <= 1.1 * b_one,
            f"{name}, {burst} to each of 8 nodes in 100 ms, bounded: {b_got} "
            f"in any 60 s, within 1.1 x of one node's {b_one} (delayed sync: "
            f"{res[(name, 'delayed-sync')][3]['max_in_window']})")
        rows.append(f"| {name} | {over}/s | {one} | {' | '.join(cells)} | "
                    f"{ok_rate}/s: {' / '.join(rejected)} | {b_one} / {b_got} |")
    if TABLE:
        print("\n".join(rows))
    return 1 if failed() else 0


sys.exit(main())
