# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Malformed HTTP/2 at slicelimit's rate limit service, for test_rls.sh.

    rls_raw.py HOST PORT TOKEN CASE > ANSWER.json

Speaks raw frames (the headers as HPACK literals, never indexed) and
reports what came back: {"case", "closed": the server closed,
"frames": [[type, flags, stream_id], ...], "answered_1": a HEADERS frame
ending stream 1 (a gRPC answer without a message: Trailers-Only),
"refused": RST_STREAM frames, "goaway": a GOAWAY came}.
"""
import json
import socket
import struct
import sys
import time

HOST, PORT, TOKEN, CASE = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
METHOD = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
DATA, HEADERS, RST, SETTINGS, GOAWAY = 0, 1, 3, 4, 7
END_STREAM, END_HEADERS, ACK = 1, 4, 1


def hpack_int(n, prefix, first=0):
    top = (1 << prefix) - 1
    if n < top:
        return bytes([first | n])
    out = [first | top]
    n -= top
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    out.append(n)
    return bytes(out)


def literal(name, value):
    name, value = name.encode(), value.encode()
    return (b"\x00" + hpack_int(len(name), 7) + name +
            hpack_int(len(value), 7) + value)


def frame(ftype, flags, stream, payload):
    return (struct.pack(">I", len(payload))[1:] +
            struct.pack(">BBI", ftype, flags, stream) + payload)


def request_headers(stream, end_stream=False, extra=()):
    block = b"".join(literal(k, v) for k, v in (
        (":method", "POST"), (":scheme", "http"), (":path", METHOD),
        (":authority", "rls"), ("content-type", "application/grpc"),
        ("te", "trailers"), ("authorization", "Bearer " + TOKEN)) + tuple(extra))
    return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0),
                 stream, block)


def start():
    return PREFACE + frame(SETTINGS, 0, 0, b"")


def case_bytes():
    if CASE == "bad_preface":
        return b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00" * 64
    if CASE == "garbage_after_preface":
        return PREFACE + bytes(range(256)) * 8
    if CASE == "truncated_message":
        # the prefix says 100 bytes; 10 come, and the stream ends
        return (start() + request_headers(1) +
                frame(DATA, END_STREAM, 1, b"\x00\x00\x00\x00\x64" + b"\x0a" * 10))
    if CASE == "frame_length_lies":
        # a DATA frame whose length runs past what is sent, then silence
        return start() + request_headers(1) + b"\x00\x40\x00\x00\x00\x00\x00\x00\x01abc"
    if CASE == "huge_headers":
        return start() + request_headers(1, True, (("x-pad", "a" * 15000),
                                                   ("x-pad2", "b" * 15000)))
    if CASE == "many_streams":
        out = start() + frame(SETTINGS, ACK, 0, b"")
        for i in range(200):
            out += request_headers(2 * i + 1)
        return out
    raise SystemExit("unknown case " + CASE)


def main():
    s = socket.create_connection((HOST, PORT), timeout=3)
    got, closed = b"", False
    try:
        s.sendall(case_bytes())
    except OSError:
        closed = True
    deadline = time.time() + 3
    while not closed and time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        got += chunk
    s.close()
    frames, off = [], 0
    while off + 9 <= len(got):
        length = int.from_bytes(got[off:off + 3], "big")
        ftype, flags = got[off + 3], got[off + 4]
        stream = int.from_bytes(got[off + 5:off + 9], "big") & 0x7fffffff
        frames.append([ftype, flags, stream])
        off += 9 + length
    json.dump({
        "case": CASE, "closed": closed, "frames": frames,
        "answered_1": any(t == HEADERS and f & END_STREAM and sid == 1
                          for t, f, sid in frames),
        "refused": sum(1 for t, _, _ in frames if t == RST),
        "goaway": any(t == GOAWAY for t, _, _ in frames),
    }, sys.stdout)


main()
