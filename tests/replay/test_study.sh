#!/usr/bin/env bash
# The design study's figures through the real BPF program (slicelimit
# replay): Models A, C, D and the edge-slice cases. TAP output.
exec python3 "$(dirname "$0")/study.py" "${1:-build}/slicelimit"
