#!/usr/bin/env bash
# The bounded layout's goals (issue 14) through the real BPF program on 8
# replayed nodes (slicelimit replay --nodes 8). TAP output.
exec python3 "$(dirname "$0")/bounded.py" "${1:-build}/slicelimit"
