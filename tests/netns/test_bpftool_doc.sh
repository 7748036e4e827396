#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# docs/bpftool-sample.txt (and the README section quoting it) shows real
# `bpftool map dump` output of the pinned maps. This keeps it true: a real
# run (attach, rules, traffic over a veth) is dumped map by map, and every
# field name of each excerpt must appear in the real dump, and every field
# name of the real dump in the excerpt, so renaming, adding or removing a
# field in include/slicelimit.h fails here until the sample is redone.
#
# Usage: test_bpftool_doc.sh BUILD_DIR   (prints TAP lines: ok - / not ok -)
# With SL_BPFTOOL_DUMPS=DIR the real dumps are kept in DIR, to redo the
# sample from.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sl_setup "${1:-build}"

SAMPLE=$(cd "$here/../.." && pwd)/docs/bpftool-sample.txt
README=$(cd "$here/../.." && pwd)/README.md
MAPS=(sl_rule_stats sl_global_stats sl_clients sl_rules sl_devices)
PORT=8080
LIMIT=5

# fields FILE [MAP]: the field names ("name": ...) of a bpftool dump, one a
# line, sorted. With MAP, only those of FILE's excerpts of MAP: each starts
# at a line "$ bpftool map dump pinned .../MAP" and ends at the next such
# line, or, in markdown, where its code block ends (a ``` line, or for an
# indented header the first line that is not indented). "#" lines are
# comments.
fields() {
	"$SL_PY" -c '
import re, sys
text = open(sys.argv[1]).read()
if len(sys.argv) > 2:
    head = re.compile(r"^([ \t]*)\$ bpftool map dump pinned \S+/(\w+)[ \t]*$")
    body, cur, indent = [], None, ""
    for line in text.splitlines():
        m = head.match(line)
        if m:
            cur, indent = m.group(2), m.group(1)
            continue
        if cur is None:
            continue
        if line.startswith("```") or (indent and line.strip() and
                                      not line[:1].isspace()):
            cur = None
            continue
        if cur == sys.argv[2] and not line.strip().startswith("#"):
            body.append(line)
    text = "\n".join(body)
for name in sorted(set(re.findall(r"\"([A-Za-z_]\w*)\"\s*:", text))):
    print(name)
' "$@"
}

test_setup_real_run() {
	cat >"$SL_TMP/rules.yaml" <<EOF
rules:
  - name: api
    protocol: udp
    ports: $PORT
    limit: $LIMIT
    window: 60s
    exempt: [${CLIENT4[2]}/32]
EOF
	tap_check "attach $VETH_S --mode xdp" sl attach "$VETH_S" --mode xdp
	tap_check "rules apply (api: $LIMIT a minute)" sl rules apply "$SL_TMP/rules.yaml"
	sl_alone
	sl_send "${CLIENT4[0]}" "$SRV4" "$PORT" 12 >/dev/null &&
		sl_send "${CLIENT4[1]}" "$SRV4" "$PORT" 3 >/dev/null &&
		sl_send "${CLIENT4[2]}" "$SRV4" "$PORT" 4 >/dev/null
	tap_eq "traffic went out: an abusive, a compliant and an exempt client" "$?" 0
	tap_eq "the real run has counted something (stats --json: api dropped $((12 - LIMIT)))" \
		"$(sl -j stats | json_get "[r['dropped'] for r in d['rules'] if r['rule'] == 'api']")" \
		"[$((12 - LIMIT))]"
}

test_sample_fields_match_real_dumps() {
	local map missing extra
	for map in "${MAPS[@]}"; do
		if ! in_server bpftool map dump pinned "$SL_PIN/$map" \
			>"$SL_TMP/$map.dump" 2>"$SL_TMP/$map.err"; then
			tap_fail "bpftool map dump pinned $SL_PIN/$map" "$(cat "$SL_TMP/$map.err")"
			continue
		fi
		[ -n "${SL_BPFTOOL_DUMPS:-}" ] && cp "$SL_TMP/$map.dump" "$SL_BPFTOOL_DUMPS/"
		if [ ! -r "$SAMPLE" ]; then
			tap_fail "$SAMPLE is readable"
			continue
		fi
		fields "$SL_TMP/$map.dump" >"$SL_TMP/$map.real"
		fields "$SAMPLE" "$map" >"$SL_TMP/$map.doc"
		if [ ! -s "$SL_TMP/$map.doc" ]; then
			tap_fail "the sample has a $map excerpt with field names" \
				"no '\$ bpftool map dump pinned $SL_PIN/$map' section in $SAMPLE"
			continue
		fi
		missing=$(comm -23 "$SL_TMP/$map.doc" "$SL_TMP/$map.real" | tr '\n' ' ')
		extra=$(comm -13 "$SL_TMP/$map.doc" "$SL_TMP/$map.real" | tr '\n' ' ')
		tap_eq "$map: every field name of the sample is in a real dump" \
			"${missing:-none missing}" "none missing"
		tap_eq "$map: every field name of a real dump is in the sample" \
			"${extra:-none missing}" "none missing"
	done
}

# The README may quote excerpts too (same "$ bpftool map dump pinned"
# header, in a code block): their field names must be real as well.
test_readme_excerpts_are_real() {
	local map missing="" quoted=""
	for map in "${MAPS[@]}"; do
		[ -s "$SL_TMP/$map.real" ] || continue
		fields "$README" "$map" >"$SL_TMP/$map.readme"
		[ -s "$SL_TMP/$map.readme" ] || continue
		quoted="$quoted $map"
		missing="$missing$(comm -23 "$SL_TMP/$map.readme" "$SL_TMP/$map.real" |
			sed "s/^/ $map./" | tr -d '\n')"
	done
	if [ -z "$quoted" ]; then
		tap_ok "README.md quotes no bpftool dump excerpt # SKIP nothing to check"
		return
	fi
	tap_eq "README.md's excerpts ($quoted ): every field name is in a real dump" \
		"${missing:-none missing}" "none missing"
}

main() {
	local start
	sl_claim_pins 30
	start=$SECONDS		# the wait for the pins is not the test's
	sl_netns_setup
	test_setup_real_run
	test_sample_fields_match_real_dumps
	test_readme_excerpts_are_real
	sl_alone
	tap_elapsed "$start" 180
	tap_done
}

sl_run main
