#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A hostile Redis against the real service (`slicelimit run`, layout
# central over backend redis, with a password): a fake server of this
# test's own (Python, real sockets, in the server namespace) that
#   1. says it is a Cluster whose every slot lives on another host (the
#      trap, a second listener no config names): the service neither
#      connects nor sends AUTH there, since sync.cluster is not set;
#   2. answers each command a byte every 40 ms (every read well inside
#      the timeout): /v1/check is answered within one command deadline,
#      decided locally (fail open, NFR-3), and /healthz stays answered;
#   3. answers with a 150 MB string: refused at the reply cap, checks
#      fail open, and the service's peak resident set (VmHWM) stays far
#      below the reply.
#
# Usage: test_redis_hostile.sh BUILD_DIR   (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl unshare
# shellcheck source=redis_nodes_lib.sh
. "$here/redis_nodes_lib.sh"
START=$SECONDS
RPORT=6394	# the fake
TRAP=6393	# the node it points at
NODE_PID=()
# what the flood may add to the service's peak RSS: the reply is 150 MB,
# the cap 4 MiB; growth, not the total, so that a sanitizer build's own
# overhead (ASan's shadow) is not counted
HWM_MAX_KB=$((64 * 1024))
# a sanitizer build keeps freed memory aside (ASan's quarantine, 256 MB):
# the service's peak would be that, not what it holds; a small one keeps
# the peak the program's own (no effect on other builds)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"

cat >"$SL_TMP/rules.yaml" <<'EOF'
rules:
  - { name: api, limit: 4, window: 60s }
EOF
(umask 077; printf 's3cret-redis-pass\n' >"$SL_TMP/redis.pass")
cat >"$SL_TMP/node1.yaml" <<EOF
devices: []
rules: $SL_TMP/rules.yaml
http:
  listen: 127.0.0.1:8081
  token_file: $SL_API_TOKEN_FILE
sync:
  node: 1
  layout: central
  backend: redis
  url: redis://127.0.0.1:$RPORT
  interval: 1s
  password_file: $SL_TMP/redis.pass
EOF

# The fake: MODE (a file, read at each command) says how it answers;
# every connection and AUTH is counted per listener in conns.PORT and
# auths.PORT
cat >"$SL_TMP/fake.py" <<'EOF'
import socket, sys, threading, time

tmp, port, trap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lock = threading.Lock()

def bump(name):
    with lock:
        try:
            n = int(open(f"{tmp}/{name}").read())
        except (OSError, ValueError):
            n = 0
        open(f"{tmp}/{name}", "w").write(str(n + 1))

def commands(f):
    """each command as a list of bytes (RESP arrays of bulk strings)"""
    while True:
        line = f.readline()
        if not line:
            return
        if not line.startswith(b"*"):
            continue
        args = []
        for _ in range(int(line[1:])):
            n = int(f.readline()[1:])
            args.append(f.read(n + 2)[:-2])
        yield args

def answer(c, args, me):
    mode = open(f"{tmp}/mode").read().strip()
    name = args[0].upper()
    if name == b"AUTH":
        bump(f"auths.{me}")
        return c.sendall(b"+OK\r\n")
    if name == b"CLUSTER":
        if mode == "director":
            return c.sendall(b"*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n" % trap)
        return c.sendall(b"-ERR This instance has cluster support disabled\r\n")
    if name == b"SCRIPT":
        return c.sendall(b"$40\r\n" + b"f" * 40 + b"\r\n")
    if name != b"EVALSHA":
        return c.sendall(b"+OK\r\n")
    if mode == "trickle":
        for b in b"$100\r\n" + b"0" * 100 + b"\r\n":
            c.sendall(bytes([b]))
            time.sleep(0.04)
        return
    if mode == "flood":
        size, chunk = 150 << 20, b"x" * 65536
        c.sendall(b"$%d\r\n" % size)
        for _ in range(size // len(chunk)):
            c.sendall(chunk)
        return c.sendall(b"\r\n")
    # a central check's answer: allowed, used 1, remaining 3
    return c.sendall(b"*5\r\n:1\r\n:1\r\n:3\r\n:0\r\n:0\r\n")

def serve(c, me):
    bump(f"conns.{me}")
    try:
        for args in commands(c.makefile("rb")):
            answer(c, args, me)
    except (OSError, ValueError):
        pass
    c.close()

def listen(p):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", p))
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, p), daemon=True).start()

threading.Thread(target=listen, args=(trap,), daemon=True).start()
listen(port)
EOF

count() { cat "$SL_TMP/$1" 2>/dev/null || echo 0; }

# check TAG: one /v1/check of rule api, its status, decision and seconds
check() {
	in_server curl -s -m 10 -o "$SL_TMP/$1.json" -w '%{http_code} %{time_total}\n' \
		"http://127.0.0.1:8081/v1/check?rule=api&key=k-$1" >"$SL_TMP/$1.code"
	printf '%s %s\n' "$(json_get "d.get('decision')" "$SL_TMP/$1.json" 2>/dev/null)" \
		"$(cat "$SL_TMP/$1.code")"
}

body() {
	local got t hwm i ok pid

	sl_netns_setup
	echo director >"$SL_TMP/mode"
	sl_bg FAKE_PID nsenter --net="/run/netns/$NS_S" "$SL_PY" "$SL_TMP/fake.py" \
		"$SL_TMP" "$RPORT" "$TRAP"
	for _ in $(seq 1 50); do
		[ -n "$(in_server ss -Hltn "sport = :$TRAP")" ] && break
		sleep 0.1
	done
	node_start 1
	pid=${NODE_PID[1]}

	# ---- 1: a server that directs ----
	got=$(check dir1)
	sleep 2.5	# two sync rounds, each reading CLUSTER SLOTS at connect
	check dir2 >/dev/null
	tap_eq "a server naming another node in CLUSTER SLOTS: no connection and no AUTH reach it (sync.cluster not set)" \
		"$(count "conns.$TRAP") $(count "auths.$TRAP")" "0 0"
	tap_eq "... and the configured server keeps deciding: central" "${got%% *}" central

	# ---- 2: a server that trickles ----
	echo trickle >"$SL_TMP/mode"
	ok=1
	for i in 1 2 3; do
		got=$(check tr$i)
		t=${got##* }
		diag "trickling store: check $i: $got"
		case "$got" in
		"local 200 "*) ;;
		*) ok=0 ;;
		esac
		# the deadline is half the 1 s interval; well under a second
		awk -v t="$t" 'BEGIN { exit !(t < 1.0) }' || ok=0
	done
	tap_eq "a store answering a byte every 40 ms: each check decided locally (allowed) in under 1 s" "$ok" 1
	# /healthz while a check waits on the store (past the backoff, so
	# the check asks it again)
	sleep 5.5
	check tr4 >/dev/null &
	i=$!
	sleep 0.1
	got=$(in_server curl -s -m 10 -o /dev/null -w '%{http_code} %{time_total}' \
		http://127.0.0.1:8081/healthz)
	wait "$i"
	diag "trickling store: /healthz during a check $got; the check: $(cat "$SL_TMP/tr4.code")"
	if [ "${got%% *}" != 000 ] && awk -v t="${got##* }" 'BEGIN { exit !(t < 1.0) }'; then
		tap_ok "... and /healthz answers in under 1 s while a check waits on the store"
	else
		tap_fail "... and /healthz answers in under 1 s while a check waits on the store" "got $got"
	fi

	# ---- 3: a server that floods ----
	# the peak from here on: VmHWM reset to the RSS now (clear_refs 5)
	echo 5 >"/proc/$pid/clear_refs"
	rss0=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status")
	echo flood >"$SL_TMP/mode"
	sleep 5.5	# past the store's backoff: the next check asks it
	ok=1
	for i in 1 2; do
		got=$(check fl$i)
		diag "flooding store: check $i: $got"
		case "$got" in "local 200 "*) ;; *) ok=0 ;; esac
		sleep 5.5
	done
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status")
	diag "flooding store: the service's VmHWM ${hwm} kB, from ${rss0} kB"
	[ -n "$hwm" ] && [ -n "$rss0" ] && hwm=$((hwm - rss0))
	tap_eq "a 150 MB reply: checks decided locally (fail open)" "$ok" 1
	if [ -n "$hwm" ] && [ "$hwm" -lt "$HWM_MAX_KB" ]; then
		tap_ok "... and the service's peak RSS grows by under $((HWM_MAX_KB / 1024)) MiB (${hwm} kB)"
	else
		tap_fail "... and the service's peak RSS grows by under $((HWM_MAX_KB / 1024)) MiB" "VmHWM grew ${hwm} kB"
	fi

	sl_stop "$pid"
	tap_eq "SIGTERM stops it with status 0" "$STOP_RC" 0
	sl_stop "$FAKE_PID"
	tap_elapsed "$START" 90
	tap_done
}

sl_run body
