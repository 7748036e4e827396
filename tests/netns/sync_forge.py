#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Sync datagrams as a holder of the fleet key could make them, every
header field chosen, sent from a chosen source address (test_sync_peers.sh).

  sync_forge.py tai_ns
      the TAI clock in ns (an incarnation of a node started now)
  sync_forge.py send --key FILE --src ADDR --dst ADDR:PORT --node N[-M]
                     --inc INC --seq SEQ [--ahead MS] [--save FILE]
                     [--entry CLIENT RULE UNITS]... [--junk COUNT --rule R]
      one datagram (a heartbeat without entries), dated --ahead ms after
      now; with --junk, COUNT clients of 203.0.113.0/24 and up, one unit
      each, in as many datagrams as they need, at sequences SEQ, SEQ+1...;
      --save keeps the (last) datagram's bytes; --node N-M, the same
      datagram from each node id N..M. Prints the next sequence.
  sync_forge.py replay --src ADDR --dst ADDR:PORT FILE
      the bytes of FILE, again

The wire format is written here from the table in user/sync/wire.h, not
from the code, so the test checks the daemon against its documentation.
"""
import argparse
import hmac
import ipaddress
import socket
import struct
import sys
import time

MAGIC = 0x534C5331  # "SLS1"
VERSION = 1
COUNTS, HEARTBEAT = 0, 1
HEADER, ENTRY, TAG, MAX = 36, 36, 32, 1452
MAX_ENTRIES = (MAX - HEADER - TAG) // ENTRY


def fnv1a(name):
    """sl_rule_name_hash(): rules are matched across nodes by name."""
    h = 2166136261
    for b in name.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def tai_ms():
    return time.clock_gettime_ns(time.CLOCK_TAI) // 1000000


def mapped(addr):
    a = ipaddress.ip_address(addr)
    if a.version == 4:
        a = ipaddress.IPv6Address("::ffff:" + addr)
    return a.packed


def encode(key, node, inc, seq, sent_ms, entries):
    """entries: [(address, rule name, units)], each in the slice that
    begins at sent_ms (capped at now: a slice from the future is another
    check); destination port 0, reserved 0."""
    kind = COUNTS if entries else HEARTBEAT
    body = struct.pack(">IBBHIQQQ", MAGIC, VERSION, kind, len(entries),
                       node, inc, seq, sent_ms)
    start = min(sent_ms, tai_ms())
    for addr, rule, units in entries:
        body += mapped(addr) + struct.pack(">IHHQI", fnv1a(rule), 0, 0,
                                           start, units)
    # libsodium crypto_auth: HMAC-SHA-512 cut to its first 256 bits
    return body + hmac.new(key, body, "sha512").digest()[:32]


def read_key(path):
    raw = open(path, "rb").read()
    if len(raw) == 32:
        return raw
    return bytes.fromhex("".join(raw.decode().split()))


def sock_from(src):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    return s


def dest(d):
    host, port = d.rsplit(":", 1)
    return host, int(port)


def cmd_send(a):
    key = read_key(a.key)
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
            msg = encode(key, node, a.inc, seq, tai_ms() + a.ahead, batch)
            s.sendto(msg, dest(a.dst))
            seq += 1
            if a.save:
                open(a.save, "wb").write(msg)
            time.sleep(0.002)  # in order, and within the receive buffer
    print(seq)
    return 0


def cmd_replay(a):
    sock_from(a.src).sendto(open(a.file, "rb").read(), dest(a.dst))
    return 0


def main():
    if sys.argv[1:2] == ["tai_ns"]:
        print(time.clock_gettime_ns(time.CLOCK_TAI))
        return 0
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--key", required=True)
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
