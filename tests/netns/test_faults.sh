#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Faults, on real traffic over a veth with the service attached in native
# XDP mode (every window 60 s, so nothing ages out while the test runs):
#
#   1. kill -9 of the service during traffic: the kernel program keeps
#      enforcing with the pinned maps; a restart with the same config adopts
#      the pins, counts and rules without a gap and without attaching twice;
#      SIGTERM then detaches and unpins.
#   2. rule files that are invalid, truncated mid-line, empty, comments
#      only, huge (100,000 rules) or full of contradictions: `rules apply`
#      exits 1 naming the file and a line, and SIGHUP is refused; the
#      running rules stay byte-identical and the service keeps answering.
#   3. resource limits: a low RLIMIT_NOFILE (every command that opens the
#      pins, load/attach/apply/detach swept around the fds they need: a
#      clear error, exit 1..127, nothing half done), stderr (and stdout) on
#      a full disk (/dev/full), and no bpffs at /sys/fs/bpf (unmounted in
#      this run's private mount namespace, then mounted back; the cleanup
#      mounts it back too if the run is stopped in between).
#   4. a late failure leaves nothing of the call that failed: an attach
#      or rules apply whose last program pin is taken (a directory
#      squatting on it) removes the maps and programs it pinned; a
#      service start whose second device cannot be attached detaches the
#      first, which it attached, and unpins, but leaves one it adopted.
#
# Usage: test_faults.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl prlimit stat

# test_bpffs_not_mounted keeps this run's bpffs on $BPFFS_KEEP while
# /sys/fs/bpf has none: the cleanup (in the parent, the same private mount
# namespace) puts it back first, so that it can detach and remove $SL_TMP
BPFFS_KEEP=$SL_TMP/bpffs-keep
eval "lib_$(declare -f sl_cleanup)"
sl_cleanup() {
	if [ "$SL_CLEANED" -eq 0 ] && mountpoint -q "$BPFFS_KEEP" 2>/dev/null; then
		bpffs_here || mount --bind "$BPFFS_KEEP" /sys/fs/bpf
		umount "$BPFFS_KEEP"
	fi
	lib_sl_cleanup
}

API=http://127.0.0.1:8080	# in the server namespace: no clash with the host
LIMIT=300			# rule 'flood': what an abusive client gets through
RATE=200			# packets per second of the abusive senders

cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - name: flood
    protocol: udp
    ports: 7001
    limit: $LIMIT
    window: 60s
  - name: steady
    protocol: udp
    ports: 7002
    limit: 40
    window: 60s
  - name: api
    source: 100::/64
    limit: 5
    window: 60s
EOF
cp "$SL_TMP/rules.yaml" "$SL_TMP/running.yaml"
sl_config xdp "$SL_TMP/running.yaml"

ABUSIVE=${CLIENT4[0]}		# abusive across the kill -9
ACROSS=${CLIENT4[1]}		# abusive across the restart
COMPLIANT=${CLIENT4[2]}		# under the limit throughout

# ---- the bad rule files (written here; the huge one by python) ----

make_bad_files() {
	local d=$SL_TMP/bad n
	mkdir -p "$d"
	printf 'rules: [\n  - {name: x,\n    limit: 5\n' >"$d/invalid-syntax.yaml"
	printf 'rules: 5\n' >"$d/invalid-not-a-list.yaml"
	printf 'rules:\n  - name: a\n    limit: 5\n    colour: blue\n' >"$d/invalid-unknown-field.yaml"
	printf '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\n' >"$d/invalid-binary.yaml"
	# the valid file cut in the middle of its line "    limit: 40"
	n=$(grep -b -o '    limit: 40' "$SL_TMP/rules.yaml" | cut -d: -f1)
	head -c "$((n + 7))" "$SL_TMP/rules.yaml" >"$d/truncated.yaml"
	: >"$d/empty.yaml"
	printf '   \n\n      \n \n' >"$d/whitespace-only.yaml"
	printf '# only comments\n\n  # indented\n#\n' >"$d/comments-only.yaml"
	"$SL_PY" - "$d/huge.yaml" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("rules:\n")
    for i in range(100000):
        f.write(f"  - name: r{i}\n    protocol: udp\n    ports: {1024 + i % 60000}\n"
                f"    limit: {10 + i % 1000}\n    window: 60s\n")
EOF
	# contradictions the checker sees, each on a known line
	cat >"$d/contradictions.yaml" <<'EOF'
rules:
  - name: twice
    limit: 5
  - name: twice
    limit: 6
  - name: backwards
    protocol: udp
    ports: 100-1
    limit: 0
  - name: wrongopt
    algorithm: fixed
    slices: 4
    limit: 5
  - name: portless
    protocol: icmp
    ports: 80
    limit: 5
EOF
	printf 'rules:\n  - name: a\n    limit: 5\n    algorithm: leaky-funnel\n' >"$d/unknown-algorithm.yaml"
	BAD_FILES=(invalid-syntax invalid-not-a-list invalid-unknown-field
		invalid-binary truncated empty whitespace-only comments-only huge
		contradictions unknown-algorithm)
}

# ---- helpers ----

bpffs_here() { [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ]; }

# expect_rc WANT DESC CMD...: the exit status of CMD
expect_rc() {
	local want=$1 desc=$2 rc=0
	shift 2
	"$@" >/dev/null 2>&1 || rc=$?
	tap_eq "$desc" "$rc" "$want"
}

# start_service VAR LOG [OPTION...]: start slicelimit [OPTION...] run
# --config in the server namespace, stderr to LOG; wait (bounded) until
# the API answers
start_service() {
	local var=$1 log=$2
	shift 2
	sl_bg "$var" nsenter --net="/run/netns/$NS_S" "$SL_BIN" "$@" run \
		--config "$SL_TMP/config.yaml" 2>"$log"
	sl_service_wait "${!var}" "$log"
}

# the service's reloads applied and refused, as /metrics counts them
metrics_reloads() {
	in_server curl -s -m 2 "$API/metrics" |
		awk '$1 == "slicelimit_reloads_total{result=\"applied\"}" { a = $2 }
		     $1 == "slicelimit_reloads_total{result=\"refused\"}" { r = $2 }
		     END { print a "/" r }'
}

xdp_mode() {		# the XDP attach mode ip link reports (1 = native)
	in_server ip -j link show "$VETH_S" | json_get "d[0].get('xdp', {}).get('mode')"
}

xdp_prog_id() {		# the program ip link reports on the device
	in_server ip -j link show "$VETH_S" | json_get "d[0].get('xdp', {}).get('prog', {}).get('id')"
}

# status_devices: [(device, mode, prog_id)] of status --json
status_devices() {
	sl -j status | json_get "[(x['device'], x['mode'], x['prog_id']) for x in d.get('devices', [])]"
}

# components: how many times xdp-loader status lists slicelimit's program
# sl_xdp on the device (alone, or behind libxdp's dispatcher: one "=>" line
# each); empty when xdp-loader is not there
components() {
	command -v xdp-loader >/dev/null || return 0
	in_server xdp-loader status "$VETH_S" 2>/dev/null | grep -c ' sl_xdp ' || true
}

rule_stat() {		# RULE FIELD: a counter of slicelimit stats --json
	sl -j stats | json_get "[r['$2'] for r in d['rules'] if r['rule'] == '$1'][0]"
}

# rules_only FILE: the 'rules' array of a rules list --json, as JSON
rules_only() { json_get "d['rules']" "$1"; }

# ---- 1. kill -9 during traffic, restart, SIGTERM ----

test_kill9_keeps_enforcing_and_restart_adopts() {
	local sender at_kill rc prog1 prog2 passed_before dropped_before n

	start_service SVC "$SL_TMP/svc1.log"
	tap_eq "the service attached $VETH_S in native XDP mode (ip -j link: mode 1)" \
		"$(xdp_mode)" 1
	tap_eq "status --json: one device, $VETH_S, mode xdp" \
		"$(status_devices | json_get "[x[:2] for x in d]")" "[[\"$VETH_S\", \"xdp\"]]"
	tap_eq "status --json: this service (its pid, running) attached $VETH_S" \
		"$(sl -j status | json_get "[[x['device'], x['service']] for x in d['devices']] + [d['service']['pid'] == $SVC, d['service']['running']]")" \
		"[[\"$VETH_S\", \"attached\"], true, true]"
	prog1=$(xdp_prog_id)
	sl -j rules list >"$SL_TMP/list1.json"

	sl_recv_start k9 udp "$SRV4" 7001 25
	sl_send_bg sender "$ABUSIVE" "$SRV4" 7001 $((LIMIT * 2)) --rate "$RATE" \
		>"$SL_TMP/send.json"
	sleep 0.7
	kill -KILL "$SVC"
	rc=0
	{ sl_wait "$SVC" || rc=$?; } 2>/dev/null	# no "Killed" from bash
	tap_eq "kill -9 of the service during traffic (exit status 137)" "$rc" 137
	at_kill=$(rule_stat flood passed)
	if [ "$at_kill" -lt "$LIMIT" ]; then
		tap_ok "the abusive client had not used its allowance at the kill ($at_kill of $LIMIT passed)"
	else
		tap_fail "the abusive client had not used its allowance at the kill" \
			"passed $at_kill of $LIMIT before the kill: send later or faster"
	fi
	sl_wait "$sender" || tap_fail "sl-traffic sent all $((LIMIT * 2)) packets from $ABUSIVE"
	sl_send "$COMPLIANT" "$SRV4" 7001 20 >/dev/null ||
		tap_fail "sl-traffic sent 20 packets from $COMPLIANT"
	sl_recv_stop k9
	tap_eq "with the service dead the kernel keeps enforcing: the abusive client got exactly $LIMIT of $((LIMIT * 2)) through" \
		"$(received k9 "$ABUSIVE")" "$LIMIT"
	tap_eq "... and the compliant client all 20" "$(received k9 "$COMPLIANT")" 20
	tap_eq "after the kill: ip link still shows the same XDP program, native" \
		"$(xdp_prog_id)/$(xdp_mode)" "$prog1/1"
	tap_eq "after the kill: status --json still shows $VETH_S attached (xdp, present)" \
		"$(sl -j status | json_get "[(x['device'], x['mode'], x['present']) for x in d['devices']]")" \
		"[[\"$VETH_S\", \"xdp\", true]]"
	tap_eq "after the kill: the pins are still there" "$(pins_gone)" pinned

	# the restart, while another abusive client sends through it
	passed_before=$(rule_stat flood passed)
	dropped_before=$(rule_stat flood dropped)
	sl_recv_start rs udp "$SRV4" 7001 25
	sl_send_bg sender "$ACROSS" "$SRV4" 7001 $((LIMIT * 3)) --rate "$RATE" \
		>"$SL_TMP/send.json"
	sleep 0.5
	start_service SVC "$SL_TMP/svc2.log" -v
	if kill -0 "$sender" 2>/dev/null; then
		tap_ok "the restarted service answered while $ACROSS was still sending"
	else
		tap_fail "the restarted service answered while $ACROSS was still sending" \
			"the sender ($((LIMIT * 3)) at $RATE/s) ended first: a loaded host?"
	fi
	sl_send "$ABUSIVE" "$SRV4" 7001 50 >/dev/null ||
		tap_fail "sl-traffic sent 50 packets from $ABUSIVE"
	sl_wait "$sender" || tap_fail "sl-traffic sent all $((LIMIT * 3)) packets from $ACROSS"
	sl_recv_stop rs
	tap_eq "the restart adopted $VETH_S: status --json shows the new service (its pid, running) holding it as adopted, not attached" \
		"$(sl -j status | json_get "[[x['device'], x['service']] for x in d['devices']] + [d['service']['pid'] == $SVC, d['service']['running']]")" \
		"[[\"$VETH_S\", \"adopted\"], true, true]"
	tap_eq "a client sending through the restart got exactly $LIMIT of $((LIMIT * 3)) (no gap)" \
		"$(received rs "$ACROSS")" "$LIMIT"
	tap_eq "the abusive client's count is kept: 0 of 50 more after the restart" \
		"$(received rs "$ABUSIVE")" 0
	tap_eq "... query says used $LIMIT, remaining 0" \
		"$(sl -j query "$ABUSIVE" --rule flood | json_get "[d[0]['used'], d[0]['remaining']]")" \
		"[$LIMIT, 0]"
	n=$(rule_stat flood passed)
	tap_eq "the rule's counters are kept: passed $passed_before + $LIMIT" \
		"$n" $((passed_before + LIMIT))
	tap_eq "... dropped grew from $dropped_before by $((2 * LIMIT + 50))" \
		"$(rule_stat flood dropped)" $((dropped_before + 2 * LIMIT + 50))
	sl -j rules list >"$SL_TMP/list2.json"
	tap_eq "the rules are the same after the restart (rules list --json, rules array)" \
		"$(rules_only "$SL_TMP/list2.json")" "$(rules_only "$SL_TMP/list1.json")"
	prog2=$(xdp_prog_id)
	tap_eq "not attached twice: ip link shows the same XDP program as before the kill ($prog1), native" \
		"$prog2/$(xdp_mode)" "$prog1/1"
	tap_eq "not attached twice: status --json lists $VETH_S once" \
		"$(status_devices | json_get "[x[0] for x in d]")" "[\"$VETH_S\"]"
	n=$(components)
	if [ -n "$n" ]; then
		tap_eq "not attached twice: xdp-loader status shows one program on $VETH_S" "$n" 1
	fi

	sl_stop "$SVC"
	tap_eq "SIGTERM: the restarted service exits 0" "$STOP_RC" 0
	tap_eq "... $VETH_S has no XDP program, the pins are gone, status: not loaded" \
		"$(in_server ip -j link show "$VETH_S" | json_get "'xdp' in d[0]")/$(pins_gone)/$(sl -j status | json_get "d['loaded']")" \
		"False/gone/False"
}

# ---- 2. bad rule files: rules apply and SIGHUP ----

# problems JSONFILE: the "problems" of a refused file (-j rules apply) as
# "LINE rule field" lines, in the order given
problems() {
	json_get "'\\n'.join('%s %s %s' % (p.get('line'), p.get('rule', '-'), p.get('field', '-')) for p in d['problems'])" "$1"
}

test_bad_files_refused_by_rules_apply() {
	local f path rc line lines bad=""
	sl -j rules list >"$SL_TMP/before.json"
	for f in "${BAD_FILES[@]}"; do
		path=$SL_TMP/bad/$f.yaml
		rc=0
		sl -j rules apply "$path" >"$SL_TMP/out.json" 2>/dev/null || rc=$?
		line=$(json_get "d['problems'][0]['line'] if d['problems'][0]['file'] == '$path' and d['error'].startswith('$path: ') else ''" "$SL_TMP/out.json" 2>/dev/null)
		lines=$(wc -l <"$path")
		[ "$lines" -ge 1 ] || lines=1
		if [ "$rc" = 1 ] && [ -n "$line" ] && [ "$line" -ge 1 ] &&
			[ "$line" -le $((lines + 1)) ]; then
			tap_ok "rules apply $f.yaml: exit 1, one JSON object, its first problem at $f.yaml:$line ($(json_get "d['problems'][0]['message']" "$SL_TMP/out.json"))"
		else
			tap_fail "rules apply $f.yaml: exit 1, one JSON object naming the file and a line (1..$lines)" \
				"exit $rc" "$(head -c 600 "$SL_TMP/out.json")"
		fi
		sl -j rules list >"$SL_TMP/after.json"
		cmp -s "$SL_TMP/before.json" "$SL_TMP/after.json" || bad="$bad $f"
	done
	tap_eq "after the ${#BAD_FILES[@]} refused applies rules list --json is byte-identical" \
		"${bad:- none changed}" " none changed"
	bad=""
	for f in empty whitespace-only comments-only; do
		sl -j rules apply "$SL_TMP/bad/$f.yaml" 2>/dev/null >"$SL_TMP/out.json"
		[ "$(problems "$SL_TMP/out.json")" = "1 - -" ] &&
			json_get "d['problems'][0]['message']" "$SL_TMP/out.json" | grep -q '^empty rule file' ||
			bad="$bad $f"
	done
	tap_eq "empty, whitespace-only and comments-only files: one problem, line 1, 'empty rule file'" \
		"${bad:- all}" " all"
	# the truncated file: the problem is on the line that was cut
	line=$(grep -n '^    lim$' "$SL_TMP/bad/truncated.yaml" | cut -d: -f1)
	sl -j rules apply "$SL_TMP/bad/truncated.yaml" 2>/dev/null >"$SL_TMP/out.json"
	tap_eq "truncated.yaml: the problem names line $line, where the file was cut" \
		"$(problems "$SL_TMP/out.json")" "$line - -"
	# the contradictions: one problem each, on its own line, all in one run
	sl -j rules apply "$SL_TMP/bad/contradictions.yaml" 2>/dev/null >"$SL_TMP/out.json"
	tap_eq "contradictions.yaml: every problem in one run (line 4 duplicate name, 8 ports 100-1, 9 limit 0, 12 slices with fixed, 16 ports with icmp)" \
		"$(problems "$SL_TMP/out.json" | paste -sd, -)" \
		"4 twice name,8 backwards ports,9 backwards limit,12 wrongopt slices,16 portless ports"
	tap_eq "... and the error counts them: 'FILE: 5 problems; the running rules are unchanged'" \
		"$(json_get "d['error']" "$SL_TMP/out.json")" \
		"$SL_TMP/bad/contradictions.yaml: 5 problems; the running rules are unchanged"
	sl -j rules apply "$SL_TMP/bad/unknown-algorithm.yaml" 2>/dev/null >"$SL_TMP/out.json"
	tap_eq "unknown-algorithm.yaml: the problem names the field algorithm on line 4" \
		"$(problems "$SL_TMP/out.json")" "4 a algorithm"
	sl -j rules check "$SL_TMP/bad/invalid-unknown-field.yaml" 2>/dev/null >"$SL_TMP/out.json"
	tap_eq "rules check invalid-unknown-field.yaml: one JSON object, colour on line 4 (libcyaml said line 3)" \
		"$(problems "$SL_TMP/out.json")" "4 a colour"
}

test_bad_files_refused_on_sighup() {
	local f n bad_list="" bad_alive="" bad_api="" bad_state=""
	local last="[s['reloads_refused'], s['last_refused']['file'], s['last_refused']['error']]"
	sl -j rules list >"$SL_TMP/before.json"
	tap_eq "status --json before any SIGHUP: no reload applied or refused, none refused last" \
		"$(service_state "[s['reloads_applied'], s['reloads_refused'], s['last_refused']]")" \
		"[0, 0, null]"
	n=0
	for f in "${BAD_FILES[@]}"; do
		cp "$SL_TMP/bad/$f.yaml" "$SL_TMP/running.yaml"
		kill -HUP "$SVC"
		n=$((n + 1))
		wait_state "$last" "[$n, \"$SL_TMP/running.yaml\", \"not valid\"]" ||
			bad_state="$bad_state $f"
		sl -j rules list >"$SL_TMP/after.json"
		cmp -s "$SL_TMP/before.json" "$SL_TMP/after.json" || bad_list="$bad_list $f"
		kill -0 "$SVC" 2>/dev/null || { bad_alive="$bad_alive $f"; break; }
		[ "$(sl_api_code /metrics)" = 200 ] || bad_api="$bad_api $f"
	done
	tap_eq "SIGHUP with each of the ${#BAD_FILES[@]} bad files: status --json counts it refused, running.yaml not valid" \
		"${bad_state:- all}" " all"
	tap_eq "... none applied (status --json), and /metrics counts the same (applied/refused)" \
		"$(service_state "s['reloads_applied']")/$(metrics_reloads)" "0/0/$n"
	tap_eq "... rules list --json stays byte-identical" "${bad_list:- all}" " all"
	tap_eq "... the service stays up" "${bad_alive:- all}" " all"
	tap_eq "... and keeps answering (GET /metrics 200)" "${bad_api:- all}" " all"
	tap_eq "... and the API still checks with the running rules (api: 200, used 1 of 5)" \
		"$(in_server curl -s -m 2 "$API/v1/check?rule=api&key=faults" | json_get "[d['limit'], d['used']]")" \
		"[5, 1]"
	# and a good file is still taken after all that
	sed 's/limit: 40/limit: 41/' "$SL_TMP/rules.yaml" >"$SL_TMP/running.yaml"
	kill -HUP "$SVC"
	wait_state "s['reloads_applied']" 1 ||
		tap_fail "status --json counts the SIGHUP with a good file applied within 5 s"
	tap_eq "a good file on the next SIGHUP is applied (steady: limit 41; status --json: 1 applied, still $n refused)" \
		"$(sl -j rules list | json_get "[r['limit'] for r in d['rules'] if r['name'] == 'steady']")/$(service_state "[s['reloads_applied'], s['reloads_refused']]")" \
		"[41]/[1, $n]"
	cp "$SL_TMP/rules.yaml" "$SL_TMP/running.yaml"
	kill -HUP "$SVC"
	wait_state "s['reloads_applied']" 2 ||
		tap_fail "status --json counts the SIGHUP that restores the rules applied within 5 s"
}

# ---- 3. resource limits ----

# clean_fail DESC CMD...: CMD exits non-zero and under 128 (no signal) and
# says something on stderr; its output in $SL_TMP/err
clean_fail() {
	local desc=$1 rc=0
	shift
	"$@" >"$SL_TMP/out" 2>"$SL_TMP/err" || rc=$?
	if [ "$rc" -ge 1 ] && [ "$rc" -lt 128 ] && [ -s "$SL_TMP/err" ]; then
		tap_ok "$desc: exit $rc, '$(head -1 "$SL_TMP/err")'"
	else
		tap_fail "$desc: a clear error and exit 1..127" "exit $rc" \
			"stderr: $(head -5 "$SL_TMP/err")"
	fi
}

# with_nofile N CMD...: CMD (slicelimit ARGS) in the server namespace under
# RLIMIT_NOFILE N, bounded in time; stdout/stderr to $SL_TMP/out, err
with_nofile() {
	local n=$1
	shift
	timeout 20 nsenter --net="/run/netns/$NS_S" prlimit --nofile="$n" \
		"$SL_BIN" "$@" >"$SL_TMP/out" 2>"$SL_TMP/err"
}

has_xdp() {		# True/False: the device has an XDP program
	in_server ip -j link show "$VETH_S" | json_get "'xdp' in d[0]"
}

test_low_nofile() {
	local n rc bad epoch cmd xdp
	# with the service running (--force: past its refusal, to what the
	# write needs): nothing may change, and the error must name the cause
	sl -j rules list >"$SL_TMP/before.json"
	clean_fail "prlimit --nofile=8 rules apply --force (service running)" \
		in_server prlimit --nofile=8 "$SL_BIN" rules apply --force "$SL_TMP/rules.yaml"
	sl -j rules list >"$SL_TMP/after.json"
	if cmp -s "$SL_TMP/before.json" "$SL_TMP/after.json"; then
		tap_ok "... the running rules are byte-identical"
	else
		tap_fail "... the running rules are byte-identical" "$(cat "$SL_TMP/after.json")"
	fi
	# shellcheck disable=SC2016
	clean_fail "ulimit -n 8 (a subshell) status" \
		in_server bash -c 'ulimit -n 8 && exec "$0" status' "$SL_BIN"
	# every command that opens the pins: the real cause, not "nothing
	# loaded" (the pins are there: the service runs)
	bad=""
	for cmd in "status" "-j status" "stats" "rules list" "query $ABUSIVE" "top" \
		"events --count 1 --timeout 1s" "detach --force $VETH_S" "attach --force $VETH_S"; do
		rc=0
		# shellcheck disable=SC2086
		with_nofile 8 $cmd || rc=$?
		if [ "$rc" -lt 1 ] || [ "$rc" -ge 128 ] ||
			! grep -q 'Too many open files' "$SL_TMP/err"; then
			bad="$bad
[$cmd] exit $rc: $(head -1 "$SL_TMP/err") $(head -c 80 "$SL_TMP/out")"
		fi
	done
	if [ -z "$bad" ]; then
		tap_ok "prlimit --nofile=8: 9 commands that open the pins exit 1 saying 'Too many open files'"
	else
		tap_fail "prlimit --nofile=8: every command that opens the pins exits 1..127 saying 'Too many open files' (not 'nothing loaded')" "$bad"
	fi
	# rules apply around what it needs: works, or fails changing nothing
	bad=""
	epoch=$(json_get "d['rules_epoch']" "$SL_TMP/before.json")
	for n in 12 17 18; do
		rc=0
		with_nofile "$n" rules apply --force "$SL_TMP/rules.yaml" || rc=$?
		diag "rules apply under nofile $n: exit $rc $(head -1 "$SL_TMP/err")"
		if [ "$rc" -ge 128 ] || { [ "$rc" != 0 ] && [ ! -s "$SL_TMP/err" ]; }; then
			bad="$bad nofile=$n:exit-$rc"
		fi
		sl -j rules list >"$SL_TMP/after.json"
		if [ "$rc" != 0 ] && ! cmp -s "$SL_TMP/before.json" "$SL_TMP/after.json"; then
			bad="$bad nofile=$n:rules-changed"
		fi
		cp "$SL_TMP/after.json" "$SL_TMP/before.json"
	done
	tap_eq "rules apply under nofile 12, 17, 18: each works or exits 1..127 with an error, the rules unchanged when it fails" \
		"${bad:- all clean}" " all clean"
	diag "rules epoch $epoch before, $(json_get "d['rules_epoch']" "$SL_TMP/before.json") after"
	tap_eq "... the service still runs, $VETH_S still attached (native), the API answers" \
		"$(kill -0 "$SVC" 2>/dev/null && echo up)/$(xdp_mode)/$(status_devices | json_get "[x[0] for x in d]")/$(sl_api_code /metrics)" \
		"up/1/[\"$VETH_S\"]/200"
	sl_stop "$SVC"
	tap_eq "SIGTERM of the running service: exit 0, pins gone" "$STOP_RC/$(pins_gone)" "0/gone"

	# nothing loaded: a failed load leaves nothing behind
	clean_fail "prlimit --nofile=8 attach $VETH_S (nothing loaded)" \
		in_server prlimit --nofile=8 "$SL_BIN" attach "$VETH_S"
	tap_eq "... leaves no XDP program on $VETH_S and no pins" "$(has_xdp)/$(pins_gone)" "False/gone"
	clean_fail "prlimit --nofile=8 run --config (nothing loaded)" \
		in_server prlimit --nofile=8 "$SL_BIN" run --config "$SL_TMP/config.yaml"
	tap_eq "... leaves no XDP program on $VETH_S and no pins" "$(has_xdp)/$(pins_gone)" "False/gone"
	clean_fail "prlimit --nofile=8 rules apply (nothing loaded)" \
		in_server prlimit --nofile=8 "$SL_BIN" rules apply "$SL_TMP/rules.yaml"
	tap_eq "... leaves no pins" "$(pins_gone)" gone
	bad=""
	for n in 4 24; do
		rc=0
		with_nofile "$n" attach "$VETH_S" || rc=$?
		# how many descriptors a load takes depends on the machine's
		# libbpf and libxdp: success is fine when the program is really
		# on the device; a failure must say why
		if [ "$rc" = 0 ]; then
			[ "$(has_xdp)" = True ] || bad="$bad nofile=$n:exit-0-not-attached"
			sl detach "$VETH_S" >/dev/null 2>&1
		elif [ "$rc" -ge 128 ] || [ ! -s "$SL_TMP/err" ]; then
			bad="$bad nofile=$n:exit-$rc"
		fi
		[ "$(pins_gone)" = gone ] || { bad="$bad nofile=$n:pins-left"; sl detach --all >/dev/null 2>&1; }
		[ "$(has_xdp)" = False ] || { bad="$bad nofile=$n:xdp-left"; in_server ip link set "$VETH_S" xdp off; }
	done
	tap_eq "attach under nofile 4 and 24: attached for real or exits 1..127 with an error, leaving nothing behind" \
		"${bad:- all clean}" " all clean"

	# detach around what it needs: "detached" (exit 0) must mean the
	# program is off the device; a failure must leave it attached and
	# recorded, so that it can be detached again
	bad=""
	for n in 18 20 22; do
		if [ "$(pins_gone)" = gone ]; then
			sl attach "$VETH_S" >/dev/null 2>&1 || { bad="$bad nofile=$n:attach-failed"; break; }
		fi
		rc=0
		with_nofile "$n" detach "$VETH_S" || rc=$?
		xdp=$(has_xdp)
		diag "detach under nofile $n: exit $rc, pins $(pins_gone), XDP on the device: $xdp; $(cat "$SL_TMP/out" "$SL_TMP/err" | paste -sd' ' | cut -c1-160)"
		if [ "$rc" = 0 ] && [ "$xdp" != False ]; then
			bad="$bad
nofile=$n: exit 0 ('$(head -1 "$SL_TMP/out")'), pins $(pins_gone), but XDP program $(xdp_prog_id) is still on $VETH_S"
			in_server ip link set "$VETH_S" xdp off
		elif [ "$rc" != 0 ] && { [ "$rc" -ge 128 ] || [ "$xdp" != True ] ||
			[ "$(status_devices | json_get "[x[0] for x in d]")" != "[\"$VETH_S\"]" ]; }; then
			bad="$bad
nofile=$n: exit $rc, XDP on the device: $xdp, status: $(status_devices)"
		fi
	done
	if [ -z "$bad" ]; then
		tap_ok "detach under nofile 18, 20, 22: exit 0 only with the program off the device, else a clean failure, still attached"
	else
		tap_fail "detach under nofile 18, 20, 22: exit 0 only with the program off the device, else a clean failure, still attached" "$bad"
	fi
	sl detach --all >/dev/null 2>&1
	[ "$(has_xdp)" = False ] || in_server ip link set "$VETH_S" xdp off
	tap_eq "detach --all after the sweeps: the pins are gone" "$(pins_gone)" gone
}

# the service started here runs on into test_bpffs_not_mounted
test_full_disk() {
	local rc epoch i cmd bad
	start_service SVC /dev/full
	tap_eq "the service with stderr on /dev/full runs: native XDP on $VETH_S, the API answers" \
		"$(xdp_mode)/$(sl_api_code /metrics)" "1/200"
	epoch=$(sl -j status | json_get "d['rules_epoch']")
	sed 's/limit: 40/limit: 42/' "$SL_TMP/rules.yaml" >"$SL_TMP/running.yaml"
	kill -HUP "$SVC"
	for i in $(seq 1 50); do
		[ "$(sl -j rules list | json_get "[r['limit'] for r in d['rules'] if r['name'] == 'steady']")" = "[42]" ] && break
		sleep 0.1
	done
	tap_eq "... SIGHUP with a good file (its log unwritable) applies it (steady: 42)" \
		"$(sl -j rules list | json_get "[r['limit'] for r in d['rules'] if r['name'] == 'steady']")" "[42]"
	sl -j rules list >"$SL_TMP/before.json"
	cp "$SL_TMP/bad/contradictions.yaml" "$SL_TMP/running.yaml"
	kill -HUP "$SVC"
	wait_state "s['reloads_refused']" 1 ||
		tap_fail "status --json counts the SIGHUP with a bad file (its errors unwritable) refused within 5 s"
	sl -j rules list >"$SL_TMP/after.json"
	tap_eq "... SIGHUP with a bad file (its errors unwritable): refused (status --json), still up, same rules, answering" \
		"$(service_state "s['reloads_refused']")/$(kill -0 "$SVC" 2>/dev/null && echo up)/$(cmp -s "$SL_TMP/before.json" "$SL_TMP/after.json" && echo same)/$(sl_api_code /metrics)" \
		"1/up/same/200"
	cp "$SL_TMP/rules.yaml" "$SL_TMP/running.yaml"

	# commands with stderr on /dev/full
	rc=0
	sl rules apply --force "$SL_TMP/rules.yaml" 2>/dev/full >"$SL_TMP/out" || rc=$?
	tap_eq "rules apply --force (the service runs) of a good file, stderr on /dev/full: exit 0, applied (epoch $epoch -> higher)" \
		"$rc/$(sl -j status | json_get "d['rules_epoch'] > $epoch")" "0/True"
	sl -j rules list >"$SL_TMP/before.json"
	rc=0
	sl rules apply "$SL_TMP/bad/contradictions.yaml" 2>/dev/full >/dev/null || rc=$?
	sl -j rules list >"$SL_TMP/after.json"
	tap_eq "rules apply of a bad file, stderr on /dev/full: exit 1, rules unchanged" \
		"$rc/$(cmp -s "$SL_TMP/before.json" "$SL_TMP/after.json" && echo same)" "1/same"
	rc=0
	sl -j status 2>/dev/full >"$SL_TMP/out" || rc=$?
	tap_eq "status --json, stderr on /dev/full: exit 0, valid JSON, $VETH_S listed" \
		"$rc/$(json_get "[x['device'] for x in d['devices']]" "$SL_TMP/out" 2>&1)" "0/[\"$VETH_S\"]"
	rc=0
	sl -vv -j stats 2>/dev/full >"$SL_TMP/out" || rc=$?
	tap_eq "-vv stats --json, stderr on /dev/full: exit 0, valid JSON" \
		"$rc/$(json_get "len(d['rules'])" "$SL_TMP/out" 2>&1)" "0/3"
	rc=0
	sl query 10.77.0.200 --rule nope 2>/dev/full >/dev/null || rc=$?
	tap_eq "query --rule of an unknown rule, stderr on /dev/full: exit 1" "$rc" 1
	rc=0
	sl attach --force "$VETH_S" 2>/dev/full >/dev/null || rc=$?
	tap_eq "attach --force of an attached device, stderr on /dev/full: exit 1, still one device" \
		"$rc/$(status_devices | json_get "[x[0] for x in d]")" "1/[\"$VETH_S\"]"

	# commands whose output goes to a full disk must say they failed
	bad=""
	for cmd in "status" "-j status" "stats" "-j stats" "rules list" "-j rules list" \
		"query $ABUSIVE" "top"; do
		rc=0
		# shellcheck disable=SC2086
		sl $cmd >/dev/full 2>"$SL_TMP/err" || rc=$?
		if [ "$rc" -lt 1 ] || [ "$rc" -ge 128 ]; then
			bad="$bad
[$cmd] exit $rc $(head -1 "$SL_TMP/err")"
		fi
	done
	if [ -z "$bad" ]; then
		tap_ok "stdout on /dev/full: 8 read commands report the lost output (exit 1..127)"
	else
		tap_fail "stdout on /dev/full: every read command reports the lost output (exit 1..127), no silent success, no crash" "$bad"
	fi
}

# with the service of test_full_disk still running
test_bpffs_not_mounted() {
	local kept=$BPFFS_KEEP rc cmd bad="" msg
	msg="bpffs not mounted at /sys/fs/bpf: run mount -t bpf -o mode=0700 bpf /sys/fs/bpf"
	sl -j rules list >"$SL_TMP/before.json"
	# keep our bpffs (and its pins) on a bind mount while /sys/fs/bpf has
	# none; unmount every bpffs stacked there (the host's may be under ours)
	mkdir -p "$kept"
	mount --bind /sys/fs/bpf "$kept" || die "cannot keep the bpffs on $kept"
	# lazily: the service holds a lock on its pin directory, which keeps
	# the mount busy
	for _ in 1 2 3 4; do
		bpffs_here || break
		umount -l /sys/fs/bpf || break
	done
	if bpffs_here; then
		tap_fail "unmount /sys/fs/bpf in the private mount namespace"
		umount "$kept"
		return
	fi
	tap_ok "/sys/fs/bpf unmounted in this run's mount namespace ($(stat -f -c %T /sys/fs/bpf))"
	for cmd in "attach $VETH_S" "attach $VETH_S --mode tc" "detach $VETH_S" "detach --all" \
		"status" "-j status" "rules apply $SL_TMP/rules.yaml" "rules list" "stats" \
		"top" "top --watch --count 1" "query $ABUSIVE" "events --count 1 --timeout 1s" \
		"run --config $SL_TMP/config.yaml"; do
		rc=0
		# shellcheck disable=SC2086
		timeout 10 nsenter --net="/run/netns/$NS_S" "$SL_BIN" $cmd \
			>"$SL_TMP/out" 2>"$SL_TMP/err" || rc=$?
		if [ "$rc" != 1 ] || ! grep -qF "$msg" "$SL_TMP/err"; then
			bad="$bad
[$cmd] exit $rc: $(head -2 "$SL_TMP/err" "$SL_TMP/out" | tr '\n' ' ')"
		fi
	done
	if [ -z "$bad" ]; then
		tap_ok "without bpffs: 14 commands (attach, detach, status, rules apply/list, stats, top, query, events, run) say '$msg' and exit 1"
	else
		tap_fail "without bpffs: every command that needs it says '$msg' and exits 1" "$bad"
	fi
	rc=0
	sl -j status >"$SL_TMP/out" 2>/dev/null || rc=$?
	tap_eq "... with --json the error is JSON too: {\"error\": \"bpffs not mounted ...\"}" \
		"$rc/$(json_get "d['error'].startswith('$msg')" "$SL_TMP/out" 2>&1)" "1/True"
	tap_eq "... rules check, which needs no bpffs, still works (exit 0)" \
		"$(sl rules check "$SL_TMP/rules.yaml" >/dev/null 2>&1; echo $?)" 0
	kill -HUP "$SVC"
	sleep 0.5
	tap_eq "... SIGHUP of the running service without bpffs: still up, the API answers" \
		"$(kill -0 "$SVC" 2>/dev/null && echo up)/$(sl_api_code "/v1/check?rule=api&key=nobpffs")" "up/200"
	sl_recv_start nobpffs udp "$SRV4" 7002 15
	sl_send "${CLIENT4[3]}" "$SRV4" 7002 60 >/dev/null ||
		tap_fail "sl-traffic sent 60 packets from ${CLIENT4[3]}"
	sl_recv_stop nobpffs
	tap_eq "... and the kernel still enforces: ${CLIENT4[3]} gets 40 of 60 through (rule steady)" \
		"$(received nobpffs "${CLIENT4[3]}")" 40
	# mount our bpffs back where it was
	if ! mount --bind "$kept" /sys/fs/bpf || ! umount "$kept"; then
		die "cannot mount the kept bpffs back on /sys/fs/bpf"
	fi
	sl -j rules list >"$SL_TMP/after.json"
	tap_eq "bpffs mounted back: the pins, the device and the rules are as before" \
		"$(bpffs_here && echo bpffs)/$(status_devices | json_get "[x[0] for x in d]")/$(cmp -s "$SL_TMP/before.json" "$SL_TMP/after.json" && echo same)" \
		"bpffs/[\"$VETH_S\"]/same"
	sl_stop "$SVC"
	tap_eq "SIGTERM of the service (its log on /dev/full): exit 0, detached, pins gone" \
		"$STOP_RC/$(has_xdp)/$(pins_gone)" "0/False/gone"
}

# ---- 4. a late failure leaves nothing of its call ----

# pin_names: what is under the pin dir, sorted, on one line
pin_names() { ls -A "$SL_PIN" 2>/dev/null | sort | paste -sd' '; }

test_late_pin_failure_leaves_nothing() {
	local cmd
	# the maps and the first two programs pin; the last cannot
	for cmd in "attach $VETH_S" "rules apply $SL_TMP/rules.yaml"; do
		mkdir -p "$SL_PIN/prog_check"
		# shellcheck disable=SC2086
		clean_fail "$cmd with $SL_PIN/prog_check taken by a directory (its last pin fails)" \
			sl $cmd
		tap_eq "... removes every pin it made (only the squatter is left), no XDP program on $VETH_S" \
			"$(pin_names)/$(has_xdp)" "prog_check/False"
		rmdir "$SL_PIN/prog_check"
		# what a failing build left: gone, so that the next case counts
		[ "$(pins_gone)" = gone ] || sl detach --all >/dev/null 2>&1
		rmdir "$SL_PIN" 2>/dev/null
	done
}

# run_fails DESC CONFIG: slicelimit run --config CONFIG exits 1..127
run_fails() {
	clean_fail "$1" timeout 20 nsenter --net="/run/netns/$NS_S" \
		"$SL_BIN" run --config "$2"
}

test_late_attach_failure_leaves_nothing() {
	cat >"$SL_TMP/two.yaml" <<EOF
devices:
  - { name: $VETH_S, mode: xdp }
  - { name: slnodev0, mode: xdp }
rules: $SL_TMP/running.yaml
http:
  listen: 127.0.0.1:8080
  token_file: $SL_API_TOKEN_FILE
EOF
	run_fails "run with a second device that does not exist" "$SL_TMP/two.yaml"
	tap_eq "... detaches $VETH_S, which it attached, and unpins (ip link, bpftool net, the pin dir)" \
		"$(has_xdp)/$(in_server bpftool -j net | json_get "len(d[0]['xdp'])")/$(pins_gone)" \
		"False/0/gone"
	[ "$(pins_gone)" = gone ] || sl detach --all >/dev/null 2>&1
	sl attach "$VETH_S" >/dev/null 2>&1
	run_fails "... the same with $VETH_S attached before the start" "$SL_TMP/two.yaml"
	tap_eq "... leaves $VETH_S, which it adopted, attached and recorded; no service state" \
		"$(has_xdp)/$(status_devices | json_get "[x[0] for x in d]")/$(sl -j status | json_get "d['service']")" \
		"True/[\"$VETH_S\"]/null"
	sl detach --all >/dev/null 2>&1
	tap_eq "... detach --all then leaves nothing" "$(has_xdp)/$(pins_gone)" "False/gone"
}

main() {
	local start=$SECONDS t
	sl_claim_pins 30
	sl_netns_setup
	make_bad_files
	t=$SECONDS
	test_kill9_keeps_enforcing_and_restart_adopts
	diag "kill -9 and restart: $((SECONDS - t))s"; t=$SECONDS
	start_service SVC "$SL_TMP/svc3.log"
	test_bad_files_refused_by_rules_apply
	test_bad_files_refused_on_sighup
	diag "bad rule files: $((SECONDS - t))s"; t=$SECONDS
	test_low_nofile
	diag "RLIMIT_NOFILE: $((SECONDS - t))s"; t=$SECONDS
	test_full_disk
	test_bpffs_not_mounted
	diag "/dev/full and no bpffs: $((SECONDS - t))s"; t=$SECONDS
	test_late_pin_failure_leaves_nothing
	test_late_attach_failure_leaves_nothing
	diag "late failures: $((SECONDS - t))s"
	tap_elapsed "$start" 180
	tap_done
}

sl_run main
