#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# One writer at a time, and the service owns what it manages:
#
#   1. A second `run` on the same pins exits 1 at once, naming the first
#      (pid, config), and changes nothing: the first keeps its rules epoch,
#      its device and its API. A service killed with -9 lets go of its
#      lock: the next start adopts the device.
#   2. With a service running, `rules apply` (the error names the rule
#      file the service applies), `attach` and `detach` are
#      refused (the error names its config and 'slicelimit reload'), and
#      nothing changes; with --force they run, the service notices
#      (status: changed_under_it), the pins stay when its last device is
#      detached, and a SIGHUP puts its config back. `attach` onto an
#      instance with no rules says so ("rules": 0).
#   3. Two `rules apply` loops at once: every apply publishes an epoch of
#      its own (the writers' lock), none is lost.
#   4. `rules apply --dry-run`: what would change (added, removed,
#      changed, the clients forgotten), nothing applied, exit 0; a bad
#      file exits 1.
#   5. Without privileges the error says what slicelimit needs.
#
# Usage: test_owner.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl

API=http://127.0.0.1:8080	# the first service's, in the server namespace
CLIENT=${CLIENT4[0]}

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - { name: flood, protocol: udp, ports: 7001, limit: 100, window: 60s }
  - { name: dns, protocol: udp, ports: 53, limit: 50 }
EOF
cat >"$SL_TMP/other.yaml" <<EOF
rules:
  - { name: flood, protocol: udp, ports: 7001, limit: 200, window: 60s }
  - { name: web, protocol: tcp, ports: 80, limit: 10 }
EOF
sl_config xdp-generic "$SL_TMP/rules.yaml"
sed 's/8080/8081/' "$SL_TMP/config.yaml" >"$SL_TMP/second.yaml"

epoch() { sl -j status | json_get "d['rules_epoch']"; }
devices() { sl -j status | json_get "sorted(x['device'] for x in d['devices'])"; }

# run_json OUT ARGS...: slicelimit -j ARGS, stdout to OUT; prints the exit
# status and how many seconds it took
run_json() {
	local out=$1 rc=0 t0=$SECONDS
	shift
	sl -j "$@" >"$out" 2>/dev/null || rc=$?
	echo "$rc/$((SECONDS - t0))"
}

test_second_service_refused() {
	local svc e0 r
	sl_service_start svc "$SL_TMP/svc1.log"
	e0=$(epoch)
	r=$(timeout 20 nsenter --net="/run/netns/$NS_S" "$SL_BIN" -j run \
		--config "$SL_TMP/second.yaml" >"$SL_TMP/second.json" 2>/dev/null; echo $?)
	tap_eq "a second run on the same pins: exit 1 at once, 'already running (pid N, config FILE)' with the first's pid and config" \
		"$r/$(json_get "'already running (pid $svc, config $SL_TMP/config.yaml)' in d['error']" "$SL_TMP/second.json")" \
		"1/True"
	tap_eq "... and changed nothing: same rules epoch, the device attached, the first service answers" \
		"$(epoch)/$(devices)/$(sl_api_code /metrics)" "$e0/[\"$VETH_S\"]/200"
	tap_eq "... the second's port never opened" \
		"$(in_server curl -s -m 2 -o /dev/null -w '%{http_code}' http://127.0.0.1:8081/metrics)" 000
	SVC=$svc
}

test_killed_service_lock_goes() {
	local svc
	kill -KILL "$SVC"
	sl_wait "$SVC"
	tap_eq "kill -9: the device stays attached" "$(devices)" "[\"$VETH_S\"]"
	sl_service_start svc "$SL_TMP/svc2.log"
	tap_eq "... and a new start is not refused: it adopts the device" \
		"$(sl -j status | json_get "[(x['device'], x['service']) for x in d['devices']]")" \
		"[[\"$VETH_S\", \"adopted\"]]"
	SVC=$svc
}

test_cli_writes_refused() {
	local e0 r
	e0=$(epoch)
	r=$(run_json "$SL_TMP/apply.json" rules apply "$SL_TMP/other.yaml")
	tap_eq "rules apply with a service running: exit 1, the error names the rule file the service applies (to change) and 'slicelimit reload'" \
		"${r%/*}/$(json_get "'applies the rule file $SL_TMP/rules.yaml; change $SL_TMP/rules.yaml and run \\'slicelimit reload\\'' in d['error']" "$SL_TMP/apply.json")" \
		"1/True"
	tap_eq "... the running rules unchanged (epoch, 2 rules)" \
		"$(epoch)/$(sl -j status | json_get "d['rules']")" "$e0/2"
	r=$(run_json "$SL_TMP/detach.json" detach "$VETH_S")
	tap_eq "detach of the service's device: exit 1, still attached" \
		"${r%/*}/$(json_get "'slicelimit reload' in d['error']" "$SL_TMP/detach.json")/$(devices)" \
		"1/True/[\"$VETH_S\"]"
	r=$(run_json "$SL_TMP/attach.json" attach lo --mode tc)
	tap_eq "attach of another device: exit 1, not attached" \
		"${r%/*}/$(devices)" "1/[\"$VETH_S\"]"
	tap_eq "... status: nothing changed under the service" \
		"$(service_state "s['changed_under_it']")" null
}

test_cli_writes_forced() {
	local r
	r=$(run_json "$SL_TMP/apply.json" rules apply "$SL_TMP/other.yaml" --force)
	tap_eq "rules apply --force: exit 0, applied" \
		"${r%/*}/$(json_get "d['applied']" "$SL_TMP/apply.json")" "0/True"
	if wait_state "s['changed_under_it'] is not None" True; then
		tap_ok "... the service notices: status shows changed_under_it"
	else
		tap_fail "... the service notices: status shows changed_under_it" \
			"$(sl -j status)"
	fi
	tap_eq "... and its log says so" \
		"$(grep -c 'changed under the service: the rules were replaced' "$SL_TMP/svc2.log")" 1
	r=$(run_json "$SL_TMP/detach.json" detach "$VETH_S" --force)
	tap_eq "detach --force of its last device: exit 0, detached, the service's pins stay" \
		"${r%/*}/$(devices)/$(pins_gone)/$(service_state "s['running']")" \
		"0/[]/pinned/True"
	kill -HUP "$SVC"
	if wait_state "[s['changed_under_it'], s['reloads_applied']]" "[null, 1]"; then
		tap_ok "SIGHUP puts the config back: nothing changed under it"
	else
		tap_fail "SIGHUP puts the config back: nothing changed under it" "$(sl -j status)"
	fi
	tap_eq "... its rules and its device again" \
		"$(sl -j rules list | json_get "[r['name'] for r in d['rules']]")/$(devices)" \
		"[\"flood\", \"dns\"]/[\"$VETH_S\"]"
	sl_stop "$SVC"
	tap_eq "the service stopped: exit 0, nothing pinned" "$STOP_RC/$(pins_gone)" "0/gone"
}

test_attach_without_rules_says_so() {
	local out
	out=$(sl -j attach "$VETH_S" --mode xdp-generic 2>"$SL_TMP/attach.err")
	tap_eq "attach onto an instance with no rules: \"rules\": 0, and a warning that everything passes" \
		"$(printf '%s' "$out" | json_get "[d['attached'], d['rules']]")/$(grep -c 'every packet passes' "$SL_TMP/attach.err")" \
		"[true, 0]/1"
}

test_concurrent_applies_each_their_epoch() {
	local e0 a b i
	sl rules apply "$SL_TMP/rules.yaml" >/dev/null || tap_fail "rules apply"
	e0=$(epoch)
	# shellcheck disable=SC2034
	for i in 1 2; do
		sl_bg "LOOP$i" bash -c 'for n in $(seq 1 12); do
			nsenter --net="/run/netns/'"$NS_S"'" "'"$SL_BIN"'" rules apply "$0" >/dev/null || exit 1
		done' "$SL_TMP/$([ $i = 1 ] && echo rules || echo other).yaml"
	done
	a=0; b=0
	sl_wait "$LOOP1" || a=$?
	sl_wait "$LOOP2" || b=$?
	tap_eq "two loops of 12 applies at once: all exit 0, the epoch moved 24 times" \
		"$a/$b/$(($(epoch) - e0))" "0/0/24"
}

test_dry_run() {
	local e0 out rc=0
	sl rules apply "$SL_TMP/rules.yaml" >/dev/null || tap_fail "rules apply"
	sl_send "$CLIENT" "$SRV4" 53 3 >/dev/null || tap_fail "sl-traffic sent 3 packets"
	sl_send "${CLIENT4[1]}" "$SRV4" 53 3 >/dev/null || tap_fail "sl-traffic sent 3 packets"
	e0=$(epoch)
	out=$(sl -j rules apply --dry-run "$SL_TMP/other.yaml") || rc=$?
	tap_eq "rules apply --dry-run: exit 0, web added, dns removed, flood changed, the 2 clients of dns would be forgotten" \
		"$rc/$(printf '%s' "$out" | json_get "[d['applied'], d['added'], d['removed'], d['changed'], d['unchanged'], d['clients_forgotten'], sorted((r['rule'], r['change']) for r in d['rules'])]")" \
		"0/[false, 1, 1, 1, 0, 2, [[\"dns\", \"removed\"], [\"flood\", \"changed\"], [\"web\", \"added\"]]]"
	tap_eq "... nothing applied: the same epoch, dns still counts its clients" \
		"$(epoch)/$(sl -j query "$CLIENT" --rule dns --port 53 | json_get "d[0]['used']")" "$e0/3"
	tap_eq "--dry-run of the running file: all unchanged, nothing forgotten" \
		"$(sl -j rules apply --dry-run "$SL_TMP/rules.yaml" | json_get "[d['unchanged'], d['clients_forgotten']]")" \
		"[2, 0]"
	printf 'rules:\n  - name: web\n    limit: many\n' >"$SL_TMP/bad.yaml"
	rc=0
	sl -j rules apply --dry-run "$SL_TMP/bad.yaml" >/dev/null 2>&1 || rc=$?
	tap_eq "--dry-run of a bad file: exit 1" "$rc" 1
}

test_unprivileged_says_what_it_needs() {
	local cmd bad=""
	chmod 711 "$SL_TMP"	# the rule file is not what is refused
	chmod 644 "$SL_TMP/rules.yaml"
	for cmd in "attach lo --mode tc" "rules apply $SL_TMP/rules.yaml" "status"; do
		# shellcheck disable=SC2086
		in_server setpriv --reuid=65534 --regid=65534 --clear-groups \
			--inh-caps=-all "$SL_BIN" -j $cmd >"$SL_TMP/nobody.json" 2>/dev/null
		[ "$?/$(json_get "'needs root, or CAP_BPF and CAP_NET_ADMIN' in d['error']" "$SL_TMP/nobody.json" 2>&1)" = 1/True ] ||
			bad="$bad [$cmd] $(cat "$SL_TMP/nobody.json")"
	done
	tap_eq "as nobody without capabilities: attach, rules apply and status exit 1 saying slicelimit needs root, or CAP_BPF and CAP_NET_ADMIN" \
		"${bad:-none}" none
}

main() {
	local t0=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	test_second_service_refused
	test_killed_service_lock_goes
	test_cli_writes_refused
	test_cli_writes_forced
	test_attach_without_rules_says_so
	test_concurrent_applies_each_their_epoch
	test_dry_run
	test_unprivileged_says_what_it_needs
	tap_elapsed "$t0" 60
	tap_done
}

sl_run main
