#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The monitoring that ships in packaging/ (issue 13), against a real scrape:
#
#   1. promtool check rules passes on packaging/prometheus/slicelimit-alerts.yml,
#      and promtool test rules (slicelimit-alerts.test.yml) fires every alert
#      on the series that should raise it;
#   2. packaging/grafana/slicelimit-dashboard.json is valid JSON, schema 38,
#      every panel on the ${DS_PROMETHEUS} data source, and every query of
#      it parses as PromQL (promtool check rules over them as recording rules);
#   3. a 3-node fleet (multinode_lib.sh) syncing under bounded, node 1 with
#      its HTTP API on, traffic over the limit and API checks: node 1's
#      /metrics passes promtool check metrics, and every metric name the
#      alerts and the dashboard use is a sample of that scrape (a renamed
#      metric would leave an alert that never fires, a panel that is empty);
#   4. node 3 stopped: node 1's scrape shows it down and one peer fewer up
#      than configured, what the sync alerts read.
#
# Usage: test_monitoring.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}" curl promtool
REPO=$(cd "$here/../.." && pwd)
# shellcheck source=multinode_lib.sh
. "$here/multinode_lib.sh"
SL_NODES=3 mn_init

ALERTS=$REPO/packaging/prometheus/slicelimit-alerts.yml
ALERT_TESTS=$REPO/packaging/prometheus/slicelimit-alerts.test.yml
DASH=$REPO/packaging/grafana/slicelimit-dashboard.json
API=http://127.0.0.1:8080	# node 1's, in its namespace
CLIENT=10.97.0.20
LIMIT=20

# names FILE...: every slicelimit_* name the files use, one a line
names() {
	grep -oh 'slicelimit_[a-z0-9_]*' "$@" | sort -u
}

# h EXPR: EXPR over the last scrape, m = {"name{labels}": value},
# flood(OUTCOME) = rule flood's packets of that outcome
h() {
	"$SL_PY" - "$SL_TMP/metrics.txt" "$1" <<'EOF'
import sys
m = {}
for line in open(sys.argv[1]):
    if line.strip() and not line.startswith("#"):
        k, _, v = line.strip().rpartition(" ")
        m[k] = float(v)
flood = lambda o: m['slicelimit_rule_packets_total{rule="flood",outcome="%s"}' % o]
print(eval(sys.argv[2], {"m": m, "flood": flood}))
EOF
}

# peer3_down: node 1's scrape shows node 3 down
peer3_down() {
	[ "$(scrape)" = 200 ] && [ "$(h "m.get('slicelimit_sync_peer_up{node=\"3\"}')")" = 0.0 ]
}

test_alert_rules_pass_promtool() {
	tap_check "promtool check rules packaging/prometheus/slicelimit-alerts.yml" \
		promtool check rules "$ALERTS"
	tap_check "promtool test rules slicelimit-alerts.test.yml: each alert fires on its series, and not on the quiet ones" \
		promtool test rules "$ALERT_TESTS"
	tap_eq "every alert has a for:, a summary and a description" \
		"$("$SL_PY" -c '
import sys, yaml
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"]]
print(len(rules), [r["alert"] for r in rules
      if not r.get("for") or not {"summary", "description"} <= set(r.get("annotations", {}))])' "$ALERTS")" \
		"9 []"
}

test_dashboard_is_valid_and_its_queries_parse() {
	local out
	out=$("$SL_PY" - "$DASH" "$SL_TMP/dash-rules.yml" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
panels = [p for p in d["panels"] if p["type"] != "row"]
bad = [p["title"] for p in panels
       if p["datasource"]["uid"] != "${DS_PROMETHEUS}"
       or any(t["datasource"]["uid"] != "${DS_PROMETHEUS}" for t in p["targets"])]
ds = [v for v in d["templating"]["list"] if v["name"] == "DS_PROMETHEUS"]
exprs = [t["expr"] for p in panels for t in p["targets"]]
# Grafana's variables, as Prometheus would see them once replaced
sub = {"$__rate_interval": "5m", "$__range": "1h", "$instance": ".*"}
with open(sys.argv[2], "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        for k, v in sub.items():
            e = e.replace(k, v)
        f.write("      - record: dashboard:q%d\n        expr: %s\n" % (i, json.dumps(e)))
print(d["schemaVersion"], d["uid"], [v["type"] for v in ds], len(panels) > 20, bad)
EOF
)
	tap_eq "the dashboard is JSON, schemaVersion 38, uid slicelimit, a datasource variable DS_PROMETHEUS, every panel and query on \${DS_PROMETHEUS}" \
		"$out" "38 slicelimit ['datasource'] True []"
	tap_check "every query of the dashboard parses as PromQL (promtool check rules over them as recording rules)" \
		promtool check rules "$SL_TMP/dash-rules.yml"
}

write_rules() {
	cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - { name: flood, protocol: udp, ports: 9, limit: $LIMIT, window: 60s }
  - { name: api, limit: 5, window: 60s }
EOF
}

# scrape: node 1's /metrics into $SL_TMP/metrics.txt; prints the status
scrape() {
	in_node 1 curl -s -m 5 -o "$SL_TMP/metrics.txt" -w '%{http_code}' "$API/metrics"
}

test_a_real_scrape_has_every_metric_used() {
	local code missing
	for _ in 1 2 3 4 5 6 7; do
		in_node 1 curl -s -m 5 -o /dev/null "$API/v1/check?rule=api&key=alice"
	done
	sl_send "$CLIENT" "$(node_data 1)" 9 $((LIMIT * 3)) >/dev/null ||
		tap_fail "sl-traffic sent $((LIMIT * 3)) packets to node 1"
	code=$(scrape)
	tap_eq "node 1's /metrics answers 200" "$code" 200
	# shellcheck disable=SC2016 # $1 is sh's, not ours
	tap_check "promtool check metrics passes on that scrape" \
		sh -c 'promtool check metrics <"$1"' sh "$SL_TMP/metrics.txt"
	# sample names (a histogram's _bucket/_sum/_count, not its family)
	sed -n 's/^\(slicelimit_[a-z0-9_]*\).*/\1/p' "$SL_TMP/metrics.txt" | sort -u >"$SL_TMP/scraped"
	names "$ALERTS" >"$SL_TMP/used-alerts"
	names "$DASH" >"$SL_TMP/used-dash"
	missing=$(comm -23 "$SL_TMP/used-alerts" "$SL_TMP/scraped" | paste -sd' ')
	tap_eq "every metric the alerts name ($(wc -l <"$SL_TMP/used-alerts")) is a sample of the scrape" \
		"${missing:-none missing}" "none missing"
	missing=$(comm -23 "$SL_TMP/used-dash" "$SL_TMP/scraped" | paste -sd' ')
	tap_eq "every metric the dashboard queries ($(wc -l <"$SL_TMP/used-dash")) is a sample of the scrape" \
		"${missing:-none missing}" "none missing"
	# bounded: node 1 takes its share of the fleet's limit, not all of it
	tap_eq "... and it says what happened: rule flood passed 1..$LIMIT of $((LIMIT * 3)) and dropped the rest, peers 2 and 3 up of 2 configured, 3 live nodes, 7 API checks decided by the kernel" \
		"$(h "[0 < flood('passed') <= $LIMIT and flood('passed') + flood('dropped') == $((LIMIT * 3))] + [int(m[k]) for k in ('slicelimit_sync_peer_up{node=\"2\"}', 'slicelimit_sync_peer_up{node=\"3\"}', 'slicelimit_sync_peers_configured', 'slicelimit_sync_live_nodes', 'slicelimit_http_check_decisions_total{decision=\"kernel\"}')]")" \
		"[True, 1, 1, 2, 3, 7]"
}

# what SlicelimitSyncPeerDown and SlicelimitSyncPeersMissing read: node 3
# stopped, node 1's scrape shows it down, one peer fewer up than configured
test_a_stopped_peer_shows_in_the_scrape() {
	sl_stop "${DAEMON[3]}"
	if poll 10 peer3_down; then
		tap_ok "node 3 stopped: node 1's /metrics has slicelimit_sync_peer_up{node=\"3\"} 0 (${POLL_MS} ms later)"
	else
		tap_fail "node 3 stopped: node 1's /metrics has slicelimit_sync_peer_up{node=\"3\"} 0 within 10 s" \
			"$(grep peer_up "$SL_TMP/metrics.txt")"
	fi
	tap_eq "... node 2 still up, 2 peers configured, 1 up: 2 live nodes" \
		"$(h "[int(m['slicelimit_sync_peer_up{node=\"2\"}']), int(m['slicelimit_sync_peers_configured']), int(sum(v for k, v in m.items() if k.startswith('slicelimit_sync_peer_up{'))), int(m['slicelimit_sync_live_nodes'])]")" \
		"[1, 2, 1, 2]"
}

main() {
	local start=$SECONDS
	test_alert_rules_pass_promtool
	test_dashboard_is_valid_and_its_queries_parse
	mn_setup_network "$CLIENT"
	write_rules
	mn_write_configs bounded
	sed -i "s|listen: \"off\"|listen: 127.0.0.1:8080\n  token_file: $SL_API_TOKEN_FILE|" "$SL_TMP/node1.yaml"
	mn_fleet_start
	test_a_real_scrape_has_every_metric_used
	test_a_stopped_peer_shows_in_the_scrape
	tap_elapsed "$start" 90
	tap_done
}

sl_run main
