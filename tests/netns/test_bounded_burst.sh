#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The all-node burst on real traffic (issue 14): 4 nodes on `sync: {
# layout: bounded }` (multinode_lib.sh's fleet, test_multinode.sh's set-up),
# and a new client that sends its whole limit to every node at once.
#
#   1. bounded: a client unknown to the fleet (rule 'burst': 100 per 20 s)
#      sends 100 to each node within 100 ms, 4 x its limit inside one
#      200 ms sync interval; then 4 x its limit rate to all nodes for two
#      windows and a second. Fleet-wide, from the receivers' kernel
#      timestamps, each whole window gets the limit / 2 .. 1.1 x the limit,
#      and the busiest 20 s interval at most 1.1 x plus an allowance for
#      the asynchronous rounds (below);
#   2. the control: the same burst, a new client again, with the nodes
#      restarted on delayed-sync, passes more than 1.1 x (every node takes
#      the limit before it hears of the others): the check above can fail;
#   0. before both, node 1's HTTP API under bounded: quick checks of a new
#      key (rule 'api': 10 per 60 s) on that node alone. The node holds
#      the key to its share of a first contact: every 429 says remaining 0
#      and a retry_after_s of at least 1, the RateLimit and Retry-After
#      headers say what the JSON says, and a check after that Retry-After
#      passes (the next round shows where the key is).
#
# The rounds are the real ones: every node runs its own 200 ms timer, from
# its own start, so the rounds of two nodes are not aligned, where the
# bound of include/sl_peer.h assumes one round for all. Two consequences:
#  - the over-limit traffic starts once every node's peer view holds what
#    the others passed in the burst (200 to 800 ms after it): a node whose
#    round begins before its peers' messages of the burst arrive sees only
#    its own units in the round's base, takes 9/10 of the room that seems
#    left, and passes what arrives meanwhile. Measured with the traffic
#    started at once instead, two runs: 108 in the burst's window, and 110
#    (two nodes took one more each), exactly 1.1 x, with nothing to spare;
#  - in the busiest interval, where the burst leaves the window and every
#    node sees the room at once, a node's share is of what it knew, one
#    round late at most: the allowance is the over-limit traffic of the
#    other nodes for two intervals (one round's period, one lateness), as
#    test_multinode.sh allows delayed sync.
# A node whose round begins during its own part of the burst (about a
# millisecond of 200) takes what is left of its 100: not allowed for (the
# burst window would show about 180).
#
# Usage: test_bounded_burst.sh BUILD_DIR   (prints TAP lines)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}"
# shellcheck source=multinode_lib.sh
. "$here/multinode_lib.sh"
mn_init

W=20
LIMIT=100
PORT=13
TAIL_PPS=$((4 * LIMIT / W))		# fleet-wide: 4 x the limit rate
TAIL_S=$((2 * W + 1))			# two whole windows after the burst
MAX=$((LIMIT * 11 / 10))		# NFR-1: 1.1 x the limit
MN_HTTP_PORT=8080			# node 1's API (multinode_lib.sh)
API_KEY=fresh-$$			# a key no node has seen
BURSTER=10.97.0.20			# the burst under bounded
CONTROL=10.97.0.21			# the same under delayed-sync
RES=""					# burst_windows' result

write_rules() {
	cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - name: burst
    protocol: udp
    ports: $PORT
    limit: $LIMIT
    window: ${W}s
  - name: api
    protocol: udp
    ports: 14
    limit: 10
    window: 60s
EOF
}

# api_checks N: N checks of $API_KEY against rule 'api' on node 1, one
# connection, at once; a JSON list of {status, body, headers}
api_checks() {
	in_node 1 "$SL_PY" - "$MN_HTTP_PORT" "$API_KEY" "$1" <<'PY'
import http.client, json, os, sys
port, key, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
out = []
for _ in range(n):
    c.request("GET", f"/v1/check?rule=api&key={key}",
              headers={"Authorization": "Bearer " + os.environ["SL_API_TOKEN"]})
    r = c.getresponse()
    out.append({"status": r.status, "body": json.loads(r.read()),
                "headers": {k.lower(): v for k, v in r.getheaders()}})
print(json.dumps(out))
PY
}

# answers_agree: the problems of a JSON list of api_checks' answers, one a
# line (none: all agree): a 429 with remaining > 0 or retry_after_s < 1,
# and headers that say otherwise than the body
answers_agree() {
	"$SL_PY" -c '
import json, re, sys
for i, a in enumerate(json.load(sys.stdin)):
    b, h = a["body"], a["headers"]
    m = re.search(r";r=(\d+);t=(\d+)", h.get("ratelimit", ""))
    r, t = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    say = "check %d: %d %s RateLimit %s Retry-After %s" % (
        i + 1, a["status"], json.dumps(b), h.get("ratelimit"),
        h.get("retry-after"))
    if r != b["remaining"]:
        print(say + ": RateLimit r= is not the remaining of the body")
    if a["status"] == 429:
        if b["remaining"] != 0 or b["retry_after_s"] < 1 or b["allowed"]:
            print(say + ": a 429 must say remaining 0, retry_after_s >= 1")
        if t != b["retry_after_s"] or \
                h.get("retry-after") != str(b["retry_after_s"]):
            print(say + ": t= or Retry-After is not retry_after_s")
    elif a["status"] == 200 and (not b["allowed"] or b["retry_after_s"]):
        print(say + ": a 200 says allowed and retry_after_s 0")
'
}

test_http_answers() {
	local got bad n429 wait last
	# a service that has answered before: a check of another key, and
	# the quick checks some sync rounds later
	API_KEY=earlier-$$ api_checks 1 >/dev/null
	sleep 1
	got=$(api_checks 12)
	bad=$(answers_agree <<<"$got")
	n429=$(json_get "sum(a['status'] == 429 for a in d)" <<<"$got")
	diag "api: 12 quick checks of $API_KEY on node 1 (status:remaining/retry_after_s): $(json_get "' '.join('%d:%s/%s' % (a['status'], a['body']['remaining'], a['body']['retry_after_s']) for a in d)" <<<"$got")"
	tap_eq "api: node 1 holds a new key to its share under bounded (some of 12 quick checks are 429)" \
		"$([ "${n429:-0}" -gt 0 ] && echo yes || echo "no 429")" yes
	tap_eq "api: every 429 says remaining 0 and retry_after_s >= 1, and RateLimit and Retry-After say what the JSON says" \
		"${bad:-all agree}" "all agree"
	wait=$(json_get "max([a['body']['retry_after_s'] for a in d if a['status'] == 429] or [0])" <<<"$got")
	sleep "$wait"
	last=$(api_checks 1)
	tap_eq "api: a check $wait s later, when the last 429's Retry-After said, passes" \
		"$(json_get "d[0]['status']" <<<"$last")" 200
}

# burst SRC NAME: LIMIT datagrams from SRC to each node in turn, unpaced;
# the sender's JSON in $SL_TMP/NAME.json; ok if all were sent within
# 100 ms
burst() {
	local src=$1 name=$2 i dsts=() ms
	for i in $(seq 1 "$NODES"); do dsts+=("$(node_data "$i")"); done
	in_client "$SL_PY" "$MN_PY" burst "$src" "$PORT" "$LIMIT" "${dsts[@]}" \
		>"$SL_TMP/$name.json"
	ms=$(json_get "int((d['last'] - d['first']) * 1000)" "$SL_TMP/$name.json")
	if [ "$(sent_by "$name")" = $((NODES * LIMIT)) ] && [ "$ms" -lt 100 ]; then
		tap_ok "$name: $src sent $LIMIT to each of the $NODES nodes in $ms ms ($NODES x its limit inside one 200 ms interval)"
	else
		tap_fail "$name: $src sent $LIMIT to each of the $NODES nodes within 100 ms" \
			"sent $(sent_by "$name") in $ms ms"
	fi
}

passed_per_node() {	# the rule's passed counter of every node, a space before each
	local i
	for i in $(seq 1 "$NODES"); do printf ' %s' "$(rule_stat "$i" burst passed)"; done
}

# peers_know SRC: every node's peer view holds what the other nodes passed
# of SRC
peers_know() {
	local i total=0 p=() want got
	for i in $(seq 1 "$NODES"); do
		p[i]=$(rule_stat "$i" burst passed)
		total=$((total + p[i]))
	done
	for i in $(seq 1 "$NODES"); do
		want=$((total - p[i]))
		got=$(peer_units "$i" "$1")
		[ "$got" = "$want" ] || { echo "node $i's peer view: $got of $want"; return 1; }
	done
}

# burst_windows NAME SRC N: after the receivers NAME stopped, ok if each
# got what its node passed; then in RES the windows of SRC (fleet_windows)
# over N whole windows from its first datagram to arrive anywhere (the
# namespaces share one clock)
burst_windows() {
	local i v bad="" t0
	for i in $(seq 1 "$NODES"); do
		v=$(rule_stat "$i" burst passed)
		[ "$(rx_count "$1" "$i")" = "$v" ] || bad="$bad node $i: received $(rx_count "$1" "$i"), passed $v;"
	done
	tap_eq "$1: accounting: every node's receiver got exactly what its XDP program passed (rule burst: passed)" \
		"${bad:- all equal}" " all equal"
	t0=$(first_arrival "$1" "$2")
	RES=$(fleet_windows "$W" "$2" "$t0" \
		"$(awk -v t="$t0" -v w="$W" -v n="$3" 'BEGIN { printf "%.6f", t + n * w + 0.001 }')" "$1")
}

test_bounded() {
	local i count rate res sent=0 v
	rate=$(awk -v a="$TAIL_PPS" -v n="$NODES" 'BEGIN { print a / n }')
	count=$(awk -v r="$rate" -v s="$TAIL_S" 'BEGIN { printf "%d", r * s }')
	for i in $(seq 1 "$NODES"); do recv_ts_start "$i" "$PORT" brx $((TAIL_S + 20)); done
	burst "$BURSTER" bounded
	if poll 5 peers_know "$BURSTER"; then
		tap_ok "bounded: every node's peer view holds what the others passed in the burst (${POLL_MS} ms after it)"
	else
		tap_fail "bounded: every node's peer view holds what the others passed in the burst within 5 s" "$POLL_OUT"
	fi
	diag "bounded: the burst passed per node:$(passed_per_node); then $BURSTER to each node at $rate pps ($TAIL_PPS fleet-wide: 4 x $LIMIT/${W}s) for ${TAIL_S}s"
	for i in $(seq 1 "$NODES"); do
		send_bg "tail$i" "$BURSTER" "$i" "$PORT" "$count" "$rate"
	done
	for i in $(seq 1 "$NODES"); do
		v=tail$i
		sl_wait "${!v}" || tap_fail "sl-traffic sent all of the over-limit traffic to node $i"
		sent=$((sent + $(sent_by "tail$i")))
	done
	recv_ts_stop
	burst_windows brx "$BURSTER" 2
	res=$RES
	diag "bounded: fleet-wide per ${W}s window: $(json_get "d['fixed']" <<<"$res"); busiest ${W}s interval: $(json_get "d['sliding_max']" <<<"$res"); passed per node:$(passed_per_node); over-limit datagrams sent after the burst: $sent"
	tap_eq "bounded: the datagrams span 2 whole ${W}s windows" "$(json_get "len(d['fixed'])" <<<"$res")" 2
	# the busiest interval: 1.1 x and the asynchronous rounds' allowance
	# (the header)
	windows_check bounded "$res" "$LIMIT" "$(rounds_bound "$MAX" "$TAIL_PPS")" \
		"1.1 x and the rounds' allowance:"
}

# the nodes' daemons stopped (TERM: they detach) and started again on LAYOUT
restart_fleet() {
	local i
	for i in $(seq 1 "$NODES"); do kill -TERM "${DAEMON[i]}"; done
	for i in $(seq 1 "$NODES"); do
		sl_stop "${DAEMON[i]}"
		[ "$STOP_RC" = 0 ] || diag "the daemon of node $i exited with status $STOP_RC"
	done
	mn_write_configs "$1"
	mn_daemons_up "restart on $1"
}

test_control_delayed_sync() {
	local i res n
	restart_fleet delayed-sync
	for i in $(seq 1 "$NODES"); do recv_ts_start "$i" "$PORT" crx 20; done
	burst "$CONTROL" control
	recv_ts_stop
	# the first window, of which only the burst was sent: the rest of it
	# would only add
	burst_windows crx "$CONTROL" 1
	res=$RES
	n=$(json_get "d['fixed'][0]" <<<"$res")
	diag "control (delayed-sync): the burst's window got $n through fleet-wide; per node:$(for i in $(seq 1 "$NODES"); do printf ' %s' "$(rx_count crx "$i")"; done)"
	if [ "$n" -gt "$MAX" ]; then
		tap_ok "control: under delayed-sync the same burst passes more than 1.1 x $LIMIT ($n): the bounded check can fail"
	else
		tap_fail "control: under delayed-sync the same burst passes more than 1.1 x $LIMIT" "got $n"
	fi
}

main() {
	local start=$SECONDS t
	mn_setup_network "$BURSTER" "$CONTROL"
	write_rules
	mn_write_configs bounded
	mn_fleet_start
	diag "startup: $((SECONDS - start))s"; t=$SECONDS
	test_http_answers
	test_bounded
	diag "bounded: $((SECONDS - t))s"; t=$SECONDS
	test_control_delayed_sync
	diag "control: $((SECONDS - t))s"
	tap_elapsed "$start" 70
	tap_done
}

sl_run main
