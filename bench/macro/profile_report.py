#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench/macro/profile_report.py SCRIPT_OUT CPUS PERIOD_NS PACKETS [TOP]:
where the receiver's softirq time goes, from `perf script -F cpu,event,ip,sym`
of a `perf record -a -g -e cpu-clock -c PERIOD_NS` (bench_macro.sh's
PROFILE mode). Only the samples on CPUS (a comma list: the generator's,
where veth runs the receiver's NAPI) whose call chain holds net_rx_action
count: the softirq that runs XDP. Each sample stands for PERIOD_NS of CPU
time, so a function's samples x PERIOD_NS / PACKETS is its ns per packet.
Prints, as Markdown, the softirq's time by where the leaf falls (the hash
bucket walk, the BPF program's own code, the clock and map helpers, the
LRU, veth, the stack), then the functions by self time (the leaf of the
chain) and by total time (anywhere in the chain, once a sample); the same
as JSON in SCRIPT_OUT.json."""
import collections
import json
import re
import sys

path, cpus, period, packets = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
top = int(sys.argv[5]) if len(sys.argv) > 5 else 25
want = {int(c) for c in cpus.split(",")}
SOFTIRQ = "net_rx_action"


def name(sym):
    """A JIT-ed BPF program's symbol without its tag: bpf_prog_<tag>_<name>
    -> bpf_prog_<name>, so that runs compare."""
    return re.sub(r"^bpf_prog_[0-9a-f]{16}_", "bpf_prog_", sym)


samples = []		# one list of symbols a sample, leaf first
cpu_samples = 0
with open(path, errors="replace") as f:
    cur = None
    for line in f:
        m = re.match(r"^\[(\d+)\]", line)
        if m:
            if cur is not None:
                samples.append(cur)
            cur = [] if int(m.group(1)) in want else None
            cpu_samples += cur is not None
            continue
        if cur is not None and line.strip():
            parts = line.split(None, 1)
            cur.append(name(parts[1].strip() if len(parts) > 1 else "[unknown]"))
    if cur is not None:
        samples.append(cur)

soft = [s for s in samples if SOFTIRQ in s]
self_t = collections.Counter(s[0] for s in soft if s)
total_t = collections.Counter(sym for s in soft for sym in set(s) if sym != "[unknown]")


def where(leaf):
    """The part of the softirq a sample's leaf function belongs to."""
    if leaf == "lookup_nulls_elem_raw":
        return "hash bucket walk (lookup_nulls_elem_raw)"
    if leaf == "memcmp":
        return "key compare (memcmp)"
    if leaf.startswith("bpf_prog_"):
        return "the BPF program's own code (bpf_prog_*)"
    if "ktime" in leaf or "clock" in leaf or "timespec" in leaf:
        return "clock helpers"
    if "lru" in leaf or "spin" in leaf:
        return "LRU lists and locks"
    if leaf.startswith(("htab", "__htab", "jhash")):
        return "map helpers (hash, lookup entry)"
    if (leaf.startswith(("veth", "page_pool")) or "xdp_return" in leaf or
            leaf in ("net_rx_action", "__napi_poll", "bpf_dispatcher_xdp_func")):
        return "veth and the frame's return"
    return "the rest (the stack, for what passes)"


parts = collections.Counter(where(s[0]) for s in soft if s)


def ns(n):
    return n * period / packets if packets else float("nan")


res = {
    "cpus": cpus, "period_ns": period, "packets": packets,
    "samples_on_cpus": cpu_samples, "softirq_samples": len(soft),
    "softirq_ns_per_packet": ns(len(soft)),
    "where": [{"part": k, "samples": v, "share": v / max(1, len(soft)), "ns_per_packet": ns(v)}
              for k, v in parts.most_common()],
    "self": [{"sym": k, "samples": v, "share": v / max(1, len(soft)), "ns_per_packet": ns(v)}
             for k, v in self_t.most_common(top)],
    "total": [{"sym": k, "samples": v, "share": v / max(1, len(soft)), "ns_per_packet": ns(v)}
              for k, v in total_t.most_common(top)],
}
with open(path + ".json", "w") as f:
    json.dump(res, f, indent=1)
print(f"CPU(s) {cpus}: {cpu_samples} samples of {period} ns, {len(soft)} in the softirq "
      f"({SOFTIRQ} in the chain): {ns(len(soft)):.0f} ns per packet over {packets:,} packets")
print()
print("| where | samples | share of the softirq | ns/packet |")
print("|---|---|---|---|")
for r in res["where"]:
    print(f"| {r['part']} | {r['samples']} | {100 * r['share']:.1f} % | {r['ns_per_packet']:.0f} |")
for kind in ("self", "total"):
    print()
    print(f"| function ({kind}) | samples | share of the softirq | ns/packet |")
    print("|---|---|---|---|")
    for r in res[kind]:
        print(f"| `{r['sym']}` | {r['samples']} | {100 * r['share']:.1f} % | {r['ns_per_packet']:.1f} |")
