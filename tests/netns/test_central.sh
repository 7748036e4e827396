#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# sync: { backend: redis, layout: central }: two nodes answer /v1/check
# from one count per client in a real redis-server, asked with real curl
# (node 1 with GET, node 2 with POST, alternately):
#   1. a token bucket allows exactly its capacity across both nodes, then
#      429 with the refill's Retry-After, and one more after it;
#   2. every sliding algorithm allows exactly its limit across both, the
#      remaining count going down across both, and 30 concurrent checks
#      on both nodes get exactly the limit through; checks with a cost
#      charge that many units in the store, fitting whole or refused
#      whole (sliding-log takes cost 1 only; over the limit is a 400);
#   3. the store's keys: an API key is stored under its keyed hash (the
#      sync key_file's), never in clear; an address as the kernel masks it;
#   4. Redis stopped (the PID this test started): checks fail open
#      (allowed, decision local, counted in /metrics), and once Redis is
#      back decisions are central again (a reconnect, counted).
# Each node is `slicelimit run` in a mount namespace with a bpffs of its
# own (its own pins), both in the server network namespace with Redis.
#
# Usage: test_central.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl redis-server redis-cli unshare
# shellcheck source=redis_nodes_lib.sh
. "$here/redis_nodes_lib.sh"
START=$SECONDS
RPORT=6398
NODE_PID=()

cat >"$SL_TMP/rules.yaml" <<'EOF'
rules:
  # capacity 4, one token back every 2 s
  - { name: tb, algorithm: token-bucket, limit: 4, window: 8s }
  - { name: sl, limit: 4, window: 60s }
  - { name: plain, algorithm: sliding-plain, limit: 4, window: 60s }
  - { name: log, algorithm: sliding-log, limit: 4, window: 60s }
  # aligned to the epoch: a day, so no boundary falls inside the test
  - { name: fx, algorithm: fixed, limit: 4, window: 1d }
  - { name: ctr, algorithm: sliding-counter, limit: 4, window: 1d }
  - { name: conc, limit: 10, window: 60s }
  # their checks name addresses: the packets' clients, as the store's ids
  - { name: net, limit: 2, window: 60s, key: { ipv4_prefix: 24 }, api_key_is_address: true }
  - { name: wide, limit: 1000, window: 60s }
  - { name: ex, limit: 1, window: 60s, exempt: [10.8.0.0/16], api_key_is_address: true }
EOF
# the fleet's key: it keys the hashes API keys are stored under (mode 0600)
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$SL_TMP/sync.key")
for n in 1 2; do
	cat >"$SL_TMP/node$n.yaml" <<EOF
devices: []
rules: $SL_TMP/rules.yaml
http:
  socket: /run/slicelimit/api$n.sock
  listen: 127.0.0.1:808$n
  token_file: $SL_API_TOKEN_FILE
sync:
  node: $n
  layout: central
  backend: redis
  url: redis://127.0.0.1:$RPORT
  interval: 1s
  key_file: $SL_TMP/sync.key
EOF
done

# kh KEY: the store's id of API key KEY, computed here from the key file
# as docs/REDIS.md says (BLAKE2b-128 keyed with BLAKE2b-256 of a context
# under the fleet's key), not by the code under test
kh() {
	"$SL_PY" -c 'import hashlib, sys
k = bytes.fromhex(open(sys.argv[1]).read().strip())
idk = hashlib.blake2b(b"slicelimit central client ids", digest_size=32, key=k).digest()
print("kh:" + hashlib.blake2b(sys.argv[2].encode(), digest_size=16, key=idk).hexdigest())' \
		"$SL_TMP/sync.key" "$1"
}

cat >"$SL_TMP/c.py" <<'EOF'
import json, sys

def answer(tag):
    """status, body and headers of one check, as one dict: curl wrote the
    status and then its headers as JSON (%{header_json}), names in lower
    case"""
    code, _, hdr = open(tag + ".code").read().partition("\n")
    d = dict(status=code.strip())
    d["h"] = {k: v[-1] for k, v in json.loads(hdr).items()}
    try:
        d["body"] = json.load(open(tag + ".body"))
    except ValueError:
        d["body"] = None
    return d

def summary(tags):
    """per check: allowed/remaining/decision/Retry-After, and what is
    wrong with its shape ('' when nothing)"""
    out = []
    for t in tags:
        a, bad = answer(t), []
        b, h = a["body"], a["h"]
        if not isinstance(b, dict):
            out.append(dict(bad="body not JSON"))
            continue
        want = "200" if b.get("allowed") else "429"
        if a["status"] != want:
            bad.append(f"status {a['status']} with allowed={b.get('allowed')}")
        for k in ("allowed", "rule", "key", "limit", "window_s", "used",
                  "remaining", "reset_s", "retry_after_s", "decision"):
            if k not in b:
                bad.append("no " + k)
        if h.get("x-ratelimit-remaining") != str(b.get("remaining")):
            bad.append("X-RateLimit-Remaining differs from the body")
        if h.get("slicelimit-decision") != b.get("decision"):
            bad.append("SliceLimit-Decision differs from the body")
        ra = h.get("retry-after")
        if b.get("allowed") and ra is not None:
            bad.append("Retry-After on an allowed answer")
        if not b.get("allowed") and ra != str(b.get("retry_after_s")):
            bad.append(f"Retry-After {ra!r}, body {b.get('retry_after_s')}")
        out.append(dict(allowed=b.get("allowed"), remaining=b.get("remaining"),
                        used=b.get("used"), decision=b.get("decision"),
                        retry=b.get("retry_after_s"), bad="; ".join(bad)))
    return out

if __name__ == "__main__":
    d = summary(sys.argv[2:])
    print(eval(sys.argv[1], {"d": d, "json": json}))
EOF
PY() { (cd "$SL_TMP" && "$SL_PY" "$SL_TMP/c.py" "$@"); }

# ask TAG NODE RULE KEY [COST]: one check (of COST units); node 1 asks
# with GET (and cost=), node 2 with POST (and "cost" in the body)
ask() {
	local tag=$1 n=$2 url=http://127.0.0.1:808$2/v1/check
	local query="rule=$3&key=$4" body="\"rule\": \"$3\", \"key\": \"$4\""
	if [ -n "${5:-}" ]; then
		query="$query&cost=$5"
		body="$body, \"cost\": $5"
	fi
	if [ "$n" = 1 ]; then
		in_server curl -s -m 5 -o "$SL_TMP/$tag.body" \
			-w '%{http_code}\n%{header_json}' "$url?$query" >"$SL_TMP/$tag.code"
	else
		in_server curl -s -m 5 -o "$SL_TMP/$tag.body" \
			-w '%{http_code}\n%{header_json}' -d "{$body}" "$url" >"$SL_TMP/$tag.code"
	fi
}

# burst PREFIX COUNT RULE KEY: COUNT checks, nodes 1, 2, 1, ...; the tags
# go to TAGS
burst() {
	local i
	TAGS=()
	for i in $(seq 1 "$2"); do
		ask "$1$i" $(((i - 1) % 2 + 1)) "$3" "$4"
		TAGS+=("$1$i")
	done
}




body() {
	sl_netns_setup
	redis_start
	node_start 1
	node_start 2
	local n got i ok p

	for n in 1 2; do
		got=$(nsenter -t "${NODE_PID[n]}" -m -n "$SL_BIN" -j status |
			json_get "d['service']['check_mode']")
		tap_eq "node $n: status -j shows check_mode central" "$got" central
	done

	# ---- 1: token bucket ----
	burst tb 8 tb alice
	tap_eq "token bucket: both nodes together allow exactly the capacity (4 of 8), then deny" \
		"$(PY "[a['allowed'] for a in d]" "${TAGS[@]}")" \
		"[True, True, True, True, False, False, False, False]"
	tap_eq "token bucket: remaining counts down across both nodes" \
		"$(PY "[a['remaining'] for a in d]" "${TAGS[@]}")" \
		"[3, 2, 1, 0, 0, 0, 0, 0]"
	tap_eq "token bucket: every answer decided centrally, well formed" \
		"$(PY "sorted(set((a['decision'], a['bad']) for a in d))" "${TAGS[@]}")" \
		"[('central', '')]"
	# one token back every 2 s: the first denial waits all of it
	tap_eq "token bucket: the 429 says Retry-After 2 (one token's refill), then at most that" \
		"$(PY "[d[4]['retry'], all(a['retry'] in (1, 2) for a in d[4:])]" "${TAGS[@]}")" \
		"[2, True]"
	sleep "$(PY "d[0]['retry']" "${TAGS[7]}")"
	ask tb-after1 2 tb alice
	ask tb-after2 1 tb alice
	tap_eq "token bucket: after Retry-After one more fits, fleet-wide, and no second" \
		"$(PY "[(a['allowed'], a['decision']) for a in d]" tb-after1 tb-after2)" \
		"[(True, 'central'), (False, 'central')]"

	# ---- 2: sliding rules ----
	for r in sl plain log fx ctr; do
		burst "$r" 7 "$r" "k-$r"
		tap_eq "$r: both nodes together allow exactly the limit (4 of 7), remaining down across both" \
			"$(PY "[(a['allowed'], a['remaining']) for a in d]" "${TAGS[@]}")" \
			"[(True, 3), (True, 2), (True, 1), (True, 0), (False, 0), (False, 0), (False, 0)]"
		tap_eq "$r: central, well formed, Retry-After on every 429" \
			"$(PY "sorted(set((a['decision'], a['bad'], a['allowed'] or a['retry'] >= 1) for a in d))" "${TAGS[@]}")" \
			"[('central', '', True)]"
	done
	# costs: charged as that many units in the store, fitting whole or
	# refused whole, the same on both nodes
	for r in tb sl plain fx ctr; do
		ask "cost-$r-1" 1 "$r" "c-$r" 2
		ask "cost-$r-2" 2 "$r" "c-$r" 3
		ask "cost-$r-3" 2 "$r" "c-$r" 2
		tap_eq "$r (limit 4): cost 2 on node 1 allowed, cost 3 on node 2 refused (2+3 > 4, nothing charged), cost 2 then allowed; central, well formed" \
			"$(PY "[(a['allowed'], a['used'], a['remaining'], a['decision'], a['bad']) for a in d]" "cost-$r-1" "cost-$r-2" "cost-$r-3")" \
			"[(True, 2, 2, 'central', ''), (False, 2, 2, 'central', ''), (True, 4, 0, 'central', '')]"
	done
	tap_eq "token bucket: the cost 3 refused with 2 tokens left waits for one more (Retry-After 2, one token's refill), not 0" \
		"$(PY "d[0]['retry']" cost-tb-2)" 2
	ask cost-log 1 log c-log 2
	ask cost-over 2 sl c-over 5
	tap_eq "sliding-log refuses a cost over 1 (it counts requests), and a cost over the limit is refused: both 400" \
		"$(head -1 "$SL_TMP/cost-log.code")/$(head -1 "$SL_TMP/cost-over.code")" "400/400"
	in_server curl -s -m 5 "http://127.0.0.1:8081/v1/clients/c-over?rule=sl" >"$SL_TMP/look-over.json"
	tap_eq "... and charged nothing in the store (c-over: used 0)" \
		"$(json_get "d['used']" "$SL_TMP/look-over.json")" 0

	# a read-only lookup on the other node reads the same count
	in_server curl -s -m 5 "http://127.0.0.1:8082/v1/clients/k-sl?rule=sl" >"$SL_TMP/look.json"
	tap_eq "GET /v1/clients on node 2 reads the central count (used 4, remaining 0)" \
		"$(json_get "[d['used'], d['remaining'], d['decision']]" "$SL_TMP/look.json")" \
		'[4, 0, "central"]'

	# what a check costs inside the service, for the README (not a test)
	diag "node 1: mean check $(in_server curl -s -m 5 http://127.0.0.1:8081/metrics |
		awk '$1 == "slicelimit_http_check_duration_seconds_sum" { s = $2 }
		     $1 == "slicelimit_http_check_duration_seconds_count" { n = $2 }
		     END { if (n) printf "%.0f us over %d checks", s / n * 1e6, n }') inside the service, one Redis round trip each"

	# concurrent: 15 checks at each node at once
	p=()
	for i in $(seq 1 30); do
		ask "conc$i" $(((i - 1) % 2 + 1)) conc shared &
		p+=("$!")
	done
	wait "${p[@]}"
	TAGS=()
	for i in $(seq 1 30); do TAGS+=("conc$i"); done
	tap_eq "30 concurrent checks on both nodes: exactly the limit (10) allowed" \
		"$(PY "[sum(1 for a in d if a['allowed']), sum(1 for a in d if a['decision'] == 'central')]" "${TAGS[@]}")" \
		"[10, 30]"

	# an IP key is the client the kernel counts: masked to the rule's /24
	ask net1 1 net 10.9.0.1
	ask net2 2 net 10.9.0.2
	ask net3 1 net 10.9.0.3
	tap_eq "IP keys of one /24 share one central count (limit 2: allowed, allowed, denied)" \
		"$(PY "[a['allowed'] for a in d]" net1 net2 net3)" "[True, True, False]"
	# ... only under a rule with api_key_is_address: under 'wide' an
	# address is an API key like any other
	ask wide-ip 2 wide 10.9.0.1
	tap_eq "the same address under 'wide' (without api_key_is_address): a count of its own (used 1)" \
		"$(PY "[(a['allowed'], a['used'], a['decision']) for a in d]" wide-ip)" \
		"[(True, 1, 'central')]"

	# an address the rule exempts is answered without counting
	burst ex 3 ex 10.8.1.1
	ask ex-other 1 ex 10.7.1.1
	ask ex-other2 2 ex 10.7.1.1
	tap_eq "an exempt address passes uncounted (decision exempt); another is limited centrally" \
		"$(PY "[(a['allowed'], a['decision']) for a in d]" "${TAGS[@]}" ex-other ex-other2)" \
		"[(True, 'exempt'), (True, 'exempt'), (True, 'exempt'), (True, 'central'), (False, 'central')]"

	# the keys: rule + client, hash-tagged, with a TTL
	got=$(in_server redis-cli -p "$RPORT" --scan --pattern 'slc:*' | sort)
	ok=1
	for p in "slc:{tb:$(kh alice)}:token-bucket:" "slc:{log:$(kh k-log)}:sliding-log:" \
		 'slc:{net:ip:10.9.0.0/24}:sliding:' "slc:{wide:$(kh 10.9.0.1)}:sliding:"; do
		printf '%s\n' "$got" | grep -qF "$p" || { ok=0; diag "no key $p"; }
	done
	if printf '%s\n' "$got" | grep -qF 'slc:{wide:ip:'; then
		ok=0
		diag "an address key under 'wide' stored as the address"
	fi
	while read -r i; do
		[ -n "$i" ] || continue
		t=$(in_server redis-cli -p "$RPORT" pttl "$i")
		[ "$t" -gt 0 ] 2>/dev/null || { ok=0; diag "$i: pttl $t"; }
	done <<<"$got"
	tap_eq "Redis keys are slc:{RULE:CLIENT}:..., every one with a TTL" "$ok" 1
	# no API key the checks used is in any key's name
	ok=1
	for p in alice k-sl k-plain k-log k-fx k-ctr shared; do
		if printf '%s\n' "$got" | grep -qF "$p"; then
			ok=0
			diag "API key $p in clear: $(printf '%s\n' "$got" | grep -F "$p" | head -1)"
		fi
	done
	tap_eq "no API key is stored in clear: each is kh: and its keyed hash (the sync key_file's)" "$ok" 1

	# ---- 4: Redis stopped, then back ----
	burst out 5 sl carol
	tap_eq "before the outage: carol is over the limit centrally" \
		"$(PY "[a['allowed'] for a in d]" "${TAGS[@]}")" "[True, True, True, True, False]"
	sl_stop "$REDIS_PID"
	burst down 4 sl carol
	tap_eq "Redis down: checks fail open (allowed, decision local) on both nodes" \
		"$(PY "[(a['allowed'], a['decision'], a['bad']) for a in d]" "${TAGS[@]}")" \
		"[(True, 'local', ''), (True, 'local', ''), (True, 'local', ''), (True, 'local', '')]"
	for n in 1 2; do
		got=$(metric "$n" 'slicelimit_http_check_decisions_total{decision="local"}')
		tap_eq "node $n: /metrics counts 2 local (fail-open) decisions" "$got" 2
		tap_eq "node $n: /metrics says the central store is down" \
			"$(metric "$n" slicelimit_check_central_up)" 0
		got=$(metric "$n" slicelimit_check_central_errors_total)
		if [ "$got" != none ] && [ "$got" -ge 1 ]; then
			tap_ok "node $n: /metrics counts the store's errors ($got)"
		else
			tap_fail "node $n: /metrics counts the store's errors" "got $got"
		fi
	done

	redis_start
	# backoff from 1 s, doubling: back within a few seconds
	ok=0
	for i in $(seq 1 40); do
		ask "poll1-$i" 1 wide "poll-$i"
		ask "poll2-$i" 2 wide "poll-$i"
		if [ "$(PY "[a['decision'] for a in d]" "poll1-$i" "poll2-$i")" = \
		     "['central', 'central']" ]; then
			ok=1
			break
		fi
		sleep 0.25
	done
	tap_eq "Redis back: both nodes decide centrally again" "$ok" 1
	# the restarted store kept nothing (no persistence): carol starts afresh
	burst back 5 sl carol
	tap_eq "after the restart: the limit holds across both nodes again" \
		"$(PY "[(a['allowed'], a['decision']) for a in d]" "${TAGS[@]}")" \
		"[(True, 'central'), (True, 'central'), (True, 'central'), (True, 'central'), (False, 'central')]"
	for n in 1 2; do
		tap_eq "node $n: /metrics counts the reconnect" \
			"$(metric "$n" slicelimit_check_central_reconnects_total)" 1
	done

	for n in 1 2; do
		sl_stop "${NODE_PID[n]}"
		tap_eq "node $n: SIGTERM stops it with status 0" "$STOP_RC" 0
	done
	sl_stop "$REDIS_PID"
	tap_elapsed "$START" 40
	tap_done
}

sl_run body
