#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Redis AUTH (sync.password_file, sync.username) against a real
# redis-server started with --requirepass and an ACL user:
#   1. a password file any user can read is refused at start, at its line;
#   2. node 1 (the default user's password) and node 2 (the ACL user, with
#      only the rights docs/REDIS.md lists)
#      decide /v1/check centrally from one count, and their sync rounds
#      run (status -j: backend up, no errors);
#   3. node 3 with a wrong password fails open: checks decide locally, the
#      refused logins are counted in status -j (sync.backend_errors) and
#      /metrics (sync backend and central errors);
#   4. TLS as docs/REDIS.md puts it (hiredis 0.14 has none): a redis-server
#      with only a TLS port and a password, stunnel on loopback in front
#      of it (verifying the server's certificate), node 5 pointed at
#      stunnel: central decisions, sync up, the keys in the TLS server.
#      Fails without stunnel or openssl (make deps installs them).
# Every process is started here and stopped by its PID.
#
# Usage: test_redis_auth.sh BUILD_DIR   (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl redis-server redis-cli unshare
# shellcheck source=redis_nodes_lib.sh
. "$here/redis_nodes_lib.sh"
START=$SECONDS
RPORT=6397
TPORT=6396	# TLS redis-server
SPORT=6395	# stunnel's plain side
NODE_PID=()

cat >"$SL_TMP/rules.yaml" <<'EOF'
rules:
  - { name: sl, limit: 4, window: 60s }
EOF
umask 077
printf 'pw-default\n' >"$SL_TMP/default.pass"
printf 'pw-sl\n' >"$SL_TMP/sl.pass"
printf 'not-it\n' >"$SL_TMP/wrong.pass"
printf 'pw-default\n' >"$SL_TMP/open.pass"
chmod 0644 "$SL_TMP/open.pass"
umask 022
# node_yaml N PASSFILE [USER]
node_yaml() {
	cat >"$SL_TMP/node$1.yaml" <<EOF
devices: []
rules: $SL_TMP/rules.yaml
http:
  socket: /run/slicelimit/api$1.sock
  listen: 127.0.0.1:808$1
  token_file: $SL_API_TOKEN_FILE
sync:
  node: $1
  layout: central
  backend: redis
  url: redis://127.0.0.1:$RPORT
  interval: 500ms
  password_file: $2
${3:+  username: $3}
EOF
}
node_yaml 1 "$SL_TMP/default.pass"
node_yaml 2 "$SL_TMP/sl.pass" sl
node_yaml 3 "$SL_TMP/wrong.pass"
node_yaml 4 "$SL_TMP/open.pass"
node_yaml 5 "$SL_TMP/default.pass"
sed -i "s|127.0.0.1:$RPORT|127.0.0.1:$SPORT|" "$SL_TMP/node5.yaml"

ask() {		# TAG NODE KEY: one check of rule sl
	in_server curl -s -m 5 -o "$SL_TMP/$1.json" \
		"http://127.0.0.1:808$2/v1/check?rule=sl&key=$3"
	json_get "[d['allowed'], d['decision']]" "$SL_TMP/$1.json"
}


status_sync() {	# NODE EXPR (over d = status -j's "sync")
	nsenter -t "${NODE_PID[$1]}" -m -n "$SL_BIN" -j status |
		json_get "(lambda d: $2)(d['sync'])"
}

# the default user's password, and an ACL user for the nodes
REDIS_CLI_ARGS=(--no-auth-warning -a pw-default)
redis_auth_start() {
	redis_start --requirepass pw-default \
		--user sl on '>pw-sl' '~sl:*' '~slc:*' +@read +@write +@scripting \
		'+cluster|slots' +time +ping
}


tls_part() {
	local got i
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
		-addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
		-keyout "$SL_TMP/tls.key" -out "$SL_TMP/tls.crt" 2>/dev/null ||
		die "openssl could not make a certificate"
	mkdir -p "$SL_TMP/tls"
	sl_bg TLS_PID nsenter --net="/run/netns/$NS_S" redis-server \
		--port 0 --tls-port "$TPORT" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$SL_TMP/tls" --logfile "$SL_TMP/tls/log" \
		--tls-cert-file "$SL_TMP/tls.crt" --tls-key-file "$SL_TMP/tls.key" \
		--tls-ca-cert-file "$SL_TMP/tls.crt" --tls-auth-clients no \
		--requirepass pw-default
	cat >"$SL_TMP/stunnel.conf" <<EOF
foreground = yes
pid =
[redis]
client = yes
accept = 127.0.0.1:$SPORT
connect = 127.0.0.1:$TPORT
verifyChain = yes
CAfile = $SL_TMP/tls.crt
checkHost = localhost
EOF
	sl_bg STUNNEL_PID nsenter --net="/run/netns/$NS_S" stunnel \
		"$SL_TMP/stunnel.conf" 2>"$SL_TMP/stunnel.log"
	for _ in $(seq 1 100); do
		[ "$(in_server redis-cli -p "$SPORT" --no-auth-warning -a pw-default ping 2>/dev/null)" = PONG ] &&
			break
		sleep 0.05
	done
	tap_eq "the TLS redis-server refuses plain RESP" \
		"$(in_server redis-cli -p "$TPORT" --no-auth-warning -a pw-default ping 2>/dev/null)" ""
	node_start 5
	got=$(for i in 1 2 3 4 5; do ask "tls$i" 5 tls-bob; done | tr '\n' ' ')
	tap_eq "through stunnel to a TLS-only Redis: checks decided centrally (4 of 5)" \
		"$got" "[true, \"central\"] [true, \"central\"] [true, \"central\"] [true, \"central\"] [false, \"central\"] "
	sleep 1.2	# two sync rounds
	tap_eq "node 5: status -j: the sync backend is up through the tunnel, no errors" \
		"$(status_sync 5 "[d['backend_up'], d['backend_errors']]")" "[true, 0]"
	# no key_file: the API key's id is its unkeyed BLAKE2b-128 (docs/REDIS.md)
	i=$("$SL_PY" -c 'import hashlib; print(hashlib.blake2b(b"tls-bob", digest_size=16).hexdigest())')
	got=$(in_server redis-cli -p "$SPORT" --no-auth-warning -a pw-default --scan --pattern "slc:{sl:kh:$i}*" | wc -l)
	tap_eq "the check's key is in the TLS server" "$got" 1
	sl_stop "${NODE_PID[5]}"
	tap_eq "node 5: SIGTERM stops it with status 0" "$STOP_RC" 0
	sl_stop "$STUNNEL_PID"
	sl_stop "$TLS_PID"
}

body() {
	local got n i

	sl_netns_setup
	redis_auth_start

	# ---- 1 ----
	in_server "$SL_BIN" run --config "$SL_TMP/node4.yaml" >/dev/null 2>"$SL_TMP/node4.log"
	got=$?
	tap_eq "a world-readable password file: run exits 1" "$got" 1
	if grep -q "node4.yaml:13: sync.password_file: .*readable by every user" "$SL_TMP/node4.log"; then
		tap_ok "... naming the file's line and field"
	else
		tap_fail "... naming the file's line and field" "$(cat "$SL_TMP/node4.log")"
	fi

	# ---- 2 ----
	node_start 1
	node_start 2
	node_start 3
	got=$(for i in 1 2 3 4 5; do ask "ok$i" $(((i - 1) % 2 + 1)) alice; done | tr '\n' ' ')
	tap_eq "default user (node 1) and ACL user (node 2): the limit holds across both, centrally" \
		"$got" "[true, \"central\"] [true, \"central\"] [true, \"central\"] [true, \"central\"] [false, \"central\"] "
	sleep 1.2	# two sync rounds
	for n in 1 2; do
		tap_eq "node $n: status -j: the sync backend is up, no errors" \
			"$(status_sync "$n" "[d['backend_up'], d['backend_errors'], d['rounds'] > 0]")" \
			"[true, 0, true]"
	done

	# ---- 3 ----
	got=$(for i in 1 2 3 4 5; do ask "bad$i" 3 alice; done | tr '\n' ' ')
	# the node's own count only: its local limit (4 of 5), not the
	# fleet's (alice is over it already)
	tap_eq "wrong password (node 3): checks fail open, decided locally (its own limit: 4 of 5)" \
		"$got" "[true, \"local\"] [true, \"local\"] [true, \"local\"] [true, \"local\"] [false, \"local\"] "
	got=$(status_sync 3 "[d['backend_up'], d['backend_errors'] >= 1]")
	tap_eq "node 3: status -j: the sync backend is down, its refused logins counted" \
		"$got" "[false, true]"
	got=$(metric 3 slicelimit_sync_backend_errors_total)
	if [ "$got" != none ] && [ "$got" -ge 1 ]; then
		tap_ok "node 3: /metrics counts the sync backend's errors ($got)"
	else
		tap_fail "node 3: /metrics counts the sync backend's errors" "got $got"
	fi
	got=$(metric 3 slicelimit_check_central_errors_total)
	if [ "$got" != none ] && [ "$got" -ge 1 ]; then
		tap_ok "node 3: /metrics counts the central checks' errors ($got)"
	else
		tap_fail "node 3: /metrics counts the central checks' errors" "got $got"
	fi
	if grep -q "WRONGPASS" "$SL_TMP/node3.log"; then
		tap_ok "node 3: the log says the store refused the login (WRONGPASS)"
	else
		tap_fail "node 3: the log says the store refused the login" "$(cat "$SL_TMP/node3.log")"
	fi

	for n in 1 2 3; do
		sl_stop "${NODE_PID[n]}"
		tap_eq "node $n: SIGTERM stops it with status 0" "$STOP_RC" 0
	done
	sl_stop "$REDIS_PID"

	# ---- 4 ----
	if command -v stunnel >/dev/null && command -v openssl >/dev/null; then
		tls_part
	else
		tap_fail "TLS through stunnel: stunnel or openssl not found (make deps installs stunnel4 and openssl)"
	fi
	if grep -qE 'pw-default|pw-sl|not-it' "$SL_TMP"/node[1-5].log "$SL_TMP"/node[1-5].yaml; then
		tap_fail "no password appears in a config or a log"
	else
		tap_ok "no password appears in a config or a log"
	fi
	tap_elapsed "$START" 30
	tap_done
}

sl_run body
