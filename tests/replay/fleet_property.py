#!/usr/bin/env python3
"""The fleet's bounds as properties: random and adversarial multi-node
traces through the real BPF program and sync engine (`slicelimit replay
--nodes N --decisions`), checked against an exact model of the fleet-wide
sliding log, not against a one-node run.

Every run replays many clients at once (each client is one trace: its own
key, so its own state on every node), under one rule per algorithm told
apart by destination port, on 2, 3, 8 and 32 nodes, intervals 50 ms to
10 s, windows 1 s to 1 h, limits 1 to 100. Generators: random arrivals
over random nodes; warm-ups on every node before an all-node burst;
slices that straddle the window's start (1 at s - 1, a few at s + 1, a
burst a window later); an all-node burst; clients within the limit that
stick to a node, spread over every node, or move node every few
requests. Each layout is checked against what README.md states for it:

  bounded       the sums (sliding, sliding-plain, fixed, sliding-log):
                at most 1.1 x the limit + one unit per node in any window;
                a client within the limit held back at most two intervals
                (rejected requests no longer apart, and a Retry-After no
                longer, than that); sliding-counter and token-bucket
                (no proven fleet bound): as delayed-sync;
  delayed-sync  at most nodes x the algorithm's one-node bound; a client
  predictive    within the limit never rejected (delayed-sync, the sums;
                predictive may reject one, it trades that for its
                projection);
  split-quota   at most nodes x the one-node bound of limit / nodes.

One-node bounds (per window, limit L): sliding 1.1 L + 1, sliding-log L,
sliding-plain and fixed 2 L, sliding-counter 2 L, token-bucket its
capacity plus the refill over a window. TAP lines, then a summary per
layout: traces, worst ratio to the limit, false rejects and the longest
hold of a client within the limit.

usage: fleet_property.py SLICELIMIT [--seed N] [--quick]
"""
import json
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from replay_json import longest_hold
from replay_rules import rules_yaml
from replay_tap import failed, tap

SL = sys.argv[1] if len(sys.argv) > 1 else "build/slicelimit"
SEED = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 20261201
QUICK = "--quick" in sys.argv

ALGOS = ["sliding", "sliding-plain", "fixed", "sliding-log",
         "sliding-counter", "token-bucket"]
SUMS = {"sliding", "sliding-plain", "fixed", "sliding-log"}
LAYOUTS = ["bounded", "delayed-sync", "split-quota", "predictive"]
PORT0 = 1000


# ---- the exact model -------------------------------------------------------

def max_in_window(times, window):
    """Most of `times` (sorted) inside any (t - window, t]."""
    best, lo = 0, 0
    for hi in range(len(times)):
        while times[hi] - times[lo] >= window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def exact_keep(times, limit, window):
    """The requests a fleet-wide exact sliding log accepts."""
    kept, out = [], []
    lo = 0
    for t in times:
        while lo < len(kept) and t - kept[lo] >= window:
            lo += 1
        ok = len(kept) - lo < limit
        out.append(ok)
        if ok:
            kept.append(t)
    return out


def one_node_bound(algo, limit, window):
    """What the algorithm passes of a client in a window on one node."""
    if algo == "sliding":
        return limit + limit // 10 + 1
    if algo == "sliding-log":
        return limit
    if algo == "token-bucket":
        return limit + limit   # capacity + refill of limit per window
    return 2 * limit            # sliding-plain, fixed, sliding-counter


def layout_bound(layout, algo, limit, window, nodes):
    if layout == "bounded" and algo in SUMS:
        return limit + limit // 10 + nodes
    if layout == "split-quota":
        return nodes * one_node_bound(algo, max(1, limit // nodes), window)
    # delayed-sync, predictive (its projection may pass the limit by 2 %)
    return nodes * (one_node_bound(algo, limit, window) + limit // 50 + 1)


# ---- traces ----------------------------------------------------------------

def gen_random(rng, nodes, limit, window):
    n = rng.randint(1, 4 * limit + 4)
    span = rng.choice([window // 4, window, 3 * window])
    return sorted((rng.randrange(max(1, span)), rng.randrange(nodes))
                  for _ in range(n))


def gen_warm_burst(rng, nodes, limit, window):
    """A few on every node, then a burst of the limit on every node a
    window (or just under one) later."""
    t0 = rng.randrange(window)
    warm = rng.randint(1, max(1, limit // 5 + 1))
    gap = window - rng.choice([0, 1, window // 15, window // 100])
    out = [(t0, k) for k in range(nodes) for _ in range(warm)]
    out += [(t0 + gap, k) for k in range(nodes) for _ in range(limit)]
    return sorted(out)


def gen_straddle(rng, nodes, limit, window):
    """1 at s - 1, a few at s + 1 on every node, then more a window on."""
    ps = -(-window // 15)
    s = ps * rng.randint(1, 14)
    few = rng.randint(1, max(1, limit // 10 + 1))
    out = [(s - 1, k) for k in range(nodes)]
    out += [(s + 1, k) for k in range(nodes) for _ in range(few)]
    out += [(s - 1 + window + rng.choice([0, 1, 2]), k)
            for k in range(nodes) for _ in range(2 * few)]
    return sorted(out)


def gen_all_node_burst(rng, nodes, limit, window):
    t0 = rng.randrange(window)
    return sorted((t0 + rng.randrange(100), k)
                  for k in range(nodes) for _ in range(limit))


def gen_compliant(rng, nodes, limit, window, interval):
    """Arrivals the exact log accepts in full; sticky, spread or moving."""
    rate = rng.choice([0.5, 0.9, 1.0])
    n = max(1, int(rate * limit * rng.choice([1, 2, 3])))
    span = rng.choice([window, 2 * window, 3 * window])
    times = sorted(rng.randrange(span) for _ in range(n))
    if rng.random() < 0.3:   # evenly spread over the window
        times = [int(i * window / max(1, limit)) for i in range(n)]
    keep = exact_keep(times, limit, window)
    times = [t for t, k in zip(times, keep) if k]
    mode = rng.choice(["sticky", "spread", "move"])
    node, out, every = rng.randrange(nodes), [], rng.randint(1, 5)
    for i, t in enumerate(times):
        if mode == "spread":
            node = rng.randrange(nodes)
        elif mode == "move" and i and i % every == 0:
            node = (node + 1 + rng.randrange(nodes - 1)) % nodes
        out.append((t, node))
    return out


ADVERSARIAL = [gen_random, gen_warm_burst, gen_straddle, gen_all_node_burst]


# ---- one run: many clients, every algorithm --------------------------------

def run(case):
    layout, nodes, interval, limit, window, per_algo, seed = case
    rng = random.Random(seed)
    clients = []   # (name, algo, kind, [(t, node)])
    for a, algo in enumerate(ALGOS):
        for c in range(per_algo):
            if c % 3 == 2:
                reqs = gen_compliant(rng, nodes, limit, window, interval)
                kind = "compliant"
            else:
                gen = ADVERSARIAL[c % len(ADVERSARIAL)]
                reqs, kind = gen(rng, nodes, limit, window), gen.__name__
            name = f"10.{a + 1}.{c // 250}.{c % 250 + 1}"
            clients.append((name, algo, kind, reqs))
    lines = sorted((t, name, node, PORT0 + ALGOS.index(algo))
                   for name, algo, _, reqs in clients for t, node in reqs)
    with tempfile.TemporaryDirectory() as d:
        trace, rules = os.path.join(d, "t.trace"), os.path.join(d, "r.yaml")
        with open(trace, "w") as f:
            f.writelines(f"{t} {c} {n} port={p}\n" for t, c, n, p in lines)
        with open(rules, "w") as f:
            f.write(rules_yaml(ALGOS, PORT0, limit, window))
        out = subprocess.run([SL, "replay", trace, "--rules", rules,
                              "--nodes", str(nodes), "--layout", layout,
                              "--sync-interval", f"{interval}ms",
                              "--decisions", "--json"],
                             capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"replay {case}: {out.stderr.strip()}")
    res = json.loads(out.stdout)
    decided = {}
    for x in res["decisions"]:
        decided.setdefault(x["client"], []).append(x)
    return case, clients, decided


def check(case, clients, decided, stats):
    layout, nodes, interval, limit, window, _, _ = case
    where = f"{layout}, {nodes} nodes, {interval} ms, limit {limit} / {window} ms"
    bad = []
    for name, algo, kind, reqs in clients:
        ds = decided.get(name, [])
        if len(ds) != len(reqs) or any(d["rule"] is None for d in ds):
            bad.append(f"{name} ({algo}, {kind}): {len(ds)} decisions of "
                       f"{len(reqs)}, or a null rule")
            continue
        acc = [d["t_ms"] for d in ds if d["accepted"]]
        worst = max_in_window(acc, window)
        bound = layout_bound(layout, algo, limit, window, nodes)
        st = stats.setdefault((layout, algo), {"traces": 0, "ratio": 0.0,
                                               "compliant": 0, "false": 0,
                                               "hold": 0, "requests": 0})
        st["traces"] += 1
        st["ratio"] = max(st["ratio"], worst / limit)
        if worst > bound:
            bad.append(f"{name} ({algo}, {kind}): {worst} in a window, "
                       f"bound {bound}")
        if kind != "compliant":
            continue
        st["compliant"] += 1
        st["requests"] += len(ds)
        rejected = [d for d in ds if not d["accepted"]]
        st["false"] += len(rejected)
        hold = longest_hold(ds)
        st["hold"] = max(st["hold"], hold)
        # sliding-plain's slices are rounded up: unless they divide the
        # window, its 12 reach past it and it is no lower bound on one
        # node either
        lower = algo != "sliding-plain" or window % 12 == 0
        if layout == "bounded" and algo in SUMS and lower and \
                hold > 2 * interval:
            bad.append(f"{name} ({algo}, within the limit): held {hold} ms "
                       f"(two intervals: {2 * interval})")
        if layout == "delayed-sync" and algo in SUMS and lower and rejected:
            bad.append(f"{name} ({algo}, within the limit): {len(rejected)} "
                       f"rejected")
    tap(not bad, f"{where}: {len(clients)} traces" +
        ("" if not bad else ": " + "; ".join(bad[:4]) +
         (f" (and {len(bad) - 4} more)" if len(bad) > 4 else "")))


def cases():
    """(layout, nodes, interval, limit, window, clients per algorithm, seed)"""
    rng = random.Random(SEED)
    plan = [(2, 50, 1000), (2, 1000, 60000), (3, 200, 10000),
            (3, 10000, 3600000), (8, 200, 60000), (8, 50, 2000),
            (32, 2000, 60000)]
    per = 4 if QUICK else int(os.environ.get("FLEET_PER", "80"))
    out = []
    for layout in LAYOUTS:
        for nodes, interval, window in plan:
            limit = rng.choice([1, 2, 3, 5, 7, 10, 10, 25, 100])
            n = per if nodes < 32 else max(2, per // 3)
            out.append((layout, nodes, interval, limit, window, n,
                        rng.randrange(2**32)))
    return out


def main():
    stats = {}
    try:
        with ThreadPoolExecutor(max_workers=2) as ex:
            for case, clients, decided in ex.map(run, cases()):
                check(case, clients, decided, stats)
    except Exception as e:  # a crash is a failure, not a skip
        tap(False, f"fleet property replays: {e}")
    print("# layout | algorithm | traces | worst / limit | compliant "
          "traces | false rejects / requests | longest hold ms")
    for (layout, algo), st in sorted(stats.items()):
        print(f"# {layout} | {algo} | {st['traces']} | {st['ratio']:.2f} | "
              f"{st['compliant']} | {st['false']} / {st['requests']} | "
              f"{st['hold']}")
    print(f"# {failed()} failed")
    return 1 if failed() else 0


if __name__ == "__main__":
    sys.exit(main())
