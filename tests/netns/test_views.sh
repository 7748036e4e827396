#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# One answer per client, the same in query, top, reset, the check API and
# the rule apply, and the same as what the kernel decides, against a
# running service and real traffic through a veth pair:
#
#   1. An address on a rule's exempt list is shown exempt by query
#      (--json "exempt": true, used 0, the whole limit left), by
#      /v1/check and /v1/clients (decision "exempt", RateLimit r= the
#      limit), and a prefix the rule exempts since it was counted is shown
#      exempt by top; the count of the rest of its prefix is unchanged.
#   2. After a rule's ipv4_prefix goes from 24 to 32, the states keyed by
#      the old /24 are forgotten: the dry run and the apply's --json count
#      them, top shows no ghost and query of the /24's first address reads
#      nothing.
#   3. A check API key: top names it by the 100::/64 address it is hashed
#      into ("api_key": true); query and reset of that address, and query
#      --key / reset --key of the key, read and forget that very state
#      (its first accept on probation too).
#   4. GET with key=a%00b (and /v1/clients/a%00b) is refused with 400 and
#      a JSON error, and counts against no key.
#   5. One address used as a check API key under a rule with
#      api_key_is_address ('addr') and one without ('api'): every read
#      path finds what /v1/check charged under the same client (under
#      'addr' the address's packet state, under 'api' its hash in
#      100::/64): query ADDR, query --key, /v1/clients and top; reset
#      --key forgets exactly that client under each rule.
#
# Usage: test_views.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl

API=http://127.0.0.1:8080
COUNTED=${CLIENT4[0]}		# 10.77.0.2: counted under ex's /24
EXEMPT=${CLIENT4[7]}		# 10.77.0.9: on ex's exempt list
LATE6=${CLIENT6[3]}		# fd77:0:0:3::2: its /64 exempted later
KEYADDR=${CLIENT4[4]}		# 10.77.0.6: packets to 'addr', and an API key

rules_file() {		# EXEMPT_LIST PFX_IPV4_PREFIX
	cat <<EOF
rules:
  - name: ex
    protocol: udp
    ports: 7101
    limit: 20
    window: 60s
    key: { ipv4_prefix: 24 }
    exempt: [$1]
    api_key_is_address: true  # API keys that are addresses: the packets' clients
  - name: pfx
    protocol: udp
    ports: 7102
    limit: 20
    window: 60s
    key: { ipv4_prefix: $2 }
    api_key_is_address: true
  - name: api
    protocol: udp
    ports: 7199
    limit: 5
    window: 60s
  - name: addr
    protocol: udp
    ports: 7103
    limit: 5
    window: 60s
    api_key_is_address: true
EOF
}
rules_file "$EXEMPT/32" 24 >"$SL_TMP/rules.yaml"
sl_config xdp-generic "$SL_TMP/rules.yaml"

# req PATH: GET $API PATH from the server namespace; prints the status,
# headers in $SL_TMP/hdr, body in $SL_TMP/body
req() {
	: >"$SL_TMP/hdr"
	: >"$SL_TMP/body"
	in_server curl -s -m 5 -o "$SL_TMP/body" -D "$SL_TMP/hdr" \
		-w '%{http_code}' "$API$1"
}
body() { json_get "$1" "$SL_TMP/body"; }
header() {		# NAME: the last answer's header NAME
	tr -d '\r' <"$SL_TMP/hdr" | awk -v n="$(echo "$1" | tr 'A-Z' 'a-z')" \
		'BEGIN { FS = ": " } tolower($1) == n { print $2 }'
}

# row EXPR ARGS...: EXPR over r, the one row of `slicelimit -j ARGS`
# (a JSON array of one client), or "rows: N" when it is not one row
row() {
	local expr=$1
	shift
	sl -j "$@" | json_get "(lambda r: $expr)(d[0]) if len(d) == 1 else 'rows: %d' % len(d)"
}

test_exempt_shown_exempt() {
	sl_send "$COUNTED" "$SRV4" 7101 20 >/dev/null || tap_fail "sl-traffic sent 20 packets"
	sl_send "$EXEMPT" "$SRV4" 7101 5 >/dev/null || tap_fail "sl-traffic sent 5 packets"
	tap_eq "query of the /24's counted address: used 20, remaining 0, not exempt" \
		"$(row "(r['used'], r['remaining'], r.get('exempt'))" query "$COUNTED" --rule ex)" \
		"(20, 0, False)"
	tap_eq "query of an exempt address: exempt, used 0, the limit left, no Retry-After" \
		"$(row "(r['client'], r.get('exempt'), r['used'], r['remaining'], r['retry_after_ms'])" \
			query "$EXEMPT" --rule ex)" \
		"('$EXEMPT', True, 0, 20, 0)"
	tap_eq "GET /v1/check of the exempt address: 200, decision exempt, remaining 20" \
		"$(req "/v1/check?rule=ex&key=$EXEMPT") $(body "(d['allowed'], d['decision'], d['used'], d['remaining'])")" \
		"200 (True, 'exempt', 0, 20)"
	tap_eq "... its headers: RateLimit r=20, SliceLimit-Decision exempt" \
		"$(header RateLimit) $(header SliceLimit-Decision)" '"ex";r=20;t=0 exempt'
	tap_eq "GET /v1/clients of the exempt address: decision exempt, remaining 20" \
		"$(req "/v1/clients/$EXEMPT?rule=ex") $(body "(d['decision'], d['remaining'])")" \
		"200 ('exempt', 20)"
	tap_eq "... the check counted nothing against the /24" \
		"$(row "r['used']" query "$COUNTED" --rule ex)" 20

	# a /64 counted, then exempted by a reload: its state stays, unread
	sl_send "$LATE6" "$SRV6" 7101 4 >/dev/null || tap_fail "sl-traffic sent 4 packets"
	rules_file "$EXEMPT/32, 'fd77:0:0:3::/64'" 24 >"$SL_TMP/rules.yaml"
	kill -HUP "$SVC"
	wait_state "s['reloads_applied']" 1 || tap_fail "the service did not reload"
	tap_eq "top: the /64 exempted since it was counted shows exempt, used 0" \
		"$(sl -j top --rule ex | json_get "[(r.get('exempt'), r['used'], r['remaining']) for r in d if r['client'] == 'fd77:0:0:3::/64']")" \
		"[[true, 0, 20]]"
	tap_eq "top: the counted /24 is not exempt, used 20" \
		"$(sl -j top --rule ex | json_get "[(r.get('exempt'), r['used']) for r in d if r['client'] == '10.77.0.0/24']")" \
		"[[false, 20]]"
}

test_prefix_change_forgets_old_keys() {
	local out
	sl_send "$COUNTED" "$SRV4" 7102 20 >/dev/null || tap_fail "sl-traffic sent 20 packets"
	tap_eq "pfx keyed by /24: 10.77.0.0/24 used 20" \
		"$(sl -j top --rule pfx | json_get "[(r['client'], r['used']) for r in d]")" \
		'[["10.77.0.0/24", 20]]'
	rules_file "$EXEMPT/32, 'fd77:0:0:3::/64'" 32 >"$SL_TMP/next.yaml"
	out=$(sl -j rules apply --dry-run "$SL_TMP/next.yaml")
	tap_eq "dry run of ipv4_prefix 24 -> 32: 1 client forgotten, pfx's clients forgotten" \
		"$(echo "$out" | json_get "(d['clients_forgotten'], [r['clients_forgotten'] for r in d['rules'] if r['rule'] == 'pfx'])")" \
		"(1, [True])"
	out=$(sl -j rules apply --force "$SL_TMP/next.yaml" 2>/dev/null)
	tap_eq "the apply's --json: 1 client forgotten" \
		"$(echo "$out" | json_get "(d['applied'], d.get('clients_forgotten'))")" "(True, 1)"
	tap_eq "top: no ghost of the old /24 under pfx" \
		"$(sl -j top --rule pfx | json_get "len(d)")" 0
	tap_eq "query of the /24's first address: nothing counted" \
		"$(row "(r['client'], r['used'])" query 10.77.0.0 --rule pfx)" "('10.77.0.0', 0)"
	tap_eq "the unchanged rule's clients are kept: ex's /24 still used 20" \
		"$(row "r['used']" query "$COUNTED" --rule ex)" 20
}

test_api_key_named_by_key() {
	local i addr out code=""
	for i in 1 2 3 4 5 6; do
		code=$(req "/v1/check?rule=api&key=alice")
	done
	tap_eq "the 6th check of alice (limit 5): 429" "$code" 429
	addr=$(sl -j top --rule api | json_get "[r['client'] for r in d]")
	tap_eq "top names the API-key client whole (no prefix), in 100::/64, as an API key" \
		"$(sl -j top --rule api | json_get "[(r['client'].startswith('100::') and '/' not in r['client'], r.get('api_key')) for r in d]")" \
		"[[true, true]]"
	addr=$(echo "$addr" | json_get "d[0]")
	tap_eq "query of what top printed: used 5, remaining 0, api_key" \
		"$(row "(r['client'], r['used'], r['remaining'], r.get('api_key'))" query "$addr" --rule api)" \
		"('$addr', 5, 0, True)"
	tap_eq "query --key alice: the same client, used 5" \
		"$(row "(r['client'], r['used'])" query --key alice --rule api)" "('$addr', 5)"
	out=$(sl -j reset "$addr" --rule api)
	tap_eq "reset of what top printed forgets that state" \
		"$(echo "$out" | json_get "[(r['client'], r['rule']) for r in d['reset']]")" \
		"[[\"$addr\", \"api\"]]"
	tap_eq "... and alice passes again at once" \
		"$(req "/v1/check?rule=api&key=alice") $(body "d['used']")" "200 1"
	out=$(sl -j reset --key alice --rule api)
	tap_eq "reset --key alice forgets it too, on probation as it is" \
		"$(echo "$out" | json_get "len(d['reset'])")" 1
	tap_eq "query --key alice: used 0 after it" \
		"$(row "r['used']" query --key alice --rule api)" 0
}

test_get_nul_refused() {
	tap_eq "GET /v1/check?key=a%00b: 400 naming the NUL in 'key'" \
		"$(req "/v1/check?rule=api&key=a%00b") $(body "d['error']")" \
		"400 'key' contains a NUL byte"
	tap_eq "GET /v1/check?rule=ap%00i: 400 naming the NUL in 'rule'" \
		"$(req "/v1/check?rule=ap%00i&key=a") $(body "d['error']")" \
		"400 'rule' contains a NUL byte"
	tap_eq "GET /v1/clients/a%00b: 400 naming the NUL in 'key'" \
		"$(req "/v1/clients/a%00b?rule=api") $(body "d['error']")" \
		"400 'key' contains a NUL byte"
	tap_eq "... nothing was counted against key a" \
		"$(row "r['used']" query --key a --rule api)" 0
	tap_eq "GET /v1/check?key=a still answers: used 1" \
		"$(req "/v1/check?rule=api&key=a") $(body "d['used']")" "200 1"
}

test_address_key_one_client_everywhere() {
	local hashed out
	sl_send "$KEYADDR" "$SRV4" 7103 2 >/dev/null || tap_fail "sl-traffic sent 2 packets"
	tap_eq "/v1/check of key $KEYADDR under 'addr' (api_key_is_address) charges its 2 packets' state: used 3" \
		"$(req "/v1/check?rule=addr&key=$KEYADDR") $(body "d['used']")" "200 3"
	req "/v1/check?rule=api&key=$KEYADDR" >/dev/null
	tap_eq "... under 'api' (without) the same key is a client of its own: used 2" \
		"$(req "/v1/check?rule=api&key=$KEYADDR") $(body "d['used']")" "200 2"

	tap_eq "'addr': query ADDR finds the address, used 3" \
		"$(row "(r['client'], r['used'])" query "$KEYADDR" --rule addr)" "('$KEYADDR', 3)"
	tap_eq "'addr': query --key ADDR finds the same client, used 3" \
		"$(row "(r['client'], r['used'], r.get('api_key'))" query --key "$KEYADDR" --rule addr)" \
		"('$KEYADDR', 3, False)"
	tap_eq "'addr': GET /v1/clients/ADDR: used 3" \
		"$(req "/v1/clients/$KEYADDR?rule=addr") $(body "d['used']")" "200 3"
	tap_eq "'addr': top shows the address, used 3, not an API key" \
		"$(sl -j top --rule addr | json_get "[(r['client'], r['used'], r.get('api_key')) for r in d]")" \
		"[[\"$KEYADDR\", 3, false]]"

	hashed=$(sl -j query --key "$KEYADDR" --rule api | json_get "d[0]['client']")
	tap_eq "'api': query --key ADDR is its hash in 100::/64, used 2" \
		"$(row "(r['client'].startswith('100::'), r['used'], r.get('api_key'))" query --key "$KEYADDR" --rule api)" \
		"(True, 2, True)"
	tap_eq "'api': GET /v1/clients/ADDR: used 2" \
		"$(req "/v1/clients/$KEYADDR?rule=api") $(body "d['used']")" "200 2"
	tap_eq "'api': top shows that hashed client, used 2" \
		"$(sl -j top --rule api | json_get "[r['used'] for r in d if r['client'] == '$hashed']")" "[2]"
	tap_eq "'api': query ADDR (the packets' client) has nothing" \
		"$(row "r['used']" query "$KEYADDR" --rule api)" 0
	tap_eq "query --key ADDR over every rule: each rule's client as /v1/check counts it" \
		"$(sl -j query --key "$KEYADDR" | json_get "[(r['rule'], r['client'], r['used']) for r in d if r['rule'] in ('addr', 'api')]")" \
		"[[\"api\", \"$hashed\", 2], [\"addr\", \"$KEYADDR\", 3]]"

	out=$(sl -j reset --key "$KEYADDR" --rule api)
	tap_eq "'api': reset --key ADDR forgets exactly the hashed client" \
		"$(echo "$out" | json_get "[(r['client'], r['rule']) for r in d['reset']]")" \
		"[[\"$hashed\", \"api\"]]"
	tap_eq "... the address's state under 'addr' is kept: used 3" \
		"$(req "/v1/clients/$KEYADDR?rule=addr") $(body "d['used']")" "200 3"
	out=$(sl -j reset --key "$KEYADDR" --rule addr)
	tap_eq "'addr': reset --key ADDR forgets exactly the address's state" \
		"$(echo "$out" | json_get "[(r['client'], r['rule']) for r in d['reset']]")" \
		"[[\"$KEYADDR\", \"addr\"]]"
	tap_eq "... and /v1/clients/ADDR under 'addr' and 'api' reads nothing after" \
		"$(req "/v1/clients/$KEYADDR?rule=addr") $(body "d['used']") $(req "/v1/clients/$KEYADDR?rule=api") $(body "d['used']")" \
		"200 0 200 0"
}

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	sl_service_start SVC "$SL_TMP/svc.log"
	test_exempt_shown_exempt
	test_prefix_change_forgets_old_keys
	test_api_key_named_by_key
	test_get_nul_refused
	test_address_key_one_client_everywhere
	sl_stop "$SVC"
	tap_eq "the service stopped: exit 0, nothing pinned" "$STOP_RC/$(pins_gone)" "0/gone"
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
