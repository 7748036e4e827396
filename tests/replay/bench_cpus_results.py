#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench/cpus/results.py from synthetic VM outputs (results.txt as
bench/cpus/init writes it, traces.json as gen_traces.py does): a complete
run gives every figure and exits 0; a race step that its time limit cut
keeps the cases it finished and shows as failed, with its rc and error; a
failed bench step shows its figures as failed, a step never reached as
not run; a race case beyond its bound is reported. TAP lines.

    bench_cpus_results.py RESULTS_PY
"""
import json
import os
import subprocess
import sys
import tempfile

from replay_tap import failed, tap

RESULTS = sys.argv[1]

TRACE = {"name": "l10-w1s", "options": ["--algorithm", "sliding", "--limit", "10"],
         "limit": 10, "compliant": ["10.1.0.1"], "adversarial": ["10.2.0.1"]}


def bench_json():
    cases = [("floor: XDP_DROP only", 10), ("under limit (accept), sliding", 200),
             ("over limit: sliding", 80), ("no rule matched", 40)]
    return {"cases": [{"name": n, "median_ns": ns} for n, ns in cases],
            "sync_round": {"median_ms": 12.0, "first_ms": 900.0},
            "aggregation": {"median_ms": 600.0}, "rounds": 5, "packets": 20000,
            "maps": [{"name": "sl_clients", "memlock": 262144 * 204,
                      "max_entries": 262144, "value_size": 184}]}


def race_line(cpus, algorithm, clock, passed, limit, bound):
    return json.dumps({"cpus": cpus, "algorithm": algorithm, "unit": "packets",
                       "clock": clock, "sent": 4096, "passed": passed,
                       "limit": limit, "bound": bound, "run": 4, "ms": 10})


def block(name, rc, secs, text):
    return "@@BEGIN %s rc=%d seconds=%d\n%s\n@@END %s\n" % (name, rc, secs, text, name)


def vm(root, cpus, bench=(0, None), race=(0, None), replay=True, race_err=""):
    """A VM directory: each step (rc, output), None for a step not reached."""
    d = os.path.join(root, str(cpus))
    os.makedirs(d)
    with open(os.path.join(d, "traces.json"), "w") as f:
        json.dump([TRACE], f)
    out = block("info", 0, 0, json.dumps({"kernel": "6.1.0-test", "nproc": cpus,
                                          "mem_total_kb": 1000}))
    for name, (rc, text) in (("bench", bench), ("race", race)):
        if text is None and rc == 0:
            continue
        out += block(name, rc, 100, text or "")
        if rc:
            out += block(name + ".err", rc, 100, race_err if name == "race" else
                         "libbpf: prog 'sl_xdp': failed to load: -13")
    if replay:
        out += block("replay:l10-w1s", 0, 5, json.dumps({"clients": [
            {"client": "10.1.0.1", "sent": 50, "rejected": 0, "max_in_window": 9},
            {"client": "10.2.0.1", "sent": 500, "rejected": 480, "max_in_window": 11}]}))
    with open(os.path.join(d, "results.txt"), "w") as f:
        f.write(out)
    return d


def run(root, dirs):
    j, m = os.path.join(root, "out.json"), os.path.join(root, "out.md")
    p = subprocess.run([sys.executable, RESULTS, "--json", j, "--md", m] + dirs,
                       capture_output=True, text=True)
    objs = json.load(open(j)) if os.path.exists(j) else None
    md = open(m).read() if os.path.exists(m) else ""
    return p, objs, md


def row(md, cpus):
    return next((l for l in md.splitlines() if l.startswith("| %d |" % cpus)), "")


full_race = "\n".join([race_line(2, "sliding", "frozen", 1001, 1000, 1002),
                       race_line(2, "sliding", "moving", 1000, 500, 1129)])

with tempfile.TemporaryDirectory() as root:
    p, objs, md = run(root, [vm(root, 2, bench=(0, json.dumps(bench_json())),
                                race=(0, full_race))])
    tap(p.returncode == 0, "a complete run exits 0", p.stderr)
    o = objs[0] if objs else {}
    tap(o.get("accept_x_drop") == 20.0 and o.get("race_extra_units") == 1 and
        o.get("nfr1_max_ratio") == 1.1 and o.get("failed") == {},
        "a complete run: every figure, nothing failed", json.dumps(o)[:400])

with tempfile.TemporaryDirectory() as root:
    # the 64-CPU VM's race cut by its time limit after three cases, the
    # replays never reached
    cut = "\n".join([race_line(64, "sliding", "frozen", 1030, 1000, 1126),
                     race_line(64, "sliding", "moving", 1002, 500, 2803),
                     race_line(64, "fixed", "frozen", 1005, 1000, 1126)])
    p, objs, md = run(root, [vm(root, 64, bench=(0, json.dumps(bench_json())),
                                race=(124, "[==========] Running 1 test(s).\n" + cut),
                                replay=False, race_err="Terminated")])
    o = objs[0] if objs else {}
    tap(p.returncode == 1, "a run with a failed step exits 1", p.stderr)
    tap(objs is not None, "a run with a failed step still writes its JSON and table",
        p.stderr)
    tap(len(o.get("race", [])) == 3 and o.get("race_extra_units") == 30,
        "the race's finished cases are kept, and its figure from them",
        json.dumps(o.get("race"))[:400])
    tap(o.get("failed", {}).get("race", {}).get("rc") == 124 and
        "Terminated" in o.get("failed", {}).get("race", {}).get("error", ""),
        "the race step is under failed with its rc and error",
        json.dumps(o.get("failed")))
    r = row(md, 64)
    tap("30 (failed after 3 cases)" in r, "the table shows the race as failed "
        "with what it finished", r)
    tap(o.get("accept_x_drop") == 20.0 and "| 20.0 |" in r,
        "the steps that ended well keep their figures", r)
    tap(r.count("not run") == 2, "the replays never reached show as not run", r)

with tempfile.TemporaryDirectory() as root:
    p, objs, md = run(root, [vm(root, 16, bench=(1, ""), race=(0, full_race))])
    r = row(md, 16)
    tap(p.returncode == 1 and r.split("|")[2:8] == [" failed "] * 6,
        "a failed bench step: its six figures show as failed", r)
    tap(objs and "libbpf" in objs[0]["failed"]["bench"]["error"],
        "... and its error is kept", json.dumps(objs and objs[0]["failed"]))

with tempfile.TemporaryDirectory() as root:
    over = "\n".join([race_line(16, "sliding", "frozen", 1040, 1000, 1030)])
    p, objs, md = run(root, [vm(root, 16, bench=(0, json.dumps(bench_json())),
                                race=(1, over))])
    tap(objs and len(objs[0].get("race_over_bound", [])) == 1 and
        "more than its bound" in md,
        "a race case beyond its bound is reported", md[-600:])

sys.exit(1 if failed() else 0)
