"""`slicelimit replay --json` on a trace given as text lines, and what the
replay tests (study.py, fleet.py, bounded.py, fleet_property.py) read of
its decisions."""
import json
import os
import subprocess
import tempfile


def replay_json(sl, lines, args, timeout=300):
    """The whole JSON of `sl replay TRACE --json ARGS`; an error if it
    fails (a crash is a failure, not a skip)."""
    with tempfile.NamedTemporaryFile("w", suffix=".trace", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        out = subprocess.run([sl, "replay", path, "--json"] + args,
                             capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(path)
    if out.returncode != 0:
        raise RuntimeError(f"replay {args} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def longest_hold(ds):
    """The longest a client was held back, over its decisions in time
    order: over each run of rejections, from its first to its last, then
    to the next accept or what the last one's Retry-After said, whichever
    is sooner."""
    hold, i = 0, 0
    while i < len(ds):
        if ds[i]["accepted"]:
            i += 1
            continue
        j = i
        while j + 1 < len(ds) and not ds[j + 1]["accepted"]:
            j += 1
        h = ds[j]["retry_after_ms"]
        if j + 1 < len(ds):
            h = min(h, ds[j + 1]["t_ms"] - ds[j]["t_ms"])
        hold = max(hold, ds[j]["t_ms"] - ds[i]["t_ms"] + h)
        i = j + 1
    return hold
