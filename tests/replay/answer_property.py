#!/usr/bin/env python3
"""Every answer says what the node does next: a differential test of
`remaining` and Retry-After against the real object (`slicelimit replay
--decisions --json`), under every layout and every algorithm, on one and
several nodes, at clock values near 0 and at today's TAI milliseconds.

Phase 1 replays random traces of many clients (each its own key) and
reads every decision's answer: accepted, remaining r, retry_after_ms ra.
Phase 2 replays, for every decision of every client, copies of the
client's requests up to that decision (each copy its own key: the same
state, the same answer), each followed by probes on the node that
decided:
  A  r + 1 requests at the decision's instant: the first r are
     accepted, the (r + 1)-th is rejected (remaining is exact);
  B  one request at t + ra: accepted (Retry-After is not too early);
  C  one request at t + ra - 1: rejected (Retry-After is not too late).
Each answer must also agree with itself: a rejection says remaining 0
and a Retry-After of at least 1 ms; remaining > 0 goes with Retry-After
0, and remaining 0 with a later one. That is checked again on the
traces replayed with replay's own rounds (at the first request an
interval after the last), where rounds fall at requests.

Sync rounds run at multiples of the interval from the TAI epoch, as the
service runs them ("T_MS sync" lines), so the copies see the same rounds
as the original. The slack each layout states (docs/ACCURACY.md,
"Remaining and Retry-After"): a node cannot know what a round will bring.
Where a round runs between the decision and a probe and the client has
units no round has carried yet (accepted on any node since the last
round), a probe may go the other way; the test counts those and prints
them. Nothing else is tolerated: without a round in between, or with
nothing pending, every probe must go as the answer said.

usage: answer_property.py SLICELIMIT [--seed N] [--quick]
"""
import json
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from replay_rules import rules_yaml
from replay_tap import failed, tap

SL = sys.argv[1] if len(sys.argv) > 1 else "build/slicelimit"
SEED = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv \
    else int(os.environ.get("ANSWER_SEED", "20261203"))
QUICK = "--quick" in sys.argv

ALGOS = ["sliding", "sliding-plain", "fixed", "sliding-log",
         "sliding-counter", "token-bucket"]
PORT0 = 2000
# a TAI millisecond of late 2026, the clock a live node reads today
TAI_TODAY = 1796284647123


def addr(i):
    """The i-th client's address: one key each, 10.0.0.0/8 and up."""
    i += 1
    return f"{10 + (i >> 24)}.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


def exchanges(layout):
    return layout in ("delayed-sync", "predictive", "bounded")


def replay(case, reqs, end, scheduled=True):
    """Decisions by client of `reqs` [(t, client, node, port)], in the
    order given (non-decreasing t), with sync lines at the interval's
    multiples when the layout exchanges counts (not `scheduled`: replay's
    own rounds, at the first request an interval after the last)."""
    layout, nodes, interval, limit, window, t0 = case[:6]
    multi = layout != "local"
    lines = []
    if multi and exchanges(layout) and scheduled:
        k = t0 // interval * interval
        syncs = []
        while k <= end:
            syncs.append(k)
            k += interval
        si = 0
        for t, c, n, p in reqs:
            while si < len(syncs) and syncs[si] <= t:
                lines.append(f"{syncs[si]} sync")
                si += 1
            lines.append(f"{t} {c} {n} port={p}")
    else:
        lines = [f"{t} {c} {n} port={p}" if multi else f"{t} {c} port={p}"
                 for t, c, n, p in reqs]
    args = [SL, "replay", "", "--rules", "", "--decisions", "--json"]
    if multi:
        args += ["--nodes", str(nodes), "--layout", layout,
                 "--sync-interval", f"{interval}ms"]
    with tempfile.TemporaryDirectory() as d:
        args[2], args[4] = os.path.join(d, "t"), os.path.join(d, "r.yaml")
        with open(args[2], "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(args[4], "w") as f:
            f.write(rules_yaml(ALGOS, PORT0, limit, window))
        out = subprocess.run(args, capture_output=True, text=True,
                             timeout=300)
    if out.returncode:
        raise RuntimeError(f"replay {case}: {out.stderr.strip()[:300]}")
    by = {}
    for x in json.loads(out.stdout)["decisions"]:
        by.setdefault(x["client"], []).append(x)
    return by


def gen_client(rng, case):
    """One client's requests [(t, node)]: bursts and single requests,
    some quick, some spread over windows, on random nodes."""
    layout, nodes, interval, limit, window, t0 = case[:6]
    t = t0 + rng.randrange(window)
    out = []
    for _ in range(rng.randint(1, 4)):
        node = rng.randrange(nodes)
        for _ in range(rng.randint(1, limit + 2)):
            out.append((t, node if rng.random() < 0.8
                        else rng.randrange(nodes)))
            t += rng.choice([0, 0, 1, rng.randrange(1 + interval)])
        t += rng.choice([1, interval // 2, interval, window // 3,
                         rng.randrange(1 + window)])
    return out


def run(case):
    layout, nodes, interval, limit, window, t0, per_algo, seed = case
    rng = random.Random(seed)
    clients = []       # (addr, port, [(t, node)])
    for a in range(len(ALGOS)):
        for _ in range(per_algo):
            clients.append((addr(len(clients)), PORT0 + a,
                            gen_client(rng, case)))
    end = max(t for _, _, rs in clients for t, _ in rs)
    reqs = sorted(((t, c, n, p) for c, p, rs in clients for t, n in rs),
                  key=lambda x: x[0])
    first = replay(case, reqs, end)
    # replay's own rounds, which fall at requests: the answers alone
    own_rounds = replay(case, reqs, end, scheduled=False) \
        if exchanges(layout) and nodes > 1 else {}
    # phase 2: a copy per decision and probe
    probes = []        # (copy addr, client addr, index, kind, t_probe)
    prefix = []        # the copies' requests
    k = len(clients)
    for c, p, rs in clients:
        ds = first.get(c, [])
        if len(ds) != len(rs):
            continue
        for i, d in enumerate(ds):
            t, node = rs[i][0], rs[i][1]
            r, ra = d["remaining"], d["retry_after_ms"]
            kinds = [("A", t, r + 1)]
            if ra > 0:
                kinds.append(("B", t + ra, 1))
            if ra > 1:
                kinds.append(("C", t + ra - 1, 1))
            for kind, tp, n in kinds:
                if n > 64:
                    continue
                cp = addr(k)
                k += 1
                for tt, nn in rs[:i + 1]:
                    prefix.append((tt, cp, nn, p))
                for _ in range(n):
                    prefix.append((tp, cp, node, p))
                probes.append((cp, c, i, kind, tp, n))
    # the copies' requests in time order, each copy's own kept in order
    prefix.sort(key=lambda x: x[0])
    second = replay(case, prefix, max(end, max(x[0] for x in prefix)))
    return case, clients, first, probes, second, own_rounds


def syncs_between(case, a, b):
    """Whether a round runs in (a, b]."""
    interval = case[2]
    return b // interval * interval > a


def pending_at(case, rs, ds, i):
    """Whether the client has accepted units no round has carried by the
    i-th decision: accepts at or after the last round at its time."""
    interval = case[2]
    last_round = rs[i][0] // interval * interval
    return any(ds[j]["accepted"] and rs[j][0] >= last_round
               for j in range(i + 1))


def self_consistent(c, p, ds, bad):
    """A rejection says remaining 0 and a Retry-After of at least 1 ms;
    remaining > 0 goes with Retry-After 0 and remaining 0 with a later
    one."""
    for d in ds:
        r, ra = d["remaining"], d["retry_after_ms"]
        who = f"{c or d['client']}" + (f" port {p}" if p else "")
        if not d["accepted"] and (r or not ra):
            bad.append(f"{who} at {d['t_ms']}: rejected with "
                       f"remaining {r}, retry_after_ms {ra}")
        elif (r > 0) == (ra > 0):
            bad.append(f"{who} at {d['t_ms']}: accepted with "
                       f"remaining {r}, retry_after_ms {ra}")


def check(case, clients, first, probes, second, own_rounds, stats):
    layout, nodes, interval, limit, window, t0 = case[:6]
    where = (f"{layout}, {nodes} node{'s' if nodes > 1 else ''}, "
             f"{interval} ms, limit {limit} / {window} ms, t0 {t0}")
    bad = []
    rs_of = {c: (p, rs) for c, p, rs in clients}
    st = stats.setdefault(layout, {"decisions": 0, "probes": 0,
                                   "slack": 0})
    for c, p, rs in clients:
        ds = first.get(c, [])
        if len(ds) != len(rs):
            bad.append(f"{c}: {len(ds)} decisions of {len(rs)}")
            continue
        st["decisions"] += len(ds)
        self_consistent(c, p, ds, bad)
        if own_rounds:
            st["decisions"] += len(own_rounds.get(c, []))
            self_consistent(c + " (replay's own rounds)", p,
                            own_rounds.get(c, []), bad)
    multi_sync = exchanges(layout) and nodes > 1
    for cp, c, i, kind, tp, n in probes:
        p, rs = rs_of[c]
        ds, got = first[c], second.get(cp, [])
        d = ds[i]
        st["probes"] += 1
        if len(got) != i + 1 + n:
            bad.append(f"{c} copy {cp}: {len(got)} decisions of {i + 1 + n}")
            continue
        if [x["accepted"] for x in got[:i + 1]] != \
                [x["accepted"] for x in ds[:i + 1]] or \
                (got[i]["remaining"], got[i]["retry_after_ms"]) != \
                (d["remaining"], d["retry_after_ms"]):
            bad.append(f"{c} copy {cp}: decided otherwise than the original")
            continue
        pr = [x["accepted"] for x in got[i + 1:]]
        if kind == "A":
            want = [True] * d["remaining"] + [False]
        else:
            want = [kind == "B"]
        if pr == want:
            continue
        slack = multi_sync and syncs_between(case, d["t_ms"], tp) and \
            pending_at(case, rs, ds, i)
        what = (f"{c} port {p} decision {i} at {d['t_ms']} (node "
                f"{rs[i][1]}, {'accepted' if d['accepted'] else 'rejected'}"
                f", remaining {d['remaining']}, retry_after_ms "
                f"{d['retry_after_ms']}): probe {kind} at {tp} gave {pr}")
        if slack:
            st["slack"] += 1
        else:
            bad.append(what)
    tap(not bad, f"{where}: {len(clients)} clients, {len(probes)} probes" +
        ("" if not bad else ": " + "; ".join(bad[:3]) +
         (f" (and {len(bad) - 3} more)" if len(bad) > 3 else "")))


def cases():
    """(layout, nodes, interval, limit, window, t0, clients per algorithm,
    seed)"""
    rng = random.Random(SEED)
    plan = [("local", 1), ("central", 2), ("split-quota", 2),
            ("split-quota", 3), ("delayed-sync", 2), ("delayed-sync", 3),
            ("predictive", 2), ("bounded", 1), ("bounded", 2),
            ("bounded", 3)]
    per = 3 if QUICK else int(os.environ.get("ANSWER_PER", "5"))
    out = []
    for layout, nodes in plan:
        for today in (False, True):
            window = rng.choice([1000, 5000, 60000])
            interval = rng.choice([i for i in (200, 1000, 2000)
                                   if i < window])
            limit = rng.choice([1, 2, 3, 5, 10])
            t0 = (TAI_TODAY + rng.randrange(10**9)) if today \
                else rng.randrange(window)
            out.append((layout, nodes, interval, limit, window, t0, per,
                        rng.randrange(2**32)))
    return out


def known_case():
    """Rejections that said "1 left, retry now": sliding-log, limit 2,
    window 5 s, 2 nodes, rounds every second at requests (replay's
    own); 60 clients of 3 to 12 requests each (a fixed seed, which found
    one such answer on the tree before the fix)."""
    rng = random.Random(5)
    reqs = []
    for c in range(60):
        t = rng.randrange(5000)
        for _ in range(rng.randint(3, 12)):
            reqs.append((t, f"10.1.{c // 250}.{c % 250 + 1}",
                         rng.randrange(2)))
            t += rng.choice([0, 1, 50, 300, 1000, 2500])
    reqs.sort(key=lambda x: x[0])
    with tempfile.NamedTemporaryFile("w", suffix=".trace") as f:
        f.writelines(f"{t} {c} {n}\n" for t, c, n in reqs)
        f.flush()
        out = subprocess.run([SL, "replay", f.name, "--algorithm",
                              "sliding-log", "--limit", "2", "--window",
                              "5s", "--nodes", "2", "--sync-interval", "1s",
                              "--decisions", "--json"],
                             capture_output=True, text=True, timeout=300)
    if out.returncode:
        raise RuntimeError(f"replay: {out.stderr.strip()[:300]}")
    ds = json.loads(out.stdout)["decisions"]
    bad = []
    self_consistent("", "", ds, bad)
    tap(not bad, f"sliding-log, limit 2 / 5 s, bounded, 2 nodes, 1 s "
        f"rounds at requests: {len(ds)} answers, none contradicts itself" +
        ("" if not bad else ": " + "; ".join(bad[:3])))


def main():
    print(f"# seed {SEED} (rerun: answer_property.py {SL} --seed {SEED})")
    stats = {}
    try:
        known_case()
        with ThreadPoolExecutor(max_workers=2) as ex:
            for res in ex.map(run, cases()):
                check(*res, stats)
    except Exception as e:  # a crash is a failure, not a skip
        tap(False, f"answer property replays: {e}")
    print("# layout | decisions | probes | probes a round turned (slack)")
    for layout, st in sorted(stats.items()):
        print(f"# {layout} | {st['decisions']} | {st['probes']} | "
              f"{st['slack']}")
    print(f"# {failed()} failed")
    return 1 if failed() else 0


if __name__ == "__main__":
    sys.exit(main())
