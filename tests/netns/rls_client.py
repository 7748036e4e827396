# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A gRPC client of slicelimit's rate limit service, for test_rls.sh.

    rls_client.py STUBS TARGET < CALLS.json > ANSWERS.json

STUBS: the directory of the stubs grpc_tools.protoc made from
proto/rls.proto; TARGET: unix:PATH or HOST:PORT. CALLS is a list; each
call is one of
  {"domain": D, "descriptors": [{"entries": [[K, V], ...], "hits": N}],
   "hits": N, "token": T, "compress": true}       ShouldRateLimit
  {"raw": HEX, "method": PATH, "token": T}         raw bytes as the message
  {"concurrent": N, "call": CALL}                  N calls at once
and each answer is {"grpc": "OK" or the status's name, "overall": ...,
"statuses": [{"code", "limit", "unit", "name", "remaining", "reset_s"}],
"headers": {name: value}}.
"""
import json
import sys
from concurrent import futures

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import rls_pb2  # noqa: E402
import rls_pb2_grpc  # noqa: E402

R = rls_pb2.RateLimitResponse
TARGET = sys.argv[2]
METHOD = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"


def metadata(call):
    t = call.get("token")
    return [("authorization", "Bearer " + t)] if t else None


def answer(resp):
    out = {"grpc": "OK", "overall": R.Code.Name(resp.overall_code),
           "statuses": [], "headers": {}}
    for s in resp.statuses:
        st = {"code": R.Code.Name(s.code), "remaining": s.limit_remaining,
              "reset_s": s.duration_until_reset.seconds,
              "has_limit": s.HasField("current_limit")}
        if s.HasField("current_limit"):
            st["limit"] = s.current_limit.requests_per_unit
            st["unit"] = R.RateLimit.Unit.Name(s.current_limit.unit)
            st["name"] = s.current_limit.name
        out["statuses"].append(st)
    for h in resp.response_headers_to_add:
        out["headers"][h.key] = h.value
    return out


def one(channel, call):
    try:
        if "raw" in call:
            fn = channel.unary_unary(call.get("method", METHOD))
            fn(bytes.fromhex(call["raw"]), metadata=metadata(call),
               timeout=5)
            return {"grpc": "OK"}
        req = rls_pb2.RateLimitRequest(domain=call.get("domain", ""),
                                       hits_addend=call.get("hits", 0))
        for d in call.get("descriptors", []):
            desc = req.descriptors.add()
            for k, v in d["entries"]:
                desc.entries.add(key=k, value=v)
            if "hits" in d:
                desc.hits_addend.value = d["hits"]
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        if call.get("compress"):
            # a channel of its own: grpcio compresses what a channel
            # with compression sends
            with grpc.insecure_channel(TARGET, compression=grpc.Compression.Gzip,
                                       options=[("grpc.default_compression_level", 3)]) as ch:
                return answer(rls_pb2_grpc.RateLimitServiceStub(ch).ShouldRateLimit(
                    req, metadata=metadata(call), timeout=5))
        return answer(stub.ShouldRateLimit(req, metadata=metadata(call),
                                           timeout=5))
    except grpc.RpcError as e:
        return {"grpc": e.code().name, "message": e.details()}


def main():
    calls = json.load(sys.stdin)
    out = []
    with grpc.insecure_channel(TARGET) as channel:
        for call in calls:
            if "concurrent" in call:
                with futures.ThreadPoolExecutor(call["concurrent"]) as ex:
                    out.append(list(ex.map(lambda _: one(channel, call["call"]),
                                           range(call["concurrent"]))))
            else:
                out.append(one(channel, call))
    json.dump(out, sys.stdout)


main()
