#!/usr/bin/env bash
# Every algorithm counted fleet-wide on 8 nodes (slicelimit replay
# --nodes 8): an over-limit client within 1.1 x of one node's figure, a
# compliant one never rejected. TAP output.
exec python3 "$(dirname "$0")/fleet.py" "${1:-build}/slicelimit"
