#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The table of bench/bench_http.sh, from the files of its temp dir.

usage: summary.py TMPDIR RESULTS.md CONNS KEYS KEY=VALUE...

Prints the table, writes it (with the commands and configs) to RESULTS.md,
and exits 1 if a case answered other than it should or the service's own
counts disagree with wrk's.
"""
import os
import statistics
import sys

DESC = {
    "sl-get-1key": "slicelimit GET /v1/check?rule=api&key=K, 1 key, under the limit",
    "ngx-get-1key": "nginx limit_req GET /under?key=K, 1 key, under the limit",
    "sl-get-over": "slicelimit GET /v1/check?rule=tight&key=K, 1 key, over the limit",
    "ngx-get-over": "nginx limit_req GET /over?key=K, 1 key, over the limit",
    "sl-get-keys": "slicelimit GET /v1/check, {keys} keys (Lua), under the limit",
    "ngx-get-keys": "nginx limit_req GET /under, {keys} keys (Lua), under the limit",
    "sl-post-keys": "slicelimit POST /v1/check JSON body, {keys} keys (Lua), under the limit",
    "mhd-hello": "libmicrohttpd alone (bench/http/mhd_hello.c): a fixed check answer, no limiter",
    "ngx-hello": "nginx alone: return 200 of the same body, no limiter",
    "h2o-hello": "libh2o-evloop alone (bench/http/h2o_hello.c): the same answer, no limiter",
    "floor-hello": "no library (bench/http/floor_hello.c, epoll): the same answer, no limiter",
    "rls-1key": "slicelimit RLS ShouldRateLimit over h2c (h2load), rule api, 1 key, under the limit",
    "ngx-h2-1key": "nginx limit_req over HTTP/2 (h2load) GET /under?key=K, 1 key, under the limit",
    "rls-over": "slicelimit RLS ShouldRateLimit over h2c (h2load), rule tight, 1 key, over the limit",
    "ngx-h2-over": "nginx limit_req over HTTP/2 (h2load) GET /over?key=K, 1 key, over the limit",
    "rls-keys": "slicelimit RLS ShouldRateLimit over h2c, {keys} keys ({keys} h2load side by side), under the limit",
    "ngx-h2-keys": "nginx limit_req over HTTP/2 GET /under, {keys} keys ({keys} h2load side by side), under the limit",
}

# (label, slicelimit case, nginx case)
PAIRS = [
    ("under the limit, 1 key", "sl-get-1key", "ngx-get-1key"),
    ("over the limit, 1 key", "sl-get-over", "ngx-get-over"),
    ("under the limit, {keys} keys", "sl-get-keys", "ngx-get-keys"),
    ("under, {keys} keys: slicelimit POST JSON vs nginx GET", "sl-post-keys", "ngx-get-keys"),
    ("the HTTP servers alone: libmicrohttpd vs nginx, no limiter", "mhd-hello", "ngx-hello"),
    ("the HTTP servers alone: libh2o-evloop vs nginx, no limiter", "h2o-hello", "ngx-hello"),
    ("the HTTP servers alone: no library (epoll) vs nginx, no limiter", "floor-hello", "ngx-hello"),
    ("gRPC / HTTP/2: RLS vs nginx limit_req over HTTP/2, under, 1 key", "rls-1key", "ngx-h2-1key"),
    ("gRPC / HTTP/2: RLS vs nginx limit_req over HTTP/2, over, 1 key", "rls-over", "ngx-h2-over"),
    ("gRPC / HTTP/2: RLS vs nginx limit_req over HTTP/2, under, {rls_keys} keys", "rls-keys", "ngx-h2-keys"),
    ("RLS over h2c vs nginx limit_req over HTTP/1.1 (wrk), under, 1 key", "rls-1key", "ngx-get-1key"),
]


def parse_result(line):
    d = {}
    for tok in line.split()[1:]:
        k, v = tok.split("=", 1)
        d[k] = float(v)
    return d


def fmt_us(us):
    if us >= 1000:
        return "%.2f ms" % (us / 1000)
    return "%d us" % round(us)


def main():
    tmp, results_path, conns, nkeys = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    info = dict(a.split("=", 1) for a in sys.argv[5:])
    problems = []

    cases = {}		# name -> dict(server, keys, expect, runs=[...])
    order = []
    with open(os.path.join(tmp, "results.tsv")) as f:
        for line in f:
            name, server, keys, expect, rnd, res = line.rstrip("\n").split("\t")
            if name not in cases:
                cases[name] = dict(server=server, keys=int(keys), expect=expect, runs=[])
                order.append(name)
            r = parse_result(res)
            r["round"] = int(rnd)
            cases[name]["runs"].append(r)

    # what every run answered, against what it should have
    for name in order:
        c = cases[name]
        for r in c["runs"]:
            where = "%s round %d" % (name, r["round"])
            errs = sum(r[k] for k in ("connect", "read", "write", "timeout"))
            if errs:
                problems.append("%s: %d socket errors (connect %d read %d write %d timeout %d)"
                                % (where, errs, r["connect"], r["read"], r["write"], r["timeout"]))
            if c["expect"] in ("under", "rls-under", "rls-over") and r["non2xx"]:
                problems.append("%s: %d of %d answers >= 400 under the limit"
                                % (where, r["non2xx"], r["requests"]))
            if c["expect"] == "over" and r["non2xx"] < r["requests"] - c["keys"]:
                problems.append("%s: only %d of %d answers >= 400 over the limit"
                                % (where, r["non2xx"], r["requests"]))
        if not c["runs"]:
            problems.append("%s: no run" % name)

    stats = {}
    for name in order:
        runs = cases[name]["runs"]
        rps = [r["rps"] for r in runs]
        stats[name] = dict(
            rps=statistics.median(rps), rps_min=min(rps), rps_max=max(rps),
            p50=statistics.median(r["p50_us"] for r in runs),
            p99=statistics.median(r["p99_us"] for r in runs),
            srv_pct=statistics.median(100 * r.get("srv_cpu_ms", 0) / (r["duration_us"] / 1000) for r in runs),
            cli_pct=statistics.median(100 * r.get("cli_cpu_ms", 0) / (r["duration_us"] / 1000) for r in runs),
            cpu_us=statistics.median(1000 * r.get("srv_cpu_ms", 0) / r["requests"] for r in runs),
            requests=sum(r["requests"] for r in runs),
            non2xx=sum(r["non2xx"] for r in runs), n=len(runs))

    keys = max((c["keys"] for c in cases.values()), default=1)
    out = []
    out.append("## HTTP check API and RLS: slicelimit vs nginx limit_req (`bench/bench_http.sh`)")
    out.append("")
    out.append("%s; kernel %s; %s; %s; %s; nginx %s; %s; slicelimit %s." % (
        info.get("date", "?"), info.get("kernel", "?"), info.get("cpu", "?"),
        info.get("wrk", "?"), info.get("h2load", "?"), info.get("nginx", "?"),
        info.get("h2o", "?"), info.get("slicelimit", "?")))
    out.append("Load at the start of the summary (`uptime`): %s." % info.get("uptime", "?").strip())
    out.append("Loopback in a network namespace of its own; %s." % info.get("settings", "?"))
    out.append("")
    out.append("| case | requests/s median | min | max | p50 median | p99 median | server CPU | server CPU per request | wrk CPU | answers (all rounds) |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for name in order:
        s, c = stats[name], cases[name]
        if c["expect"] == "under":
            ans = "%d x 2xx, %d x >=400" % (s["requests"] - s["non2xx"], s["non2xx"])
        elif c["expect"].startswith("rls-"):
            ans = "%d x 200 (%s: see the RLS's counts below), %d x >=400" % (
                s["requests"] - s["non2xx"],
                "OK" if c["expect"] == "rls-under" else "OVER_LIMIT", s["non2xx"])
        else:
            ans = "%d x 429/>=400, %d x 2xx" % (s["non2xx"], s["requests"] - s["non2xx"])
        out.append("| %s: %s | %.0f | %.0f | %.0f | %s | %s | %.0f%% | %.1f us | %.0f%% | %s |" % (
            name, DESC.get(name, name).format(keys=c["keys"]), s["rps"], s["rps_min"],
            s["rps_max"], fmt_us(s["p50"]), fmt_us(s["p99"]), s["srv_pct"], s["cpu_us"],
            s["cli_pct"], ans))
    out.append("")
    out.append("| slicelimit (or another server) / nginx | slicelimit req/s | nginx req/s | req/s ratio | slicelimit p99 | nginx p99 | p99 ratio | CPU per request ratio |")
    out.append("|---|---|---|---|---|---|---|---|")
    for label, a, b in PAIRS:
        if a not in stats or b not in stats:
            continue
        sa, sb = stats[a], stats[b]
        out.append("| %s | %.0f | %.0f | %.2f | %s | %s | %.2f | %.2f |" % (
            label.format(keys=keys, rls_keys=info.get("rls_keys", "?")), sa["rps"], sb["rps"], sa["rps"] / sb["rps"],
            fmt_us(sa["p99"]), fmt_us(sb["p99"]),
            sa["p99"] / sb["p99"] if sb["p99"] else float("nan"),
            sa["cpu_us"] / sb["cpu_us"] if sb["cpu_us"] else float("nan")))
    out.append("")
    out.append("Server CPU: the CPU time the server process (all its threads; nginx's one "
               "worker) used during the run, as a share of one CPU, and divided by the "
               "requests wrk counted; wrk CPU likewise for wrk. Servers and wrk are pinned "
               "to one CPU each, so 100% means that side was the bottleneck.")
    out.append("")

    # The service's own counts against wrk's. wrk counts the answers it
    # read before its deadline; the service also answered the requests in
    # flight then (up to CONNS per run), the warm-up, the sanity checks
    # (3 x 200 and 2 x 429 on /v1/check) and one /metrics at start-up.
    metrics = {}
    with open(os.path.join(tmp, "metrics.txt")) as f:
        for line in f:
            k, v = line.split()
            metrics[k] = float(v)
    warm = {}
    with open(os.path.join(tmp, "runs", "warmup-sl")) as f:
        warm = parse_result(f.readline())
    sl_runs = [r for n in order if cases[n]["server"] == "sl" for r in cases[n]["runs"]]
    wrk_200 = sum(r["requests"] - r["non2xx"] for r in sl_runs) + warm["requests"] - warm["non2xx"]
    wrk_429 = sum(r["non2xx"] for r in sl_runs) + warm["non2xx"]
    runs = len(sl_runs) + 1
    m200 = metrics.get('slicelimit_http_responses_total{code="200"}', -1)
    m429 = metrics.get('slicelimit_http_responses_total{code="429"}', -1)
    mchecks = metrics.get("slicelimit_http_check_duration_seconds_count", -1)
    msum = metrics.get("slicelimit_http_check_duration_seconds_sum", 0)
    others = sum(v for k, v in metrics.items()
                 if k.startswith("slicelimit_http_responses_total")
                 and '"200"' not in k and '"429"' not in k)
    d200 = m200 - (wrk_200 + 3 + 1)
    d429 = m429 - (wrk_429 + 2)
    dchk = mchecks - (wrk_200 + wrk_429 + 5)
    out.append("The service's /metrics after the runs: %d x 200, %d x 429, %d other; "
               "%d checks, %.1f us each inside the service (sl_check(): its lock, waits "
               "included, BPF_PROG_TEST_RUN and the client view). wrk read %d x 200 and %d x 429 of them; the rest (%d, %d) "
               "were in flight when wrk stopped (at most %d: %d per run x %d runs)." % (
                   m200, m429, others, mchecks, msum / mchecks * 1e6 if mchecks > 0 else 0,
                   wrk_200, wrk_429, d200, d429, conns * runs, conns, runs))
    for label, d in (("200", d200), ("429", d429), ("checks", dchk)):
        if d < 0 or d > conns * runs:
            problems.append("service's %s count is %d off wrk's (allowed 0..%d)"
                            % (label, d, conns * runs))
    # The RLS's counts against h2load's: every call grpc-status 0, every
    # descriptor of the under cases ok and of the over case over_limit, give
    # or take the calls in flight when h2load stopped (up to CONNS per run)
    # and sanity()'s grpcio calls
    rls_runs = {e: [r for n in order if cases[n]["expect"] == e for r in cases[n]["runs"]]
                for e in ("rls-under", "rls-over")}
    if rls_runs["rls-under"] or rls_runs["rls-over"]:
        h2_ok = sum(r["requests"] for r in rls_runs["rls-under"])
        h2_over = sum(r["requests"] for r in rls_runs["rls-over"])
        nruns = len(rls_runs["rls-under"]) + len(rls_runs["rls-over"])
        s_ok, s_over = int(info.get("rls_sanity_ok", 0)), int(info.get("rls_sanity_over", 0))
        calls = {k: v for k, v in metrics.items() if k.startswith("slicelimit_rls_calls_total")}
        c0 = calls.get('slicelimit_rls_calls_total{grpc_status="0"}', -1)
        cbad = sum(v for k, v in calls.items() if '"0"' not in k)
        m_ok = metrics.get('slicelimit_rls_descriptors_total{result="ok"}', -1)
        m_over = metrics.get('slicelimit_rls_descriptors_total{result="over_limit"}', -1)
        m_unm = metrics.get('slicelimit_rls_descriptors_total{result="unmatched"}', -1)
        out.append("")
        out.append("The RLS's /metrics after the runs: %d calls with grpc-status 0, %d with "
                   "another; descriptors %d ok, %d over_limit, %d unmatched. h2load read %d "
                   "answers in the under cases and %d in the over case, grpcio %d OK and %d "
                   "OVER_LIMIT before measuring; the rest (%d ok, %d over_limit) were in "
                   "flight when h2load stopped (at most %d: %d per run x %d runs)." % (
                       c0, cbad, m_ok, m_over, m_unm, h2_ok, h2_over, s_ok, s_over,
                       m_ok - h2_ok - s_ok, m_over - h2_over - s_over, conns * nruns,
                       conns, nruns))
        if cbad:
            problems.append("the RLS answered %d calls with a grpc-status other than 0" % cbad)
        if m_unm:
            problems.append("the RLS found %d descriptors no rule answers" % m_unm)
        for label, d in (("ok", m_ok - h2_ok - s_ok), ("over_limit", m_over - h2_over - s_over),
                         ("calls", c0 - h2_ok - h2_over - s_ok - s_over)):
            if d < 0 or d > conns * nruns:
                problems.append("the RLS's %s count is %d off h2load's (allowed 0..%d)"
                                % (label, d, conns * nruns))
    # client states: rule api: the KEYS keys (client-00001 among them),
    # "sanity" and the RLS's keys; rule tight: client-00001, "sanity" and
    # the RLS's first key
    rls_keys = int(info.get("rls_keys", 0))
    want = nkeys + 3 + (rls_keys + 1 if rls_keys else 0)
    clients = metrics.get('slicelimit_clients{table="sl_clients"}', -1)
    out.append("")
    out.append("Client states the service holds at the end: %d (expected %d: %d keys and "
               "the sanity check's under rule api, 2 under rule tight, and the RLS's %d keys "
               "under rule api and 1 under rule tight)."
               % (clients, want, nkeys, rls_keys))
    if clients != want:
        problems.append("the service holds %d client states, expected %d" % (clients, want))
    if others:
        problems.append("the service answered %d times with neither 200 nor 429" % others)
    out.append("")

    table = "\n".join(out)
    print(table)

    doc = [table, "### Commands", "", "```"]
    for name in ["slicelimit", "nginx", "mhd_hello", "h2o_hello", "floor_hello"] + order:
        p = os.path.join(tmp, "cmd-" + name)
        if os.path.exists(p):
            with open(p) as f:
                doc.append("# %s\n%s" % (name, f.read().strip()))
    doc.append("```")
    for title, rel in (("slicelimit config", "slicelimit.yaml"), ("rules", "rules.yaml"),
                       ("nginx.conf", "nginx/nginx.conf")):
        with open(os.path.join(tmp, rel)) as f:
            doc += ["", "%s (`%s` in the run's temp dir):" % (title, rel), "", "```", f.read().rstrip(), "```"]
    with open(os.path.join(tmp, "sanity.txt")) as f:
        doc += ["", "Checked with curl before measuring (status codes):", "", "```", f.read().rstrip(), "```"]
    if problems:
        doc += ["", "Problems:", ""] + ["- " + p for p in problems]
    with open(results_path, "w") as f:
        f.write("\n".join(doc) + "\n")
    print("written to %s" % results_path)
    for p in problems:
        print("PROBLEM: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
