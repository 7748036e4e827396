#!/usr/bin/env bash
# Every answer says what the node does next: for random traces under every
# layout and algorithm, on one and several nodes, near 0 and at today's
# TAI ms, a request at now + Retry-After passes, one a ms earlier does
# not, and `remaining` more pass before the next rejection
# (tests/replay/answer_property.py; its seed is printed). TAP output.
exec /usr/bin/python3 "$(dirname "$0")/answer_property.py" "${1:-build}/slicelimit" "${@:2}"
