#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Replay traces for the accuracy check of the many-CPU bed (NFR-1, NFR-2).

    gen_traces.py NCPU OUTDIR [CASE_TRACE ...]

Writes, for each rule below, OUTDIR/NAME.trace (`T_MS CLIENT CPU`, every
client's requests spread over all NCPU CPUs) and OUTDIR/traces.json, which
says for each trace the replay options and which clients are compliant
(must never be rejected: NFR-2) and which adversarial (at most 1.1 x the
limit in any window: NFR-1), and OUTDIR/list, the same as NAME OPTIONS
lines for the guest. The shapes are those of the property tests
(tests/lib/trace_gen.h, the same xorshift64* and gen_trace), plus dense
bursts at slice and window edges round-robin over every CPU:

  compliant    10.1.x.y  gen_trace through the exact sliding log
  random       10.2.x.y  gen_trace as generated
  edges        10.3.x.y  bursts of 2 L at e - 1, e, e + S - 1, e + W - 1 and
                         e + W for window edges e, CPU by CPU
  case         each CASE_TRACE (given to the rule with limit 1000, window
               200ms, 3 slices) as it is, and again as 10.4.0.N with its
               requests dealt over all NCPU CPUs

Everything is seeded: the same NCPU gives the same files.
"""
import json
import os
import sys

MASK = (1 << 64) - 1
SEED = 0x5EED7E91A7

# name, replay options, limit, window ms, slices, clients per kind,
# requests per client at most (the property tests cap at 300); sized so
# that a 64-CPU VM under TCG replays them all in a few minutes
RULES = [
    ("l10-w1s", ["--limit", "10", "--window", "1s"], 10, 1000, 12, 60, 300),
    ("l100-w1s", ["--limit", "100", "--window", "1s"], 100, 1000, 12, 12, 300),
    ("l7-w100ms-s5", ["--limit", "7", "--window", "100ms", "--slices", "5"],
     7, 100, 5, 60, 300),
    ("l1000-w200ms-s3", ["--limit", "1000", "--window", "200ms", "--slices", "3"],
     1000, 200, 3, 1, 3000),
]
CASE_RULE = "l1000-w200ms-s3"


class Rnd:
    """xorshift64*, as rnd() in tests/lib/trace_gen.h: in [0, n)."""

    def __init__(self, seed):
        self.s = seed & MASK

    def __call__(self, n):
        s = self.s
        s ^= s >> 12
        s ^= (s << 25) & MASK
        s ^= s >> 27
        self.s = s
        return ((s * 0x2545F4914F6CDD1D & MASK) >> 11) % n


def gen_trace(rnd, lim, w, sl, ncpu, cap):
    """gen_trace() of tests/lib/trace_gen.h: [(t, cpu)], sorted."""
    t, prev, out = rnd(w), 0, []
    for _ in range(1 + rnd(10)):
        i = rnd(4)
        if i == 0:
            start = (t // sl + 1 + rnd(3)) * sl + rnd(5) - 2
        elif i == 1:
            start = prev + w + rnd(5) - 2
        else:
            start = t + rnd(w)
        start = max(start, 0)
        i = rnd(4)
        size = lim // 10 + 1 if i == 0 else lim if i == 1 else 1 + rnd(2 * lim)
        if rnd(3) == 0:
            span = 0
        else:
            span = rnd(sl) if rnd(2) else rnd(3 * w)
        for k in range(size):
            if len(out) >= cap:
                break
            out.append((start + k * span // size, rnd(ncpu) if ncpu > 1 else 0))
        prev = start
        t = max(t, start + span)
    out.sort(key=lambda r: r[0])
    return out


def ref_log(reqs, limit, w):
    """The exact sliding log: accept while fewer than limit in (t - w, t]."""
    acc, j = [], 0
    for t, cpu in reqs:
        while j < len(acc) and acc[j][0] + w <= t:
            j += 1
        if len(acc) - j < limit:
            acc.append((t, cpu))
    return acc


def edges(rnd, lim, w, sl, ncpu, cap):
    """Dense bursts at slice and window edges, dealt over every CPU."""
    out, cpu = [], rnd(ncpu)
    e = w * (1 + rnd(3))
    while len(out) < cap:
        for t in (e - 1, e, e + sl - 1, e + w - 1, e + w):
            for _ in range(2 * lim):
                out.append((t, cpu))
                cpu = (cpu + 1) % ncpu
        e += w * (2 + rnd(2))
    return out[:cap]


def client(kind, n):
    return "10.%d.%d.%d" % (kind, 1 + n // 250, 1 + n % 250)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ncpu, outdir, cases = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    for name, opts, lim, w, slices, nclients, cap in RULES:
        rnd = Rnd(SEED + lim * 7 + w)
        sl = w // slices
        lines, compliant, adversarial = [], [], []
        for n in range(nclients):
            for kind, reqs in (
                    (1, ref_log(gen_trace(rnd, lim, w, sl, ncpu, cap), lim, w)),
                    (2, gen_trace(rnd, lim, w, sl, ncpu, cap)),
                    (3, edges(rnd, lim, w, sl, ncpu, cap))):
                who = client(kind, n)
                (compliant if kind == 1 else adversarial).append(who)
                lines += [(t, who, cpu) for t, cpu in reqs]
        if name == CASE_RULE:
            for n, path in enumerate(cases):
                spread = "10.4.0.%d" % (n + 1)
                with open(path) as f:
                    reqs = [ln.split() for ln in f
                            if ln.strip() and not ln.startswith("#")]
                for k, (t, who, *cpu) in enumerate(reqs):
                    lines.append((int(t), who, int(cpu[0]) if cpu else 0))
                    lines.append((int(t), spread, k % ncpu))
                    if who not in adversarial:
                        adversarial.append(who)
                adversarial.append(spread)
        # the replay wants time in order; the sort is stable, so each
        # client keeps its own order
        lines.sort(key=lambda r: r[0])
        with open(os.path.join(outdir, name + ".trace"), "w") as f:
            f.writelines("%d %s %d\n" % r for r in lines)
        manifest.append({"name": name, "options": ["--algorithm", "sliding"] + opts,
                         "limit": lim, "window_ms": w, "requests": len(lines),
                         "compliant": compliant, "adversarial": adversarial})
    with open(os.path.join(outdir, "traces.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    # for the guest's /init, which has no JSON parser: NAME OPTIONS...
    with open(os.path.join(outdir, "list"), "w") as f:
        f.writelines("%s %s\n" % (m["name"], " ".join(m["options"]))
                     for m in manifest)
    for m in manifest:
        print("%s: %d requests, %d compliant and %d adversarial clients over %d CPUs"
              % (m["name"], m["requests"], len(m["compliant"]),
                 len(m["adversarial"]), ncpu))


if __name__ == "__main__":
    main()
