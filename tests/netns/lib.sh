# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Helpers of the namespace tests and the demo; source it, don't run it.
#
#   sl_setup BUILD_DIR [TOOL...]      a test's start: sl_init from the build,
#                                     sl_need TOOL...
#   sl_init SLICELIMIT [SL_TRAFFIC]   names, temp dir, cleanup trap, tools
#   sl_config MODE RULES [YAML]       the service's config: one device, the
#                                     API on 127.0.0.1:8080 with the token
#   sl_need TOOL...                   bail out unless every TOOL is on PATH
#   fake_old_build                    the pinned build record made another build's
#   sl_api_code / sl_service_wait     the service's API, from the server
#   sl_service_start VAR LOG [CONFIG] slicelimit run, once its API answers
#                                     (curl sends $SL_API_TOKEN: CURL_HOME)
#   sl_run FUNCTION                   run the script's body, clean up after
#   sl_netns_setup                    client and server namespaces + veth
#   sl_alone                          bail out unless the pins hold ours only
#   sl ARGS...                        slicelimit in the server namespace
#   in_client / in_server CMD...      a command in one namespace
#   sl_recv_start / sl_recv_stop      a counting receiver in the server
#   sl_send / sl_send_bg              traffic from the client namespace
#   sl_bg / sl_wait                   background processes of the body
#   tap_ok / tap_fail / tap_eq / tap_check / tap_done
#
# Every name carries the prefix sl$$, so parallel runs do not clash on
# namespaces or links. The pins under /sys/fs/bpf/slicelimit would be one
# per host, so every run re-executes itself in a private mount namespace
# with a bpffs (and a /run/slicelimit) of its own: concurrent runs, and a
# slicelimit the host runs, never see each other's pins or locks
# (sl_claim_pins then only has to mount it).
#
# Why the body runs in a child (sl_run): bash 5.2.15 (Debian 12) loses a
# trapped signal that arrives while it runs a $(command substitution): the
# trap fails with "unexpected EOF while looking for matching `)'" and never
# runs. The tests are made of command substitutions, so the parent only
# waits, where traps are reliable. The body runs in a process group of its
# own, so everything it starts (receivers, senders, a slicelimit command
# half done) can be stopped, and waited for, before the cleanup detaches.

# A private mount namespace and bpffs for this run (see above). The
# namespaces and pins it creates live and die with it.
if [ -z "${SL_PRIVATE_BPFFS:-}" ]; then
	exec env SL_PRIVATE_BPFFS=1 unshare --mount --propagation private \
		bash "$0" "$@"
fi
mount -t bpf bpf /sys/fs/bpf || { echo "not ok - cannot mount a private bpffs"; exit 1; }
# The writers' lock and the API socket live in /run/slicelimit: one of
# this run's own too, so that concurrent runs never wait for each other.
mkdir -p /run/slicelimit && mount -t tmpfs -o mode=0755 tmpfs /run/slicelimit ||
	{ echo "not ok - cannot mount a private /run/slicelimit"; exit 1; }
# The service keeps root (as before the drop existed) unless a test asks
# for its user with --user: the slicelimit user need not exist here.
export SLICELIMIT_USER=${SLICELIMIT_USER:-root}

SL_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SL_PIN=/sys/fs/bpf/slicelimit

# The pyenv shim costs half a second a call; the system python3 is enough.
if [ -x /usr/bin/python3 ]; then SL_PY=/usr/bin/python3; else SL_PY=python3; fi

SL_P=sl$$			# prefix of every name this run creates
NS_C=${SL_P}c			# client namespace
NS_S=${SL_P}s			# server namespace
VETH_C=${SL_P}c0		# client end of the veth pair
VETH_S=${SL_P}s0		# server end: slicelimit attaches here

# Addresses. The server holds the first of each family; the clients all
# sit on one link. IPv6 uses an on-link /48 so clients can sit in
# different /64s (a rule keys IPv6 clients by /64 by default).
SRV4=10.77.0.1
SRV6=fd77::1
CLIENT4=(10.77.0.2 10.77.0.3 10.77.0.4 10.77.0.5 10.77.0.6 10.77.0.7 10.77.0.8 10.77.0.9)
CLIENT6=(fd77:0:0:1::2 fd77:0:0:1::3 fd77:0:0:2::2 fd77:0:0:3::2)

SL_PIDS=()			# the body's background processes
SL_CLEANED=0
SL_BODY=""			# the body's pid = its process group id
TAP_PASSED=0
TAP_FAILED=0

# ---- TAP ----

tap_ok() {		# DESC
	echo "ok - $1"
	TAP_PASSED=$((TAP_PASSED + 1))
}

tap_fail() {		# DESC [DIAGNOSTIC...]
	local d
	echo "not ok - $1"
	shift
	for d in "$@"; do
		printf '%s\n' "$d" | sed 's/^/#   /'
	done
	TAP_FAILED=$((TAP_FAILED + 1))
}

tap_eq() {		# DESC GOT WANT
	if [ "$2" = "$3" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "got '$2', want '$3'"
	fi
}

tap_check() {		# DESC CMD... : ok when CMD exits 0
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		tap_ok "$desc"
	else
		tap_fail "$desc" "command: $*" "$out"
	fi
}

# tap_elapsed START BUDGET: say how long the run took against the time it
# is meant to take. A diagnostic, not a check: a wall-clock time says as
# much about the machine's other load (tests/run.sh runs several files at
# once) as about the test, and a check that fails on a busy machine
# proves nothing. tests/run.sh prints each file's time and the total.
tap_elapsed() {
	local e=$((SECONDS - $1)) over=""
	[ "$e" -le "$2" ] || over=", over it"
	echo "# the whole run took ${e}s (budget ${2}s${over})"
}

# pins_gone: "gone" when this run's bpffs holds no slicelimit pins
pins_gone() {
	if [ -n "$(ls -A "$SL_PIN" 2>/dev/null)" ]; then echo pinned; else echo gone; fi
}

tap_done() {		# the closing comment; status 1 if anything failed
	echo "# $TAP_PASSED passed, $TAP_FAILED failed"
	[ "$TAP_FAILED" -eq 0 ]
}

diag() { printf '%s\n' "$*" | sed 's/^/# /'; }

# ---- JSON (read with python, never scraped) ----

# json_get EXPR [FILE]: print EXPR evaluated with d = the JSON document
# (from FILE, or stdin); dicts and lists come out as JSON, None as "null".
json_get() {
	"$SL_PY" -c '
import json, sys
d = json.load(open(sys.argv[2]) if len(sys.argv) > 2 else sys.stdin)
v = eval(sys.argv[1], {"d": d})
print(json.dumps(v) if isinstance(v, (dict, list)) or v is None else v)
' "$@"
}

# ---- setup and teardown ----

die() { echo "Bail out! $*"; exit 1; }

in_client() { nsenter --net="/run/netns/$NS_C" "$@"; }
in_server() { nsenter --net="/run/netns/$NS_S" "$@"; }

# slicelimit in the server namespace. nsenter, not `ip netns exec`: that
# remounts /sys, which hides the bpffs (and the pins) at /sys/fs/bpf.
sl() { in_server "$SL_BIN" "$@"; }

# service_state EXPR: EXPR over the "service" object of status --json (s:
# {} when there is none), e.g. "s['reloads_refused']"
service_state() {
	sl -j status | json_get "(lambda s: $1)(d['service'] or {})"
}

# wait_state EXPR WANT: wait (bounded: 5 s) until service_state EXPR is
# WANT: the service has handled a signal
wait_state() {
	local i
	for i in $(seq 1 50); do
		[ "$(service_state "$1" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# sl_api_code PATH: the HTTP status of GET $API PATH, from the server
# namespace (000: no answer); curl gets ${SL_API_ARGS[@]} too (e.g.
# --unix-socket PATH, with API=http://localhost)
SL_API_ARGS=()
sl_api_code() {
	in_server curl -s -m 2 -o /dev/null -w '%{http_code}' "${SL_API_ARGS[@]}" "$API$1"
}

# sl_service_wait PID LOG: wait (bounded: 10 s) until the service PID
# answers GET $API/metrics; bail out, with LOG's tail, if it dies first
# or does not answer
sl_service_wait() {
	local i
	for i in $(seq 1 100); do
		[ "$(sl_api_code /metrics)" = 200 ] && return 0
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	[ -f "$2" ] && diag "$(tail -5 "$2")"
	die "slicelimit run did not start answering on $API"
}

# sl_service_start VAR LOG [CONFIG [CMD-PREFIX...]]: slicelimit run
# --config CONFIG ($SL_TMP/config.yaml) in the server namespace, under
# CMD-PREFIX (e.g. setpriv ...), stderr to LOG, its pid in VAR (sl_bg);
# returns once the API answers (sl_service_wait)
sl_service_start() {
	local var=$1 log=$2 config=${3:-$SL_TMP/config.yaml}
	shift $(($# < 3 ? $# : 3))
	sl_bg "$var" nsenter --net="/run/netns/$NS_S" "$@" "$SL_BIN" run \
		--config "$config" 2>"$log"
	sl_service_wait "${!var}" "$log"
}

# sl_need TOOL...: bail out unless every TOOL is on PATH
sl_need() {
	local t
	for t; do
		command -v "$t" >/dev/null || die "$t not found (make deps)"
	done
}

# sl_init SLICELIMIT [SL_TRAFFIC]: check the tools, build sl-traffic if it
# is missing or older than its source, and register the cleanup.
sl_init() {
	local src=$SL_LIB_DIR/traffic.c
	SL_BIN=$(readlink -f "$1")
	SL_TRAFFIC=${2:-$(dirname "$SL_BIN")/tests/sl-traffic}
	[ "$(id -u)" -eq 0 ] || die "needs root (namespaces, XDP)"
	[ -x "$SL_BIN" ] || die "$1: no slicelimit binary (make)"
	sl_need ip nsenter bpftool gcc
	if [ ! -x "$SL_TRAFFIC" ] || [ "$src" -nt "$SL_TRAFFIC" ]; then
		mkdir -p "$(dirname "$SL_TRAFFIC")"
		gcc -O2 -Wall -Wextra -Werror -o "$SL_TRAFFIC" "$src" ||
			die "cannot build $SL_TRAFFIC"
	fi
	SL_TMP=$(mktemp -d "/tmp/$SL_P.XXXXXX")
	# the check API's bearer token for a TCP listener (http.token_file:
	# $SL_API_TOKEN_FILE), sent by every curl of the run (CURL_HOME's
	# .curlrc); python clients read $SL_API_TOKEN
	SL_API_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	SL_API_TOKEN_FILE=$SL_TMP/api.token
	(umask 077; echo "$SL_API_TOKEN" >"$SL_API_TOKEN_FILE")
	mkdir -p "$SL_TMP/curl"
	printf 'header = "Authorization: Bearer %s"\n' "$SL_API_TOKEN" \
		>"$SL_TMP/curl/.curlrc"
	export CURL_HOME=$SL_TMP/curl SL_API_TOKEN SL_API_TOKEN_FILE
	trap sl_cleanup EXIT
	trap 'sl_cleanup; exit 130' INT
	trap 'sl_cleanup; exit 143' TERM
}

# sl_setup BUILD_DIR [TOOL...]: what every test script does first: unset
# variables are errors, `here` is the scripts' folder (for their helpers),
# sl_init with BUILD_DIR's slicelimit and sl-traffic, then sl_need TOOL...
sl_setup() {
	set -u
	# shellcheck disable=SC2034  # read by the scripts that source lib.sh
	here=$SL_LIB_DIR
	sl_init "$1/slicelimit" "$1/tests/sl-traffic"
	shift
	[ "$#" -eq 0 ] || sl_need "$@"
}

# sl_config MODE RULES [YAML]: write $SL_TMP/config.yaml for one service:
# $VETH_S attached in MODE (none: no device), the rule file RULES, the
# HTTP API on 127.0.0.1:8080 with this run's token, and YAML (more
# top-level keys, one a line) after them
sl_config() {
	local devices="
  - { name: $VETH_S, mode: $1 }"
	[ "$1" = none ] && devices=" []"
	cat >"$SL_TMP/config.yaml" <<EOF
devices:$devices
rules: $2
http:
  listen: 127.0.0.1:8080
  token_file: $SL_API_TOKEN_FILE
${3:-}
EOF
}

# sl_claim_pins [SECONDS]: mount bpffs if needed, wait (bounded) until no
# one else's pins are there, and mark them ours so cleanup removes them.
sl_claim_pins() {
	local limit=${1:-30} waited=0
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf ||
		die "cannot mount bpffs at /sys/fs/bpf"
	# an empty directory (left by a load that failed) holds nothing
	while [ -n "$(ls -A "$SL_PIN" 2>/dev/null)" ]; do
		[ "$waited" -ge "$limit" ] &&
			die "$SL_PIN is in use by another run (waited ${limit}s)"
		[ "$waited" -eq 0 ] && diag "$SL_PIN is in use; waiting up to ${limit}s"
		sleep 1
		waited=$((waited + 1))
	done
	: >"$SL_TMP/owns-pins"	# for the parent's cleanup
}

# sl_alone: the pins must hold our instance only. sl_claim_pins is a check,
# not a lock: another run that frees and retakes the pins between our
# check and our attach shares them. Then nothing here is measured right,
# and a detach (ours, or the cleanup's) would take the other run's
# instance away: give the pins up untouched and bail out.
sl_alone() {
	local devs
	devs=$(sl -j status 2>/dev/null | json_get "[x['device'] for x in d.get('devices', [])]" 2>/dev/null)
	[ "$devs" = "[\"$VETH_S\"]" ] && return 0
	rm -f "$SL_TMP/owns-pins"
	die "another run uses $SL_PIN at the same time (devices: ${devs:-none}): results would be wrong"
}

sl_netns_setup() {
	local a ns
	ip netns add "$NS_C" || die "ip netns add $NS_C"
	ip netns add "$NS_S" || die "ip netns add $NS_S"
	ip link add "$VETH_C" netns "$NS_C" type veth peer name "$VETH_S" \
		netns "$NS_S" || die "cannot create the veth pair"
	for ns in "$NS_C" "$NS_S"; do
		ip -n "$ns" link set lo up
		# ignore router advertisements (and DAD is off per address,
		# nodad): the test's own traffic, ready at once
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_ra=0 \
			net.ipv6.conf.default.accept_ra=0 2>/dev/null
	done
	ip -n "$NS_S" addr add "$SRV4/24" dev "$VETH_S"
	ip -n "$NS_S" addr add "$SRV6/48" dev "$VETH_S" nodad
	for a in "${CLIENT4[@]}"; do
		ip -n "$NS_C" addr add "$a/24" dev "$VETH_C"
	done
	for a in "${CLIENT6[@]}"; do
		ip -n "$NS_C" addr add "$a/48" dev "$VETH_C" nodad
	done
	ip -n "$NS_C" link set "$VETH_C" up || die "link up $VETH_C"
	ip -n "$NS_S" link set "$VETH_S" up || die "link up $VETH_S"
}

# sl_bg VAR CMD...: start CMD (a program, not a function: the pid must be
# the program's) in the background and store its pid in VAR. Not from a
# $(subshell): the process must be ours to wait for.
sl_bg() {
	local var=$1
	shift
	"$@" &
	SL_PIDS+=("$!")
	printf -v "$var" '%s' "$!"
}

# sl_stop PID [SIG]: signal a process started by sl_bg (TERM), wait up to
# 10 s, then KILL; its exit status goes to STOP_RC (not from a $(subshell):
# the process must be ours to wait for)
sl_stop() {
	local pid=$1 sig=${2:-TERM} i rc=0
	kill "-$sig" "$pid" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
	sl_wait "$pid" || rc=$?
	STOP_RC=$rc
}

# sl_wait PID: wait for a process started by sl_bg and forget it;
# returns its exit status.
sl_wait() {
	local pid=$1 rc=0 i keep=()
	wait "$pid" || rc=$?
	for i in "${SL_PIDS[@]}"; do
		[ "$i" = "$pid" ] || keep+=("$i")
	done
	SL_PIDS=("${keep[@]}")
	return "$rc"
}

# sl_run FUNCTION: run the body of the script in a child, in a process
# group of its own, and return its status; the traps of sl_init clean up.
sl_run() {
	local rc=0
	set -m			# the child gets a process group of its own
	(set +m; "$@") &
	SL_BODY=$!
	set +m
	wait "$SL_BODY" || rc=$?
	sl_stop_body
	return "$rc"
}

# sl_stop_body: end whatever the body's process group still runs (all of
# it started by this run) and wait, bounded, until none of it is left.
sl_stop_body() {
	local i
	[ -n "$SL_BODY" ] || return 0
	kill -TERM -- "-$SL_BODY" 2>/dev/null
	wait "$SL_BODY" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 -- "-$SL_BODY" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$SL_BODY" 2>/dev/null
	SL_BODY=""
}

# wait_file FILE: until FILE exists (bounded: 5 s); 1 if it never did
wait_file() {
	local i
	for i in $(seq 1 200); do
		[ -e "$1" ] && return 0
		sleep 0.025
	done
	return 1
}

# sl_recv_start NAME PROTO BIND PORT [SECONDS]: a receiver in the server
# namespace writing $SL_TMP/NAME.json; returns once it is listening.
sl_recv_start() {
	local name=$1 proto=$2 bind=$3 port=$4 secs=${5:-20} i
	rm -f "$SL_TMP/$name.ready"
	# nsenter execs sl-traffic: the pid is the receiver's own
	sl_bg "RECV_PID_$name" nsenter --net="/run/netns/$NS_S" \
		"$SL_TRAFFIC" recv --proto "$proto" \
		--bind "$bind" --port "$port" --seconds "$secs" --json \
		--ready "$SL_TMP/$name.ready" >"$SL_TMP/$name.json"
	wait_file "$SL_TMP/$name.ready" || die "receiver $name did not start"
}

# sl_recv_stop NAME: let in-flight packets land, stop the receiver, and
# leave its counts in $SL_TMP/NAME.json.
sl_recv_stop() {
	local var=RECV_PID_$1
	sleep 0.2
	kill -TERM "${!var}" 2>/dev/null
	sl_wait "${!var}" || diag "receiver $1 exited with status $?"
}

# received NAME ADDR: what the receiver NAME counted from ADDR
received() {
	json_get "d.get('$2', 0)" "$SL_TMP/$1.json"
}

# sl_send SRC DST PORT COUNT [sl-traffic options]: send from the client
# namespace; prints sl-traffic's JSON; fails unless all COUNT were sent.
sl_send() {
	local src=$1 dst=$2 port=$3 count=$4
	shift 4
	in_client "$SL_TRAFFIC" send --src "$src" --dst "$dst" --port "$port" \
		--count "$count" --json "$@"
}

# sl_send_bg VAR SRC DST PORT COUNT [opts]: sl_send in the background; the
# pid (sl-traffic's own: nsenter execs it) goes to VAR, for sl_wait.
sl_send_bg() {
	local var=$1 src=$2 dst=$3 port=$4 count=$5
	shift 5
	sl_bg "$var" nsenter --net="/run/netns/$NS_C" "$SL_TRAFFIC" send \
		--src "$src" --dst "$dst" --port "$port" --count "$count" --json "$@"
}

# The cleanup, in the parent: stop the body and what it started, detach
# if the pins are ours, delete the namespaces, remove the temp dir.
sl_cleanup() {
	local ns
	[ "$SL_CLEANED" -eq 1 ] && return
	SL_CLEANED=1
	trap - EXIT INT TERM
	sl_stop_body
	[ -n "${SL_TMP:-}" ] || return
	if [ -e "$SL_TMP/owns-pins" ] && [ -e "$SL_PIN" ]; then
		# detach in the namespace that still has the devices; from the
		# host it only forgets them (their namespace would be gone)
		if [ -e "/run/netns/$NS_S" ]; then
			sl detach --all >/dev/null
		else
			"$SL_BIN" detach --all >/dev/null
		fi
	fi
	# the names carry our pid: whatever exists is ours; the veth pair
	# goes with its namespaces
	for ns in "$NS_C" "$NS_S"; do
		[ -e "/run/netns/$ns" ] && ip netns del "$ns"
	done
	rm -rf "$SL_TMP"
}

# another build's id in the record: its first byte flipped
fake_old_build() {
	local val
	val=$(bpftool -j map lookup pinned "$SL_PIN/sl_build" key 0 0 0 0 |
		"$SL_PY" -c 'import json, sys
v = [int(x, 16) for x in json.load(sys.stdin)["value"]]
v[0] ^= 0xff
print(" ".join(str(x) for x in v))') || return 1
	# shellcheck disable=SC2086
	bpftool map update pinned "$SL_PIN/sl_build" key 0 0 0 0 value $val
}
