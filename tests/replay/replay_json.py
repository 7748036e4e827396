"""`slicelimit replay --json` on a trace given as text lines, for the
replay tests (study.py, fleet.py)."""
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
