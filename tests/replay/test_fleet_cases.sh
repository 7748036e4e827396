#!/usr/bin/env bash
# The fleet's holes as fixed cases (tests/replay/cases/): the bound on
# every node count, no long hold, split-quota's bucket, --decisions
# across nodes. TAP output.
exec /usr/bin/python3 "$(dirname "$0")/fleet_cases.py" "${1:-build}/slicelimit"
