#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench/macro/bpf_run_time.py BEFORE AFTER NET PACKETS: the kernel's own
account of the receiver's XDP program between two `bpftool -j prog show`
(kernel.bpf_stats_enabled on in between): the programs attached to the
receiver (NET: `bpftool -j net show dev DEV` in its namespace; programs of
other namespaces on the host are left out), each with its runs, ns per
run (run_time_ns / run_cnt: the program and what it calls, tail calls
included; no driver, no stack) and runs per received packet. Markdown on
stdout."""
import json
import sys

before = {p["id"]: p for p in json.load(open(sys.argv[1]))}
after = json.load(open(sys.argv[2]))
ids = {x["id"] for n in json.load(open(sys.argv[3])) for x in n.get("xdp", [])}
packets = int(sys.argv[4])
print("| program | type | runs | runs per received packet | ns per run |")
print("|---|---|---|---|---|")
for p in after:
    b = before.get(p["id"], {})
    runs = p.get("run_cnt", 0) - b.get("run_cnt", 0)
    ns = p.get("run_time_ns", 0) - b.get("run_time_ns", 0)
    if runs <= 0 or p["id"] not in ids:
        continue
    print(f"| `{p.get('name', '?')}` | {p.get('type', '?')} | {runs:,} | "
          f"{runs / packets if packets else float('nan'):.2f} | {ns / runs:.1f} |")
