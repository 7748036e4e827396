#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench/bench_http.sh BUILD_DIR: the HTTP check API of `slicelimit run`
# under wrk, side by side with nginx's own limit_req, on loopback in a
# network namespace of its own, in one run.
#
# Every case is measured ROUNDS times, the rounds interleaved (case 1..N,
# then again), so that the noise of a shared machine falls on all alike;
# medians are reported. The servers (slicelimit's libmicrohttpd threads and
# nginx's single worker) are pinned to SERVER_CPU and wrk to CLIENT_CPU, so
# each server gets one core and the load generator another.
#
# Writes the table to bench/RESULTS-http.md (RESULTS=FILE to change) and
# exits 1 if a case answered other than it should (a 4xx/5xx under the
# limit, a 2xx over it, socket errors) or the service misbehaved.
#
# Two more cases measure the HTTP servers alone, with no limiter: a
# libmicrohttpd server answering one fixed check answer (bench/http/
# mhd_hello.c, started as the service starts its daemon, built here with
# cc) against nginx's `return 200` of the same body. They say how much of
# slicelimit's cost per request is libmicrohttpd's own.
#
# Settings (environment): DURATION (s, 3), ROUNDS (5), THREADS (2),
# CONNS (32), KEYS (1000), SERVER_CPU (0), CLIENT_CPU (1).
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
RESULTS=${RESULTS:-$BENCH_DIR/RESULTS-http.md}

DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-2}
CONNS=${CONNS:-32}
KEYS=${KEYS:-1000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
WARMUP=2			# seconds, per server, not reported

SL_PORT=8080
NGX_PORT=8081
HELLO_PORT=8082
NS=slhttp$$			# our namespace: the pid makes it ours alone
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

die() { echo "bench_http: $*" >&2; exit 1; }
log() { echo "# $*"; }

[ "$(id -u)" -eq 0 ] || die "needs root (network namespace, BPF)"
[ -x "$SL_BIN" ] || die "$1/slicelimit: no binary (make)"
for t in wrk nginx ip nsenter unshare taskset timeout curl cc pkg-config "$PY"; do
	command -v "$t" >/dev/null || die "$t not found (make deps; wrk: apt-get install wrk)"
done
[ -r "$LUA" ] && [ -r "$SUMMARY" ] && [ -r "$HELLO_SRC" ] ||
	die "missing $LUA, $SUMMARY or $HELLO_SRC"
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
	# api: a limit no benchmark reaches; tight: one request per hour
	rules:
	  - name: api
	    limit: 4000000000
	    window: 60s
	  - name: tight
	    limit: 1
	    window: 1h
	EOF
	cat >"$TMP/slicelimit.yaml" <<-EOF
	devices: []
	rules: $TMP/rules.yaml
	http:
	  listen: 127.0.0.1:$SL_PORT
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
	# that nginx, like libmicrohttpd, keeps wrk's connections open.
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
	NGX_WORKER=$(cat "/proc/$NGX_PID/task/$NGX_PID/children" 2>/dev/null)
	NGX_WORKER=${NGX_WORKER%% *}
	[ -n "$NGX_WORKER" ] || die "cannot find nginx's worker"
	log "slicelimit pid $SL_PID, nginx pid $NGX_PID (worker $NGX_WORKER), mhd_hello pid $HELLO_PID, all on CPU $SERVER_CPU; wrk on CPU $CLIENT_CPU"
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
	in_ns curl -s -D - -o /dev/null "$sl/v1/check?rule=tight&key=sanity" \
		>"$TMP/sl-429-headers.txt"
	grep -qi '^Retry-After:' "$TMP/sl-429-headers.txt" ||
		fail "slicelimit's 429 has no Retry-After"
	echo "slicelimit GET tight, 3rd (headers) 429" >>"$TMP/sanity.txt"
}

# The cases: NAME SERVER MODE RULE-OR-PATH KEYS EXPECT
# (EXPECT: under = every answer 2xx; over = every answer but the first per
# key >= 400)
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

measure() {
	local r line name server mode arg keys expect
	mkdir -p "$TMP/runs"
	log "warm-up: ${WARMUP}s on each server"
	run_wrk warmup-sl sl sl-get api 1 "$WARMUP" "$TMP/runs/warmup-sl"
	run_wrk warmup-ngx ngx ngx-get /under 1 "$WARMUP" "$TMP/runs/warmup-ngx"
	for r in $(seq 1 "$ROUNDS"); do
		for line in "${CASES[@]}"; do
			read -r name server mode arg keys expect <<<"$line"
			run_wrk "$name" "$server" "$mode" "$arg" "$keys" "$DURATION" \
				"$TMP/runs/$name.$r" || continue
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
	kill -TERM "$HELLO_PID" 2>/dev/null
	wait "$HELLO_PID"
}

body() {
	local metrics
	ip netns add "$NS" || die "ip netns add $NS"
	ip -n "$NS" link set lo up || die "lo up in $NS"
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -O2 -Wall -o "$TMP/mhd_hello" "$HELLO_SRC" \
		$(pkg-config --cflags --libs libmicrohttpd) -lpthread ||
		die "cannot build $HELLO_SRC (libmicrohttpd-dev: make deps)"
	write_configs
	start_servers
	sanity
	measure
	# the service's own count of its answers, to hold against wrk's
	metrics=$(in_ns curl -s -m 5 "http://127.0.0.1:$SL_PORT/metrics")
	printf '%s\n' "$metrics" | grep -E '^slicelimit_(http_(responses_total|check_duration_seconds_(count|sum))|clients\{table="sl_clients"\})' \
		>"$TMP/metrics.txt"
	stop_servers

	RUN_INFO=(
		"date=$(date -u '+%Y-%m-%d %H:%M UTC')"
		"kernel=$(uname -r)"
		"cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) x $(nproc)"
		"wrk=$(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')"
		"nginx=$(nginx -v 2>&1 | sed 's/.*: //')"
		"slicelimit=$(git -C "$BENCH_DIR/.." describe --always --dirty 2>/dev/null || echo unknown)"
		"settings=wrk -t$THREADS -c$CONNS -d${DURATION}s --latency, $ROUNDS interleaved rounds, $KEYS keys in the *-keys cases, servers on CPU $SERVER_CPU, wrk on CPU $CLIENT_CPU"
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
