#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Sync datagrams as a configured peer holding its own secret key (a
compromised node) could make them: sealed for the receiver with the key
of their pair, every header field chosen, sent from a chosen source
address and port (test_sync_peers.sh).

  sync_forge.py tai_ns
      the TAI clock in ns (an incarnation of a node started now)
  sync_forge.py send --identity FILE --sender N --to-pk HEX [--to N]
                     --src ADDR:PORT --dst ADDR:PORT --node N[-M]
                     --inc INC --seq SEQ [--ahead MS] [--save FILE]
                     [--entry CLIENT RULE UNITS]... [--junk COUNT --rule R]
      one datagram (a heartbeat without entries), sealed with the key of
      the pair node SENDER (its secret key in FILE) -> node --to (its
      public key HEX; default node 1), dated --ahead ms after now; with
      --junk, COUNT clients of 203.0.113.0/24 and up, one unit each, in as
      many datagrams as they need, at sequences SEQ, SEQ+1...; --save
      keeps the (last) datagram's bytes; --node N-M, the same datagram
      claiming each node id N..M. Prints the next sequence.
  sync_forge.py replay --src ADDR:PORT --dst ADDR:PORT FILE
      the bytes of FILE, again

The pair key and the seal are multinode.py's (written from the table in
user/sync/wire.h, not from the code), so the test checks the daemon
against its documentation.
"""
import argparse
import ipaddress
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from multinode import (COUNTS, HEARTBEAT, NONCE, TAG, encode, tai_ms,
                       sodium, pair_key, read_key)

MAX = 1452
HEADER, ENTRY = 36 + NONCE, 36
MAX_ENTRIES = (MAX - HEADER - TAG) // ENTRY


def endpoint(d):
    host, port = d.rsplit(":", 1)
    return host, int(port)


def sock_from(src):
    """A socket sending from SRC (ADDR:PORT): a peer's datagrams must come
    from the address and port the receiver lists for it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(endpoint(src))
    return s


def cmd_send(a):
    lib = sodium()
    key = pair_key(lib, read_key(a.identity), a.sender,
                   bytes.fromhex(a.to_pk), a.to)
    s = sock_from(a.src)
    entries = [(c, r, int(u)) for c, r, u in a.entry or []]
    batches = [entries]
    if a.junk:
        junk = [(str(ipaddress.IPv4Address("203.0.113.0") + i), a.rule, 1)
                for i in range(a.junk)]
        batches = [junk[i:i + MAX_ENTRIES]
                   for i in range(0, len(junk), MAX_ENTRIES)]
    first, _, last = a.node.partition("-")
    for node in range(int(first), int(last or first) + 1):
        seq = a.seq
        for batch in batches:
            msg = encode(key, node, batch,
                         COUNTS if batch else HEARTBEAT, a.inc, seq,
                         tai_ms() + a.ahead)
            s.sendto(msg, endpoint(a.dst))
            seq += 1
            if a.save:
                open(a.save, "wb").write(msg)
            time.sleep(0.002)  # in order, and within the receive buffer
    print(seq)
    return 0


def cmd_replay(a):
    sock_from(a.src).sendto(open(a.file, "rb").read(), endpoint(a.dst))
    return 0


def main():
    if sys.argv[1:2] == ["tai_ns"]:
        print(time.clock_gettime_ns(time.CLOCK_TAI))
        return 0
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--identity", required=True)
    s.add_argument("--sender", type=int, required=True)
    s.add_argument("--to-pk", required=True)
    s.add_argument("--to", type=int, default=1)
    s.add_argument("--src", required=True)
    s.add_argument("--dst", required=True)
    s.add_argument("--node", required=True)
    s.add_argument("--inc", type=int, required=True)
    s.add_argument("--seq", type=int, required=True)
    s.add_argument("--ahead", type=int, default=0)
    s.add_argument("--save")
    s.add_argument("--entry", nargs=3, action="append")
    s.add_argument("--junk", type=int, default=0)
    s.add_argument("--rule", default="web")
    r = sub.add_parser("replay")
    r.add_argument("--src", required=True)
    r.add_argument("--dst", required=True)
    r.add_argument("file")
    a = p.parse_args()
    return cmd_send(a) if a.cmd == "send" else cmd_replay(a)


if __name__ == "__main__":
    sys.exit(main())
