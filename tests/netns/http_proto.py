#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""tests/netns/test_http.sh's client of the API's own HTTP/1.1 server, over
raw TCP to 127.0.0.1:8080 with the token in $SL_API_TOKEN: pipelined
requests, a head split across reads, Expect: 100-continue, HEAD, a head
over 8192 bytes, a bad Content-Length, a chunked body, an idle half head.
Prints one JSON object of what it saw; the script asserts on it."""
import json, os, socket, time
AUTH = b"Authorization: Bearer " + os.environ["SL_API_TOKEN"].encode() + b"\r\n"

def conn():
    s = socket.create_connection(("127.0.0.1", 8080)); s.settimeout(5)
    return s

def get(path, extra=b""):
    return b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n" + AUTH + extra + b"\r\n"

def answers(s, n, head=False):
    """n answers: (status, headers, body); then whether the peer closed"""
    buf, out = b"", []
    while len(out) < n:
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return out, True
            buf += d
        h, _, buf = buf.partition(b"\r\n\r\n")
        lines = h.decode().split("\r\n")
        hd = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
        ln = 0 if head else int(hd.get("content-length", 0))
        while len(buf) < ln:
            buf += s.recv(65536)
        out.append((int(lines[0].split(" ")[1]), hd, buf[:ln])); buf = buf[ln:]
    return out, False

def json_error(body):
    try:
        return "error" in json.loads(body)
    except ValueError:
        return False

def closed(s):
    try:
        return s.recv(1) == b""
    except OSError:
        return True

r = {}
s = conn()
s.sendall(get(b"/v1/check?rule=api&key=pipe-1") + get(b"/v1/check?rule=api&key=pipe-2") +
          get(b"/v1/clients/pipe-1?rule=api"))
a, _ = answers(s, 3)
r["pipelined"] = [(st, json.loads(b)["key"], json.loads(b)["used"]) for st, _, b in a]
s.sendall(b"GET /v1/check?rule=api&key=split HTTP/1.1\r\nHo"); time.sleep(0.3)
s.sendall(b"st: x\r\n" + AUTH); time.sleep(0.3); s.sendall(b"\r\n")
a, _ = answers(s, 1)
r["split"] = [a[0][0], json.loads(a[0][2])["key"]]
body = b'{"rule": "api", "key": "cont"}'
s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Expect: 100-continue\r\n"
          b"Content-Length: %d\r\n\r\n" % len(body))
a, _ = answers(s, 1)
s.sendall(body)
b, _ = answers(s, 1)
r["continue"] = [a[0][0], b[0][0], json.loads(b[0][2])["key"]]
s.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\n")
a, _ = answers(s, 1, head=True)
s.sendall(get(b"/v1/check?rule=api&key=after-head"))
b, _ = answers(s, 1)
r["head"] = [a[0][0], int(a[0][1]["content-length"]) > 0, json.loads(b[0][2])["key"]]
s.sendall(b"GET /v1/check?rule=api&key=http10 HTTP/1.0\r\nConnection: keep-alive\r\n" + AUTH + b"\r\n")
a, _ = answers(s, 1)
s.sendall(get(b"/v1/check?rule=api&key=after-10"))
b, _ = answers(s, 1)
r["http10"] = [a[0][0], (a[0][1].get("connection") or "").lower(), b[0][0], json.loads(b[0][2])["key"]]
s.close()
for name, req in (("big_head", get(b"/healthz", b"X: " + b"a" * 9000 + b"\r\n")),
                  ("bad_length", b"POST /v1/check HTTP/1.1\r\nHost: x\r\n" + AUTH +
                   b"Content-Length: 1x\r\n\r\n"),
                  ("chunked", b"POST /v1/check HTTP/1.1\r\nHost: x\r\n" + AUTH +
                   b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")):
    s = conn(); s.sendall(req)
    a, eof = answers(s, 1)
    r[name] = [a[0][0] if a else None, json_error(a[0][2]) if a else None,
               a[0][1].get("connection") if a else None, eof or closed(s)]
    s.close()
s = conn(); s.sendall(b"GET /healthz HTTP/1.1\r\nX: ")
t0 = time.time()
r["idle_closed"] = closed(s)
r["idle_after_s"] = round(time.time() - t0)
print(json.dumps(r))
