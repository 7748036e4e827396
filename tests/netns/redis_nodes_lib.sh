# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced after lib.sh by the tests of slicelimit nodes sharing one Redis
# (test_central.sh, test_redis_auth.sh): a redis-server on $RPORT in the
# server namespace, and node N a `slicelimit run` there with pins of its
# own (a mount namespace and bpffs each) and its HTTP API on
# 127.0.0.1:808N.

# redis_start [SERVER ARG...]: redis-server on $RPORT, up when it answers
# a PING; REDIS_CLI_ARGS (an array) logs redis-cli in for it
REDIS_CLI_ARGS=()
redis_start() {
	mkdir -p "$SL_TMP/redis"
	sl_bg REDIS_PID nsenter --net="/run/netns/$NS_S" redis-server \
		--port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$SL_TMP/redis" --logfile "$SL_TMP/redis/log" "$@"
	for _ in $(seq 1 100); do
		[ "$(in_server redis-cli -p "$RPORT" "${REDIS_CLI_ARGS[@]}" ping 2>/dev/null)" = PONG ] &&
			return 0
		sleep 0.05
	done
	die "redis-server did not start"
}

# node_start N: slicelimit run --config $SL_TMP/nodeN.yaml, up when its
# /metrics answers
node_start() {
	local n=$1
	sl_bg "NODE_PID[$n]" unshare --mount --propagation private \
		bash -c 'mount -t bpf bpf /sys/fs/bpf && exec nsenter --net="$0" "$1" run --config "$2"' \
		"/run/netns/$NS_S" "$SL_BIN" "$SL_TMP/node$n.yaml" 2>"$SL_TMP/node$n.log"
	for _ in $(seq 1 100); do
		[ "$(in_server curl -s -m 1 -o /dev/null -w '%{http_code}' \
			"http://127.0.0.1:808$n/metrics")" = 200 ] && return 0
		sleep 0.1
	done
	cat "$SL_TMP/node$n.log" >&2
	die "node $n did not answer on 127.0.0.1:808$n"
}

# metric NODE NAME: a sample of node NODE's /metrics (name with labels),
# or "none"
metric() {
	in_server curl -s -m 5 "http://127.0.0.1:808$1/metrics" |
		awk -v m="$2" '$1 == m { print $2; f = 1 } END { if (!f) print "none" }'
}
