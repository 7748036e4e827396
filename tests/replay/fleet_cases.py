#!/usr/bin/env python3
"""The fleet's holes as fixed cases (tests/replay/cases/), through the real
BPF program and sync engine (`slicelimit replay --nodes N --json`), each
checked against the limit itself:

  - a node's own slices aged against its peers' coarser ones (an aged
    slice, sliding-log on 2 nodes and sliding on 8), a slice straddling
    the window's start on every node, warm-ups before the all-node
    burst: at most 1.1 x the limit + one unit per node in any window;
  - limit 2 on 2 nodes, two requests a second apart on one node: both
    accepted (the second was held for 59 s);
  - split-quota's token bucket (limit 1, 10/s, 8 nodes, 100 ms apart):
    its node's bucket refills at 10/8 per s, so 3 of 21 pass, each
    rejection's Retry-After when that node has a token;
  - --decisions across nodes names the deciding rule on every node.
TAP lines.

usage: fleet_cases.py SLICELIMIT
"""
import json
import os
import subprocess
import sys

from replay_tap import failed, tap

SL = sys.argv[1] if len(sys.argv) > 1 else "build/slicelimit"
CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")


def replay(trace, args):
    out = subprocess.run([SL, "replay", os.path.join(CASES, trace), "--json"]
                         + args, capture_output=True, text=True, timeout=300)
    if out.returncode:
        raise RuntimeError(f"replay {trace} {args}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def bound_cases():
    # trace, rule and nodes, limit, nodes
    for trace, args, limit, nodes in [
        ("fleet-aged-slice-log-2nodes.trace",
         ["--algorithm", "sliding-log", "--limit", "10"], 10, 2),
        ("fleet-aged-slice-8nodes.trace", ["--limit", "100"], 100, 8),
        ("fleet-straddle-8nodes.trace", ["--limit", "100"], 100, 8),
        ("fleet-warmup-burst-8nodes.trace", ["--limit", "600"], 600, 8),
    ]:
        res = replay(trace, args + ["--window", "60s", "--nodes", str(nodes)])
        worst = res["clients"][0]["max_in_window"]
        bound = limit + limit // 10 + nodes
        tap(worst <= bound, f"{trace}: {worst} in a window on {nodes} nodes, "
            f"limit {limit} (bound {bound})")


def sticky_case():
    res = replay("fleet-limit2-sticky.trace",
                 ["--limit", "2", "--window", "60s", "--nodes", "2",
                  "--decisions"])
    held = [d for d in res["decisions"] if not d["accepted"]]
    tap(not held, "fleet-limit2-sticky.trace: limit 2 on 2 nodes, both "
        f"requests accepted ({len(held)} rejected)")


def split_bucket_case():
    res = replay("splitquota-bucket.trace",
                 ["--algorithm", "token-bucket", "--limit", "1",
                  "--refill-per-s", "10", "--window", "1s", "--nodes", "8",
                  "--layout", "split-quota", "--decisions"])
    ds = res["decisions"]
    accepted = [d["t_ms"] for d in ds if d["accepted"]]
    # the node's bucket: capacity 1, a token every 800 ms
    tap(accepted == [0, 800, 1600],
        f"splitquota-bucket.trace: accepted at {accepted} (0, 800, 1600)")
    wrong = [d for d in ds if not d["accepted"] and
             d["t_ms"] + d["retry_after_ms"] != (d["t_ms"] // 800 + 1) * 800]
    tap(not wrong, "splitquota-bucket.trace: every rejection's Retry-After "
        f"is the node's next token ({len(wrong)} not)")


def decisions_case():
    res = replay("decisions-nodes.trace",
                 ["--limit", "5", "--window", "1s", "--nodes", "2",
                  "--decisions"])
    named = [d["rule"] for d in res["decisions"]]
    tap(named == ["replay", "replay"],
        f"decisions-nodes.trace: --decisions names the rule on both nodes "
        f"({named})")


def main():
    for case in (bound_cases, sticky_case, split_bucket_case, decisions_case):
        try:
            case()
        except Exception as e:  # a crash is a failure, not a skip
            tap(False, f"{case.__name__}: {e}")
    return 1 if failed() else 0


if __name__ == "__main__":
    sys.exit(main())
