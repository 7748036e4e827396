#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The many-CPU bed's results: bench/RESULTS-cpus.json and .md.

    results.py --json OUT.json --md OUT.md [--command CMD] [--bench-args A]
               VMDIR ...

Each VMDIR (build/bench/cpus/N) holds results.txt, the blocks the guest
wrote on its second serial port (@@BEGIN NAME rc=R seconds=S ... @@END
NAME; a failed step's stderr follows as NAME.err), and traces.json, which
clients of each replayed trace are compliant and which adversarial.

A step that failed keeps what it gave (the race cases a time limit let
finish): the JSON holds them and the step under "failed" with its rc,
seconds and error; the table shows each figure that step feeds as
"failed", or as "not run" when the VM never reached the step. The files
are written either way; it then prints every failure and exits 1.
"""
import argparse
import datetime
import json
import os
import re
import sys

# The client tables a default `sliding` rule uses: the state layout's own
# list, the one place to change when the layout changes. bytes_per_client
# is their fdinfo memlock added up, over the entries of the first.
CLIENT_MAPS = ["sl_clients"]
# The clients the default table is for (include/slicelimit.h,
# SL_DEFAULT_CLIENTS): bytes_per_client divides by them, not by the
# table's entries, which add per-CPU spare (user/instance/instance_maps.h,
# SL_LRU_LOCAL_FREE a CPU), so that what more CPUs cost shows there.
DEFAULT_CLIENTS = 262144

# bench_xdp's cases (bench/bench_xdp.c, add_case) behind each field
CASES = {
    "drop": "floor: XDP_DROP only",
    "accept": "under limit (accept), sliding",
    "over_limit": "over limit: sliding",
    "no_rule": "no rule matched",
}

FIELDS = ["cpus", "bytes_per_client", "accept_x_drop", "over_limit_x_drop",
          "no_rule_x_drop", "sync_round_ms", "nfr1_max_ratio",
          "nfr2_false_rejects"]

# the steps each figure comes from ("replay:" is every replay step)
BENCH_FIELDS = ["bytes_per_client", "accept_x_drop", "over_limit_x_drop",
                "no_rule_x_drop", "sync_round_ms", "aggregation_ms"]
SOURCE = dict([(f, "bench") for f in BENCH_FIELDS] +
              [("nfr1_max_ratio", "replay:"), ("nfr2_false_rejects", "replay:"),
               ("race_extra_units", "race")])


def blocks(path):
    """{name: (rc, seconds, text)} of the guest's result blocks."""
    out, cur = {}, None
    if not os.path.exists(path):
        return out
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            m = re.match(r"@@BEGIN (\S+) rc=(\d+) seconds=(\d+)$", line)
            if m:
                cur, rc, secs, text = m.group(1), int(m.group(2)), int(m.group(3)), []
                continue
            if cur and line == "@@END " + cur:
                out[cur] = (rc, secs, "\n".join(text))
                cur = None
            elif cur:
                text.append(line)
    return out


def error_text(text):
    """The useful end of a failed step's stderr: the verifier's verdict."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[-12:])


def bench_fields(obj, res):
    cases = {c["name"]: c for c in res["cases"]}
    for field, name in CASES.items():
        if name not in cases:
            raise KeyError("bench_xdp has no case %r" % name)
    drop = cases[CASES["drop"]]["median_ns"]
    for field in ("accept", "over_limit", "no_rule"):
        obj[field + "_x_drop"] = round(cases[CASES[field]]["median_ns"] / drop, 2)
    obj["sync_round_ms"] = round(res["sync_round"]["median_ms"], 1)
    maps = {m["name"]: m for m in res["maps"]}
    missing = [n for n in CLIENT_MAPS if n not in maps]
    if missing:
        raise KeyError("no client map %s in bench_xdp's output" % ", ".join(missing))
    entries = maps[CLIENT_MAPS[0]]["max_entries"]
    if entries < DEFAULT_CLIENTS:
        raise ValueError("%s has %d entries, fewer than the %d clients of "
                         "the default table" % (CLIENT_MAPS[0], entries,
                                                DEFAULT_CLIENTS))
    memlock = sum(maps[n]["memlock"] for n in CLIENT_MAPS)
    obj["bytes_per_client"] = round(memlock / DEFAULT_CLIENTS, 1)
    obj["bytes_per_entry"] = round(memlock / entries, 1)
    obj["client_maps"] = {n: {"memlock": maps[n]["memlock"],
                              "max_entries": maps[n]["max_entries"],
                              "value_size": maps[n]["value_size"]}
                          for n in CLIENT_MAPS}
    obj["ns"] = {field: cases[name]["median_ns"] for field, name in CASES.items()}
    obj["aggregation_ms"] = round(res["aggregation"]["median_ms"], 1)
    obj["sync_round_first_ms"] = round(res["sync_round"]["first_ms"], 1)
    obj["bench_rounds"] = res["rounds"]
    obj["bench_packets"] = res["packets"]


def replay_fields(obj, name, res, trace):
    compliant, adversarial = set(trace["compliant"]), set(trace["adversarial"])
    limit = trace["limit"]
    res = res["clients"]  # replay --json: {"clients": [...], ...}
    worst = max((c for c in res if c["client"] in adversarial),
                key=lambda c: c["max_in_window"])
    false_rejects = sum(c["rejected"] for c in res if c["client"] in compliant)
    obj["accuracy"].append({
        "trace": name, "options": " ".join(trace["options"]),
        "requests": sum(c["sent"] for c in res),
        "compliant_clients": len(compliant),
        "adversarial_clients": len(adversarial),
        "max_in_window": worst["max_in_window"], "max_ratio":
        round(worst["max_in_window"] / limit, 3), "worst_client": worst["client"],
        "false_rejects": false_rejects})


def race_fields(obj, text):
    """The race test's per-case lines, as many as it finished."""
    race = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    obj["race"] = race
    frozen = [r for r in race if r.get("clock") == "frozen"]
    if frozen:
        obj["race_extra_units"] = max(r["passed"] - r["limit"] for r in frozen)
    # beyond the bound is a finding, whatever else the step did
    obj["race_over_bound"] = [r for r in race if r["passed"] > r["bound"]]
    if not frozen:
        raise ValueError("no result line from the race test")


def vm(path):
    b = blocks(os.path.join(path, "results.txt"))
    with open(os.path.join(path, "traces.json")) as f:
        traces = {t["name"]: t for t in json.load(f)}
    obj = {f: None for f in FIELDS}
    obj["cpus"] = int(os.path.basename(os.path.normpath(path)))
    obj["accuracy"], obj["seconds"], obj["failed"], errors = [], {}, {}, []
    if "info" in b:
        info = json.loads(b["info"][2])
        obj["kernel"] = info["kernel"]
        obj["mem_total_kb"] = info["mem_total_kb"]
        if info["nproc"] != obj["cpus"]:
            errors.append("the guest saw %d CPUs" % info["nproc"])
    else:
        errors.append("no output from the guest (see %s/console.log)" % path)
    for step, (rc, secs, text) in b.items():
        if step == "info" or step.endswith(".err"):
            continue
        obj["seconds"][step] = secs
        if rc:
            # an older guest's init wrote the error in place of the output
            err = b[step + ".err"][2] if step + ".err" in b else text
            obj["failed"][step] = {"rc": rc, "seconds": secs,
                                   "error": error_text(err)}
            errors.append("%s: rc %d after %d s%s\n%s"
                          % (step, rc, secs,
                             " (its time limit)" if rc == 124 else "",
                             error_text(err)))
        try:
            if step == "bench":
                bench_fields(obj, json.loads(text))
            elif step == "race":
                race_fields(obj, text)
            elif step.startswith("replay:"):
                name = step.split(":", 1)[1]
                replay_fields(obj, name, json.loads(text), traces[name])
        except (ValueError, KeyError, TypeError) as e:
            # a failed step's output is partial: its failure says it
            if not rc:
                errors.append("%s: %s" % (step, e))
    for r in obj.get("race_over_bound", []):
        errors.append("race: %s %s %s: %d passed, bound %d" % (
            r["algorithm"], r["unit"], r["clock"], r["passed"], r["bound"]))
    obj["replays"] = len(traces)
    for name in traces:
        if "replay:" + name not in b and b:
            errors.append("replay:%s: did not run (timed out?)" % name)
    if obj["accuracy"] and len(obj["accuracy"]) == len(traces):
        obj["nfr1_max_ratio"] = max(a["max_ratio"] for a in obj["accuracy"])
        obj["nfr2_false_rejects"] = sum(a["false_rejects"] for a in obj["accuracy"])
    if errors:
        obj["errors"] = errors
    return obj


def source_state(o, field):
    """"failed" or "not run" when the step behind a figure did not end
    well, else None."""
    src = SOURCE.get(field)
    if src is None:
        return None
    steps = [s for s in o["seconds"] if s == src or
             (src.endswith(":") and s.startswith(src))]
    if any(s in o["failed"] for s in steps):
        return "failed"
    if not steps or (src.endswith(":") and len(steps) < o["replays"]):
        return "not run"
    return None


def problems(objs):
    """Why a run is not complete: every failed step, and every figure a
    VM did not give although its step ended well."""
    out = []
    for o in objs:
        for e in o.get("errors", []):
            out.append("%d CPUs: %s" % (o["cpus"], e))
        missing = [f for f in FIELDS + ["race_extra_units"]
                   if o.get(f) is None and source_state(o, f) is None]
        if missing:
            out.append("%d CPUs: no %s" % (o["cpus"], ", ".join(missing)))
    return out


def fmt1(v):
    return "-" if v is None else "%.1f" % v


def cell(o, field, spec="%s"):
    """A figure as the table shows it: a failed step's figure (a race
    cut short still has the cases it finished) says so."""
    v, state = o.get(field), source_state(o, field)
    if state is None:
        return "-" if v is None else spec % v
    if state == "failed" and field == "race_extra_units" and o.get("race"):
        return "%s (failed after %d cases)" % (
            "-" if v is None else spec % v, len(o.get("race", [])))
    if state == "failed" and v is not None:
        return "%s (failed)" % (spec % v)
    return state


def markdown(objs, command, bench_args, date):
    out = ["# Many CPUs: `make bench-cpus`", "",
           "Written by `%s` on %s. Each row is one VM: Debian's 6.1 kernel "
           "under qemu TCG (no KVM here), a busybox initramfs with "
           "`build/slicelimit` and `build/bench/bench_xdp %s`. Under TCG only "
           "ratios within one VM mean anything: the x XDP_DROP columns are "
           "medians over the VM's own XDP_DROP floor; the sync round is in "
           "TCG milliseconds (compare it across rows, not with a host)."
           % (command, date, bench_args), "",
           "| CPUs | bytes/client | accept x drop | over limit x drop | no rule x drop "
           "| sync round ms (200,000 clients, 1,000 changed) | aggregation ms "
           "| NFR-1 max / limit | NFR-2 false rejects "
           "| all CPUs at once: passed over limit |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for o in objs:
        out.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            o["cpus"], cell(o, "bytes_per_client", "%.1f"),
            cell(o, "accept_x_drop"), cell(o, "over_limit_x_drop"),
            cell(o, "no_rule_x_drop"), cell(o, "sync_round_ms"),
            cell(o, "aggregation_ms"), cell(o, "nfr1_max_ratio"),
            cell(o, "nfr2_false_rejects"), cell(o, "race_extra_units")))
    out += ["", "bytes/client: fdinfo memlock of %s over the {:,} clients "
            "the default table holds; its entries add a per-CPU spare for "
            "the LRU's free lists (%s)."
            .format(DEFAULT_CLIENTS) % (", ".join(CLIENT_MAPS), "; ".join(
                "%d CPUs: %s entries, %s bytes an entry" % (
                    o["cpus"], "{:,}".format(o["client_maps"][CLIENT_MAPS[0]]
                                             ["max_entries"]),
                    fmt1(o.get("bytes_per_entry")))
                for o in objs if o.get("client_maps"))),
            "NFR-1: the most accepted in any window over the limit, worst "
            "adversarial client; NFR-2: rejects of compliant clients "
            "(traces through the exact sliding log). Every trace deals "
            "each client's requests over all the VM's CPUs "
            "(bench/cpus/gen_traces.py). Last column: test_bpf_cpus's "
            "test_limit_concurrent_cpus_at_most_one_extra_each, every CPU "
            "flooding one client at the same instant, the model clock frozen: "
            "the most units passed beyond the limit over every algorithm "
            "and unit (the bound: CPUs - 1 at the limit, and CPUs - 1 more "
            "while the client's state is first made).", ""]
    for o in objs:
        if o["accuracy"]:
            out += ["Accuracy at %d CPUs:" % o["cpus"], "",
                    "| trace | replay options | requests | max in window | "
                    "max / limit | false rejects |", "|---|---|---|---|---|---|"]
            out += ["| %s | `%s` | %d | %d (%s) | %.3f | %d |" % (
                a["trace"], a["options"], a["requests"], a["max_in_window"],
                a["worst_client"], a["max_ratio"], a["false_rejects"])
                for a in o["accuracy"]]
            out.append("")
    for o in objs:
        for r in o.get("race_over_bound", []):
            out += ["%d CPUs: the race passed more than its bound: %s" % (
                o["cpus"], json.dumps(r)), ""]
    for o in objs:
        for e in o.get("errors", []):
            out += ["%d CPUs: %s" % (o["cpus"], e.splitlines()[0]), ""]
            if "\n" in e:
                out += ["```"] + e.splitlines()[1:] + ["```", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--command", default="make bench-cpus")
    ap.add_argument("--bench-args", default="")
    ap.add_argument("vms", nargs="+")
    a = ap.parse_args()
    objs = [vm(p) for p in a.vms]
    for o in objs:
        print(json.dumps({k: o[k] for k in FIELDS}))
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(a.json, "w") as f:
        json.dump(objs, f, indent=1)
        f.write("\n")
    with open(a.md, "w") as f:
        f.write(markdown(objs, a.command, a.bench_args, date) + "\n")
    found = problems(objs)
    for r in found:
        print("bench-cpus: " + r.replace("\n", "\n    "), file=sys.stderr)
    if found:
        print("bench-cpus: %s and %s are of an incomplete run: the failed "
              "steps show as failed" % (a.json, a.md), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
