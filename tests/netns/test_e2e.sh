#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End to end: real traffic from a client namespace through a veth pair into
# a server namespace where slicelimit is attached (native XDP, then TC).
# Each rule's window is 60 s, so nothing ages out while the test runs and
# every count is exact: an abusive client gets exactly `limit` through.
#
# Usage: test_e2e.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}"

# ---- rule files ----

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - name: udp4
    protocol: udp
    ports: 7001
    limit: 50
    window: 60s
    exempt: [${CLIENT4[2]}/32]
  - name: udp6
    protocol: udp
    ports: 7002
    limit: 40
    window: 60s
    key: {ipv4_prefix: 32, ipv6_prefix: 64}
    exempt: [fd77:0:0:3::/64]
  - name: syn
    protocol: tcp
    ports: 7003
    unit: syn
    limit: 5
    window: 60s
  - name: raise
    protocol: udp
    ports: 7004
    limit: 30
    window: 60s
  - name: shadow
    protocol: udp
    ports: 7005
    limit: 20
    window: 60s
    action: shadow
EOF
# the same set with rule 'raise' at 80
sed '/name: raise/,/window/s/limit: 30/limit: 80/' "$SL_TMP/rules.yaml" \
	>"$SL_TMP/raised.yaml"
# one bad field: the whole file must be refused
sed 's/limit: 20/limit: 0/' "$SL_TMP/rules.yaml" >"$SL_TMP/invalid.yaml"

ABUSIVE=${CLIENT4[0]}
COMPLIANT=${CLIENT4[1]}
EXEMPT=${CLIENT4[2]}

# ---- helpers ----

# send_all SRC DST PORT COUNT [opts]: send; a failed test unless all went
send_all() {
	local out
	if ! out=$(sl_send "$@" 2>&1); then
		tap_fail "sl-traffic sent all $4 packets from $1 to port $3" "$out"
		return 1
	fi
	printf '%s\n' "$out" >"$SL_TMP/last_send.json"
}

snapshot_stats() { sl -j stats >"$SL_TMP/stats.json"; }

# rule_stat RULE FIELD: a counter of the last stats snapshot
rule_stat() {
	json_get "[r['$2'] for r in d['rules'] if r['rule'] == '$1'][0]" \
		"$SL_TMP/stats.json"
}

# query_field ADDR RULE FIELD
query_field() {
	sl -j query "$1" --rule "$2" | json_get "d[0]['$3']"
}

# expect_rc WANT DESC CMD...: the exit status of CMD
expect_rc() {
	local want=$1 desc=$2 rc=0
	shift 2
	"$@" >/dev/null 2>&1 || rc=$?
	tap_eq "$desc" "$rc" "$want"
}

# ---- the tests, in the order they run ----

test_exit_codes_usage_is_2_failure_is_1() {	# nothing loaded yet
	local err
	expect_rc 2 "exit 2: no command" sl
	expect_rc 2 "exit 2: unknown command" sl frobnicate
	expect_rc 2 "exit 2: attach without a device" sl attach
	expect_rc 2 "exit 2: attach --mode bogus" sl attach "$VETH_S" --mode bogus
	expect_rc 2 "exit 2: top -n 0" sl top -n 0
	expect_rc 2 "exit 2: query of a non-address" sl query not-an-address
	expect_rc 2 "exit 2: rules apply without a file" sl rules apply
	expect_rc 2 "exit 2: stats with an extra argument" sl stats extra
	expect_rc 1 "exit 1: attach to a device that does not exist" \
		sl attach "${SL_P}none"
	expect_rc 1 "exit 1: stats with nothing loaded" sl stats
	err=$(sl -j query not-an-address 2>/dev/null | json_get "d['error'] != ''" 2>&1)
	tap_eq "a usage error under --json is a JSON {\"error\"}" "$err" "True"
}

test_attach_xdp_native_and_apply() {
	local mode
	tap_check "attach $VETH_S --mode xdp" sl attach "$VETH_S" --mode xdp
	mode=$(in_server ip -j link show "$VETH_S" | json_get "d[0].get('xdp', {}).get('mode')")
	tap_eq "the veth runs an XDP program in driver (native) mode" "$mode" "1"
	tap_eq "status --json lists the device in mode xdp" \
		"$(sl -j status | json_get "[x['mode'] for x in d['devices'] if x['device'] == '$VETH_S']")" \
		'["xdp"]'
	tap_check "rules apply of the test rules" sl rules apply "$SL_TMP/rules.yaml"
}

test_invalid_apply_exits_1_and_changes_nothing() {
	sl -j rules list >"$SL_TMP/list_before.json"
	expect_rc 1 "exit 1: rules apply of an invalid file" \
		sl rules apply "$SL_TMP/invalid.yaml"
	expect_rc 1 "exit 1: rules apply of a missing file" \
		sl rules apply "$SL_TMP/no-such-file.yaml"
	sl -j rules list >"$SL_TMP/list_after.json"
	if cmp -s "$SL_TMP/list_before.json" "$SL_TMP/list_after.json"; then
		tap_ok "the running rules are unchanged after the refused applies"
	else
		tap_fail "the running rules are unchanged after the refused applies" \
			"before: $(cat "$SL_TMP/list_before.json")" \
			"after:  $(cat "$SL_TMP/list_after.json")"
	fi
	tap_eq "rules list --json shows the 5 rules" \
		"$(json_get "[r['name'] for r in d['rules']]" "$SL_TMP/list_after.json")" \
		'["udp4", "udp6", "syn", "raise", "shadow"]'
}

test_udp4_abusive_cut_to_limit() {
	local delivered ra
	sl_recv_start udp4 udp "$SRV4" 7001
	send_all "$ABUSIVE" "$SRV4" 7001 120
	send_all "$COMPLIANT" "$SRV4" 7001 30
	send_all "$EXEMPT" "$SRV4" 7001 120
	sl_recv_stop udp4
	tap_eq "udp4: abusive client sent 120 against limit 50, exactly 50 arrived" \
		"$(received udp4 "$ABUSIVE")" 50
	tap_eq "udp4: compliant client sent 30, all 30 arrived" \
		"$(received udp4 "$COMPLIANT")" 30
	tap_eq "udp4: exempt client sent 120, all 120 arrived" \
		"$(received udp4 "$EXEMPT")" 120
	snapshot_stats
	delivered=$(( $(received udp4 "$ABUSIVE") + $(received udp4 "$COMPLIANT") ))
	tap_eq "udp4: stats passed = delivered by the limited clients" \
		"$(rule_stat udp4 passed)" "$delivered"
	tap_eq "udp4: stats dropped = sent - delivered" \
		"$(rule_stat udp4 dropped)" $((120 + 30 - delivered))
	tap_eq "udp4: stats exempt = the exempt client's packets" \
		"$(rule_stat udp4 exempt)" "$(received udp4 "$EXEMPT")"
	tap_eq "udp4: query of the abusive client: used 50, remaining 0" \
		"$(query_field "$ABUSIVE" udp4 used)/$(query_field "$ABUSIVE" udp4 remaining)" \
		"50/0"
	ra=$(query_field "$ABUSIVE" udp4 retry_after_s)
	if [ "$ra" -ge 1 ] 2>/dev/null && [ "$ra" -le 60 ]; then
		tap_ok "udp4: query gives the abusive client a Retry-After of 1..60 s"
	else
		tap_fail "udp4: query gives the abusive client a Retry-After of 1..60 s" "got '$ra'"
	fi
	tap_eq "udp4: top --json ranks the abusive client first" \
		"$(sl -j top | json_get "d[0]['client']")" "$ABUSIVE"
}

test_udp6_one_allowance_per_64() {
	local delivered
	sl_recv_start udp6 udp "$SRV6" 7002
	send_all "${CLIENT6[0]}" "$SRV6" 7002 30	# fd77:0:0:1::2
	send_all "${CLIENT6[1]}" "$SRV6" 7002 60	# fd77:0:0:1::3, same /64
	send_all "${CLIENT6[2]}" "$SRV6" 7002 30	# another /64, compliant
	send_all "${CLIENT6[3]}" "$SRV6" 7002 100	# exempt /64
	sl_recv_stop udp6
	tap_eq "udp6: first address of a /64 sent 30 under limit 40, all arrived" \
		"$(received udp6 "${CLIENT6[0]}")" 30
	tap_eq "udp6: second address of the same /64 sent 60, only the 10 left arrived" \
		"$(received udp6 "${CLIENT6[1]}")" 10
	tap_eq "udp6: compliant client in another /64 sent 30, all arrived" \
		"$(received udp6 "${CLIENT6[2]}")" 30
	tap_eq "udp6: exempt client sent 100, all arrived" \
		"$(received udp6 "${CLIENT6[3]}")" 100
	snapshot_stats
	delivered=$(( $(received udp6 "${CLIENT6[0]}") + $(received udp6 "${CLIENT6[1]}") + \
		$(received udp6 "${CLIENT6[2]}") ))
	tap_eq "udp6: stats passed = delivered, dropped = sent - delivered" \
		"$(rule_stat udp6 passed)/$(rule_stat udp6 dropped)/$(rule_stat udp6 exempt)" \
		"$delivered/$((30 + 60 + 30 - delivered))/100"
	tap_eq "udp6: query of any address in the /64 shows the shared count (40 used)" \
		"$(query_field fd77:0:0:1::99 udp6 client)/$(query_field fd77:0:0:1::99 udp6 used)" \
		"fd77:0:0:1::/64/40"
}

test_tcp_syn_limits_new_connections() {
	local client=${CLIENT4[3]} connected
	sl_recv_start syn tcp "$SRV4" 7003
	send_all "$client" "$SRV4" 7003 12 --proto tcp --rate 200 --wait 400
	connected=$(json_get "d['connected']" "$SL_TMP/last_send.json" 2>/dev/null)
	sl_recv_stop syn
	tap_eq "syn: 12 connection attempts against limit 5, exactly 5 accepted" \
		"$(received syn "$client")" 5
	tap_eq "syn: the client saw exactly 5 handshakes complete" "$connected" 5
	snapshot_stats
	tap_eq "syn: stats dropped = attempts - accepted (7 SYNs)" \
		"$(rule_stat syn dropped)" 7
}

test_apply_raised_limit_during_traffic_keeps_count() {
	local client=${CLIENT4[4]} sender apply_rc=0 during=no
	sl_recv_start raise udp "$SRV4" 7004
	send_all "$client" "$SRV4" 7004 60		# 30 pass: at the limit
	# 150 more over 1 s; the apply lands while they flow
	sl_send_bg sender "$client" "$SRV4" 7004 150 --rate 150 \
		>"$SL_TMP/raise_send.json"
	sleep 0.15
	sl rules apply "$SL_TMP/raised.yaml" >/dev/null 2>&1 || apply_rc=$?
	kill -0 "$sender" 2>/dev/null && during=yes
	sl_wait "$sender" ||
		tap_fail "raise: sl-traffic sent all 150" "$(cat "$SL_TMP/raise_send.json")"
	sl_recv_stop raise
	tap_eq "raise: rules apply of the raised file succeeds while traffic flows" \
		"$apply_rc/$during" "0/yes"
	tap_eq "raise: 210 sent, limit 30 raised to 80 mid-stream: exactly 80 arrived (count kept)" \
		"$(received raise "$client")" 80
	tap_eq "raise: query shows limit 80, used 80" \
		"$(query_field "$client" raise limit)/$(query_field "$client" raise used)" \
		"80/80"
	tap_eq "raise: other rules' clients keep their state across the apply (udp4 used 50)" \
		"$(query_field "$ABUSIVE" udp4 used)" 50
	tap_eq "raise: rule ids are stable across the apply" \
		"$(sl -j rules list | json_get "[(r['name'], r['id'], r['limit']) for r in d['rules']]")" \
		"$(json_get "[(r['name'], r['id'], 80 if r['name'] == 'raise' else r['limit']) for r in d['rules']]" "$SL_TMP/list_after.json")"
}

test_shadow_drops_nothing_but_counts() {
	local client=${CLIENT4[5]}
	sl_recv_start shadow udp "$SRV4" 7005
	send_all "$client" "$SRV4" 7005 50
	sl_recv_stop shadow
	tap_eq "shadow: 50 sent against limit 20, all 50 arrived" \
		"$(received shadow "$client")" 50
	snapshot_stats
	tap_eq "shadow: stats passed 20, dropped 0, shadow_dropped 30" \
		"$(rule_stat shadow passed)/$(rule_stat shadow dropped)/$(rule_stat shadow shadow_dropped)" \
		"20/0/30"
}

# dump_names MAP FIELD...: the FIELDs that no entry of bpftool's --json
# dump of MAP names in its BTF-formatted key or value (at any depth)
dump_names() {
	local map=$1
	shift
	bpftool -j map dump pinned "$SL_PIN/$map" | "$SL_PY" -c '
import json, sys
def names(v):
    if isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from names(x)
    elif isinstance(v, list):
        for x in v:
            yield from names(x)
seen = set(names([e.get("formatted") for e in json.load(sys.stdin)]))
print(" ".join(f for f in sys.argv[1:] if f not in seen) or "none missing")
' "$@"
}

test_bpftool_dumps_name_fields() {
	local id
	tap_eq "bpftool dump of sl_rule_stats names its fields" \
		"$(dump_names sl_rule_stats passed dropped shadow_dropped exempt passed_bytes dropped_bytes)" \
		"none missing"
	tap_eq "bpftool dump of sl_clients names its fields" \
		"$(dump_names sl_clients rule_id last_ms blocked_until first_ms count total)" \
		"none missing"
	id=$(sl -j rules list | json_get "[r['id'] for r in d['rules'] if r['name'] == 'udp4'][0]")
	snapshot_stats
	bpftool -j map dump pinned "$SL_PIN/sl_rule_stats" >"$SL_TMP/dump.json"
	tap_eq "bpftool's per-CPU udp4 counters sum to what stats --json reports" \
		"$(json_get "[sum(v['value'][f] for v in e['formatted']['values']) for e in d if e['formatted']['key'] == $id for f in ('passed', 'dropped', 'exempt')]" "$SL_TMP/dump.json")" \
		"[$(rule_stat udp4 passed), $(rule_stat udp4 dropped), $(rule_stat udp4 exempt)]"
}

test_detach_restores_full_delivery() {
	tap_check "detach $VETH_S" sl detach "$VETH_S"
	tap_eq "after the last detach nothing is loaded and the pins are gone" \
		"$(sl -j status | json_get "d['loaded']")/$([ -e "$SL_PIN" ] && echo pinned || echo unpinned)" \
		"False/unpinned"
	tap_eq "after detach the veth has no XDP program" \
		"$(in_server ip -j link show "$VETH_S" | json_get "'xdp' in d[0]")" "False"
	sl_recv_start free udp "$SRV4" 7001
	send_all "$ABUSIVE" "$SRV4" 7001 120
	sl_recv_stop free
	tap_eq "after detach the abusive client gets all 120 through" \
		"$(received free "$ABUSIVE")" 120
}

test_tc_mode_enforces_too() {
	tap_check "attach $VETH_S --mode tc" sl attach "$VETH_S" --mode tc
	tap_check "rules apply under tc" sl rules apply "$SL_TMP/rules.yaml"
	tap_eq "status --json lists the device in mode tc" \
		"$(sl -j status | json_get "[x['mode'] for x in d['devices']]")" '["tc"]'
	sl_recv_start tc udp "$SRV4" 7001
	send_all "$ABUSIVE" "$SRV4" 7001 120
	send_all "$COMPLIANT" "$SRV4" 7001 30
	send_all "$EXEMPT" "$SRV4" 7001 60
	sl_recv_stop tc
	tap_eq "tc: abusive 120 against limit 50: exactly 50 arrived" \
		"$(received tc "$ABUSIVE")" 50
	tap_eq "tc: compliant 30 and exempt 60 all arrived" \
		"$(received tc "$COMPLIANT")/$(received tc "$EXEMPT")" "30/60"
	snapshot_stats
	tap_eq "tc: stats passed/dropped/exempt match the deliveries" \
		"$(rule_stat udp4 passed)/$(rule_stat udp4 dropped)/$(rule_stat udp4 exempt)" \
		"80/70/60"
	tap_check "detach $VETH_S (tc)" sl detach "$VETH_S"
	sl_recv_start tcfree udp "$SRV4" 7001
	send_all "$ABUSIVE" "$SRV4" 7001 120
	sl_recv_stop tcfree
	tap_eq "after tc detach the abusive client gets all 120 through" \
		"$(received tcfree "$ABUSIVE")" 120
	tap_eq "after tc detach no clsact filter of ours remains" \
		"$(in_server tc -j filter show dev "$VETH_S" ingress 2>/dev/null | json_get "len(d)" 2>/dev/null || echo 0)" \
		"0"
}

main() {
	local start=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	test_exit_codes_usage_is_2_failure_is_1
	test_attach_xdp_native_and_apply
	test_invalid_apply_exits_1_and_changes_nothing
	test_udp4_abusive_cut_to_limit
	test_udp6_one_allowance_per_64
	test_tcp_syn_limits_new_connections
	test_apply_raised_limit_during_traffic_keeps_count
	test_shadow_drops_nothing_but_counts
	test_bpftool_dumps_name_fields
	test_detach_restores_full_delivery
	test_tc_mode_enforces_too
	tap_elapsed "$start" 180
	tap_done
}

sl_run main
