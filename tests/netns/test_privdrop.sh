#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Least privilege (docs/SECURITY.md):
#
#   1. The real service, started as root with service.user in its config
#      (a system user this test creates) as the unit starts it (its ExecStartPre's
#      directories, its CapabilityBoundingSet), drops once it attached:
#      its uid and gid are that user's, it has no capabilities at all
#      (effective, permitted, bounding, inheritable, ambient), no_new_privs
#      is set; its root monitor keeps CAP_BPF, CAP_NET_ADMIN and
#      CAP_SYS_ADMIN only. Dropped, it still enforces (real UDP frames
#      over the limit are dropped at XDP: at most the limit of 30 get
#      through), runs its sync, answers a check (200, then 429 over the
#      limit), changes the block list over its API (PUT, GET, DELETE),
#      reloads on SIGHUP (a raised limit answers 200 again), and
#      stops cleanly (exit 0, XDP detached, pins gone, the monitor gone).
#      Killed with -9, it leaves the programs attached and pinned (its
#      monitor goes without detaching), and the next start adopts them.
#   2. A user that does not exist is an error that says how to make it.
#      A sync identity (this node's secret key, as `sync keygen` writes
#      it: root's, mode 0600) is refused at start when the service drops
#      to its user (the sync thread reads it as that user after the drop,
#      and a reload checks it again), with the fix; root's with the user's
#      group, 0640, it is accepted (root reads it at the start without
#      CAP_DAC_OVERRIDE, the user through the group), group-writable it
#      is not. The dropped service below runs its sync with that identity.
#   3. The attacks of an unprivileged user (nobody) on a bpffs mounted
#      without mode=0700: holding flock on /sys/fs/bpf no longer stalls
#      root's `rules apply` (the writers' lock is in root's
#      /run/slicelimit/lock); a /sys/fs/bpf/slicelimit that nobody made
#      first makes `run` refuse to start, pinning nothing in it.
#   4. The shipped unit scores 2.5 or better (OK) in
#      `systemd-analyze security --offline=yes`.
#
# Usage: test_privdrop.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl useradd userdel setpriv flock systemd-analyze

API=http://127.0.0.1:8080
SVC_USER=slpd$$			# the service's user, made here
CAP_NONE=0000000000000000
CAP_MONITOR=0000008000201000	# CAP_BPF, CAP_SYS_ADMIN (21), CAP_NET_ADMIN (12)

# lib.sh's cleanup, and the user this test made
cleanup() {
	sl_cleanup
	userdel "$SVC_USER" 2>/dev/null
	groupdel "$SVC_USER-api" 2>/dev/null
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

bset=-all		# the unit's CapabilityBoundingSet, for setpriv

# proc_field PID FIELD: a line of /proc/PID/status, its values only
proc_field() {
	awk -v f="$2:" '$1 == f { $1 = ""; sub(/^ /, ""); print }' "/proc/$1/status"
}

# proc_first PID FIELD: the first value of that line (the real id)
proc_first() {
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}

# rules LIMIT: the rule file, the check rule's limit LIMIT
rules() {
	cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - { name: udp, protocol: udp, ports: 9000, limit: 10, window: 60s }
  - { name: api, limit: $1, window: 60s }
EOF
	chmod 644 "$SL_TMP/rules.yaml"
}

# the service's config; it reads it and its rules again as its user when
# it reloads
config() {
	rules 3
	sl_config xdp "$SL_TMP/rules.yaml"
	# the API's token: a secret like the sync key (root's, the user's
	# group, 0640), read again as the user on a reload
	chgrp "$SVC_USER" "$SL_API_TOKEN_FILE"
	chmod 640 "$SL_API_TOKEN_FILE"
	chmod 755 "$SL_TMP"
	chmod 644 "$SL_TMP/config.yaml"
}

# the overall code of one call (a descriptor no rule answers) on the rate
# limit service's socket, from a grpcio client (test_rls.sh's)
rls_call_overall() {
	mkdir -p "$SL_TMP/stubs"
	"$SL_PY" -m grpc_tools.protoc -I"$here/../../proto" \
		--python_out="$SL_TMP/stubs" --grpc_python_out="$SL_TMP/stubs" \
		"$here/../../proto/rls.proto" 2>/dev/null || return
	echo '[{"domain": "d", "descriptors": [{"entries": [["k", "v"]]}]}]' |
		"$SL_PY" "$here/rls_client.py" "$SL_TMP/stubs" unix:/run/slicelimit/rls.sock 2>/dev/null |
		json_get 'd[0]["overall"]'
}

test_service_dropped() {
	local svc mon rc code i uid gid c n
	uid=$(id -u "$SVC_USER")
	gid=$(id -g "$SVC_USER")
	rules 3
	# as the unit starts it: its ExecStartPre's directories, then the
	# service under its CapabilityBoundingSet (which has no CAP_CHOWN)
	install -d -m 0700 /run/slicelimit/lock
	chown "$SVC_USER:$SVC_USER" /run/slicelimit
	bset=-all
	for c in $(sed -n 's/^CapabilityBoundingSet=//p' "$here/../../packaging/slicelimit.service.in"); do
		c=${c#CAP_}
		bset="$bset,+${c,,}"
	done
	# with sync: its identity (root's, group the user's, 0640, since
	# test_secret_owner) is read as root at the start, and as the user
	# when the sync starts after the drop and at the reload
	cp "$SL_TMP/config.yaml" "$SL_TMP/svc.yaml"
	# the API's socket for a group the user is only a member of (nginx's
	# workers' in a real deployment): it makes the socket after the drop
	sed -i "s|^http:|http:\n  socket_group: $SVC_USER-api|" "$SL_TMP/svc.yaml"
	# the user from the config (service.user), not --user, and over the
	# SLICELIMIT_USER=root of lib.sh
	cat >>"$SL_TMP/svc.yaml" <<EOF
service:
  user: $SVC_USER
rls:
  socket_group: $SVC_USER-api
EOF
	sync_config >>"$SL_TMP/svc.yaml"
	chmod 644 "$SL_TMP/svc.yaml"
	sl_service_start svc "$SL_TMP/svc.log" "$SL_TMP/svc.yaml" setpriv --bounding-set="$bset"

	tap_eq "the service runs as its user: Uid and Gid (real, effective, saved, fs)" \
		"$(proc_field "$svc" Uid)/$(proc_field "$svc" Gid)" \
		"$uid $uid $uid $uid/$gid $gid $gid $gid"
	tap_eq "... its own groups only, not root's (its primary group and the API socket's)" \
		"$(proc_field "$svc" Groups)" "$gid $(getent group "$SVC_USER-api" | cut -d: -f3)"
	tap_eq "... no capabilities: CapEff, CapPrm, CapBnd, CapInh, CapAmb all 0; NoNewPrivs" \
		"$(proc_field "$svc" CapEff) $(proc_field "$svc" CapPrm) $(proc_field "$svc" CapBnd) $(proc_field "$svc" CapInh) $(proc_field "$svc" CapAmb) $(proc_field "$svc" NoNewPrivs)" \
		"$CAP_NONE $CAP_NONE $CAP_NONE $CAP_NONE $CAP_NONE 1"
	tap_eq "... every thread of it too (the HTTP and sync threads start after the drop)" \
		"$(cat /proc/"$svc"/task/*/status | awk '$1 == "CapEff:" || $1 == "Uid:" { print $1, $2 }' | sort -u | tr '\n' ' ')" \
		"CapEff: $CAP_NONE Uid: $uid "
	tap_eq "... status --json names the user; its sync runs (identity read as the user)" \
		"$(service_state "[s['user'], s['uid'], s['sync_wanted'], s['sync_down']]")" \
		"[\"$SVC_USER\", $uid, true, null]"
	mon=$(ps -o pid= --ppid "$svc" | tr -d ' ')
	if [ -n "$mon" ]; then
		tap_eq "its monitor (root, for the stop): CapEff CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN" \
			"$(proc_first "$mon" Uid)/$(proc_field "$mon" CapEff)" "0/$CAP_MONITOR"
	else
		tap_fail "its monitor (root, for the stop): CapEff CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN" \
			"no child of pid $svc"
	fi

	# enforcing: 30 frames from one client, limit 10
	sl_recv_start udp udp "$SRV4" 9000
	sl_send "${CLIENT4[0]}" "$SRV4" 9000 30 >/dev/null || tap_fail "sl-traffic sent 30 frames"
	sl_recv_stop udp
	# with a peer in the config the node may keep to its share of the
	# limit (bounded): what is asserted is that frames over it are dropped
	n=$(received udp "${CLIENT4[0]}")
	tap_eq "dropped, it still enforces: of 30 frames over a limit of 10, 1 to 10 get through ($n)" \
		"$(( n >= 1 && n <= 10 ))" 1

	# bounded takes its one configured peer (no daemon answers for it)
	# to be up until two rounds have run: a check within them gets the
	# share of two nodes. The checks count on the node deciding alone
	for i in $(seq 1 50); do
		[ "$(sl -j status | json_get "d['sync']['live_nodes']")" = 1 ] && break
		sleep 0.1
	done
	code=""
	for i in 1 2 3 4; do
		code="$code $(sl_api_code "/v1/check?rule=api&key=alice")"
	done
	tap_eq "... answers checks: 200 x3, then 429 (limit 3)" "$code" " 200 200 200 429"
	tap_eq "... changes the block list over its API socket as its user: PUT 200, GET lists it, DELETE 200" \
		"$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X PUT --unix-socket /run/slicelimit/api.sock http://localhost/v1/lists/block/192.0.2.99)/$(curl -s -m 5 --unix-socket /run/slicelimit/api.sock http://localhost/v1/lists | json_get "[e['prefix'] for e in d['lists']]")/$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X DELETE --unix-socket /run/slicelimit/api.sock http://localhost/v1/lists/block/192.0.2.99)" \
		'200/["192.0.2.99"]/200'
	tap_eq "... its API socket is the user's, group $SVC_USER-api (a group it is only a member of), mode 0660, and answers" \
		"$(stat -c '%U/%G/%a' /run/slicelimit/api.sock 2>&1)/$(curl -s -m 5 -o /dev/null -w '%{http_code}' --unix-socket /run/slicelimit/api.sock http://localhost/healthz)" \
		"$SVC_USER/$SVC_USER-api/660/200"
	tap_eq "... its rate limit service socket likewise (made after the drop), and a gRPC call on it answers" \
		"$(stat -c '%U/%G/%a' /run/slicelimit/rls.sock 2>&1)/$(rls_call_overall)" \
		"$SVC_USER/$SVC_USER-api/660/OK"

	rules 10
	kill -HUP "$svc"
	if wait_state "s['reloads_applied']" 1; then
		tap_ok "... reloads on SIGHUP (the rules re-read as its user)"
	else
		tap_fail "... reloads on SIGHUP (the rules re-read as its user)" \
			"$(service_state "s['last_refused']")" "$(tail -3 "$SL_TMP/svc.log")"
	fi
	tap_eq "... the raised limit (10) takes effect: the 5th check is 200" \
		"$(sl_api_code "/v1/check?rule=api&key=alice")" 200
	tap_eq "... the reload kept its user and capabilities" \
		"$(proc_first "$svc" Uid)/$(proc_field "$svc" CapEff)" \
		"$uid/$CAP_NONE"

	sl_stop "$svc"
	rc=$STOP_RC
	tap_eq "... stops cleanly: exit 0, XDP detached, pins gone, monitor gone" \
		"$rc/$(in_server ip -j link show "$VETH_S" | json_get "'xdp' in d[0]")/$(pins_gone)/$( [ -n "$mon" ] && kill -0 "$mon" 2>/dev/null && echo alive || echo gone)" \
		"0/False/gone/gone"
}

# kill -9 of the dropped service: its monitor sees the pipe close without
# a word and leaves the programs as they are (as before the drop), and
# goes; the next start adopts them
test_killed_leaves_enforcing() {
	local svc mon i
	sl_service_start svc "$SL_TMP/svc2.log" "$SL_TMP/svc.yaml" setpriv --bounding-set="$bset"
	mon=$(ps -o pid= --ppid "$svc" | tr -d ' ')
	sl_stop "$svc" KILL
	for i in $(seq 1 50); do
		[ -n "$mon" ] && kill -0 "$mon" 2>/dev/null || break
		sleep 0.1
	done
	tap_eq "kill -9 of the dropped service: its monitor goes, XDP stays attached, the pins stay" \
		"$( [ -n "$mon" ] && kill -0 "$mon" 2>/dev/null && echo alive || echo gone)/$(in_server ip -j link show "$VETH_S" | json_get "'xdp' in d[0]")/$(pins_gone)" \
		"gone/True/pinned"
	sl_service_start svc "$SL_TMP/svc3.log" "$SL_TMP/svc.yaml" setpriv --bounding-set="$bset"
	tap_eq "... the next start adopts the device and drops again" \
		"$(sl -j status | json_get "[x['service'] for x in d['devices']]")/$(proc_first "$svc" Uid)" \
		"[\"adopted\"]/$(id -u "$SVC_USER")"
	sl_stop "$svc"
	tap_eq "... and its stop detaches (exit 0, pins gone)" "$STOP_RC/$(pins_gone)" "0/gone"
}

test_missing_user() {
	local rc=0
	in_server "$SL_BIN" -j run --config "$SL_TMP/config.yaml" --user "${SVC_USER}x" \
		>"$SL_TMP/nouser.json" 2>/dev/null || rc=$?
	tap_eq "run --user USER that does not exist: exit 1 before anything is loaded, the error says how to create it" \
		"$rc/$(json_get "'useradd --system' in d['error'] and '--user root' in d['error']" "$SL_TMP/nouser.json" 2>/dev/null)/$(pins_gone)" \
		"1/True/gone"
}

# sync_config: the sync: block of node 1, its peer node 2 at CLIENT4[0]
# (identities made by test_secret_owner)
sync_config() {
	cat <<EOF
sync:
  node: 1
  listen: $SRV4:7400
  identity_file: $SL_TMP/sync.identity
  peers: [{node: 2, address: ${CLIENT4[0]}:7400, public_key: $PEER_PK}]
EOF
}

test_secret_owner() {
	local out rc
	rm -f "$SL_TMP/sync.identity" "$SL_TMP/peer.identity"
	"$SL_BIN" sync keygen --out "$SL_TMP/sync.identity" >/dev/null ||
		tap_fail "sync keygen"
	PEER_PK=$("$SL_BIN" sync keygen --out "$SL_TMP/peer.identity") ||
		tap_fail "sync keygen of the peer"
	{ echo "rules: $SL_TMP/rules.yaml"; sync_config; } >"$SL_TMP/sync.yaml"
	rc=0
	out=$("$SL_BIN" -j run --check --user "$SVC_USER" --config "$SL_TMP/sync.yaml" 2>/dev/null) || rc=$?
	tap_eq "a root-owned 0600 identity (as sync keygen writes it) with --user: refused (exit 1, sync.identity_file), chgrp and chmod 640 named as the fix" \
		"$rc/$(echo "$out" | json_get "[p['field'] for p in d['problems']]")/$(echo "$out" | json_get "'chgrp $(id -g "$SVC_USER") it and chmod 640' in d['problems'][0]['message']")" \
		'1/["sync.identity_file"]/True'
	chgrp "$SVC_USER" "$SL_TMP/sync.identity"
	chmod 640 "$SL_TMP/sync.identity"
	rc=0
	out=$("$SL_BIN" -j run --check --user "$SVC_USER" --config "$SL_TMP/sync.yaml" 2>/dev/null) || rc=$?
	tap_eq "... root's, mode 0640, group the service's: accepted" "$rc/$(echo "$out" | json_get "d['ok']")" "0/True"
	chmod 660 "$SL_TMP/sync.identity"
	rc=0
	out=$("$SL_BIN" -j run --check --user "$SVC_USER" --config "$SL_TMP/sync.yaml" 2>/dev/null) || rc=$?
	tap_eq "... but not writable by that group (0660): refused" "$rc" 1
	chmod 640 "$SL_TMP/sync.identity"
}

test_nobody_cannot_block_root() {
	local holder rc start svc n
	# lib.sh mounts its bpffs without mode=: 1777, as the fallback did
	sl_bg holder setpriv --reuid=nobody --regid=nogroup --clear-groups \
		flock --no-fork -x /sys/fs/bpf sleep 30
	sleep 0.3
	start=$SECONDS
	rc=0
	sl rules apply "$SL_TMP/rules.yaml" >/dev/null 2>"$SL_TMP/apply.err" || rc=$?
	# before, it waited 10 s for the lock and failed
	tap_eq "nobody holding flock on /sys/fs/bpf: root's rules apply still works (exit 0, under 10 s)" \
		"$rc/$(( SECONDS - start < 10 ))" "0/1"
	kill "$holder" 2>/dev/null
	sl_wait "$holder"
	sl detach --all >/dev/null 2>&1
	rm -rf "$SL_PIN"

	setpriv --reuid=nobody --regid=nogroup --clear-groups mkdir "$SL_PIN"
	sl_bg svc nsenter --net="/run/netns/$NS_S" "$SL_BIN" -j run \
		--config "$SL_TMP/config.yaml" >"$SL_TMP/squat.json" 2>/dev/null
	for _ in $(seq 1 30); do
		kill -0 "$svc" 2>/dev/null || break
		sleep 0.1
	done
	n=$(ls -A "$SL_PIN" | wc -l)
	sl_stop "$svc"
	tap_eq "nobody made $SL_PIN first: run refuses (exit 1), pins nothing in it, says to remove it" \
		"$STOP_RC/$n/$(json_get "'rm -r $SL_PIN' in d['error']" "$SL_TMP/squat.json" 2>/dev/null)" \
		"1/0/True"
	rm -rf "$SL_PIN"
}

test_unit_scores_ok() {
	local score
	sed 's|@SBINDIR@|/usr/sbin|g' "$here/../../packaging/slicelimit.service.in" \
		>"$SL_TMP/slicelimit.service"
	score=$(systemd-analyze security --offline=yes --no-pager \
		"$SL_TMP/slicelimit.service" 2>&1 |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	tap_eq "systemd-analyze security --offline=yes: the unit scores 2.5 or better ($score)" \
		"$(awk -v s="$score" 'BEGIN { print (s != "" && s + 0 <= 2.5) ? "OK" : "not OK" }')" OK
}

body() {
	sl_netns_setup
	sl_claim_pins
	groupadd --system "$SVC_USER-api" || die "groupadd $SVC_USER-api"
	useradd --system --no-create-home --shell /usr/sbin/nologin \
		-G "$SVC_USER-api" "$SVC_USER" || die "useradd $SVC_USER"
	config
	# first what needs no service: the last one bails out if it
	# cannot start
	test_unit_scores_ok
	test_nobody_cannot_block_root
	test_missing_user
	test_secret_owner
	test_service_dropped
	test_killed_leaves_enforcing
	tap_done
}

sl_run body
