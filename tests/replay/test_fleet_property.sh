#!/usr/bin/env bash
# The fleet's bounds as properties: random and adversarial traces on 2, 3,
# 8 and 32 nodes, every layout and algorithm, against an exact model of
# the fleet-wide sliding log (tests/replay/fleet_property.py). TAP output.
exec /usr/bin/python3 "$(dirname "$0")/fleet_property.py" "${1:-build}/slicelimit"
