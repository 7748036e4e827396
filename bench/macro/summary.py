#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench/macro/summary.py TMP RESULTS KEY=VALUE...: the tables of
bench_macro.sh from TMP/data.tsv (and the commands noted in TMP/cmd.*),
printed and written to RESULTS as Markdown. With goals_json=FILE among the
KEY=VALUEs, every goal row (ratio, bound, met) also goes to FILE as JSON,
written whether or not the run is refused, for a test or a script."""
import glob
import json
import os
import statistics
import sys

tmp, results = sys.argv[1], sys.argv[2]
info = dict(a.split("=", 1) for a in sys.argv[3:])
clk = int(info.get("clk_tck", 100))

NAMES = {
    "slicelimit": "slicelimit (XDP, sliding, limit 1/60s)",
    "xdp-drop": "floor: XDP_DROP only",
    "floor-count": "floor: per-source LRU per-CPU count",
    "xdp-pass": "floor: XDP_PASS only (the stack's share)",
    "nft-netdev": "nft meter, netdev ingress",
    "nft-inet": "nft meter, inet prerouting",
    "ipt-hashlimit": "iptables(-nft) hashlimit, raw",
    "sl-bucket": "slicelimit token-bucket 60 + 10/s",
    "sl-sliding": "slicelimit sliding 600/60s",
    "ipt-nft": "iptables-nft hashlimit, raw",
    "ipt-legacy": "iptables-legacy hashlimit, raw",
}

tput, accept, acc, cal, spoof, flood = {}, {}, {}, {}, {}, {}
with open(os.path.join(tmp, "data.tsv")) as f:
    for line in f:
        kind, fam, n, mech, rnd, gen, a, b = line.rstrip("\n").split("\t")
        try:
            g = json.loads(gen)
            a = list(map(int, a.split()))
            b = list(map(int, b.split()))
        except ValueError:
            continue  # a failed case: reported on stderr already
        if len(a) != 6 or len(b) != 6:
            continue
        e = g["elapsed_ns"] / 1e9
        rx = b[2] - a[2]
        row = {
            "sent": g["sent"], "secs": e, "rx": rx,
            "rx_mpps": rx / e / 1e6,
            "drop_mpps": (b[4] - a[4]) / e / 1e6,
            "dropped": b[4] - a[4], "passed": b[5] - a[5],
            "ns": (b[0] - a[0]) * 1e9 / clk / rx if rx else float("nan"),
            "ns_all": (b[1] - a[1]) * 1e9 / clk / rx if rx else float("nan"),
        }
        row["zero_softirq"] = b[0] == a[0]
        d = {"tput": tput, "accept": accept, "acc": acc, "cal": cal, "spoof": spoof,
             "flood": flood}[kind]
        d.setdefault((int(fam), int(n)), {}).setdefault(mech, []).append(row)

# the real TCP clients: {phase: [(round, code, seconds)]}
tcp = {}
if os.path.exists(os.path.join(tmp, "tcp.tsv")):
    with open(os.path.join(tmp, "tcp.tsv")) as f:
        for line in f:
            p = line.split()
            if len(p) == 4:
                tcp.setdefault(p[1], []).append((int(p[0]), p[2], float(p[3])))

# what was dropped during each phase: {phase: [web rule, rx queues, tx]}
tcp_drops = {}
if os.path.exists(os.path.join(tmp, "tcpdrops.tsv")):
    with open(os.path.join(tmp, "tcpdrops.tsv")) as f:
        for line in f:
            p = line.split()
            if len(p) == 5:
                d = tcp_drops.setdefault(p[1], [0, 0, 0])
                for i in range(3):
                    d[i] += int(p[2 + i])


def pct(v, q):
    """The q-quantile of v (nearest rank)."""
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(-(-q * len(v) // 1)) - 1))] if v else float("nan")


def med(rows, k):
    v = sorted(r[k] for r in rows)
    return statistics.median(v), v[0], v[-1]


def implausible():
    """Why the run's floors say the traffic did not flow as it should
    (a list, empty if the table can be written)."""
    why = []
    floors = ("xdp-drop", "floor-count")
    ncpu = lambda k: len(info.get(k, "0").split(","))
    per_cpu = None
    cal_rows = cal.get((4, 1000), {}).get("xdp-drop")
    if cal_rows:
        per_cpu = med(cal_rows, "rx_mpps")[0] / ncpu("cal_cpus")
    elif tput:
        why.append("no calibration case (XDP_DROP on every CPU of ACC_CPUS) to check the floors against")
    bound = float(info.get("floor_min_mpps", 0.5))
    if per_cpu is not None:
        bound = max(bound, float(info.get("floor_min_share", 0.2)) * per_cpu * ncpu("gen_cpus"))
    single = ("throughput", "accept path", "spoofed flood")
    if int(info.get("tcp_rounds", 0)) > 0 and not tcp:
        why.append("real TCP clients: no request was made (see the errors above)")
    if "quiet" in tcp and not any(c == "200" for _, c, _ in tcp["quiet"]):
        why.append("real TCP clients: not one request answered without a flood (nginx unreachable?)")
    for kind, d in (("throughput", tput), ("accept path", accept),
                    ("spoofed flood", spoof), ("accuracy", acc),
                    ("calibration", cal), ("flood beside the TCP clients", flood)):
        for (fam, n), mechs in sorted(d.items()):
            where = f"{kind}, IPv{fam}, N = {n}"
            if kind in single and "xdp-drop" not in mechs:
                why.append(f"{where}: no XDP_DROP floor measured")
            for mech, rows in sorted(mechs.items()):
                if kind in single and mech == "xdp-drop":
                    m = med(rows, "rx_mpps")[0]
                    if m < bound:
                        why.append(f"{where}: the XDP_DROP floor received {m:.3f} Mpps, "
                                   f"below the bound of {bound:.3f} Mpps (FLOOR_MIN_MPPS, or "
                                   f"FLOOR_MIN_SHARE of the calibration's "
                                   f"{per_cpu or 0:.3f} Mpps per CPU)")
                for r in rows:
                    if (kind == "accept path" and mech != "xdp-drop" and
                            r["dropped"] > float(info.get("accept_max_drop", 0.01)) * r["rx"]):
                        why.append(f"{where}: {mech}: dropped {r['dropped']} of {r['rx']} packets "
                                   f"with every source within its limit (ACCEPT_MAX_DROP)")
                    if mech in floors and r["zero_softirq"]:
                        why.append(f"{where}: {mech}: no softirq time at all for {r['rx']} packets")
                    if kind == "flood beside the TCP clients":
                        # the clients' packets share the receiver's queues,
                        # so the flood may lose frames there; it must flow
                        if r["rx_mpps"] < float(info.get("flood_min_mpps", 0.05)):
                            why.append(f"{where}: the flood reached {r['rx_mpps']:.3f} Mpps "
                                       f"(FLOOD_MIN_MPPS)")
                    elif r["rx"] < float(info.get("rx_min_share", 0.5)) * r["sent"]:
                        why.append(f"{where}: {mech}: the receiver took in {r['rx']} of the "
                                   f"{r['sent']} packets sent (RX_MIN_SHARE)")
    return why


def fmt(t, prec):
    m, lo, hi = t
    return f"{m:.{prec}f} ({lo:.{prec}f}–{hi:.{prec}f})"


out = []
out.append("# slicelimit macro benchmark: real packets over veth")
out.append("")
out.append("Written by `bench/macro/bench_macro.sh` (do not edit by hand).")
out.append("")
for k in ("date", "kernel", "cpu", "nft", "iptables", "slicelimit", "settings"):
    out.append(f"- {k}: {info.get(k, '?')}")
out.append(f"- whole run: {info.get('elapsed', '?')} s")
out.append("")
out.append("""How: a generator (`bench/macro/gen.bpf.c`, driven by `sl-macro gen`) runs
with BPF_PROG_TEST_RUN + BPF_F_TEST_XDP_LIVE_FRAMES on the sending veth end,
rewrites each frame's source address over N clients (IPv4 10.200.0.0 + i;
IPv6 2001:db8:i::1, i in the /64) and XDP_TX sends it to the peer in the
receiving namespace, where the mechanism runs (XDP programs attached in native
mode; netfilter with GRO on so that veth runs NAPI). veth runs its NAPI on the
sending CPU, so generator and receiver share the generator's CPU: packets/s at
the receiver is how fast the receiver goes with one CPU shared with a cheap
generator, and softirq time of the generator CPU (/proc/stat, tick-sampled,
USER_HZ) / packets received is the receiver's CPU cost per packet. rx =
packets the receiving veth took in (its rx_queue_*_xdp_packets); dropped = the
mechanism's own counter (slicelimit `stats --json`, nft named counters,
iptables rule counters; veth `xdp_drops` for the floors; for nft in the
throughput cases, received - passed, passed being the receiver's UdpNoPorts /
Udp6NoPorts, where every packet the meter lets through ends: nft 1.0.6 dumps
every meter element to print any counter, minutes for 1,000,000). Each case: set up
fresh, 2N + 200,000 warm-up packets (every source seen and over its limit),
counters read with the traffic stopped, SECS seconds of traffic, counters read
again. Medians over the rounds (min–max in brackets); "x sl" = the median
over slicelimit's median (rx Mpps: > 1 is faster than slicelimit; ns/pkt:
< 1 is cheaper). The generator keeps its program attached (generic XDP) to a
device of its own that no packet reaches: otherwise each of its test runs
would put the program into the kernel's XDP dispatcher and take it out
again, two RCU grace periods a call (see docs/MEASUREMENTS.md).""")
out.append("")

cal_rows = cal.get((4, 1000), {}).get("xdp-drop")
if cal_rows:
    out.append(f"""Checked before this file was written: the calibration (the XDP_DROP floor,
the generator on CPUs {info.get('cal_cpus', '?')}) received {med(cal_rows, 'rx_mpps')[0]:.2f} Mpps; every single-CPU
XDP_DROP floor below reached at least {info.get('floor_min_mpps', '?')} Mpps and {info.get('floor_min_share', '?')} of that per
generator CPU, every floor case showed softirq time, and every receiver took
in at least {info.get('rx_min_share', '?')} of what was sent (else the run fails and writes nothing).""")
    out.append("")

# every goal evaluated in the tables: one row each, also in goals_json
goals = []


def goal(table, fam, n, what, ratio, at_most):
    """A goal row: ratio (from this run's medians) against its bound;
    the words for the table."""
    met = ratio <= at_most
    goals.append({"table": table, "family": fam, "n": n, "what": what,
                  "ratio": round(ratio, 4), "at_most": at_most, "met": met})
    return f"{what}: {ratio:.2f} (goal <= {at_most:g}: {'met' if met else 'missed'})"


def tput_table(d, mechs, names, base=None):
    """A throughput table; with base (the XDP_PASS floor's median), a
    column of each median above it."""
    extra = " above XDP_PASS (ns/pkt) |" if base is not None else ""
    out.append("| mechanism | rx Mpps | dropped Mpps | passed (all) | softirq ns/pkt |"
               f"{extra} x sl (Mpps) | x sl (ns/pkt) | x counter (ns/pkt) | runs |")
    out.append("|---|---|---|---|---|" + ("---|" if extra else "") + "---|---|---|---|")
    sl, fc = d.get("slicelimit"), d.get("floor-count")
    sl_rx = med(sl, "rx_mpps")[0] if sl else None
    sl_ns = med(sl, "ns")[0] if sl else None
    fc_ns = med(fc, "ns")[0] if fc else None
    for mech in mechs:
        if mech not in d:
            continue
        rows = d[mech]
        rx, ns = med(rows, "rx_mpps"), med(rows, "ns")
        passed = statistics.median(r["passed"] for r in rows)
        rr = f"{rx[0] / sl_rx:.2f}" if sl_rx else "-"
        rn = f"{ns[0] / sl_ns:.2f}" if sl_ns else "-"
        rc = f"{ns[0] / fc_ns:.2f}" if fc_ns else "-"
        # XDP_DROP passes nothing: nothing of it is above the pass floor
        above = "" if base is None else " - |" if mech == "xdp-drop" else f" {ns[0] - base:.0f} |"
        out.append(f"| {names[mech]} | {fmt(rx, 2)} | {fmt(med(rows, 'drop_mpps'), 2)} | "
                   f"{passed:,.0f} | {fmt(ns, 0)} |{above} {rr} | {rn} | {rc} | {len(rows)} |")
    out.append("")


NETFILTER = ("nft-netdev", "nft-inet", "ipt-hashlimit")
ACCEPT_NAMES = dict(NAMES, **{
    "slicelimit": "slicelimit (XDP, sliding, within its limit)",
    "floor-count": "floor: per-source LRU per-CPU count, then XDP_PASS",
})

out.append("## 1. Throughput at the receiver")
out.append("")
out.append(f"""Each IPv4 N has two tables: every source over its limit (what a limiter
drops), then every source within its limit (the accept path: limits of
{int(info.get('accept_rate', 1000000)):,} packets a second per source, far above what a source sends
here, the traffic the same as over the limit). What is accepted goes on to
the stack (UDP to port 9, where nobody listens), so in the accept table the
bare counter counts and passes, and the XDP_PASS floor is the stack's own
share; "above XDP_PASS" is a median minus that floor's, the XDP program's
own share (and netfilter's). "x counter" = the median softirq ns/pkt over the
bare counter's. The goal rows under each table are computed from its
medians.""")
out.append("")
for (fam, n) in sorted(set(tput) | set(accept)):
    d = tput.get((fam, n), {})
    if d:
        out.append(f"### IPv{fam}, N = {n:,} sources")
        out.append("")
        tput_table(d, ("slicelimit", "xdp-drop", "floor-count") + NETFILTER, NAMES)
    sl, fc = d.get("slicelimit"), d.get("floor-count")
    nf = [med(d[m], "ns")[0] for m in NETFILTER if m in d]
    if sl and fc and fam == 4 and n > 1:
        sl_ns = med(sl, "ns")[0]
        line = [goal("over limit", fam, n, "slicelimit / bare counter",
                     sl_ns / med(fc, "ns")[0], 1.5)]
        if nf:
            line.append(goal("over limit", fam, n,
                             "slicelimit / the cheaper of nft meter and hashlimit",
                             sl_ns / min(nf), 0.5))
        out.append("; ".join(line) + ".")
        out.append("")
    if (fam, n) not in accept or fam != 4:
        continue
    d = accept[(4, n)]
    out.append(f"### IPv4, N = {n:,} sources, every source within its limit")
    out.append("")
    sl, fc, xp = d.get("slicelimit"), d.get("floor-count"), d.get("xdp-pass")
    xp_ns = med(xp, "ns")[0] if xp else None
    tput_table(d, ("slicelimit", "xdp-drop", "xdp-pass", "floor-count") + NETFILTER,
               ACCEPT_NAMES, xp_ns)
    if sl and fc:
        sl_ns, fc_ns = med(sl, "ns")[0], med(fc, "ns")[0]
        line = [goal("within limit", 4, n, "slicelimit / bare counter, both passing",
                     sl_ns / fc_ns, 2)]
        if xp and fc_ns > xp_ns:
            line.append(goal("within limit, above XDP_PASS", 4, n,
                             "the same above the XDP_PASS floor (the programs' own share)",
                             (sl_ns - xp_ns) / (fc_ns - xp_ns), 2))
        out.append("; ".join(line) + ".")
        out.append("")

SPOOF_NAMES = dict(NAMES, **{
    "slicelimit": "slicelimit (XDP, 1/60s per source + 1000/s for the port)",
    "floor-count": "floor: per-source LRU per-CPU count (its insert path)",
    "nft-netdev": "nft meter + 1000/s limit, netdev ingress",
    "nft-inet": "nft meter + 1000/s limit, inet prerouting",
    "ipt-hashlimit": "iptables(-nft) hashlimit + 1000/s limit, raw",
})
for (fam, n) in sorted(spoof):
    d = spoof[(fam, n)]
    out.append(f"## 1b. Spoofed flood: every packet a random source of {n:,}")
    out.append("")
    out.append("""Every frame a random source of 10.0.0.0/8 (far more than the tables' 262,144
entries: each packet a new source, as good as), one generator CPU, after
2 x 262,144 + 200,000 warm-up packets (every table full). Each mechanism as an
edge host would set it against such a flood (README, "Under a spoofed flood"):
a per-source limit (1/60s) and a total for the port (1000/s), so what the
flood does not turn away by source, the total does; the bare counter's insert
path (`floor_count` fed a new source every packet, XDP_DROP) is the floor.
dropped = received - passed (passed: what reached UDP, UdpNoPorts), for the
floors veth's xdp_drops. "x counter" = the median softirq ns/pkt over the bare
counter's: the goal for slicelimit is <= 1.5.""")
    out.append("")
    out.append("| mechanism | rx Mpps | dropped Mpps | passed (all) | softirq ns/pkt | x counter (ns/pkt) | x counter (Mpps) | runs |")
    out.append("|---|---|---|---|---|---|---|---|")
    fc = d.get("floor-count")
    fc_rx = med(fc, "rx_mpps")[0] if fc else None
    fc_ns = med(fc, "ns")[0] if fc else None
    for mech in ("slicelimit", "floor-count", "xdp-drop", "nft-netdev", "nft-inet", "ipt-hashlimit"):
        if mech not in d:
            continue
        rows = d[mech]
        rx, ns = med(rows, "rx_mpps"), med(rows, "ns")
        passed = statistics.median(r["passed"] for r in rows)
        rn = f"{ns[0] / fc_ns:.2f}" if fc_ns else "-"
        rr = f"{rx[0] / fc_rx:.2f}" if fc_rx else "-"
        out.append(f"| {SPOOF_NAMES[mech]} | {fmt(rx, 2)} | {fmt(med(rows, 'drop_mpps'), 2)} | "
                   f"{passed:,.0f} | {fmt(ns, 0)} | {rn} | {rr} | {len(rows)} |")
    out.append("")
    if fc_ns and "slicelimit" in d:
        out.append(goal("spoofed flood", fam, n,
                        "slicelimit / bare counter's insert path, softirq ns per packet",
                        med(d["slicelimit"], "ns")[0] / fc_ns, 1.5) + ".")
        out.append("")

if tcp:
    out.append("## 1c. Real TCP clients through slicelimit, quiet and during a spoofed flood")
    out.append("")
    out.append(f"""nginx (one process, a 612-byte file) in the receiving namespace, slicelimit
attached (native XDP) on its veth with the rules of 1b plus a per-source
`tcp 80` rule of {info.get('web_limit', '?')} packets per second, which the clients stay within;
the clients, curl in the sending namespace: {info.get('tcp_reqs', '?')} requests per round at
{info.get('tcp_rate', '?')}/s, each on a new connection (`Connection: close`), each bounded to 2 s
(an unanswered one counts as lost). Each round: the quiet run, then the same
during the spoofed flood of 1b (random sources, the generator on CPU(s)
{info.get('gen_cpus', '?')}, started 0.5 s before the clients, stopped after them); nginx and curl
are not pinned. Latency = curl's time_total (connect + request + answer), all
rounds pooled. Goal: no request lost, p99 during the flood <= 2 x quiet.
"web rule dropped": packets of the clients that slicelimit's own tcp 80
rule dropped (0 if it never stood in their way); "rx queue drops": the
receiving veth's rx_queue_*_drops; "tx dropped": the sending veth's (both
count the flood's frames as well as the clients'; a client's SYN lost in
either comes again after 1 s).""")
    out.append("")
    out.append("| phase | answered / sent | success | p50 ms | p99 ms | max ms | web rule dropped | rx queue drops | tx dropped | flood rx Mpps | rounds |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    fl = flood.get((4, 1 << int(info.get("spoof_bits", 24))), {}).get("slicelimit", [])
    p99 = {}
    for phase in ("quiet", "flood"):
        reqs = tcp.get(phase, [])
        ok = [t for _, c, t in reqs if c == "200"]
        p99[phase] = pct(ok, 0.99) * 1e3
        fmpps = fmt(med(fl, "rx_mpps"), 2) if phase == "flood" and fl else "-"
        out.append(f"| {phase} | {len(ok)} / {len(reqs)} | {100.0 * len(ok) / max(1, len(reqs)):.2f} % | "
                   f"{pct(ok, 0.5) * 1e3:.2f} | {p99[phase]:.2f} | {max(ok, default=float('nan')) * 1e3:.2f} | "
                   f"{' | '.join(str(x) for x in tcp_drops.get(phase, ['-'] * 3))} | "
                   f"{fmpps} | {len({r for r, _, _ in reqs})} |")
    out.append("")
    lost = sum(1 for _, c, _ in tcp.get("flood", []) if c != "200")
    ratio = p99["flood"] / p99["quiet"] if p99.get("quiet") else float("nan")
    out.append(f"During the flood: {lost} request(s) lost (goal 0: {'met' if not lost else 'missed'}); "
               f"p99 {ratio:.2f} x the quiet run's (goal <= 2: {'met' if ratio <= 2 else 'missed'}).")
    out.append("")

out.append("## 2. Accuracy under flood: 10/s, burst 60, one source, both CPUs")
out.append("")
out.append("""Each round floods from a source of its own (fresh state) for ACC_SECS
seconds from two generator threads, one per CPU, into a veth with two queues
(the receiver runs on both CPUs at once). passed = what the mechanism let
through by its own counter (slicelimit: the rule's `passed`; nft: a counter
rule after the meter; iptables: a counting rule after the hashlimit rule).
Due: the token bucket's exact allowance, 60 + 10/s x T (T = the flood's
measured duration, about 5 s: 110); for `sliding 600/60s`, 600 (the README
promises never more than 1.1 x the limit in a window, 660).""")
out.append("")
out.append("| mechanism | passed: median (min–max) | every run | due | median / due | flood: rx Mpps | runs |")
out.append("|---|---|---|---|---|---|---|")
for mech in ("sl-bucket", "sl-sliding", "nft-netdev", "nft-inet", "ipt-nft", "ipt-legacy"):
    rows = acc.get((4, 1), {}).get(mech)
    if not rows:
        continue
    secs = statistics.median(r["secs"] for r in rows)
    due = 600 if mech == "sl-sliding" else 60 + int(10 * secs)
    p = med(rows, "passed")
    out.append(f"| {NAMES[mech]} | {p[0]:.0f} ({p[1]}–{p[2]}) | "
               f"{', '.join(str(r['passed']) for r in rows)} | {due} | {p[0] / due:.2f} | "
               f"{med(rows, 'rx_mpps')[0]:.2f} | {len(rows)} |")
out.append("")

out.append("## Exact commands")
out.append("")
out.append("Everything in namespaces of the run: the receiver `%s` and the sender;" % "slm<pid>s")
out.append("`sl-macro` is `build/bench/macro/sl-macro` (bench/macro/macro.c).")
out.append("")
for path in sorted(glob.glob(os.path.join(tmp, "cmd.*"))):
    key = os.path.basename(path)[4:]
    out.append(f"`{key}`:")
    out.append("")
    out.append("```")
    out.append(open(path).read().rstrip("\n"))
    out.append("```")
    out.append("")

if goals:
    # every goal row of the tables above, gathered
    at = out.index("## 1. Throughput at the receiver")
    rows = ["## Goals of this run", "",
            "Each a ratio of medians from the tables below (computed, not copied).", "",
            "| table | N | ratio | value | goal | met |", "|---|---|---|---|---|---|"]
    for g in goals:
        rows.append(f"| {g['table']} (IPv{g['family']}) | {g['n']:,} | {g['what']} | "
                    f"{g['ratio']:.2f} | <= {g['at_most']:g} | {'yes' if g['met'] else 'no'} |")
    out[at:at] = rows + [""]
if "goals_json" in info:
    with open(info["goals_json"], "w") as f:
        json.dump(goals, f, indent=1)
        f.write("\n")

text = "\n".join(out) + "\n"
sys.stdout.write(text)
why = implausible()
if why:
    for w in why:
        print(f"bench_macro: implausible: {w}", file=sys.stderr)
    print(f"bench_macro: the traffic did not flow as it should; {results} left as it was",
          file=sys.stderr)
    sys.exit(1)
with open(results + ".tmp", "w") as f:
    f.write(text)
os.replace(results + ".tmp", results)
