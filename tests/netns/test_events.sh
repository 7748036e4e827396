#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `slicelimit events` and `slicelimit top --watch` on real traffic: clients
# in one namespace send bursts over a veth into a server namespace where
# slicelimit runs in native XDP. Windows are 60 s, so nothing ages out
# during the run: each abusive client must give exactly one drop event
# (the first drop of its window, not one per dropped packet), naming its
# rule and client, with used == limit.
#
# Usage: test_events.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}"

LIMIT=20
BURST=100		# per client: 80 over the limit, 80 drops, 1 event
PORT=7101		# rule 'burst'
PORT_OTHER=7102		# rule 'other'
PORT_GONE=7103		# rule 'gone', removed while its event waits

ABUSER_A=${CLIENT4[0]}
ABUSER_B=${CLIENT4[1]}
COMPLIANT=${CLIENT4[2]}
ABUSER_OTHER=${CLIENT4[3]}
ABUSER_CPUS=${CLIENT4[4]}
ABUSER_GONE=${CLIENT4[5]}
ABUSER_V6=${CLIENT6[0]}

rules_yaml() {		# [with_gone]
	cat <<EOF
rules:
  - name: burst
    protocol: udp
    ports: $PORT
    limit: $LIMIT
    window: 60s
    key: {ipv4_prefix: 32, ipv6_prefix: 64}
  - name: other
    protocol: udp
    ports: $PORT_OTHER
    limit: 5
    window: 60s
    key: {ipv4_prefix: 24}
EOF
	[ "${1:-}" = with_gone ] && cat <<EOF
  - name: gone
    protocol: udp
    ports: $PORT_GONE
    limit: 3
    window: 60s
EOF
}

# ---- helpers ----

# burst SRC DST PORT COUNT [sl-traffic options]: send from the client
# namespace; a failed test unless all COUNT went out
burst() {
	local out
	out=$(sl_send "$@" 2>&1) ||
		tap_fail "sl-traffic sent all $4 datagrams from $1 to port $3" "$out"
}

# burst_on_cpu CPU SRC DST PORT COUNT: the same, pinned to one CPU. veth
# hands a frame to the peer's XDP on the sending CPU, so this chooses the
# CPU slicelimit counts on.
burst_on_cpu() {
	local cpu=$1 out
	shift
	out=$(in_client taskset -c "$cpu" "$SL_TRAFFIC" send --src "$1" \
		--dst "$2" --port "$3" --count "$4" --json 2>&1) ||
		tap_fail "sl-traffic sent all $4 datagrams from $1 on CPU $cpu" "$out"
}

# events_start NAME ARGS...: `slicelimit events ARGS` in the background,
# its stdout in $SL_TMP/NAME.out; the pid (nsenter execs slicelimit) in
# EV_PID_NAME
events_start() {
	local name=$1
	shift
	sl_bg "EV_PID_$name" nsenter --net="/run/netns/$NS_S" "$SL_BIN" \
		events "$@" >"$SL_TMP/$name.out" 2>"$SL_TMP/$name.err"
}

# events_wait NAME SECONDS: wait (bounded) for the reader to end by itself
# and set EV_RC to its exit status, or to "running" if it had to be
# killed. Not from a $(subshell): only this shell can wait for the reader.
events_wait() {
	local var=EV_PID_$1
	for _ in $(seq 1 $(($2 * 20))); do
		kill -0 "${!var}" 2>/dev/null || break
		sleep 0.05
	done
	EV_RC=0
	if kill -0 "${!var}" 2>/dev/null; then
		kill -KILL "${!var}" 2>/dev/null
		sl_wait "${!var}"
		EV_RC=running
		return
	fi
	sl_wait "${!var}" || EV_RC=$?
}

# events_stop NAME: SIGTERM to the reader, then events_wait
events_stop() {
	local var=EV_PID_$1
	kill -TERM "${!var}" 2>/dev/null
	events_wait "$1" 5
}

# ev_json NAME EXPR: EXPR over the list `e` of the reader's JSON lines
ev_json() {
	"$SL_PY" -c '
import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
v = eval(sys.argv[2], {"e": e})
print(json.dumps(v) if isinstance(v, (dict, list)) or v is None else v)
' "$SL_TMP/$1.out" "$2"
}

expect_rc() {		# WANT DESC CMD...
	local want=$1 desc=$2 rc=0
	shift 2
	"$@" >/dev/null 2>&1 || rc=$?
	tap_eq "$desc" "$rc" "$want"
}

elapsed_ms() {		# since START_NS
	echo $(( ($(date +%s%N) - START_NS) / 1000000 ))
}

# ---- the tests, in the order they run ----

test_setup_attach_and_apply() {
	rules_yaml with_gone >"$SL_TMP/rules.yaml"
	tap_check "attach $VETH_S --mode xdp" sl attach "$VETH_S" --mode xdp
	tap_check "rules apply (burst limit $LIMIT, other limit 5, gone limit 3)" \
		sl rules apply "$SL_TMP/rules.yaml"
	sl_alone
}

test_events_timeout_with_no_drops_prints_nothing() {
	local rc ms
	START_NS=$(date +%s%N)
	rc=0
	sl -j events --timeout 700ms >"$SL_TMP/quiet.out" 2>&1 || rc=$?
	ms=$(elapsed_ms)
	tap_eq "events --timeout 700ms with no drops exits 0 with no output" \
		"$rc/$(wc -c <"$SL_TMP/quiet.out")" "0/0"
	if [ "$ms" -ge 650 ] && [ "$ms" -le 10000 ]; then
		tap_ok "events --timeout 700ms returns after about 0.7 s (${ms} ms)"
	else
		tap_fail "events --timeout 700ms returns after about 0.7 s" "took ${ms} ms"
	fi
}

test_events_one_per_client_per_window() {
	sl_recv_start burst udp "$SRV4" "$PORT"
	# the reader starts first; it is stopped by SIGTERM once the bursts
	# are in (the count is a bound only)
	events_start burst --json --count 50 --timeout 20s
	sleep 0.3
	# each burst from one CPU: the per-CPU case has its own test below
	burst_on_cpu 0 "$ABUSER_A" "$SRV4" "$PORT" "$BURST"
	burst_on_cpu 0 "$ABUSER_B" "$SRV4" "$PORT" "$BURST"
	burst_on_cpu 0 "$COMPLIANT" "$SRV4" "$PORT" $((LIMIT / 2))
	burst_on_cpu 1 "$ABUSER_OTHER" "$SRV4" "$PORT_OTHER" 30
	# a second burst in the same window: still no new event
	burst_on_cpu 0 "$ABUSER_A" "$SRV4" "$PORT" "$BURST"
	sl_recv_stop burst
	sleep 0.5
	events_stop burst
	tap_eq "events stops on SIGTERM with exit 0" "$EV_RC" 0
	tap_eq "the receiver got exactly $LIMIT from each abusive client" \
		"$(received burst "$ABUSER_A")/$(received burst "$ABUSER_B")" \
		"$LIMIT/$LIMIT"
	tap_eq "every events --json line parses as an object" \
		"$(ev_json burst "all(isinstance(x, dict) for x in e)")" "True"
	tap_eq "3 events for 2 bursts of $BURST, a repeat burst and a client of rule 'other' (one per client, not one per packet)" \
		"$(ev_json burst "len(e)")" 3
	tap_eq "abusive client A: exactly one event, after 2 bursts and $((2 * BURST - LIMIT)) drops" \
		"$(ev_json burst "len([x for x in e if x['client'] == '$ABUSER_A'])")" 1
	tap_eq "abusive client B: exactly one event" \
		"$(ev_json burst "len([x for x in e if x['client'] == '$ABUSER_B'])")" 1
	tap_eq "the compliant client has no event" \
		"$(ev_json burst "len([x for x in e if x['client'] == '$COMPLIANT'])")" 0
	tap_eq "A's and B's events name rule 'burst' and used == limit ($LIMIT)" \
		"$(ev_json burst "sorted((x['client'], x['rule'], x['used']) for x in e if x['rule'] == 'burst')")" \
		"[[\"$ABUSER_A\", \"burst\", $LIMIT], [\"$ABUSER_B\", \"burst\", $LIMIT]]"
	tap_eq "rule 'other' keys by /24: its event names the client 10.77.0.0/24, used 5" \
		"$(ev_json burst "[(x['client'], x['used']) for x in e if x['rule'] == 'other']")" \
		'[["10.77.0.0/24", 5]]'
	tap_eq "every event has the fields time_ms, client, rule, used, retry_after_ms" \
		"$(ev_json burst "all({'time_ms', 'client', 'rule', 'used', 'retry_after_ms'} <= set(x) for x in e)")" \
		"True"
	tap_eq "retry_after_ms is within the 60 s window, and above 0" \
		"$(ev_json burst "all(0 < x['retry_after_ms'] <= 60000 for x in e)")" "True"
	tap_eq "time_ms is Unix time: within 30 s of now" \
		"$(ev_json burst "all(abs(x['time_ms'] - $(date +%s%3N)) < 30000 for x in e)")" \
		"True"
}

test_events_count_ends_the_reader() {
	# human output this time; --count 1 must end it without a signal
	events_start count --count 1 --timeout 15s
	burst_on_cpu 0 "$ABUSER_V6" "$SRV6" "$PORT" 60
	events_wait count 10
	tap_eq "events --count 1 exits 0 by itself after one event" "$EV_RC" 0
	tap_eq "the human output is a header and one line" \
		"$(wc -l <"$SL_TMP/count.out")" 2
	if grep -q "^[0-9-]* [0-9:.]*  fd77:0:0:1::/64 *burst *$LIMIT *[0-9]*s$" \
		"$SL_TMP/count.out"; then
		tap_ok "the human line: time, IPv6 client as its /64, rule, used, Retry-After"
	else
		tap_fail "the human line: time, IPv6 client as its /64, rule, used, Retry-After" \
			"$(cat "$SL_TMP/count.out")"
	fi
}

test_event_of_a_removed_rule_names_its_id() {
	local id rc
	id=$(sl -j rules list | json_get "[r['id'] for r in d['rules'] if r['name'] == 'gone'][0]")
	# no reader: the event waits in the ring buffer
	burst_on_cpu 0 "$ABUSER_GONE" "$SRV4" "$PORT_GONE" 10
	rules_yaml >"$SL_TMP/rules-no-gone.yaml"
	tap_check "rules apply without rule 'gone'" sl rules apply "$SL_TMP/rules-no-gone.yaml"
	events_start gone --json --count 1 --timeout 5s
	events_wait gone 8
	tap_eq "an event that waited in the ring buffer is read by the next reader" "$EV_RC" 0
	tap_eq "the event of a removed rule names it 'id $id'" \
		"$(ev_json gone "[(x['rule'], x['rule_id'], x['client'], x['used']) for x in e]")" \
		"[[\"id $id\", $id, \"$ABUSER_GONE\", 3]]"
}

test_top_watch_without_a_terminal() {
	local out=$SL_TMP/watch.out
	sl top --watch --count 2 --interval 200ms >"$out" 2>&1
	tap_eq "top --watch --count 2 to a file exits 0" "$?" 0
	if LC_ALL=C grep -q $'\033' "$out"; then
		tap_fail "top --watch off a terminal prints no escape codes" "$(cat -v "$out")"
	else
		tap_ok "top --watch off a terminal prints no escape codes"
	fi
	# a snapshot: "DATE TIME  every 200ms  ..." header, rules, clients
	tap_eq "two snapshots, each under a timestamp header, a blank line between" \
		"$(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}  every 200ms  ' "$out")/$(grep -c '^CLIENT ' "$out")/$(awk 'NR > 1 && prev == "" && /^[0-9][0-9][0-9][0-9]-/ {n++} {prev = $0} END {print n + 0}' "$out")" \
		"2/2/1"
	tap_eq "both snapshots show both abusive clients" \
		"$(grep -c "^$ABUSER_A " "$out")/$(grep -c "^$ABUSER_B " "$out")" "2/2"
}

test_top_watch_json_lines_parse() {
	local out=$SL_TMP/watch.json
	sl -j top --watch --count 2 --interval 200ms >"$out" 2>&1
	tap_eq "top --watch --json --count 2: two lines, each a JSON object" \
		"$("$SL_PY" -c '
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
print(len(docs), all(isinstance(d, dict) for d in docs))' "$out" 2>&1)" "2 True"
	tail -1 "$out" >"$SL_TMP/watch-last.json"
	tap_eq "the last refresh ranks first the three clients at the limit (A, B, the IPv6 /64)" \
		"$(json_get "sorted(c['client'] for c in d['clients'][:3] if c['used'] == $LIMIT)" \
			"$SL_TMP/watch-last.json")" \
		"[\"$ABUSER_A\", \"$ABUSER_B\", \"fd77:0:0:1::/64\"]"
	tap_eq "the per-rule counters of 'burst': passed $((3 * LIMIT + LIMIT / 2)), dropped $((3 * BURST + 60 - 3 * LIMIT))" \
		"$(json_get "[(r['passed'], r['dropped']) for r in d['rules'] if r['rule'] == 'burst']" \
			"$SL_TMP/watch-last.json")" \
		"[[$((3 * LIMIT + LIMIT / 2)), $((3 * BURST + 60 - 3 * LIMIT))]]"
}

test_top_watch_on_a_terminal_fits_it() {
	local out=$SL_TMP/tty.out
	# script(1) gives the command a pseudo-terminal of 60 x 8
	in_server script -q -e -c "stty cols 60 rows 8; $SL_BIN top --watch --count 2 --interval 200ms" \
		/dev/null </dev/null >"$out" 2>&1
	tap_eq "top --watch on a terminal exits 0" "$?" 0
	tap_eq "on a terminal it redraws in place (cursor home, clear to end of line)" \
		"$(LC_ALL=C grep -c $'\033\\[H' "$out" | awk '{print ($1 > 0)}')" 1
	tap_eq "on a 60 x 8 terminal no line is wider than 60 and a frame has at most 7 lines" \
		"$("$SL_PY" -c '
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
frames = [f for f in raw.split("\x1b[H")[1:]]
widths, heights = [], []
for f in frames:
    f = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", f)
    lines = [l for l in f.replace("\r", "").split("\n") if l]
    heights.append(len(lines))
    widths += [len(l) for l in lines]
print(len(frames) == 2 and max(widths) <= 60 and max(heights) <= 7)' "$out")" "True"
}

test_events_from_two_cpus_one_event_per_window() {
	local got
	if [ "$(nproc)" -lt 2 ]; then
		tap_ok "one event per window from two CPUs # SKIP one CPU only"
		return
	fi
	events_start cpus --json --count 50 --timeout 20s
	# the client's first 40 datagrams are counted on CPU 0 (20 dropped),
	# the next 40 on CPU 1: still the same client, in the same window
	burst_on_cpu 0 "$ABUSER_CPUS" "$SRV4" "$PORT" 40
	burst_on_cpu 1 "$ABUSER_CPUS" "$SRV4" "$PORT" 40
	sleep 0.5
	events_stop cpus
	got=$(ev_json cpus "len([x for x in e if x['client'] == '$ABUSER_CPUS'])")
	if [ "$EV_RC/$got" = "0/1" ]; then
		tap_ok "a client dropped on two CPUs in one window gives one event"
	else
		tap_fail "a client dropped on two CPUs in one window gives one event" \
			"reader exit $EV_RC, $got events for $ABUSER_CPUS:" \
			"$(cat "$SL_TMP/cpus.out")"
	fi
}

test_watchers_end_when_detached() {
	local top_rc=0
	events_start detached --json --timeout 20s
	sl_bg TOP_PID nsenter --net="/run/netns/$NS_S" "$SL_BIN" -j top --watch \
		--interval 200ms >"$SL_TMP/top-detached.out" 2>"$SL_TMP/top-detached.err"
	sleep 0.5
	sl_alone
	tap_check "detach --all while events and top --watch run" sl detach --all
	# nothing of ours is pinned now: the cleanup must not detach
	# whatever another run pins next
	rm -f "$SL_TMP/owns-pins"
	events_wait detached 5
	tap_eq "events ends with exit 1 once the instance is detached" "$EV_RC" 1
	tap_eq "its last --json line is the error, naming the ring buffer sl_events" \
		"$(tail -1 "$SL_TMP/detached.out" | json_get "'sl_events' in d['error']" 2>&1)" "True"
	for _ in $(seq 1 100); do
		kill -0 "$TOP_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$TOP_PID" 2>/dev/null && top_rc=killed
	sl_wait "$TOP_PID" || { [ "$top_rc" = killed ] || top_rc=$?; }
	tap_eq "top --watch ends with exit 1 once the instance is detached" "$top_rc" 1
	tap_eq "its last --json line is the error" \
		"$(tail -1 "$SL_TMP/top-detached.out" | json_get "'error' in d")" "True"
}

# Last: our instance is detached by then. Another run may have taken the
# pins since; then "nothing loaded" cannot be seen, only skipped.
test_events_errors_when_nothing_is_pinned() {
	local err
	expect_rc 2 "exit 2: events --count 0" sl events --count 0
	expect_rc 2 "exit 2: events --timeout with no unit" sl events --timeout 5
	expect_rc 2 "exit 2: events with an extra argument" sl events extra
	expect_rc 2 "exit 2: top --count without --watch" sl top --count 2
	sl events --help >"$SL_TMP/help.out" 2>&1
	tap_eq "events --help exits 0 and names --count, --timeout and --json" \
		"$?/$(for o in --count --timeout --json; do grep -q -e "$o" "$SL_TMP/help.out" && echo "$o"; done | wc -l)" \
		"0/3"
	if [ -n "$(ls -A "$SL_PIN" 2>/dev/null)" ]; then
		tap_ok "events with nothing loaded # SKIP another run holds $SL_PIN"
		return
	fi
	expect_rc 1 "events exits 1 when nothing is loaded" \
		sl events --timeout 1s
	err=$(sl events --timeout 1s 2>&1 >/dev/null)
	case $err in
	*"nothing loaded under $SL_PIN"*)
		tap_ok "events says that nothing is loaded, and where" ;;
	*)	tap_fail "events says that nothing is loaded, and where" "got: $err" ;;
	esac
	tap_eq "events --json with nothing loaded prints a JSON {\"error\"}" \
		"$(sl -j events --timeout 1s 2>/dev/null | json_get "'error' in d")" "True"
	expect_rc 1 "top --watch exits 1 when nothing is loaded" \
		sl top --watch --count 1
}

main() {
	local start
	sl_claim_pins 30
	start=$SECONDS		# the wait for the pins is not the test's
	sl_netns_setup
	test_setup_attach_and_apply
	test_events_timeout_with_no_drops_prints_nothing
	test_events_one_per_client_per_window
	test_events_count_ends_the_reader
	test_event_of_a_removed_rule_names_its_id
	test_top_watch_without_a_terminal
	test_top_watch_json_lines_parse
	sl_alone
	test_top_watch_on_a_terminal_fits_it
	test_events_from_two_cpus_one_event_per_window
	test_watchers_end_when_detached
	test_events_errors_when_nothing_is_pinned
	tap_elapsed "$start" 180
	tap_done
}

sl_run main
