#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Operations (issue 13):
#
#   1. run --check: a good config and rule file exit 0 with {"ok": true};
#      a config with a bad field and a rule file with a bad field exit 1,
#      both problems listed with their file and line, nothing loaded.
#   2. log lines carry a syslog priority prefix ("<3>" for an error) when
#      JOURNAL_STREAM names stderr's device:inode, and none otherwise.
#   3. upgrade: a service started on pins of another build (simulated by
#      another build id written into sl_build, and one pinned map swapped
#      for one of another layout) swaps in this build's program: the
#      program id changes, the map whose layout changed is reset and named,
#      and a client's count in the kept client table survives and goes on
#      counting under the new program, on an XDP device (libxdp
#      dispatcher) and a TC one. `reload` does the same without a service,
#      and with one running has it re-read its config (SIGHUP); an XDP program attached without the
#      dispatcher is replaced in place (XDP_FLAGS_REPLACE).
#
# Usage: test_ops.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl stat

API=http://127.0.0.1:8080	# in the server namespace
CLIENT=${CLIENT4[0]}

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - { name: flood, protocol: udp, ports: 7001, limit: 100, window: 60s }
EOF
cat >"$SL_TMP/config.yaml" <<EOF
devices:
  - { name: $VETH_S, mode: xdp }
  - { name: lo, mode: tc }
rules: $SL_TMP/rules.yaml
keep_attached: true
http:
  listen: 127.0.0.1:8080
  token_file: $SL_API_TOKEN_FILE
EOF

used() {		# the flood rule's count of $CLIENT
	sl -j query "$CLIENT" --rule flood --port 7001 | json_get "d[0]['used']"
}

test_check_good_config_exits_0() {
	local out rc=0
	out=$("$SL_BIN" -j run --check --config "$SL_TMP/config.yaml" 2>/dev/null) || rc=$?
	tap_eq "run --check of a good config and rule file: exit 0, ok true, no problems, nothing pinned" \
		"$rc/$(printf '%s' "$out" | json_get "[d['ok'], d['problems']]")/$(pins_gone)" \
		"0/[true, []]/gone"
}

test_check_bad_config_and_rules_lists_both() {
	local out rc=0
	printf 'rules: %s\nclients: lots\n' "$SL_TMP/bad-rules.yaml" >"$SL_TMP/bad.yaml"
	printf 'rules:\n  - name: web\n    limit: many\n' >"$SL_TMP/bad-rules.yaml"
	out=$("$SL_BIN" -j run --check --config "$SL_TMP/bad.yaml" 2>/dev/null) || rc=$?
	tap_eq "run --check of a bad config naming a bad rule file: exit 1, ok false, both problems with file, line and field, one JSON object" \
		"$rc/$(printf '%s' "$out" | json_get "[d['ok']] + [[p['file'], p['line'], p['field']] for p in d['problems']]")/$(printf '%s\n' "$out" | wc -l)" \
		"1/[false, [\"$SL_TMP/bad.yaml\", 2, \"clients\"], [\"$SL_TMP/bad-rules.yaml\", 3, \"limit\"]]/1"
	rc=0
	"$SL_BIN" run --check --config "$SL_TMP/bad.yaml" >/dev/null 2>"$SL_TMP/check.err" || rc=$?
	if [ "$rc" = 1 ] && grep -q "^$SL_TMP/bad.yaml:2: " "$SL_TMP/check.err" &&
	   grep -q "^$SL_TMP/bad-rules.yaml:3: " "$SL_TMP/check.err"; then
		tap_ok "run --check without --json: exit 1, FILE:LINE of both problems on stderr"
	else
		tap_fail "run --check without --json: exit 1, FILE:LINE of both problems on stderr" \
			"exit $rc" "$(cat "$SL_TMP/check.err")"
	fi
}

test_log_prefix_when_stderr_is_the_journal() {
	local f=$SL_TMP/log.err
	: >"$f"
	JOURNAL_STREAM=$(stat -c '%d:%i' "$f") "$SL_BIN" run --config "$SL_TMP/none.yaml" 2>"$f"
	tap_eq "JOURNAL_STREAM naming stderr: the error line starts with <3>" \
		"$(head -c 3 "$f")" "<3>"
	JOURNAL_STREAM=$(stat -c '%d:%i' "$f") "$SL_BIN" -j run --config "$SL_TMP/none.yaml" \
		2>"$f" >"$SL_TMP/log.out"
	tap_eq "... the JSON on stdout carries no prefix" "$(head -c 1 "$SL_TMP/log.out")" "{"
	"$SL_BIN" run --config "$SL_TMP/none.yaml" 2>"$f"
	tap_eq "without JOURNAL_STREAM: no prefix" "$(head -1 "$f")" \
		"$SL_TMP/none.yaml: cannot read: No such file or directory"
	JOURNAL_STREAM=1:1 "$SL_BIN" run --config "$SL_TMP/none.yaml" 2>"$f"
	tap_eq "JOURNAL_STREAM naming another stream (stderr redirected since): no prefix" \
		"$(head -1 "$f")" "$SL_TMP/none.yaml: cannot read: No such file or directory"
}

# progs: "device:prog_id ..." of status --json, in device order
progs() {
	sl -j status | json_get "' '.join(f\"{x['device']}:{x['prog_id']}\" for x in sorted(d['devices'], key=lambda x: x['device']))"
}

# changed BEFORE AFTER: "changed" when no device kept its program id
changed() {
	"$SL_PY" -c 'import sys
b = dict(x.split(":") for x in sys.argv[1].split())
a = dict(x.split(":") for x in sys.argv[2].split())
print("changed" if b.keys() == a.keys() and all(b[k] != a[k] for k in b) else "same: %s -> %s" % (sys.argv[1], sys.argv[2]))' "$1" "$2"
}

prog_gone() {		# ID: "gone" once no program has it (bounded: 3 s)
	local i
	for i in $(seq 1 30); do
		bpftool prog show id "$1" >/dev/null 2>&1 || { echo gone; return; }
		sleep 0.1
	done
	echo there
}

test_upgrade_swaps_program_keeps_counts() {
	local svc prog1 before this old st
	sl_service_start svc "$SL_TMP/svc1.log"
	sl_send "$CLIENT" "$SRV4" 7001 10 >/dev/null || tap_fail "sl-traffic sent 10 packets"
	tap_eq "a fresh load records this build: status says same_build, and the client counted 10" \
		"$(sl -j status | json_get "[d['program']['same_build'], d['program']['build_id'] == d['program']['this_build_id']]")/$(used)" \
		"[true, true]/10"
	prog1=$(sl -j status | json_get "[x['prog_id'] for x in d['devices'] if x['device'] == '$VETH_S'][0]")
	before=$(progs)
	this=$(sl -j status | json_get "d['program']['this_build_id']")
	sl_stop "$svc"
	tap_eq "keep_attached: the service stopped, both devices stay attached" \
		"$STOP_RC/$(sl -j status | json_get "len(d['devices'])")" "0/2"

	fake_old_build || tap_fail "bpftool wrote another build id into sl_build"
	old=$(sl -j status | json_get "d['program']['build_id']")
	tap_eq "status --json of another build's program: same_build false, its build id shown" \
		"$(sl -j status | json_get "[d['program']['same_build'], d['program']['build_id'] != d['program']['this_build_id']]")" \
		"[false, true]"
	# a map of another layout where sl_clients_log was: the upgrade must
	# reset it, and only it
	rm "$SL_PIN/sl_clients_log"
	bpftool map create "$SL_PIN/sl_clients_log" type hash key 4 value 4 \
		entries 8 name sl_clients_log ||
		tap_fail "bpftool created a map of another layout"

	sl_service_start svc "$SL_TMP/svc2.log"
	st=$(sl -j status)
	tap_eq "the service's start swapped the programs: same_build, upgraded from the old id, the program id changed on both devices (xdp, tc)" \
		"$(printf '%s' "$st" | json_get "[d['program']['same_build'], d['program']['build_id'], d['program']['last_upgrade']['from_build_id']]")/$(changed "$before" "$(progs)")" \
		"[true, \"$this\", \"$old\"]/changed"
	tap_eq "... the map of another layout reset and named, the others kept" \
		"$(printf '%s' "$st" | json_get "[d['program']['last_upgrade']['maps_reset'], d['program']['last_upgrade']['maps_kept'] > 5]")" \
		"[[\"sl_clients_log\"], true]"
	tap_eq "... both devices adopted by the new service" \
		"$(printf '%s' "$st" | json_get "sorted([x['device'], x['service'], x['present']] for x in d['devices'])")" \
		"[[\"lo\", \"adopted\", true], [\"$VETH_S\", \"adopted\", true]]"
	tap_eq "... the TC filter on lo runs the program id status records" \
		"$(in_server bpftool -j net show dev lo | json_get "[t['id'] for t in d[0]['tc']]")" \
		"[$(printf '%s' "$st" | json_get "[x['prog_id'] for x in d['devices'] if x['device'] == 'lo'][0]")]"
	tap_eq "... the old program is gone from the kernel (detached, unpinned)" \
		"$(prog_gone "$prog1")" gone
	tap_eq "the client's count survived the swap (10)" "$(used)" 10
	sl_send "$CLIENT" "$SRV4" 7001 5 >/dev/null || tap_fail "sl-traffic sent 5 packets"
	tap_eq "... and the new program counts on from it (15)" "$(used)" 15
	local rc=0 out p0
	p0=$(progs)
	out=$(sl -j reload 2>/dev/null) || rc=$?
	tap_eq "reload with the service running: the service re-reads its config (exit 0, its pid, one reload applied), no program swap" \
		"$rc/$(printf '%s' "$out" | json_get "[d['reloaded'], d['service']]")/$(service_state "s['reloads_applied']")/$(progs)" \
		"0/[true, $svc]/1/$p0"
	sl_stop "$svc"
}

test_reload_swaps_without_service() {
	local before out
	before=$(progs)
	fake_old_build || tap_fail "bpftool wrote another build id into sl_build"
	out=$(sl -j reload 2>"$SL_TMP/reload.err")
	tap_eq "reload of another build's programs: upgraded, same_build, nothing reset, the program ids changed" \
		"$(printf '%s' "$out" | json_get "[d['upgraded'], d['same_build'], d['last_upgrade']['maps_reset']]")/$(changed "$before" "$(progs)")" \
		"[true, true, []]/changed"
	tap_eq "... the client's count survived (15)" "$(used)" 15
	tap_eq "reload again: nothing to do" \
		"$(sl -j reload | json_get "[d['upgraded'], d['same_build']]")" "[false, true]"
}

# the XDP program id on $VETH_S, as the kernel reports it
xdp_on_veth() {
	in_server ip -j -d link show "$VETH_S" | json_get "d[0].get('xdp', {}).get('prog', {}).get('id')"
}

test_reload_replaces_lone_xdp_program_in_place() {
	local before after
	sl detach --all >/dev/null
	# libxdp's switch for attaching without its dispatcher: our program
	# alone on the device, replaced with XDP_FLAGS_REPLACE
	LIBXDP_SKIP_DISPATCHER=1 sl attach "$VETH_S" --mode xdp >/dev/null 2>&1 ||
		tap_fail "attach $VETH_S without the libxdp dispatcher"
	sl rules apply "$SL_TMP/rules.yaml" >/dev/null || tap_fail "rules apply"
	before=$(sl -j status | json_get "d['devices'][0]['prog_id']")
	tap_eq "without the dispatcher the device runs our program itself" \
		"$(xdp_on_veth)" "$before"
	fake_old_build || tap_fail "bpftool wrote another build id into sl_build"
	sl reload >/dev/null 2>&1 || tap_fail "reload exited 0"
	after=$(sl -j status | json_get "d['devices'][0]['prog_id']")
	tap_eq "reload replaced the lone XDP program in place: the device runs the new id status records" \
		"$(xdp_on_veth)/$([ "$before" != "$after" ] && echo changed)" "$after/changed"
	sl_send "$CLIENT" "$SRV4" 7001 3 >/dev/null || tap_fail "sl-traffic sent 3 packets"
	tap_eq "... and it counts (3)" "$(used)" 3
}

main() {
	sl_claim_pins 30
	test_check_good_config_exits_0
	test_check_bad_config_and_rules_lists_both
	test_log_prefix_when_stderr_is_the_journal
	sl_netns_setup
	test_upgrade_swaps_program_keeps_counts
	test_reload_swaps_without_service
	test_reload_replaces_lone_xdp_program_in_place
	tap_done
}

sl_run main
