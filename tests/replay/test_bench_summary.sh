#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/macro/summary.py (make bench): the goal rows of RESULTS-macro.md
# computed from the run's medians, the accept tables beside the
# over-limit ones, a run whose accept case drops packets refused.
# No root, no build: synthetic runs. TAP output.
#
#   tests/replay/test_bench_summary.sh [BUILD_DIR]    (BUILD_DIR unused)
here=$(cd "$(dirname "$0")" && pwd)
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
exec "$PY" "$here/bench_summary.py" "$here/../../bench/macro/summary.py"
