#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""One ShouldRateLimit request as gRPC puts it on the wire, for h2load -d.

usage: rls_body.py OUT DOMAIN KEY=VALUE...

Writes to OUT a RateLimitRequest (proto/rls.proto) with DOMAIN and one
descriptor of the given entries, framed as a gRPC message: a zero byte (not
compressed), the length as 4 bytes big-endian, then the protobuf bytes.

The protobuf is encoded by hand, so that the benchmark needs no generated
stubs: every field here is a string or an embedded message (wire type 2),
written as its tag ((field number << 3) | 2), its length as a varint, and
its bytes. RateLimitRequest: domain = 1, descriptors = 2;
RateLimitDescriptor: entries = 1; Entry: key = 1, value = 2.
"""
import struct
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def request(domain, entries):
    descriptor = b"".join(field(1, field(1, k.encode()) + field(2, v.encode()))
                          for k, v in entries)
    return field(1, domain.encode()) + field(2, descriptor)


def main():
    if len(sys.argv) < 4 or any("=" not in a for a in sys.argv[3:]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    msg = request(sys.argv[2], [a.split("=", 1) for a in sys.argv[3:]])
    with open(sys.argv[1], "wb") as f:
        f.write(b"\0" + struct.pack(">I", len(msg)) + msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
