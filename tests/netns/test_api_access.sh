#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Who may use the check API, through the real service and real sockets:
# user nobody is refused by the Unix socket's mode and group (EACCES), and
# over TCP without the token (401, WWW-Authenticate: Bearer), and a host's
# packets still pass afterwards; the token's holder is answered; an
# address-looking key under a rule without api_key_is_address never
# touches that address's packet state (with it, it does); 1,100 idle
# connections from one address leave /healthz answering another address
# and the socket; a 300 MB declared body is refused with 413 before it is
# read (the client can send no more of it; the service's RSS stays); a stale socket file is
# replaced, a live one refused; status --json shows the listeners.
#
# Usage: test_api_access.sh BUILD_DIR   (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl setpriv

SOCK=/run/slicelimit/api.sock	# the default: under this run's private /run/slicelimit
TCP=http://$SRV4:8080		# from the client namespace: another address
VICTIM=${CLIENT4[0]}		# the address nobody tries to get dropped
KEYED=${CLIENT4[3]}		# an address used as an API key

# 'web' counts UDP to port 53 per source address; 'addr' lets an API key
# that is an address charge that address (port 54, so packets meet 'web')
cat >"$SL_TMP/rules.yaml" <<'EOF'
rules:
  - name: web
    protocol: udp
    ports: 53
    limit: 5
    window: 60s
  - name: addr
    protocol: udp
    ports: 54
    limit: 5
    window: 60s
    api_key_is_address: true
EOF

# write_config GROUP: the socket (mode 0660, group GROUP) and TCP on the
# server's veth address with this run's token
write_config() {
	cat >"$SL_TMP/config.yaml" <<EOF
devices:
  - { name: $VETH_S, mode: xdp }
rules: $SL_TMP/rules.yaml
http:
  socket_mode: "0660"
  socket_group: $1
  listen: $SRV4:8080
  token_file: $SL_API_TOKEN_FILE
  timeout: 5s
  connections_per_ip: 16
EOF
}

# sock_code PATH [curl args]: the status of GET PATH over the socket, as root
sock_code() {
	local path=$1
	shift
	in_server curl -s -m 5 -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
		"$@" "http://localhost$path"
}

# as_nobody CMD...: CMD in the server namespace as user nobody, group
# nogroup, no other groups, no curlrc (no token)
as_nobody() {
	in_server env -u CURL_HOME setpriv --reuid=nobody --regid=nogroup \
		--clear-groups "$@"
}

# connect_errno: what connect(2) to the socket says to nobody ("ok" or
# the errno's name)
connect_errno() {
	as_nobody "$SL_PY" -c '
import errno, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$SOCK"
}

start_service() {
	local i
	sl_bg SLD nsenter --net="/run/netns/$NS_S" "$SL_BIN" run \
		--config "$SL_TMP/config.yaml" 2>"$SL_TMP/sl.log"
	for i in $(seq 1 100); do
		[ "$(sock_code /healthz)" = 200 ] && return 0
		kill -0 "$SLD" 2>/dev/null || break
		sleep 0.1
	done
	diag "$(tail -5 "$SL_TMP/sl.log")"
	die "slicelimit run did not answer on $SOCK"
}

# passed_of_5 ADDR: of 5 UDP packets from ADDR to port 53 (rule 'web'),
# how many reached the server
passed_of_5() {
	sl_recv_start r53 udp "$SRV4" 53 10
	sl_send "$1" "$SRV4" 53 5 >/dev/null || diag "sl-traffic failed"
	sl_recv_stop r53
	received r53 "$1"
}

# used RULE ADDR: the packet state of ADDR under RULE (0: none)
used() {
	sl -j query "$2" --rule "$1" | json_get "d[0]['used']"
}

test_nobody_refused_by_the_socket_and_tcp() {
	local codes="" i
	tap_eq "socket mode 0660, group root: nobody's connect() is refused (EACCES)" \
		"$(connect_errno)" EACCES
	for i in 1 2 3 4 5 6; do
		codes="$codes $(as_nobody curl -s -m 5 -o /dev/null -w '%{http_code}' \
			--unix-socket "$SOCK" "http://localhost/v1/check?rule=web&key=$VICTIM")"
	done
	tap_eq "six checks of the victim's address by nobody over the socket: no answer (curl 000)" \
		"$codes" " 000 000 000 000 000 000"
	codes=""
	for i in 1 2 3 4 5 6; do
		codes="$codes $(as_nobody curl -s -m 5 -o /dev/null -w '%{http_code}' \
			"http://$SRV4:8080/v1/check?rule=web&key=$VICTIM")"
	done
	tap_eq "... and over TCP without the token: 401 every time" \
		"$codes" " 401 401 401 401 401 401"
	tap_eq "nobody's /v1/clients/ over TCP: 401 (no client's state read)" \
		"$(as_nobody curl -s -m 5 -o /dev/null -w '%{http_code}' \
			"http://$SRV4:8080/v1/clients/$VICTIM?rule=addr")" 401
	tap_eq "no state charged: the victim's packet state under 'addr' and 'web' is empty" \
		"$(used addr "$VICTIM")/$(used web "$VICTIM")" "0/0"
	tap_eq "the victim's 5 packets all pass XDP afterwards" "$(passed_of_5 "$VICTIM")" 5
}

test_tcp_needs_the_token() {
	local hdr=$SL_TMP/hdr
	tap_eq "TCP with no token: 401 with WWW-Authenticate: Bearer" \
		"$(in_client curl -q -s -m 5 -o /dev/null -D "$hdr" -w '%{http_code}' \
			"$TCP/v1/check?rule=web&key=k-tcp")/$(tr -d '\r' <"$hdr" | grep -i '^www-authenticate:' | cut -d' ' -f2)" \
		"401/Bearer"
	tap_eq "TCP with a wrong token of the same length: 401" \
		"$(in_client curl -q -s -m 5 -o /dev/null -w '%{http_code}' \
			-H "Authorization: Bearer ${SL_API_TOKEN//?/x}" "$TCP/v1/check?rule=web&key=k-tcp")" 401
	tap_eq "... and nothing counted for the key (query --key: used 0)" \
		"$(sl -j query --key k-tcp --rule web | json_get "d[0]['used']")" 0
	tap_eq "TCP with the token: 200, used 1" \
		"$(in_client curl -q -s -m 5 -H "Authorization: bearer $SL_API_TOKEN" \
			-w ' %{http_code}' "$TCP/v1/check?rule=web&key=k-tcp" | "$SL_PY" -c '
import json, sys
body, code = sys.stdin.read().rsplit(" ", 1)
print(code, json.loads(body)["used"])')" "200 1"
	tap_eq "/healthz over TCP without the token: 200 {\"status\": \"ok\"} and nothing more" \
		"$(in_client curl -q -s -m 5 "$TCP/healthz")" '{ "status": "ok" }'
}

test_address_key_needs_the_rules_option() {
	local codes="" i
	for i in 1 2 3 4 5 6; do
		codes="$codes $(sock_code "/v1/check?rule=web&key=$KEYED")"
	done
	tap_eq "six checks of key $KEYED under 'web' (no api_key_is_address): 200 x5 then 429, a key space of its own" \
		"$codes" " 200 200 200 200 200 429"
	tap_eq "... the address's packet state under 'web' untouched (query: used 0)" \
		"$(used web "$KEYED")" 0
	tap_eq "... and its 5 packets to port 53 all pass" "$(passed_of_5 "$KEYED")" 5
	tap_eq "under 'addr' (api_key_is_address: true) the same key charges the address (query: used 1)" \
		"$(sock_code "/v1/check?rule=addr&key=$KEYED" >/dev/null; used addr "$KEYED")" 1
}

test_idle_connections_of_one_address_leave_healthz_up() {
	local pid i
	rm -f "$SL_TMP/held"
	# 1,100 connections from one client address, opened and held idle
	sl_bg pid nsenter --net="/run/netns/$NS_C" "$SL_PY" -c '
import resource, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
held = []
for i in range(1100):
    s = socket.socket(); s.bind((sys.argv[1], 0))
    s.connect((sys.argv[2], 8080)); held.append(s)
open(sys.argv[3], "w").write("%d\n" % len(held))
time.sleep(20)' "${CLIENT4[1]}" "$SRV4" "$SL_TMP/held"
	for i in $(seq 1 100); do
		[ -s "$SL_TMP/held" ] && break
		sleep 0.1
	done
	tap_eq "one address opened and holds 1100 idle connections" \
		"$(cat "$SL_TMP/held" 2>/dev/null)" 1100
	tap_eq "/healthz from another address over TCP (with the token): 200" \
		"$(in_client curl -s -m 5 -o /dev/null -w '%{http_code}' \
			--interface "${CLIENT4[2]}" "$TCP/healthz")" 200
	tap_eq "/healthz over the socket: 200" "$(sock_code /healthz)" 200
	sl_stop "$pid"
}

test_big_declared_body_refused_before_it_is_read() {
	local out rss0 rss1
	rss0=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$SLD/status")
	# over TCP, with the token: the headers of a 300 MB POST, then as
	# much of the body as the service takes in 3 s: what it took is what
	# the client got out before the close (socket buffers at most)
	out=$(in_client "$SL_PY" -c '
import os, socket, sys, time
s = socket.create_connection((sys.argv[1], 8080)); s.settimeout(3)
s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Authorization: Bearer " + os.environ["SL_API_TOKEN"].encode() +
          b"\r\nContent-Length: 314572800\r\n\r\n")
sent, chunk, end = 0, b"x" * 65536, time.time() + 3
try:
    status = s.recv(4096).split(b"\r\n", 1)[0].decode().split(" ")[1]
except (OSError, IndexError):
    status = "none"
try:
    while sent < 314572800 and time.time() < end:
        sent += s.send(chunk)
except OSError:
    pass
print(status, sent)' "$SRV4")
	rss1=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$SLD/status")
	tap_eq "300 MB declared: 413 before any of the body is sent" "${out%% *}" 413
	diag "body bytes the client got out before the close: ${out##* }; service RSS ${rss0} kB -> ${rss1} kB"
	tap_check "the service took under 1 MB of the body (the client could send no more)" \
		test "${out##* }" -lt 1048576
	tap_check "the service's RSS did not grow by the body (under 10 MB)" \
		test "$((rss1 - rss0))" -lt 10240
	tap_eq "a body within the cap still works: 200" \
		"$(in_client curl -s -m 5 -o /dev/null -w '%{http_code}' \
			-d '{"rule": "web", "key": "k-body"}' "$TCP/v1/check")" 200
}

test_status_shows_the_listeners() {
	tap_eq "status --json: the socket, its mode, the TCP address, token required" \
		"$(service_state "[s['http'][k] for k in ('socket', 'socket_mode', 'listen', 'token_required')]")" \
		"[\"$SOCK\", \"0660\", \"$SRV4:8080\", true]"
	tap_eq "run --check --json shows the same" \
		"$(sl -j run --check --config "$SL_TMP/config.yaml" | json_get "d['http']['socket'], d['http']['token_required']")" \
		"('$SOCK', True)"
}

test_socket_group_admits_its_members() {
	sl_stop "$SLD"
	tap_eq "SIGTERM: exit 0, the socket file removed" \
		"$STOP_RC/$([ -e "$SOCK" ] && echo left || echo gone)" "0/gone"
	write_config nogroup
	start_service
	tap_eq "socket group nogroup: nobody (group nogroup) connects" \
		"$(connect_errno)" ok
	tap_eq "... and is answered: 200" \
		"$(as_nobody curl -s -m 5 -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
			http://localhost/healthz)" 200
	sl_stop "$SLD" KILL
	tap_check "killed: its socket file is left behind" test -S "$SOCK"
	start_service
	tap_eq "a new start replaces the stale socket and answers" "$(sock_code /healthz)" 200
}

test_live_socket_refused() {
	local pid rc=0
	sl_stop "$SLD"
	# an instance (here a plain listener) answers on the socket
	sl_bg pid "$SL_PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
open(sys.argv[2], "w").write("up\n"); time.sleep(30)' "$SOCK" "$SL_TMP/listening"
	wait_file "$SL_TMP/listening" || diag "the listener did not start"
	in_server timeout 20 "$SL_BIN" run --config "$SL_TMP/config.yaml" \
		2>"$SL_TMP/second.log" || rc=$?
	tap_eq "another instance answers on the socket: run exits 1 and leaves its socket" \
		"$rc/$([ -S "$SOCK" ] && echo kept)" "1/kept"
	diag "$(grep -m1 'http:' "$SL_TMP/second.log")"
	sl_stop "$pid"
}

main() {
	local start=$SECONDS
	sl_claim_pins 30
	sl_netns_setup
	write_config root
	start_service
	test_nobody_refused_by_the_socket_and_tcp
	test_tcp_needs_the_token
	test_address_key_needs_the_rules_option
	test_idle_connections_of_one_address_leave_healthz_up
	test_big_declared_body_refused_before_it_is_read
	test_status_shows_the_listeners
	test_socket_group_admits_its_members
	test_live_socket_refused
	tap_elapsed "$start" 60
	tap_done
}

sl_run main
