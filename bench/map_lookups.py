#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Count the map lookups (helper 1, bpf_map_lookup_elem) each function of
a BPF object calls, by map, with each map's type, read from the object
itself: llvm-objdump -dr for the calls and the map loaded into r1 before
each, bpftool's BTF dump for the map types. It replaces a hand count of
lookups per path, which went stale unnoticed.

These are call sites, not a path's count: a path runs some of them (see
docs/ARCHITECTURE.md, "Map lookups per path"). The verifier inlines the
lookups of array maps (a bounds check and an add), and of per-CPU array
maps from kernel 6.10 on (calls on 6.1); the others stay calls.

Usage: map_lookups.py OBJECT [--json]
Exit 0 ok, 1 when a call's map cannot be told or no lookup is found (the
disassembly changed shape: fix this script), 2 usage.
"""
import json
import re
import subprocess
import sys

MAP_TYPES = {
    1: "hash", 2: "array", 5: "percpu_hash", 6: "percpu_array",
    9: "lru_hash", 10: "lru_percpu_hash", 11: "lpm_trie",
    12: "array_of_maps", 13: "hash_of_maps", 27: "ringbuf",
}
INLINED = {"array": "yes", "percpu_array": "6.10+"}


def map_types(obj):
    """Map name -> type name, from the object's BTF (.maps section)."""
    out = subprocess.run(["bpftool", "-j", "btf", "dump", "file", obj],
                         check=True, capture_output=True, text=True).stdout
    types = {t["id"]: t for t in json.loads(out)["types"]}
    result = {}
    for t in types.values():
        if t["kind"] != "DATASEC" or t["name"] != ".maps":
            continue
        for var in t["vars"]:
            v = types[var["type_id"]]
            st = types[v["type_id"]]
            for m in st.get("members", []):
                if m["name"] == "type":
                    arr = types[types[m["type_id"]]["type_id"]]
                    n = arr["nr_elems"]
                    result[v["name"]] = MAP_TYPES.get(n, "type %d" % n)
    return result


def lookups(obj):
    """Function name -> {map name: calls}, in the object's order."""
    text = subprocess.run(["llvm-objdump", "-dr", "--no-show-raw-insn", obj],
                          check=True, capture_output=True, text=True).stdout
    funcs = {}
    func = None
    r1_map = None	# the map last loaded into r1 in this function
    pending = None	# a `r1 = 0 ll` waiting for its relocation line
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            if not m.group(1).startswith("LBB"):
                func = m.group(1)
                funcs.setdefault(func, {})
                r1_map = None
            continue
        m = re.search(r"R_BPF_64_64\s+(\S+)", line)
        if m:
            if pending == "r1":
                r1_map = m.group(1)
            pending = None
            continue
        m = re.match(r"^\s*[0-9a-f]+:\s+(.*)$", line)
        if not m or func is None:
            continue
        insn = m.group(1).strip()
        if re.match(r"r1 = 0 ll$", insn):
            pending = "r1"
            r1_map = None
            continue
        pending = None
        if insn == "call 1":
            name = r1_map or "?"
            funcs[func][name] = funcs[func].get(name, 0) + 1
        elif re.match(r"r1 = ", insn) or insn.startswith("call "):
            # r1 rewritten, or clobbered by a call: the map is unknown
            # until the next load
            r1_map = None
    return {f: maps for f, maps in funcs.items() if maps}


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--json"):
        sys.stderr.write("usage: map_lookups.py OBJECT [--json]\n")
        return 2
    obj = argv[1]
    types = map_types(obj)
    funcs = lookups(obj)
    rows = []
    for f, maps in funcs.items():
        for name, n in maps.items():
            t = types.get(name, "?")
            rows.append({"function": f, "map": name, "type": t, "calls": n,
                         "inlined": INLINED.get(t, "no")})
    unknown = [r for r in rows if r["map"] == "?" or r["type"] == "?"]
    if len(argv) == 3:
        print(json.dumps({"object": obj, "lookups": rows}, indent=1))
    else:
        print("%-20s %-18s %-16s %5s  %s" %
              ("function", "map", "type", "sites", "inlined"))
        for r in rows:
            print("%-20s %-18s %-16s %5d  %s" %
                  (r["function"], r["map"], r["type"], r["calls"],
                   r["inlined"]))
        per = {}
        for r in rows:
            c = per.setdefault(r["function"], {"yes": 0, "6.10+": 0, "no": 0})
            c[r["inlined"]] += r["calls"]
        print()
        print("%-20s %7s %12s %6s" % ("function", "inlined", "inlined 6.10+", "calls"))
        for f, c in per.items():
            print("%-20s %7d %12d %6d" % (f, c["yes"], c["6.10+"], c["no"]))
    if not rows or unknown:
        sys.stderr.write("map_lookups: %s\n" % (
            "no lookup found" if not rows else
            "map not told for %d call sites" % len(unknown)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
