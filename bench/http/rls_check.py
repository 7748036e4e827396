#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Send one gRPC-framed ShouldRateLimit body (rls_body.py's) with grpcio.

usage: rls_check.py HOST:PORT TOKEN BODYFILE

The same bytes h2load sends, through a real gRPC client, so that the
trailers h2load does not look at are checked: prints the answer's
overall_code (OK, OVER_LIMIT or UNKNOWN), or the gRPC status and exits 1
if the call failed. The answer is read by hand as the request was written
(rls_body.py): overall_code is field 1, a varint, and proto3 leaves it out
when it is 0 (UNKNOWN).
"""
import sys

import grpc

METHOD = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
CODES = {0: "UNKNOWN", 1: "OK", 2: "OVER_LIMIT"}


def overall_code(answer):
    if len(answer) >= 2 and answer[0] == 0x08:	# field 1, varint
        return CODES.get(answer[1], str(answer[1]))
    return "UNKNOWN"


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(sys.argv[3], "rb") as f:
        msg = f.read()[5:]		# the gRPC frame's 5 bytes off
    with grpc.insecure_channel(sys.argv[1]) as ch:
        call = ch.unary_unary(METHOD)	# bytes in, bytes out
        try:
            answer = call(msg, metadata=[("authorization", "Bearer " + sys.argv[2])],
                          timeout=5)
        except grpc.RpcError as e:
            print("grpc-status %d (%s): %s" % (e.code().value[0], e.code().name, e.details()))
            return 1
    print(overall_code(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
