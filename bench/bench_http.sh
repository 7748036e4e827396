#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench/bench_http.sh BUILD_DIR: the HTTP check API of `slicelimit run`
# under wrk, side by side with nginx's own limit_req, on loopback in a
# network namespace of its own, in one run.
#
# Every case is measured ROUNDS times, the rounds interleaved (case 1..N,
# then again), so that the noise of a shared machine falls on all alike;
# medians are reported. The servers (slicelimit's HTTP server threads and
# nginx's single worker) are pinned to SERVER_CPU and wrk to CLIENT_CPU, so
# each server gets one core and the load generator another.
#
# Writes the table to bench/RESULTS-http.md (RESULTS=FILE to change) and
# exits 1 if a case answered other than it should (a 4xx/5xx under the
# limit, a 2xx over it, socket errors) or the service misbehaved.
#
# Two more cases measure the HTTP servers alone, with no limiter: a
# libmicrohttpd server answering one fixed check answer (bench/http/
# mhd_hello.c, started as the service started its daemon, built here with
# cc) against nginx's `return 200` of the same body: what the library the
# check API ran on before its own server (user/service/http_server.c)
# costs by itself. Two more servers
# of the same answer set its ceiling against other choices: libh2o-evloop
# (bench/http/h2o_hello.c) and a library-free epoll responder
# (bench/http/floor_hello.c), the floor under any library.
#
# The rate limit service (rls: over TCP, its token in the metadata) is
# measured in the same run with h2load (nghttp2-client) over h2c, beside
# nginx limit_req over HTTP/2 (a second nginx listener, `http2`, h2c with
# prior knowledge). h2load sends one body for every request, so the
# ShouldRateLimit body is built once per key by bench/http/rls_body.py (a
# fixed RateLimitRequest, gRPC-framed, the protobuf encoded by hand) and
# the keys are spread as several h2load processes side by side, one key
# each, the connections shared out among them (RLS_KEYS; nginx over HTTP/2
# likewise, the key in the query). h2load does not read trailers, so
# grpc-status and the overall code are checked apart: one call per case
# through grpcio (bench/http/rls_check.py) before measuring, and the
# service's own counts after (slicelimit_rls_calls_total by grpc-status,
# slicelimit_rls_descriptors_total by result) against h2load's. p50/p99
# come from h2load's --log-file (bench/http/h2load_result.py).
#
# Settings (environment): DURATION (s, 3), ROUNDS (5), THREADS (2),
# CONNS (32), KEYS (1000), RLS_KEYS (8), SERVER_CPU (0), CLIENT_CPU (1).
#
# The service runs with its own bpffs: in a mount namespace of its own
# (unshare --mount) with a fresh bpffs mounted on /sys/fs/bpf, so its pins
# (/sys/fs/bpf/slicelimit) are not the host's. Other runs on the host (the
# test suite, the demo, a production service) are never waited for, never
# adopted and never touched, and the pins go with the namespace whatever
# happens. It runs with `devices: []`: nothing is attached anywhere.
#
# Why the body runs in a child process group: bash 5.2 (Debian 12) can lose
# a trapped signal that arrives during a $(command substitution) (see
# tests/netns/lib.sh); the parent only waits, where traps are reliable, and
# its cleanup can stop everything the body started by its group.

# shellcheck disable=SC2015 # "A && B || die": die exits
set -u

usage() {
	echo "usage: $0 BUILD_DIR   (e.g. $0 build, after make)" >&2
	exit 2
}
[ $# -eq 1 ] || usage

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SL_BIN=$(readlink -f "$1/slicelimit")
LUA=$BENCH_DIR/http_check.lua
SUMMARY=$BENCH_DIR/http/summary.py
HELLO_SRC=$BENCH_DIR/http/mhd_hello.c
H2O_SRC=$BENCH_DIR/http/h2o_hello.c
FLOOR_SRC=$BENCH_DIR/http/floor_hello.c
RLS_BODY=$BENCH_DIR/http/rls_body.py
RLS_CHECK=$BENCH_DIR/http/rls_check.py
H2LOAD_RESULT=$BENCH_DIR/http/h2load_result.py
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS-http.md}

DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-2}
CONNS=${CONNS:-32}
KEYS=${KEYS:-1000}
RLS_KEYS=${RLS_KEYS:-8}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
WARMUP=2			# seconds, per server, not reported

SL_PORT=8080
NGX_PORT=8081
HELLO_PORT=8082
RLS_PORT=8083
NGX_H2_PORT=8084
H2O_PORT=8085
FLOOR_PORT=8086
RLS_METHOD=/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit
NS=slhttp$$			# our namespace: the pid makes it ours alone
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

die() { echo "bench_http: $*" >&2; exit 1; }
log() { echo "# $*"; }

[ "$(id -u)" -eq 0 ] || die "needs root (network namespace, BPF)"
[ -x "$SL_BIN" ] || die "$1/slicelimit: no binary (make)"
for t in wrk h2load nginx ip nsenter unshare taskset timeout curl cc pkg-config "$PY"; do
	command -v "$t" >/dev/null || die "$t not found (make deps; wrk: apt-get install wrk)"
done
for f in "$LUA" "$SUMMARY" "$HELLO_SRC" "$H2O_SRC" "$FLOOR_SRC" "$RLS_BODY" \
	"$RLS_CHECK" "$H2LOAD_RESULT"; do
	[ -r "$f" ] || die "missing $f"
done
"$PY" -c 'import grpc' 2>/dev/null || die "python3-grpcio not found (make deps)"
[ "$RLS_KEYS" -ge 1 ] && [ "$((CONNS / RLS_KEYS))" -ge "$THREADS" ] ||
	die "CONNS/RLS_KEYS must be at least THREADS (each key's h2load gets CONNS/RLS_KEYS connections)"
cpus=$(nproc)
[ "$SERVER_CPU" -lt "$cpus" ] && [ "$CLIENT_CPU" -lt "$cpus" ] ||
	die "SERVER_CPU/CLIENT_CPU must be below $cpus"

TMP=$(mktemp -d "/tmp/slhttp$$.XXXXXX") || die "mktemp"
BODY=""
CLEANED=0

in_ns() { nsenter --net="/run/netns/$NS" "$@"; }

# ---- cleanup, in the parent ----

cleanup() {
	local i
	[ "$CLEANED" -eq 1 ] && return
	CLEANED=1
	trap - EXIT INT TERM
	if [ -n "$BODY" ]; then
		# SIGTERM to the body's group: wrk stops, nginx exits, the
		# service stops; its bpffs goes with its mount namespace
		kill -TERM -- "-$BODY" 2>/dev/null
		wait "$BODY" 2>/dev/null
		for i in $(seq 1 100); do
			kill -0 -- "-$BODY" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$BODY" 2>/dev/null
	fi
	[ -e "/run/netns/$NS" ] && ip netns del "$NS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# ---- the body ----

SL_PID=""			# the service
SL_WRAP=""			# its wrapper (mount namespace, bpffs)
NGX_PID=""
NGX_WORKER=""			# nginx's one worker, whose CPU time we take
HELLO_PID=""			# mhd_hello
H2O_PID=""			# h2o_hello
FLOOR_PID=""			# floor_hello
RLS_SANITY_OK=0			# the RLS calls sanity() made, by overall code
RLS_SANITY_OVER=0
CLK_TCK=$(getconf CLK_TCK)
FAILED=0

fail() {
	echo "bench_http: FAIL: $*" >&2
	FAILED=1
}

# ns_curl ARGS...: curl in the namespace, printing the status code
ns_curl() {
	in_ns curl -s -o /dev/null -m 5 -w '%{http_code}' "$@"
}

expect_code() {		# DESC WANT CURL-ARGS...
	local desc=$1 want=$2 got
	shift 2
	got=$(ns_curl "$@")
	if [ "$got" = "$want" ]; then
		log "check: $desc: $got"
	else
		fail "check: $desc: got $got, want $want"
	fi
	echo "$desc $got" >>"$TMP/sanity.txt"
}

wait_http() {		# URL: until it answers, bounded
	local i
	for i in $(seq 1 100); do
		[ "$(ns_curl "$1")" = 200 ] && return 0
		sleep 0.1
	done
	return 1
}

write_configs() {
	cat >"$TMP/rules.yaml" <<-EOF
	# api: a limit no benchmark reaches; tight: one request per hour;
	# the RLS asks either by its generic_key and the client's key
	rules:
	  - name: api
	    limit: 4000000000
	    window: 60s
	    envoy:
	      domain: bench
	      descriptor: [{key: generic_key, value: api}, {key: client}]
	      client_key: client
	  - name: tight
	    limit: 1
	    window: 1h
	    envoy:
	      domain: bench
	      descriptor: [{key: generic_key, value: tight}, {key: client}]
	      client_key: client
	EOF
	cat >"$TMP/slicelimit.yaml" <<-EOF
	devices: []
	rules: $TMP/rules.yaml
	http:
	  listen: 127.0.0.1:$SL_PORT
	  token_file: $TMP/api.token
	rls:
	  socket: "off"
	  listen: 127.0.0.1:$RLS_PORT
	  token_file: $TMP/api.token
	EOF
	# TCP needs a bearer token: wrk's requests to slicelimit carry it
	# (HC_TOKEN), and so does every curl of the run (CURL_HOME's .curlrc)
	TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(umask 077; echo "$TOKEN" >"$TMP/api.token"; mkdir -p "$TMP/curl"
	 printf 'header = "Authorization: Bearer %s"\n' "$TOKEN" >"$TMP/curl/.curlrc")
	export CURL_HOME=$TMP/curl
	mkdir -p "$TMP/nginx"
	# limit_req runs in the preaccess phase, after the rewrite phase, so
	# `return 200` would answer before limit_req is ever asked: the
	# success answer is empty_gif, a content handler (200, 43 bytes from
	# memory). keepalive_requests is raised from its default of 1000 so
	# that nginx, like slicelimit, keeps wrk's connections open.
	cat >"$TMP/nginx/nginx.conf" <<-EOF
	worker_processes 1;
	user root;
	pid $TMP/nginx/nginx.pid;
	error_log $TMP/nginx/error.log warn;
	events { worker_connections 1024; }
	http {
	    access_log off;
	    client_body_temp_path $TMP/nginx/body;
	    proxy_temp_path $TMP/nginx/proxy;
	    fastcgi_temp_path $TMP/nginx/fastcgi;
	    uwsgi_temp_path $TMP/nginx/uwsgi;
	    scgi_temp_path $TMP/nginx/scgi;
	    keepalive_requests 100000000;
	    keepalive_timeout 75s;
	    # under: far above any rate here; over: one request a minute
	    limit_req_zone \$arg_key zone=under:10m rate=100000000r/s;
	    limit_req_zone \$arg_key zone=over:10m rate=1r/m;
	    limit_req_status 429;
	    limit_req_log_level info;   # below error_log's level: no logging
	    server {
	        listen 127.0.0.1:$NGX_PORT;
	        location = /under { limit_req zone=under burst=100000 nodelay; empty_gif; }
	        location = /over  { limit_req zone=over; empty_gif; }
	        # no limiter: the body of an allowed check, from memory
	        location = /hello {
	            default_type application/json;
	            return 200 '{ "allowed": true, "rule": "api", "key": "client-00001", "limit": 4000000000, "window_s": 60, "used": 1, "remaining": 3999999999, "reset_s": 60, "retry_after_s": 0, "decision": "kernel" }';
	        }
	    }
	    # the same limits over HTTP/2 (h2c, prior knowledge), beside the RLS
	    server {
	        listen 127.0.0.1:$NGX_H2_PORT http2;
	        http2_max_requests 100000000;
	        location = /under { limit_req zone=under burst=100000 nodelay; empty_gif; }
	        location = /over  { limit_req zone=over; empty_gif; }
	    }
	}
	EOF
}

start_servers() {
	local cmd
	# The service in a mount namespace of its own with a fresh bpffs on
	# /sys/fs/bpf (private pins), in our network namespace (nsenter, not
	# `ip netns exec`, which remounts /sys). The wrapper shell stays to
	# report whether the service left pins after it stopped; the
	# service's own pid goes to sl.pid. --user root: the bench measures
	# the API, not the drop, and needs no slicelimit user on the host.
	# shellcheck disable=SC2016 # expanded by the inner shell
	cmd=(taskset -c "$SERVER_CPU" unshare --mount --propagation private
	     sh -c 'mount -t bpf bpf /sys/fs/bpf || exit 90
		"$@" & echo $! >"$SL_PIDFILE"
		wait $!; rc=$?
		[ -z "$(ls -A /sys/fs/bpf/slicelimit 2>/dev/null)" ] || rc=91
		exit $rc' sh
	     nsenter --net="/run/netns/$NS" "$SL_BIN" run --user root --config "$TMP/slicelimit.yaml")
	printf '%s\n' "taskset -c $SERVER_CPU unshare --mount --propagation private sh -c 'mount -t bpf bpf /sys/fs/bpf; ...' \\" \
		"    nsenter --net=/run/netns/$NS $SL_BIN run --user root --config $TMP/slicelimit.yaml" \
		>"$TMP/cmd-slicelimit"
	SL_PIDFILE=$TMP/sl.pid "${cmd[@]}" >"$TMP/slicelimit.log" 2>&1 &
	SL_WRAP=$!
	cmd=(taskset -c "$SERVER_CPU" nsenter --net="/run/netns/$NS"
	     nginx -e "$TMP/nginx/error.log" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf"
	     -g 'daemon off;')
	printf '%q ' "${cmd[@]}" >"$TMP/cmd-nginx"
	"${cmd[@]}" >"$TMP/nginx.log" 2>&1 &
	NGX_PID=$!
	wait_http "http://127.0.0.1:$SL_PORT/metrics" && [ -s "$TMP/sl.pid" ] || {
		cat "$TMP/slicelimit.log" >&2
		die "the service did not answer on 127.0.0.1:$SL_PORT"
	}
	SL_PID=$(cat "$TMP/sl.pid")
	wait_http "http://127.0.0.1:$NGX_PORT/under?key=up" || {
		cat "$TMP/nginx/error.log" >&2
		die "nginx did not answer on 127.0.0.1:$NGX_PORT"
	}
	cmd=(taskset -c "$SERVER_CPU" nsenter --net="/run/netns/$NS"
	     "$TMP/mhd_hello" 127.0.0.1 "$HELLO_PORT")
	printf '%q ' "${cmd[@]}" >"$TMP/cmd-mhd_hello"
	"${cmd[@]}" >"$TMP/mhd_hello.log" 2>&1 &
	HELLO_PID=$!
	wait_http "http://127.0.0.1:$HELLO_PORT/" || {
		cat "$TMP/mhd_hello.log" >&2
		die "mhd_hello did not answer on 127.0.0.1:$HELLO_PORT"
	}
	cmd=(taskset -c "$SERVER_CPU" nsenter --net="/run/netns/$NS"
	     "$TMP/h2o_hello" 127.0.0.1 "$H2O_PORT")
	printf '%q ' "${cmd[@]}" >"$TMP/cmd-h2o_hello"
	"${cmd[@]}" >"$TMP/h2o_hello.log" 2>&1 &
	H2O_PID=$!
	cmd=(taskset -c "$SERVER_CPU" nsenter --net="/run/netns/$NS"
	     "$TMP/floor_hello" 127.0.0.1 "$FLOOR_PORT")
	printf '%q ' "${cmd[@]}" >"$TMP/cmd-floor_hello"
	"${cmd[@]}" >"$TMP/floor_hello.log" 2>&1 &
	FLOOR_PID=$!
	wait_http "http://127.0.0.1:$H2O_PORT/" || {
		cat "$TMP/h2o_hello.log" >&2
		die "h2o_hello did not answer on 127.0.0.1:$H2O_PORT"
	}
	wait_http "http://127.0.0.1:$FLOOR_PORT/" || {
		cat "$TMP/floor_hello.log" >&2
		die "floor_hello did not answer on 127.0.0.1:$FLOOR_PORT"
	}
	NGX_WORKER=$(cat "/proc/$NGX_PID/task/$NGX_PID/children" 2>/dev/null)
	NGX_WORKER=${NGX_WORKER%% *}
	[ -n "$NGX_WORKER" ] || die "cannot find nginx's worker"
	log "slicelimit pid $SL_PID, nginx pid $NGX_PID (worker $NGX_WORKER), mhd_hello pid $HELLO_PID, h2o_hello pid $H2O_PID, floor_hello pid $FLOOR_PID, all on CPU $SERVER_CPU; wrk and h2load on CPU $CLIENT_CPU"
}

# Both ends answer as they should before anything is measured.
sanity() {
	local sl=http://127.0.0.1:$SL_PORT ngx=http://127.0.0.1:$NGX_PORT
	expect_code "slicelimit GET under" 200 "$sl/v1/check?rule=api&key=sanity"
	expect_code "slicelimit POST under" 200 -X POST -H 'Content-Type: application/json' \
		-d '{"rule":"api","key":"sanity"}' "$sl/v1/check"
	expect_code "slicelimit GET tight, 1st" 200 "$sl/v1/check?rule=tight&key=sanity"
	expect_code "slicelimit GET tight, 2nd" 429 "$sl/v1/check?rule=tight&key=sanity"
	expect_code "nginx under" 200 "$ngx/under?key=sanity"
	expect_code "nginx over, 1st" 200 "$ngx/over?key=sanity"
	expect_code "nginx over, 2nd" 429 "$ngx/over?key=sanity"
	expect_code "nginx hello" 200 "$ngx/hello?key=sanity"
	expect_code "mhd_hello" 200 "http://127.0.0.1:$HELLO_PORT/v1/check?rule=api&key=sanity"
	expect_code "h2o_hello" 200 "http://127.0.0.1:$H2O_PORT/v1/check?rule=api&key=sanity"
	expect_code "floor_hello" 200 "http://127.0.0.1:$FLOOR_PORT/v1/check?rule=api&key=sanity"
	expect_code "nginx HTTP/2 under" 200 --http2-prior-knowledge "http://127.0.0.1:$NGX_H2_PORT/under?key=sanity"
	expect_code "nginx HTTP/2 over, 1st" 200 --http2-prior-knowledge "http://127.0.0.1:$NGX_H2_PORT/over?key=sanity-h2"
	expect_code "nginx HTTP/2 over, 2nd" 429 --http2-prior-knowledge "http://127.0.0.1:$NGX_H2_PORT/over?key=sanity-h2"
	rls_sanity
	in_ns curl -s -D - -o /dev/null "$sl/v1/check?rule=tight&key=sanity" \
		>"$TMP/sl-429-headers.txt"
	grep -qi '^Retry-After:' "$TMP/sl-429-headers.txt" ||
		fail "slicelimit's 429 has no Retry-After"
	echo "slicelimit GET tight, 3rd (headers) 429" >>"$TMP/sanity.txt"
}

# rls_key K: the client key of the RLS's (and nginx HTTP/2's) K-th h2load
rls_key() { printf 'rls-%05d' "$1"; }

# expect_rls DESC WANT RULE K: one call of the body h2load sends for key K
# of RULE, through grpcio: its overall code must be WANT, its grpc-status 0
expect_rls() {
	local desc=$1 want=$2 got
	got=$(in_ns "$PY" "$RLS_CHECK" "127.0.0.1:$RLS_PORT" "$TOKEN" \
		"$TMP/rls-$3-$(rls_key "$4").bin" 2>&1)
	if [ "$got" = "$want" ]; then
		log "check: $desc: $got"
	else
		fail "check: $desc: got $got, want $want"
	fi
	case $got in
	OK) RLS_SANITY_OK=$((RLS_SANITY_OK + 1)) ;;
	OVER_LIMIT) RLS_SANITY_OVER=$((RLS_SANITY_OVER + 1)) ;;
	esac
	echo "$desc $got" >>"$TMP/sanity.txt"
}

# The RLS's bodies, one per rule and key, and one call of each kind: under
# rule api OK; under rule tight OK once, then OVER_LIMIT (so that the
# over-the-limit case is over from its first call)
rls_sanity() {
	local k rule
	for rule in api tight; do
		for k in $(seq 1 "$RLS_KEYS"); do
			"$PY" "$RLS_BODY" "$TMP/rls-$rule-$(rls_key "$k").bin" bench \
				generic_key=$rule client="$(rls_key "$k")" ||
				die "rls_body.py failed"
		done
	done
	expect_rls "RLS (grpcio) api $(rls_key 1)" OK api 1
	expect_rls "RLS (grpcio) tight $(rls_key 1), 1st" OK tight 1
	expect_rls "RLS (grpcio) tight $(rls_key 1), 2nd" OVER_LIMIT tight 1
}

# The cases: NAME SERVER MODE RULE-OR-PATH KEYS EXPECT
# (EXPECT: under = every answer 2xx; over = every answer but the first per
# key >= 400; rls-under and rls-over: every answer 2xx, the overall codes
# held against the service's counts; MODE h2-*: h2load, one process per key)
CASES=(
	"sl-get-1key		sl	sl-get	api	1	under"
	"ngx-get-1key		ngx	ngx-get	/under	1	under"
	"sl-get-over		sl	sl-get	tight	1	over"
	"ngx-get-over		ngx	ngx-get	/over	1	over"
	"sl-get-keys		sl	sl-get	api	$KEYS	under"
	"ngx-get-keys		ngx	ngx-get	/under	$KEYS	under"
	"sl-post-keys		sl	sl-post	api	$KEYS	under"
	"mhd-hello		mhd	sl-get	api	1	under"
	"ngx-hello		ngx	ngx-get	/hello	1	under"
	"h2o-hello		h2o	sl-get	api	1	under"
	"floor-hello		floor	sl-get	api	1	under"
	"rls-1key		rls	h2-rls	api	1	rls-under"
	"ngx-h2-1key		ngx	h2-get	/under	1	under"
	"rls-over		rls	h2-rls	tight	1	rls-over"
	"ngx-h2-over		ngx	h2-get	/over	1	over"
	"rls-keys		rls	h2-rls	api	$RLS_KEYS	rls-under"
	"ngx-h2-keys		ngx	h2-get	/under	$RLS_KEYS	under"
)

# cpu_ms PID: the CPU time (user + system, all threads) PID has used
cpu_ms() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
	stat=${stat##*) }	# the fields after "(comm) "
	# shellcheck disable=SC2086 # split into fields on purpose
	set -- $stat
	# utime and stime are fields 14 and 15, here 12 and 13
	echo $(( (${12} + ${13}) * 1000 / CLK_TCK ))
}

# children_ms: CHILD_MS = the CPU time of this shell's finished children
# so far (not in a $(subshell): a forked shell has no children yet)
children_ms() {
	times >"$TMP/times.txt"	# its own line, then the children's
	CHILD_MS=$(awk 'function ms(x, m) {
		m = x; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", x); sub(/s$/, "", x)
		return m * 60000 + x * 1000 }
		END { printf "%d\n", ms($1) + ms($2) }' "$TMP/times.txt")
}

# run_wrk NAME SERVER MODE ARG KEYS SECONDS OUT: one wrk run; its RESULT
# line goes to OUT (and the full output next to it), with the CPU time
# the server (srv_cpu_ms) and wrk (cli_cpu_ms) used meanwhile
run_wrk() {
	local name=$1 server=$2 mode=$3 arg=$4 keys=$5 secs=$6 out=$7
	local port=$SL_PORT hc_arg=HC_RULE=$arg cmd srv=$SL_PID srv0 cli0
	if [ "$server" = ngx ]; then
		port=$NGX_PORT hc_arg=HC_PATH=$arg srv=$NGX_WORKER
	elif [ "$server" = mhd ]; then
		port=$HELLO_PORT srv=$HELLO_PID
	elif [ "$server" = h2o ]; then
		port=$H2O_PORT srv=$H2O_PID
	elif [ "$server" = floor ]; then
		port=$FLOOR_PORT srv=$FLOOR_PID
	fi
	# timeout --foreground: stays in our process group (so the cleanup's
	# kill reaches wrk), where plain timeout would start a group of its own
	cmd=(taskset -c "$CLIENT_CPU" nsenter --net="/run/netns/$NS"
	     env HC_MODE="$mode" "$hc_arg" HC_KEYS="$keys" HC_TOKEN="$TOKEN"
	     timeout --foreground -k 5 $((secs + 20)) wrk -t"$THREADS" -c"$CONNS" -d"${secs}s"
	     --latency --timeout 5s -s "$LUA" "http://127.0.0.1:$port/")
	[ -e "$TMP/cmd-$name" ] || echo "${cmd[*]}" >"$TMP/cmd-$name"
	srv0=$(cpu_ms "$srv")
	children_ms
	cli0=$CHILD_MS
	"${cmd[@]}" >"$out.txt" 2>&1
	grep '^RESULT ' "$out.txt" >"$out" || {
		cat "$out.txt" >&2
		fail "$name: wrk gave no result"
		return 1
	}
	children_ms
	sed -i "s/\$/ srv_cpu_ms=$(( $(cpu_ms "$srv") - srv0 )) cli_cpu_ms=$(( CHILD_MS - cli0 ))/" "$out"
}

# run_h2load NAME SERVER MODE ARG KEYS SECONDS OUT: KEYS h2load processes
# side by side, one key each (h2load sends one body to one URL), CONNS/KEYS
# connections each, one stream at a time per connection as wrk's; their
# RESULT line (h2load_result.py) to OUT as run_wrk's
run_h2load() {
	local name=$1 server=$2 mode=$3 arg=$4 keys=$5 secs=$6 out=$7
	local srv=$SL_PID srv0 cli0 k key url cmd pids=() ok=1
	local conns=$((CONNS / keys)) threads=$THREADS
	[ "$keys" -gt 1 ] && threads=1
	[ "$server" = ngx ] && srv=$NGX_WORKER
	srv0=$(cpu_ms "$srv")
	children_ms
	cli0=$CHILD_MS
	rm -f "$out".txt.* "$out".log.*
	for k in $(seq 1 "$keys"); do
		key=$(rls_key "$k")
		if [ "$mode" = h2-rls ]; then
			url=http://127.0.0.1:$RLS_PORT$RLS_METHOD
			set -- -d "$TMP/rls-$arg-$key.bin" -H "content-type: application/grpc" \
				-H "te: trailers" -H "authorization: Bearer $TOKEN"
		else
			url="http://127.0.0.1:$NGX_H2_PORT$arg?key=$key"
			set --
		fi
		cmd=(taskset -c "$CLIENT_CPU" nsenter --net="/run/netns/$NS"
		     timeout --foreground -k 5 $((secs + 20)) h2load -D "$secs"
		     -c"$conns" -t"$threads" -m1 --log-file="$out.log.$k" "$@" "$url")
		[ -e "$TMP/cmd-$name" ] || echo "${cmd[*]}  # x $keys, key $key .. $(rls_key "$keys")" >"$TMP/cmd-$name"
		"${cmd[@]}" >"$out.txt.$k" 2>&1 &
		pids+=($!)
	done
	for k in "${pids[@]}"; do
		wait "$k" || ok=0
	done
	children_ms
	# shellcheck disable=SC2094 # it reads $out.txt.* and $out.log.*
	"$PY" "$H2LOAD_RESULT" "$out" "$keys" >"$out" && [ "$ok" -eq 1 ] || {
		cat "$out".txt.* >&2
		fail "$name: h2load gave no result"
		return 1
	}
	sed -i "s/\$/ srv_cpu_ms=$(( $(cpu_ms "$srv") - srv0 )) cli_cpu_ms=$(( CHILD_MS - cli0 ))/" "$out"
}

measure() {
	local r line name server mode arg keys expect
	mkdir -p "$TMP/runs"
	log "warm-up: ${WARMUP}s on each server"
	run_wrk warmup-sl sl sl-get api 1 "$WARMUP" "$TMP/runs/warmup-sl"
	run_wrk warmup-ngx ngx ngx-get /under 1 "$WARMUP" "$TMP/runs/warmup-ngx"
	for r in $(seq 1 "$ROUNDS"); do
		for line in "${CASES[@]}"; do
			read -r name server mode arg keys expect <<<"$line"
			if [ "${mode#h2-}" != "$mode" ]; then
				run_h2load "$name" "$server" "$mode" "$arg" "$keys" "$DURATION" \
					"$TMP/runs/$name.$r" || continue
			else
				run_wrk "$name" "$server" "$mode" "$arg" "$keys" "$DURATION" \
					"$TMP/runs/$name.$r" || continue
			fi
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$server" "$keys" \
				"$expect" "$r" "$(cat "$TMP/runs/$name.$r")" \
				>>"$TMP/results.tsv"
			log "round $r/$ROUNDS $name: $(sed 's/^RESULT //' "$TMP/runs/$name.$r")"
		done
	done
}

stop_servers() {
	local i
	kill -TERM "$SL_PID" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$SL_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SL_PID" 2>/dev/null; then
		fail "the service did not stop within 10 s of SIGTERM"
		kill -KILL "$SL_PID"
	fi
	wait "$SL_WRAP"
	i=$?
	case $i in
	0) log "the service stopped on SIGTERM and left no pins" ;;
	91) fail "the service left pins in its bpffs after SIGTERM (devices: [])" ;;
	*) fail "the service exited with status $i on SIGTERM" ;;
	esac
	kill -TERM "$NGX_PID" 2>/dev/null
	wait "$NGX_PID"
	kill -TERM "$HELLO_PID" "$H2O_PID" "$FLOOR_PID" 2>/dev/null
	wait "$HELLO_PID" "$H2O_PID" "$FLOOR_PID"
}

body() {
	local metrics
	ip netns add "$NS" || die "ip netns add $NS"
	ip -n "$NS" link set lo up || die "lo up in $NS"
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -O2 -Wall -o "$TMP/mhd_hello" "$HELLO_SRC" \
		$(pkg-config --cflags --libs libmicrohttpd) -lpthread ||
		die "cannot build $HELLO_SRC (libmicrohttpd-dev: make deps)"
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -O2 -Wall -o "$TMP/h2o_hello" "$H2O_SRC" $(pkg-config --cflags --libs libh2o-evloop) ||
		die "cannot build $H2O_SRC (libh2o-evloop-dev: make bench installs it)"
	cc -O2 -Wall -o "$TMP/floor_hello" "$FLOOR_SRC" || die "cannot build $FLOOR_SRC"
	write_configs
	start_servers
	sanity
	measure
	# the service's own count of its answers, to hold against wrk's
	metrics=$(in_ns curl -s -m 5 "http://127.0.0.1:$SL_PORT/metrics")
	printf '%s\n' "$metrics" | grep -E '^slicelimit_(http_(responses_total|check_duration_seconds_(count|sum))|rls_(calls|descriptors)_total|clients\{table="sl_clients"\})' \
		>"$TMP/metrics.txt"
	stop_servers

	RUN_INFO=(
		"date=$(date -u '+%Y-%m-%d %H:%M UTC')"
		"kernel=$(uname -r)"
		"cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) x $(nproc)"
		"wrk=$(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')"
		"h2load=$(h2load --version 2>&1 | head -1)"
		"h2o=libh2o-evloop $(pkg-config --modversion libh2o-evloop 2>/dev/null)"
		"rls_keys=$RLS_KEYS"
		"rls_sanity_ok=$RLS_SANITY_OK"
		"rls_sanity_over=$RLS_SANITY_OVER"
		"uptime=$(uptime)"
		"nginx=$(nginx -v 2>&1 | sed 's/.*: //')"
		"slicelimit=$(git -C "$BENCH_DIR/.." describe --always --dirty 2>/dev/null || echo unknown)"
		"settings=wrk -t$THREADS -c$CONNS -d${DURATION}s --latency and h2load -D $DURATION -c$CONNS -t$THREADS -m1 (rls-keys, ngx-h2-keys: $RLS_KEYS h2load processes side by side, one key each, -c$((CONNS / RLS_KEYS)) -t1 each), $ROUNDS interleaved rounds, $KEYS keys in the wrk *-keys cases, servers on CPU $SERVER_CPU, wrk and h2load on CPU $CLIENT_CPU"
	)
	"$PY" "$SUMMARY" "$TMP" "$RESULTS" "$CONNS" "$KEYS" "${RUN_INFO[@]}" || FAILED=1
	[ "$FAILED" -eq 0 ]
}

rc=0
set -m				# the body gets a process group of its own
(set +m; body) &
BODY=$!
set +m
wait "$BODY" || rc=$?
cleanup
exit "$rc"
