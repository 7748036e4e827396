# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# The fleet of the multi-node tests (test_multinode.sh,
# test_bounded_burst.sh); source it after lib.sh and sl_init, then call
# mn_init. Source it, don't run it.
#
# Each node is a network namespace, with a mount namespace and a bpffs of
# its own (a node's pins are not another's), running `slicelimit run`; a
# holder process keeps the mount namespace, so that a daemon killed with -9
# restarts over the same pins. The nodes sync over a bridge in a namespace
# of its own. The client namespace has a veth to each node and its source
# addresses on lo, the same towards every node: every node sees the same
# client keys.
#
#   mn_init                         tools, the binary, NODES (SL_NODES)
#   mn_setup_network ADDR...        bridge, nodes, client with its sources
#   mn_write_configs LAYOUT         node configs over $SL_TMP/rules.yaml
#   mn_fleet_start                  holders, daemons, a TAP line: all up
#   start_daemon / wait_daemon I    one node's daemon
#   in_node / sln I ...             a command / slicelimit on node I
#   recv_ts_start I PORT NAME SECS  a timestamping receiver ($SL_TMP/NAMEi.txt)
#   recv_ts_stop                    stop them all (in-flight ones land first)
#   fleet_windows W SOURCE START END NAME   multinode.py windows over them

MN_PY=$SL_LIB_DIR/multinode.py
NS_B=${SL_P}b			# the bridge of the sync link
NS_N=()				# node namespaces, 1..NODES
HOLDER=()			# per node: the process that keeps its mount namespace
DAEMON=()			# per node: its slicelimit run
RX=()				# per node: its timestamping receiver
SYNC_PORT=7400

mn_init() {
	local t i
	sl_need unshare mount
	# the first start and a restart run the same build, even if the tree
	# is rebuilt meanwhile (the BPF object is inside the binary)
	cp "$SL_BIN" "$SL_TMP/slicelimit" || die "cannot copy $SL_BIN"
	SL_BIN=$SL_TMP/slicelimit
	NODES=${SL_NODES:-4}
	if ! [ "$NODES" -ge 3 ] 2>/dev/null || [ "$NODES" -gt 16 ]; then
		die "SL_NODES: 3..16"
	fi
	for i in $(seq 1 "$NODES"); do NS_N[i]=${SL_P}n$i; done
}

node_data() { echo "10.97.$1.1"; }	# where the client's traffic goes
node_sync() { echo "10.98.0.$1"; }	# where peers' messages go

# the cleanup of lib.sh, then the namespaces of the fleet (the daemons,
# holders and receivers are the body's: lib.sh stops them first)
eval "lib_$(declare -f sl_cleanup)"
sl_cleanup() {
	local ns
	lib_sl_cleanup
	for ns in "$NS_B" "${NS_N[@]}"; do
		[ -e "/run/netns/$ns" ] && ip netns del "$ns"
	done
}

# ---- setup ----

# mn_setup_network ADDR...: the client's source addresses (10.97.0.0/24),
# the first the default source of its routes
mn_setup_network() {
	local i a
	ip netns add "$NS_C" || die "ip netns add $NS_C"
	ip netns add "$NS_B" || die "ip netns add $NS_B"
	ip -n "$NS_C" link set lo up
	for a in "$@"; do
		ip -n "$NS_C" addr add "$a/32" dev lo
	done
	ip -n "$NS_B" link add br0 type bridge || die "cannot create the bridge"
	ip -n "$NS_B" link set br0 up
	for i in $(seq 1 "$NODES"); do
		ip netns add "${NS_N[i]}" || die "ip netns add ${NS_N[i]}"
		ip -n "${NS_N[i]}" link set lo up
		# the data link; slicelimit attaches to 'data'. The route's src
		# is only the default: sl-traffic binds each source itself
		ip link add "c$i" netns "$NS_C" type veth peer name data \
			netns "${NS_N[i]}" || die "cannot create the data link of node $i"
		ip -n "${NS_N[i]}" addr add "$(node_data "$i")/24" dev data
		ip -n "${NS_N[i]}" link set data up
		ip -n "${NS_N[i]}" route add 10.97.0.0/24 dev data
		ip -n "$NS_C" link set "c$i" up
		ip -n "$NS_C" route add "$(node_data "$i")/32" dev "c$i" src "$1"
		# the sync link: a port of the bridge
		ip link add "p$i" netns "$NS_B" type veth peer name sync \
			netns "${NS_N[i]}" || die "cannot create the sync link of node $i"
		ip -n "$NS_B" link set "p$i" master br0 up
		ip -n "${NS_N[i]}" addr add "$(node_sync "$i")/24" dev sync
		ip -n "${NS_N[i]}" link set sync up
	done
}

# mn_write_configs LAYOUT: every node's service config, syncing every
# 200 ms over UDP in LAYOUT, with the rules of $SL_TMP/rules.yaml (the
# test's) and a key pair per node (made once: $SL_TMP/identI, its public
# key in PUBKEY[I]), each peer listed with its id, address and public
# key; node 1's HTTP API on 127.0.0.1:$MN_HTTP_PORT (inside its
# namespace) when that is set
PUBKEY=()
mn_write_configs() {
	local layout=$1 i j peers listen
	for i in $(seq 1 "$NODES"); do
		[ -s "$SL_TMP/ident$i" ] ||
			"$SL_BIN" sync keygen --out "$SL_TMP/ident$i" >/dev/null ||
			die "cannot make node $i's key pair"
		PUBKEY[i]=$("$SL_BIN" sync pubkey "$SL_TMP/ident$i") ||
			die "cannot read node $i's public key"
	done
	for i in $(seq 1 "$NODES"); do
		peers=""
		for j in $(seq 1 "$NODES"); do
			[ "$j" = "$i" ] || peers="$peers
    - {node: $j, address: $(node_sync "$j"):$SYNC_PORT, public_key: ${PUBKEY[j]}}"
		done
		# a socket each, though each node has its /run/slicelimit
		listen='"off"'
		[ "$i" = 1 ] && [ -n "${MN_HTTP_PORT:-}" ] &&
			listen="127.0.0.1:$MN_HTTP_PORT
  token_file: $SL_API_TOKEN_FILE"
		cat >"$SL_TMP/node$i.yaml" <<EOF
devices:
  - { name: data, mode: xdp }
rules: $SL_TMP/rules.yaml
http:
  socket: /run/slicelimit/api$i.sock
  listen: $listen
sync:
  node: $i
  layout: $layout
  interval: 200ms
  backend: udp
  listen: $(node_sync "$i"):$SYNC_PORT
  identity_file: $SL_TMP/ident$i
  peers:$peers
  state_dir: $SL_TMP/state
EOF
	done
}

# start_holder I: a process (sleep, bounded: 150 s) that keeps node I's
# mount namespace, with a bpffs and a /run/slicelimit of its own, alive
# across daemon restarts: each node's writers' lock guards its own pins,
# as on a host of its own, so that one node's start (the verifier, slow
# on a busy machine) does not hold up the others'
start_holder() {
	local i=$1 pid
	# shellcheck disable=SC2016
	sl_bg pid nsenter --net="/run/netns/${NS_N[i]}" unshare --mount \
		--propagation private sh -c \
		'mount -t bpf bpf /sys/fs/bpf &&
		 mount -t tmpfs -o mode=0755 tmpfs /run/slicelimit &&
		 : >"$0" && exec sleep 150' \
		"$SL_TMP/holder$i.ready"
	wait_file "$SL_TMP/holder$i.ready" ||
		die "the mount namespace of node $i did not come up"
	HOLDER[i]=$pid
}

in_node() {		# I CMD...: CMD in node I's network and mount namespaces
	local i=$1
	shift
	nsenter --net="/run/netns/${NS_N[i]}" --mount="/proc/${HOLDER[i]}/ns/mnt" "$@"
}

sln() {			# I ARGS...: slicelimit ARGS for node I
	local i=$1
	shift
	in_node "$i" "$SL_BIN" "$@"
}

# start_daemon I: slicelimit -v run for node I, stderr appended to
# node$I.log (-v: the log says what a restart adopted)
start_daemon() {
	local i=$1 pid
	sl_bg pid nsenter --net="/run/netns/${NS_N[i]}" \
		--mount="/proc/${HOLDER[i]}/ns/mnt" "$SL_BIN" -v run \
		--config "$SL_TMP/node$i.yaml" 2>>"$SL_TMP/node$i.log"
	DAEMON[i]=$pid
}

# wait_daemon I: until node I's status shows this daemon running (its pid:
# a daemon killed before leaves its state pinned), its device and a sync
# round (bounded: 15 s)
wait_daemon() {
	local i=$1 n
	for n in $(seq 1 150); do
		[ "$(sln "$i" -j status 2>/dev/null | json_get "(d.get('service') or {}).get('pid') == ${DAEMON[i]} and len(d.get('devices', [])) == 1 and d.get('sync', {}).get('rounds', 0) > 0" 2>/dev/null)" = True ] && return 0
		kill -0 "${DAEMON[i]}" 2>/dev/null || break
		sleep 0.1
	done
	diag "$(tail -5 "$SL_TMP/node$i.log")"
	die "the daemon of node $i did not start"
}

# ---- reading the nodes ----

peers_up() {		# I: the peers node I sees up, as a JSON list
	sln "$1" -j status | json_get "sorted(p['node'] for p in d['sync']['peers'] if p['up'])"
}

others() {		# I: every node id but I, as a JSON list
	local j l=""
	for j in $(seq 1 "$NODES"); do
		[ "$j" = "$1" ] || l="$l${l:+, }$j"
	done
	echo "[$l]"
}

all_up() {		# every node sees all its peers up; else says who not
	local i got
	for i in $(seq 1 "$NODES"); do
		got=$(peers_up "$i")
		[ "$got" = "$(others "$i")" ] || { echo "node $i sees $got up"; return 1; }
	done
}

sees_all_peers() {	# I: node I sees all its peers up
	[ "$(peers_up "$1")" = "$(others "$1")" ]
}

sees_no_peer() {	# I: node I sees no peer up
	[ "$(peers_up "$1")" = "[]" ]
}

# seen_by_others I WANT: every other node shows node I up (WANT True) or
# down (False)
seen_by_others() {
	local i=$1 want=$2 j got
	for j in $(seq 1 "$NODES"); do
		[ "$j" = "$i" ] && continue
		got=$(sln "$j" -j status | json_get "[p['up'] for p in d['sync']['peers'] if p['node'] == $i] == [$want]")
		[ "$got" = True ] || { echo "node $j does not show node $i up=$want"; return 1; }
	done
}

# poll SECONDS CMD...: run CMD every 0.1 s until it succeeds (0) or
# SECONDS have passed (1); POLL_MS: how long it took; POLL_OUT: the last
# output of CMD
poll() {
	local start end
	start=$(date +%s%N)
	end=$((start + $1 * 1000000000))
	shift
	while :; do
		if POLL_OUT=$("$@" 2>&1); then
			POLL_MS=$((($(date +%s%N) - start) / 1000000))
			return 0
		fi
		[ "$(date +%s%N)" -lt "$end" ] || break
		sleep 0.1
	done
	POLL_MS=$((($(date +%s%N) - start) / 1000000))
	return 1
}

# mn_daemons_up WHAT: a daemon per node; ok once every node sees all its
# peers up
mn_daemons_up() {
	local i
	for i in $(seq 1 "$NODES"); do start_daemon "$i"; done
	for i in $(seq 1 "$NODES"); do wait_daemon "$i"; done
	if poll 10 all_up; then
		tap_ok "$1: each of the $NODES nodes sees its $((NODES - 1)) peers up (${POLL_MS} ms after the last daemon started)"
	else
		tap_fail "$1: each of the $NODES nodes sees its $((NODES - 1)) peers up within 10 s" "$POLL_OUT"
	fi
}

# mn_fleet_start: a holder and a daemon per node, all up, and every data
# device in native XDP mode
mn_fleet_start() {
	local i
	for i in $(seq 1 "$NODES"); do start_holder "$i"; done
	mn_daemons_up startup
	tap_eq "every node attached its data device in native XDP mode (ip link: mode 1)" \
		"$(for i in $(seq 1 "$NODES"); do ip -n "${NS_N[i]}" -j link show data | json_get "d[0].get('xdp', {}).get('mode')"; done | sort -u)" 1
}

rule_stat() {		# I RULE FIELD: a counter of node I's rule
	sln "$1" -j stats | json_get "[r['$3'] for r in d['rules'] if r['rule'] == '$2'][0]"
}

stat_delta() {		# I RULE FIELD BEFORE: the counter now minus BEFORE
	echo $(($(rule_stat "$1" "$2" "$3") - $4))
}

prog_id() {		# I: the XDP program on node I's data device
	ip -n "${NS_N[$1]}" -j link show data | json_get "d[0].get('xdp', {}).get('prog', {}).get('id')"
}

# peer_units I ADDR: the units node I's peer view holds of ADDR from its
# peers (all its slices; under bounded the view holds the node's own too,
# as "own"), from a bpftool dump of the pinned map
peer_units() {
	in_node "$1" bpftool -j map dump pinned "$SL_PIN/sl_peer_view" |
		"$SL_PY" -c '
import ipaddress, json, sys
want = list(ipaddress.IPv6Address("::ffff:" + sys.argv[1]).packed)
print(sum(s["count"] - s.get("own", 0) for e in json.load(sys.stdin)
          if e["formatted"]["key"]["addr"]["byte"] == want
          for s in e["formatted"]["value"]["slot"]))' "$2"
}

peer_units_is() {	# I ADDR N: node I's peer view holds N units of ADDR
	[ "$(peer_units "$1" "$2")" = "$3" ]
}

# ---- traffic ----

# recv_ts_start I PORT NAME SECONDS: the timestamping receiver of PORT on
# node I, writing $SL_TMP/NAME$I.txt, for at most SECONDS
recv_ts_start() {
	local i=$1 port=$2 name=$3 secs=$4 pid
	rm -f "$SL_TMP/$name$i.ready"
	sl_bg pid nsenter --net="/run/netns/${NS_N[i]}" "$SL_PY" "$MN_PY" recv \
		"$(node_data "$i")" "$port" "$secs" "$SL_TMP/$name$i.txt" \
		"$SL_TMP/$name$i.ready"
	RX[i]=$pid
	wait_file "$SL_TMP/$name$i.ready" || die "the receiver of node $i did not start"
}

# recv_ts_stop: let in-flight datagrams land, then stop every node's
# receiver (they write their files as they exit)
recv_ts_stop() {
	local i
	sleep 0.2
	for i in $(seq 1 "$NODES"); do
		kill -TERM "${RX[i]}"
		sl_wait "${RX[i]}" || tap_fail "the receiver of node $i"
	done
}

rx_count() {		# NAME I [SOURCE]: what node I's receiver got (from SOURCE)
	if [ -n "${3:-}" ]; then
		grep -c " $3\$" "$SL_TMP/$1$2.txt"
	else
		wc -l <"$SL_TMP/$1$2.txt"
	fi
}

first_arrival() {	# NAME SOURCE: the earliest kernel time of SOURCE at any node
	awk -v s="$2" '$2 == s { print $1 }' "$SL_TMP/$1"[0-9]*.txt | sort -n | head -1
}

# fleet_windows W SOURCE START END NAME: multinode.py windows over the
# files of the receivers NAME (JSON: fixed, sliding_max, ...)
fleet_windows() {
	"$SL_PY" "$MN_PY" windows "$1" "$2" "$3" "$4" "$SL_TMP/$5"[0-9]*.txt
}

# rounds_bound BASE RATE: BASE plus what the other nodes accept, out of
# RATE per second fleet-wide, in two sync intervals (one round's period,
# one round's lateness): where counts age out, every node sees the room
# at once and takes it until the next round tells it what the others took
rounds_bound() {
	awk -v b="$1" -v n="$NODES" -v r="$2" \
		'BEGIN { printf "%d", b + (n - 1) * r / n * 0.4 + 0.999 }'
}

# windows_check WHAT RES LIMIT BOUND WHY: TAP lines over RES (of
# fleet_windows): every whole window got LIMIT / 2 .. 1.1 x LIMIT, the
# busiest interval at most BOUND (WHY: what BOUND is)
windows_check() {
	local what=$1 res=$2 limit=$3 bound=$4 why=$5 fixed smax
	local max=$(($3 * 11 / 10))
	fixed=$(json_get "' '.join(map(str, d['fixed']))" <<<"$res")
	smax=$(json_get "d['sliding_max']" <<<"$res")
	if [ "$(json_get "all($limit // 2 <= n <= $max for n in d['fixed'])" <<<"$res")" = True ]; then
		tap_ok "$what: fleet-wide, each ${W}s window got $limit / 2 .. 1.1 x $limit through ($fixed)"
	else
		tap_fail "$what: fleet-wide, each ${W}s window got $limit / 2 .. 1.1 x $limit through" "per window: $fixed"
	fi
	if [ "$smax" -le "$bound" ]; then
		tap_ok "$what: fleet-wide, the busiest ${W}s interval got $smax through ($why $bound; 1.1 x is $max)"
	else
		tap_fail "$what: fleet-wide, the busiest ${W}s interval got at most $bound through ($why)" "got $smax"
	fi
}

# send SRC I PORT COUNT [sl-traffic options]: from the client to node I,
# in the foreground; fails unless all COUNT were sent
send() {
	local src=$1 i=$2 port=$3 count=$4
	shift 4
	in_client "$SL_TRAFFIC" send --src "$src" --dst "$(node_data "$i")" \
		--port "$port" --count "$count" --json "$@" >/dev/null
}

# send_bg NAME SRC I PORT COUNT RATE: the same in the background; its pid
# in the variable NAME, its JSON in $SL_TMP/NAME.json
send_bg() {
	local name=$1 src=$2 i=$3 port=$4 count=$5 rate=$6
	sl_bg "$name" nsenter --net="/run/netns/$NS_C" "$SL_TRAFFIC" send \
		--src "$src" --dst "$(node_data "$i")" --port "$port" \
		--count "$count" --rate "$rate" --json >"$SL_TMP/$name.json"
}

sent_by() {		# NAME: what the sender NAME sent
	json_get "d['sent']" "$SL_TMP/$1.json"
}

now_s() { date +%s.%N; }

# sleep_until T: sleep until the clock reads T (s, as now_s), at most 60 s
sleep_until() {
	sleep "$(awk -v t="$1" -v n="$(now_s)" 'BEGIN { v = t - n; print (v < 0 ? 0 : v > 60 ? 60 : v) }')"
}

ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d", (b - a) * 1000 }'; }
