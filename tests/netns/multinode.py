#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Helpers of test_multinode.sh; every command is bounded in time.

  recv BIND PORT SECONDS OUT READY
      a UDP receiver that writes one line "TIMESTAMP SOURCE" per datagram
      to OUT at SIGTERM or after SECONDS; TIMESTAMP is the kernel's
      (SO_TIMESTAMPNS: taken as the packet, passed by XDP, enters the
      stack). READY is created once the socket is bound.
  windows WINDOW_S SOURCE START END FILE...
      from the receivers' FILEs, the datagrams of SOURCE in [START, END):
      "fixed", the count of every whole window [START + kW, START + (k+1)W)
      before END; "sliding_max", the largest count of any interval
      (t - W, t]; "first_half" and "early", the counts in the first and the
      second half of the first window (as JSON)
  align PERIOD_MS OFFSET_MS
      sleep until the TAI clock in ms, modulo PERIOD_MS, reads OFFSET_MS
  capture IFACE DST_IP DST_PORT SECONDS OUT [MIN_BYTES]
      the UDP payload of the first IPv4 frame to DST_IP:DST_PORT (of at
      least MIN_BYTES of payload) seen on IFACE, written to OUT; exit 1 if
      none came within SECONDS
  burst SRC PORT COUNT DST...
      COUNT datagrams from SRC to each DST:PORT in turn (all of one
      destination's, then the next's), unpaced: every node's share of a
      burst arrives within a millisecond or so. Prints
      {"sent", "first", "last"}: datagrams sent, and the wall-clock times
      (s) of the first and the last send. At most 10 s (a send that blocks
      for 1 s ends it).
  send [--from IP:PORT] DST PORT KIND [ARGS...]
      one datagram to a sync port (from IP:PORT, the socket bound with
      SO_REUSEADDR: a running daemon's own address):
        sealed SECRET_FILE SENDER RECEIVER_PUBKEY RECEIVER CLAIM CLIENT RULE UNITS
            counts claiming to be node CLAIM, sealed with the key of the
            pair SENDER -> RECEIVER (SENDER's secret key, RECEIVER's
            public key in hex)
        forged NODE CLIENT RULE UNITS          counts sealed with a random key
        truncated NODE                         a heartbeat cut to 40 bytes
        garbage LENGTH                         random bytes
        replay FILE                            the bytes of FILE
  absent FILE ADDR...
      exit 1 if FILE holds any ADDR (IPv4, as 4 bytes and as ::ffff:ADDR
      in 16) in clear; prints the bytes of FILE

The wire format is written here from the table in user/sync/wire.h, not
from the code, so the test checks the daemon against its documentation:
the pair key from its definition (X25519, then BLAKE2b-256 over the
context, the shared secret, both ids and public keys), the seal with
libsodium's XChaCha20-Poly1305 (Python has no binding of its own for it).
"""
import ctypes
import hashlib
import ipaddress
import json
import os
import select
import signal
import socket
import struct
import sys
import time

MAGIC = 0x534C5331  # "SLS1"
VERSION = 2
CONTEXT = b"slicelimit sync pair v2\0"	# with its NUL, as the C string
COUNTS, HEARTBEAT = 0, 1
NONCE, TAG = 24, 16	# XChaCha20-Poly1305's nonce and tag
# not in Python 3.11's socket module; 35 on the architectures these tests
# run on (asm-generic)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def fnv1a(name):
    """sl_rule_name_hash(): rules are matched across nodes by name."""
    h = 2166136261
    for b in name.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def tai_ms():
    return time.clock_gettime_ns(time.CLOCK_TAI) // 1000000


def sodium():
    lib = ctypes.CDLL("libsodium.so.23")
    if lib.sodium_init() < 0:
        sys.exit("libsodium would not start")
    return lib


def public_key(lib, secret):
    pk = ctypes.create_string_buffer(32)
    lib.crypto_scalarmult_base(pk, secret)
    return pk.raw


def pair_key(lib, secret, sender, receiver_pk, receiver):
    """The key of datagrams from node SENDER (its SECRET key) to node
    RECEIVER (its public key), as wire.h defines it."""
    shared = ctypes.create_string_buffer(32)
    if lib.crypto_scalarmult(shared, secret, receiver_pk):
        sys.exit("no shared secret with that public key")
    return hashlib.blake2b(
        CONTEXT + shared.raw + struct.pack(">I", sender) +
        public_key(lib, secret) + struct.pack(">I", receiver) + receiver_pk,
        digest_size=32).digest()


def mapped(addr):
    """An address as the wire carries it: 16 bytes, IPv4 mapped."""
    a = ipaddress.ip_address(addr)
    if a.version == 4:
        a = ipaddress.IPv6Address("::ffff:" + addr)
    return a.packed


def encode(key, node, entries, kind=COUNTS, inc=None, seq=1, sent_ms=None):
    """A message of entries [(address, rule name, units)], each in the
    slice that begins at SENT_MS (capped at now: a slice from the future
    is another check); sequence SEQ of incarnation INC; sealed with KEY.
    By default sent now, sequence 1 of an incarnation begun now. The
    header, its nonce included, is the seal's associated data; the
    entries are sealed."""
    now = tai_ms()
    sent_ms = now if sent_ms is None else sent_ms
    inc = now * 1000000 if inc is None else inc
    nonce = os.urandom(NONCE)
    header = struct.pack(">IBBHIQQQ", MAGIC, VERSION, kind, len(entries),
                         node, inc, seq, sent_ms) + nonce
    start = min(sent_ms, now)
    body = b""
    for addr, rule, units in entries:
        # destination port 0 (the rules do not count per port), reserved 0
        body += mapped(addr) + struct.pack(">IHHQI", fnv1a(rule), 0, 0,
                                           start, units)
    lib = sodium()
    out = ctypes.create_string_buffer(len(body) + TAG)
    out_len = ctypes.c_ulonglong()
    lib.crypto_aead_xchacha20poly1305_ietf_encrypt(
        out, ctypes.byref(out_len), body, ctypes.c_ulonglong(len(body)),
        header, ctypes.c_ulonglong(len(header)), None, nonce, key)
    return header + out.raw[:out_len.value]


def read_key(path):
    raw = open(path, "rb").read()
    if len(raw) == 32:
        return raw
    return bytes.fromhex("".join(raw.decode().split()))


def cmd_recv(bind, port, seconds, out, ready):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((bind, int(port)))
    open(ready, "w").close()
    lines = []
    deadline = time.monotonic() + float(seconds)
    while not stop and time.monotonic() < deadline:
        try:
            r, _, _ = select.select([s], [], [], 0.1)
        except InterruptedError:
            continue
        while r:
            try:
                _, anc, _, src = s.recvmsg(64, 64, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            ts = time.time()
            for level, typ, data in anc:
                if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", data[:16])
                    ts = sec + nsec / 1e9
            lines.append("%.6f %s\n" % (ts, src[0]))
    with open(out, "w") as f:
        f.writelines(lines)
    return 0


def cmd_windows(window, source, start, end, *files):
    w, start, end = float(window), float(start), float(end)
    ts = []
    for name in files:
        for line in open(name):
            t, src = line.split()
            if src == source and start <= float(t) < end:
                ts.append(float(t))
    ts.sort()
    fixed = []
    while start + (len(fixed) + 1) * w <= end:
        lo = start + len(fixed) * w
        fixed.append(sum(1 for t in ts if lo <= t < lo + w))
    # the busiest interval (t - W, t] ends at an arrival t
    best, i = 0, 0
    for j, t in enumerate(ts):
        while ts[i] <= t - w:
            i += 1
        best = max(best, j - i + 1)
    print(json.dumps({
        "fixed": fixed,
        "sliding_max": best,
        "first_half": sum(1 for t in ts if t < start + w / 2),
        "early": sum(1 for t in ts if start + w / 2 <= t < start + w),
    }))
    return 0


def cmd_align(period_ms, offset_ms):
    period, offset = int(period_ms), int(offset_ms)
    time.sleep((offset - tai_ms() % period) % period / 1000)
    return 0


def cmd_capture(iface, dst_ip, dst_port, seconds, out, min_bytes="0"):
    # ETH_P_ALL: on a bridge port the bridge takes each frame before a
    # handler of one protocol (ETH_P_IP) would see it; taps see them all
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((iface, 0))
    want_ip = socket.inet_aton(dst_ip)
    deadline = time.monotonic() + float(seconds)
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], 0.1)
        if not r:
            continue
        frame = s.recv(2048)
        if frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        udp = ip[(ip[0] & 15) * 4:]
        if ip[9] != socket.IPPROTO_UDP or ip[16:20] != want_ip or \
                struct.unpack(">H", udp[2:4])[0] != int(dst_port):
            continue
        length = struct.unpack(">H", udp[4:6])[0]
        if length - 8 < int(min_bytes):
            continue
        with open(out, "wb") as f:
            f.write(udp[8:length])
        return 0
    return 1


def cmd_burst(src, port, count, *dsts):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1)
    s.bind((src, 0))
    sent, first, deadline = 0, time.time(), time.monotonic() + 10
    try:
        for dst in dsts:
            for _ in range(int(count)):
                if time.monotonic() > deadline:
                    raise TimeoutError
                s.sendto(b"x" * 32, (dst, int(port)))
                sent += 1
    except OSError:
        pass
    print(json.dumps({"sent": sent, "first": first, "last": time.time()}))
    return 0 if sent == int(count) * len(dsts) else 1


def cmd_send(*argv):
    source = None
    if argv[0] == "--from":
        host, sport = argv[1].rsplit(":", 1)
        source, argv = (host, int(sport)), argv[2:]
    dst, port, kind, args = argv[0], argv[1], argv[2], argv[3:]
    if kind == "sealed":
        secret_file, sender, receiver_pk, receiver, claim, client, rule, \
            units = args
        key = pair_key(sodium(), read_key(secret_file), int(sender),
                       bytes.fromhex(receiver_pk), int(receiver))
        msg = encode(key, int(claim), [(client, rule, int(units))])
    elif kind == "forged":
        node, client, rule, units = args
        msg = encode(os.urandom(32), int(node), [(client, rule, int(units))])
    elif kind == "truncated":
        msg = encode(os.urandom(32), int(args[0]), [], HEARTBEAT)[:40]
    elif kind == "garbage":
        msg = os.urandom(int(args[0]))
    elif kind == "replay":
        msg = open(args[0], "rb").read()
    else:
        sys.exit("unknown kind: " + kind)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if source:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(source)
    s.sendto(msg, (dst, int(port)))
    s.close()
    return 0


def cmd_absent(path, *addrs):
    data = open(path, "rb").read()
    print(data.hex())
    for addr in addrs:
        v4 = ipaddress.IPv4Address(addr).packed
        if v4 in data or b"\0" * 10 + b"\xff\xff" + v4 in data:
            print("in clear: " + addr)
            return 1
    return 0


if __name__ == "__main__":
    COMMANDS = {"recv": cmd_recv, "windows": cmd_windows, "align": cmd_align,
                "capture": cmd_capture, "burst": cmd_burst,
                "send": cmd_send, "absent": cmd_absent}
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    sys.exit(COMMANDS[sys.argv[1]](*sys.argv[2:]))
