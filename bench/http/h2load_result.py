#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""One RESULT line (http_check.lua's format) from h2load runs made together.

usage: h2load_result.py PREFIX N

Reads PREFIX.txt.1..N (h2load's output) and PREFIX.log.1..N (its
--log-file: start time, status, duration in us, one request a line) of N
h2load processes that ran side by side for the same time, and prints
  RESULT requests=N duration_us=N rps=X p50_us=N p99_us=N non2xx=N
         connect=N read=N write=N timeout=N
with requests the answers with a status, non2xx those >= 400 (as wrk
counts them), the percentiles over every request of every process, read
h2load's "errored" and timeout its "timeout". Exits 1 if an output has no
summary (h2load failed).
"""
import re
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    prefix, n = sys.argv[1], int(sys.argv[2])
    tot = dict(requests=0, non2xx=0, errored=0, timeout=0)
    secs = 0.0
    lat = []
    for i in range(1, n + 1):
        with open("%s.txt.%d" % (prefix, i)) as f:
            text = f.read()
        fin = re.search(r"^finished in ([0-9.]+)(m?s),", text, re.M)
        req = re.search(r"^requests: .* (\d+) errored, (\d+) timeout", text, re.M)
        st = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text, re.M)
        if not (fin and req and st):
            print("h2load_result: no summary in %s.txt.%d" % (prefix, i), file=sys.stderr)
            return 1
        secs = max(secs, float(fin.group(1)) / (1000 if fin.group(2) == "ms" else 1))
        codes = [int(x) for x in st.groups()]
        tot["requests"] += sum(codes)
        tot["non2xx"] += codes[2] + codes[3]
        tot["errored"] += int(req.group(1))
        tot["timeout"] += int(req.group(2))
        with open("%s.log.%d" % (prefix, i)) as f:
            lat += [int(line.split("\t")[2]) for line in f if line.strip()]
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(len(lat) * p / 100))] if lat else 0

    print("RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d non2xx=%d "
          "connect=0 read=%d write=0 timeout=%d" % (
              tot["requests"], secs * 1e6, tot["requests"] / secs if secs else 0,
              pct(50), pct(99), tot["non2xx"], tot["errored"], tot["timeout"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
