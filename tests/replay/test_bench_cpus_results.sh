#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/cpus/results.py (make bench-cpus): a failed step keeps what it
# gave and shows as failed, not as missing figures. No root, no build:
# synthetic VM outputs. TAP output.
#
#   tests/replay/test_bench_cpus_results.sh [BUILD_DIR]    (BUILD_DIR unused)
here=$(cd "$(dirname "$0")" && pwd)
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
exec "$PY" "$here/bench_cpus_results.py" "$here/../../bench/cpus/results.py"
