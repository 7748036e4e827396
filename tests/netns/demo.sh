#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `make demo`: slicelimit on a veth pair between two throwaway namespaces.
# Four clients send UDP at the same time to a server where slicelimit runs
# in native XDP: two abusive ones (IPv4 and IPv6, 3x the limit), a
# compliant one and an exempt one. The demo prints what each sent and got,
# then what slicelimit itself reports, and fails (exit 1) unless the
# abusive clients were cut to the limit exactly and the others lost nothing.
#
# Usage: demo.sh SLICELIMIT   (builds sl-traffic beside it if missing)
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

if [ $# -ne 1 ]; then
	echo "usage: $0 SLICELIMIT (e.g. build/slicelimit)" >&2
	exit 2
fi
sl_init "$1"

LIMIT=100
PORT=8080
EXEMPT4=${CLIENT4[7]}
# address | role | server address | datagrams to send
CLIENTS=(
	"${CLIENT4[0]}|abusive (3x limit)|$SRV4|$((3 * LIMIT))"
	"${CLIENT6[0]}|abusive (3x limit)|$SRV6|$((3 * LIMIT))"
	"${CLIENT4[1]}|compliant|$SRV4|$((LIMIT * 6 / 10))"
	"$EXEMPT4|exempt|$SRV4|$((2 * LIMIT))"
)

section() { printf '\n== %s\n\n' "$*"; }

# show ARGS...: print and run a slicelimit command in the server namespace
show() {
	printf '$ slicelimit %s\n' "$*"
	sl "$@"
}

write_rules() {		# FILE
	cat >"$1" <<EOF
# $LIMIT UDP datagrams a minute per client to the API ports;
# IPv6 clients are counted per /64, the monitoring host is exempt
rules:
  - name: api
    protocol: udp
    ports: 8000-8099
    limit: $LIMIT
    window: 60s
    key:
      ipv4_prefix: 32
      ipv6_prefix: 64
    exempt: [$EXEMPT4/32]
EOF
}

# Every client at once, then a table of sent / passed / dropped. Returns 1
# unless the abusive clients got exactly LIMIT through and the others all.
traffic() {
	local c addr role dst count pid pids=() sent got want check failed=0
	sl_recv_start v4 udp "$SRV4" "$PORT" 30
	sl_recv_start v6 udp "$SRV6" "$PORT" 30
	for c in "${CLIENTS[@]}"; do
		IFS='|' read -r addr role dst count <<<"$c"
		sl_send_bg pid "$addr" "$dst" "$PORT" "$count" \
			>"$SL_TMP/send-$addr.json"
		pids+=("$pid")
	done
	for pid in "${pids[@]}"; do
		sl_wait "$pid" || failed=1
	done
	sl_recv_stop v4
	sl_recv_stop v6
	[ "$failed" -eq 0 ] || echo "sl-traffic could not send everything"

	printf '%-16s %-20s %6s %7s %8s  %s\n' CLIENT ROLE SENT PASSED DROPPED CHECK
	for c in "${CLIENTS[@]}"; do
		IFS='|' read -r addr role dst count <<<"$c"
		sent=$(json_get "d['sent']" "$SL_TMP/send-$addr.json" 2>/dev/null || echo 0)
		if [ "$dst" = "$SRV4" ]; then
			got=$(received v4 "$addr")
		else
			got=$(received v6 "$addr")
		fi
		case $role in
		abusive*) want=$LIMIT ;;
		*) want=$count ;;
		esac
		if [ "$got" = "$want" ] && [ "$sent" = "$count" ]; then
			check="ok (expected $want)"
		else
			check="FAILED (expected $want of $count)"
			failed=1
		fi
		printf '%-16s %-20s %6s %7s %8s  %s\n' "$addr" "$role" "$sent" \
			"$got" "$((sent - got))" "$check"
	done
	return "$failed"
}

main() {
	local start=$SECONDS rules=$SL_TMP/rules.yaml failed=0
	sl_claim_pins 60

	section "setup: namespaces $NS_C (clients) and $NS_S (server), veth $VETH_C <-> $VETH_S"
	sl_netns_setup
	ip -n "$NS_C" -br addr show dev "$VETH_C" | sed 's/^/  client  /'
	ip -n "$NS_S" -br addr show dev "$VETH_S" | sed 's/^/  server  /'

	section "attach slicelimit to the receiving side, native XDP"
	show attach "$VETH_S" --mode xdp || return 1

	section "rules ($rules)"
	write_rules "$rules"
	cat "$rules"
	echo
	show rules apply "$rules" || return 1

	section "traffic: all four clients at once, 1000 datagrams/s each, to port $PORT"
	traffic || failed=1

	section "what slicelimit reports"
	show stats
	echo
	show top
	echo
	show query "${CLIENT4[0]}"

	section "the pinned counters, through BTF (first entry: rule id 0)"
	echo "\$ bpftool map dump pinned $SL_PIN/sl_rule_stats"
	bpftool map dump pinned "$SL_PIN/sl_rule_stats" >"$SL_TMP/dump.txt" 2>&1
	awk 'NR > 1 && /^    },\{/ { exit } { print }' "$SL_TMP/dump.txt"
	echo "    },{ ... one entry per rule id ($(grep -c '"key"' "$SL_TMP/dump.txt") in all)"

	section "cleanup"
	show detach --all
	# the namespaces (and with them the veth pair) go in the exit trap

	echo
	if [ "$failed" -eq 0 ]; then
		echo "demo passed in $((SECONDS - start))s: abusive clients cut to $LIMIT, the others lost nothing"
	else
		echo "demo FAILED: see the CHECK column above"
	fi
	return "$failed"
}

sl_run main
