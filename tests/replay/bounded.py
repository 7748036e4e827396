#!/usr/bin/env python3
"""The bounded layout's goals (issue 14), through the real BPF program.

Every trace is generated here from its definition and run with
`slicelimit replay --nodes 8 --json` (8 copies of the real program, each
with the real sync engine, exchanging real signed messages), limit 600
per 60 s. Each goal is measured for delayed sync and predictive too, so
the table shows them side by side; only bounded is held to the goals.
The traces that share an interval and a layout are one replay, their
clients apart (10.1.*, 10.2.*, 10.3.*: keys of their own, they meet
nowhere), one after another: a replay of 8 nodes spends most of its
time loading 8 copies of the program, so each is loaded once per
interval and layout, not once per check (and two replays at once load
more slowly here than one after the other).
Prints TAP lines; with --table, the tables docs/ACCURACY.md shows.

usage: bounded.py SLICELIMIT [--table]
"""
import random
import sys

from replay_json import longest_hold, replay_json
from replay_tap import failed, tap

SL = sys.argv[1] if len(sys.argv) > 1 else "build/slicelimit"
TABLE = "--table" in sys.argv
LIMIT, WINDOW_MS, NODES = 600, 60000, 8
BOUND = LIMIT * 11 // 10          # NFR-1: 1.1 x the limit in any window
LAYOUTS = ("delayed-sync", "predictive", "bounded")
table = []
RES = {}          # (interval ms, layout) or "alone": (clients, decisions)


def replay(lines, args, decisions=False):
    """Text lines "T_MS CLIENT NODE" (or cut/heal/join/sync) through
    replay --nodes 8: {client: summary}, and the decisions when asked."""
    res = replay_json(SL, lines, ["--limit", str(LIMIT), "--window", "60s",
                                  "--nodes", str(NODES)] + args +
                      (["--decisions"] if decisions else []), timeout=600)
    return {c["client"]: c for c in res["clients"]}, res.get("decisions", [])


def by_time(reqs):
    """(t_ms, text) pairs in time order, as trace lines."""
    return [f"{t} {w}" for t, w in sorted(reqs, key=lambda r: r[0])]


def lcg_nodes(n, seed=20260730):
    """The study's generator: s = s * 1103515245 + 12345 mod 2^32, node
    floor(s / 2^32 * 8), first request after the first step."""
    s, out = seed, []
    for _ in range(n):
        s = (s * 1103515245 + 12345) % 2**32
        out.append(s * NODES >> 32)
    return out


def exact_compliant(times):
    """The requests an exact fleet-wide sliding log accepts: each time
    kept while fewer than LIMIT kept ones lie in (t - W, t]."""
    kept, first = [], 0
    for t in times:
        while first < len(kept) and kept[first] <= t - WINDOW_MS:
            first += 1
        if len(kept) - first < LIMIT:
            kept.append(t)
    return kept


# ---- over-limit patterns: the fleet-wide bound -------------------------

def over_limit_traces():
    """The all-node burst (the limit to each of 8 nodes within 100 ms) and
    node hopping (the whole limit to node 1, 50 ms later to node 2, ...),
    each its own client."""
    reqs = [(i * 100 // (LIMIT * NODES), f"10.1.0.1 {i % NODES}")
            for i in range(LIMIT * NODES)]
    reqs += [(k * 50 + i * 50 // LIMIT, f"10.1.0.2 {k}")
             for k in range(NODES) for i in range(LIMIT)]
    return reqs


def study_trace(rate, client, seconds):
    """The study's client at `rate`/s: request i at i/rate s (whole ms), its
    node by the LCG (seed 20260730)."""
    return [(i * 1000 // rate, f"{client} {node}")
            for i, node in enumerate(lcg_nodes(rate * seconds))]


def check_over_limit():
    table.append("\nOver the limit, 8 nodes, limit 600 / 60 s: most accepted "
                 "in any 60 s (1.1 x is 660)\n")
    table.append("| pattern | interval | " + " | ".join(LAYOUTS) + " |")
    table.append("|---|---|" + "---|" * len(LAYOUTS))
    for name, client in (("all-node burst", "10.1.0.1"),
                         ("node hopping", "10.1.0.2")):
        got = {lay: RES[(200, lay)][0][client]["max_in_window"]
               for lay in LAYOUTS}
        tap(got["bounded"] <= BOUND,
            f"bounded, {name}: at most {got['bounded']} in any 60 s "
            f"(bound {BOUND}; delayed sync {got['delayed-sync']})")
        table.append(f"| {name} | 0.2 s | " +
                     " | ".join(f"{got[l]} ({got[l] / LIMIT:.2f} x)" for l in LAYOUTS) + " |")
    # the study's 90/s client for three windows; its 10/s client (within
    # the limit, at it: 600 in every 60 s) in the same trace, held back
    # at most two intervals
    for iv in (200, 1000, 2000, 5000):
        res = {lay: RES[(iv, lay)][0] for lay in LAYOUTS}
        dec = {"bounded": RES[(iv, "bounded")][1]}
        worst = {lay: res[lay]["10.1.0.90"]["max_in_window"] for lay in LAYOUTS}
        rej10 = res["bounded"]["10.1.0.10"]["rejected"]
        held = longest_hold([d for d in dec["bounded"]
                             if d["client"] == "10.1.0.10"])
        tap(worst["bounded"] <= BOUND and held <= 2 * iv,
            f"bounded, the study's 90/s client over three windows at {iv} ms: "
            f"at most {worst['bounded']} in any 60 s (bound {BOUND}); "
            f"its 10/s client rejected {rej10} times, held at most {held} ms "
            f"(two intervals: {2 * iv})")
        table.append(f"| 90/s (LCG), 180 s | {iv / 1000:g} s | " +
                     " | ".join(f"{worst[l]} ({worst[l] / LIMIT:.2f} x)" for l in LAYOUTS) + " |")


# ---- clients within the limit: what bounded costs them -----------------


def rejects_of(decisions, client):
    return [d for d in decisions if d["client"] == client and not d["accepted"]]


def sticky_trace():
    """A client that sticks to one node and is within the limit: half the
    limit at once, then 5/s; and one that only trickles."""
    reqs = [(i // 30, "10.2.0.1 3") for i in range(LIMIT // 2)]
    reqs += [(1000 + i * 200, "10.2.0.1 3") for i in range(250)]
    # a client that only trickles: never meets the share at all
    reqs += [(i * 150, "10.2.0.2 5") for i in range(400)]
    return reqs


def check_sticky():
    """The sticky client's first burst meets the first-contact share;
    after the first interval nothing of it is rejected."""
    iv = 200
    res, dec = RES[(iv, "bounded")]
    rej = rejects_of(dec, "10.2.0.1")
    late = [d for d in rej if d["t_ms"] >= iv]
    worst_retry = max((d["retry_after_ms"] for d in rej), default=0)
    tap(rej and not late and worst_retry <= iv,
        f"bounded, a client on one node sending half its limit at once: "
        f"{len(rej)} rejected, all inside the first {iv} ms (late: {len(late)}), "
        f"Retry-After at most {worst_retry} ms (one interval: {iv})")
    tap(res["10.2.0.2"]["rejected"] == 0,
        f"bounded, a client on one node at 6.7/s: "
        f"{res['10.2.0.2']['rejected']} rejected (none)")
    first = res["10.2.0.1"]["accepted"] - 250
    table.append(f"\nA client on one node, {LIMIT // 2} at once then 5/s: "
                 f"{first} of the first {LIMIT // 2} pass in the first 0.2 s "
                 f"(the first-contact share, 1.1 x {LIMIT} / 8), the rest get "
                 f"Retry-After <= {worst_retry} ms; nothing is rejected after "
                 f"that.")


def spread_traces(seed, clients):
    """Clients within the limit, spread request by request over random
    nodes: bursts and pauses at up to twice the limit's rate, cut to what
    an exact fleet-wide sliding log accepts, so every request is
    compliant. Each client runs 150 s."""
    rng = random.Random(seed)
    reqs, total = [], 0
    for c in range(clients):
        t, times = rng.randrange(0, 2000), []
        while t < 150000:
            burst = rng.choice((1, 1, 1, 5, 20, 60))
            for _ in range(burst):
                times.append(t)
                t += rng.randrange(0, 30)
            t += rng.expovariate(1 / (burst * 100 * rng.choice((0.5, 1, 2))))
            t = int(t)
        for tm in exact_compliant(times):
            reqs.append((tm, f"10.3.{c // 250}.{c % 250 + 1} {rng.randrange(NODES)}"))
            total += 1
    return reqs, total


def check_spread():
    table.append("\nClients within the limit, each request to a random node "
                 "(traces an exact fleet-wide sliding log accepts in full), "
                 "rejected:\n")
    table.append("| interval | requests | " + " | ".join(LAYOUTS) +
                 " | bounded's longest Retry-After |")
    table.append("|---|---|" + "---|" * len(LAYOUTS) + "---|")
    _, total = spread_traces(1, 40)
    for iv in (200, 1000):
        rejected = {}
        for lay in LAYOUTS:
            res, dec = RES[(iv, lay)]
            rejected[lay] = sum(c["rejected"] for a, c in res.items()
                                if a.startswith("10.3."))
            if lay == "bounded":
                retry = max((d["retry_after_ms"] for d in dec
                             if not d["accepted"] and
                             d["client"].startswith("10.3.")), default=0)
        share = rejected["bounded"] / total
        tap(share <= 0.005 and retry <= iv,
            f"bounded, {total} compliant requests spread over random nodes at "
            f"{iv} ms: {rejected['bounded']} rejected ({share:.3%}, at most 0.5%), "
            f"longest Retry-After {retry} ms (at most one interval)")
        table.append(f"| {iv / 1000:g} s | {total} | " +
                     " | ".join(f"{rejected[l]} ({rejected[l] / total:.2%})" for l in LAYOUTS) +
                     f" | {retry} ms |")


# ---- NFR-3: peers gone, a node joining ----------------------------------

ALONE_IV = 200


def alone_trace():
    """Node 5 is cut off from every peer for three intervals while its
    client, within the limit, keeps sending to it; node 6 starts its
    service 10 s in, and a client spread by the LCG keeps going. Cuts and
    joins are of the whole run: this trace is a replay of its own."""
    iv = ALONE_IV
    reqs = [(i * 100, "10.4.0.1 5") for i in range(300)]
    # the client near its limit: 550 already, then on through the cut
    reqs += [(i * 50, "10.4.0.2 5") for i in range(550)]
    reqs += [(30000 + i * 2, "10.4.0.2 5") for i in range(50)]
    reqs += [(30000, "cut 5"), (30000 + 3 * iv, "heal 5")]
    reqs += study_trace(10, "10.4.0.3", 60)
    reqs += [(10000, "join 6")]
    return reqs


def check_alone():
    iv = ALONE_IV
    res, dec = RES["alone"]
    cut_rej = [d for d in rejects_of(dec, "10.4.0.2")
               if 30000 <= d["t_ms"] < 30000 + 3 * iv]
    tap(res["10.4.0.1"]["rejected"] == 0 and not cut_rej,
        f"bounded, a node cut off from every peer for three intervals: its "
        f"clients within the limit rejected {res['10.4.0.1']['rejected']} and "
        f"{len(cut_rej)} times during the cut (none)")
    tap(res["10.4.0.3"]["rejected"] == 0,
        f"bounded, a node that joins 10 s in: the study's 10/s client spread "
        f"over every node rejected {res['10.4.0.3']['rejected']} times (none)")


def runs():
    """Every replay, by (interval ms, layout): the traces of the checks
    that use them, merged; decisions under bounded."""
    over = over_limit_traces()
    study = study_trace(90, "10.1.0.90", 180) + study_trace(10, "10.1.0.10", 180)
    spread, _ = spread_traces(1, 40)
    out = {}
    for lay in LAYOUTS:
        out[(200, lay)] = over + study + spread + \
            (sticky_trace() if lay == "bounded" else [])
        out[(1000, lay)] = study + spread
        out[(2000, lay)] = study
        out[(5000, lay)] = study
    args = {k: ["--sync-interval", f"{k[0]}ms", "--layout", k[1]]
            for k in out}
    out["alone"] = alone_trace()
    args["alone"] = ["--layout", "bounded"]
    return {k: (by_time(v), args[k], k == "alone" or k[1] == "bounded")
            for k, v in out.items()}


def main():
    try:
        RES.update({k: replay(*v) for k, v in runs().items()})
        check_over_limit()
        check_sticky()
        check_spread()
        check_alone()
    except Exception as e:  # a crash is a failure, not a skip
        tap(False, f"bounded layout replays: {e}")
    if TABLE:
        print("\n".join(table))
    return 1 if failed() else 0


sys.exit(main())
