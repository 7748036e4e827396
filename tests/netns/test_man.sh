#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The man pages (packaging/man) and the bash completion
# (packaging/bash-completion/slicelimit) against the program they
# describe. Nothing here is a copied list: the commands, options and
# fields are read at test time from `slicelimit --help`, each command's
# --help, and the tables of user/ (the dispatch table of cli/dispatch.c, the
# getopt option tables and strings of user/cli/cmd_*.c, the key arrays of
# user/service/config.c, user/sync/config.c and user/rules/file.c, the
# name tables of rules/names.c, sync/engine.c and instance/hook.c). So a
# command, option or field added to the code
# fails here until the page (and the completion) say it, and one the page
# names that the code no longer has fails too.
#
#   - each page renders with man -l and groff -ww without a warning;
#   - every command of --help and of the dispatch table has a section in
#     slicelimit.8, and every section is a command; every option a
#     command's --help prints and every option of its getopt table (long
#     and short) is in slicelimit.8, the command's own in its section;
#     every option of slicelimit.8 is one the code has;
#   - every rule field and algorithm is an entry of slicelimit-rules.5,
#     every config field and sync layout one of slicelimit-config.5, and
#     each entry is one the loaders accept; the rule file examples pass
#     `slicelimit rules check`;
#   - the completion, sourced into bash, completes the commands, each
#     command's options, device names (lo), modes, algorithms, layouts,
#     and the names of rules applied in this run's private bpffs.
#
# Usage: test_man.sh BUILD_DIR   (prints TAP lines: ok - / not ok -)
# SL_MAN_DIR and SL_COMPLETION check other copies (to see it fail).
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"	# TAP helpers, and a private bpffs for rules apply

top=$(cd "$here/../.." && pwd)
BIN=$(cd "$build" 2>/dev/null && pwd)/slicelimit
MAN=${SL_MAN_DIR:-$top/packaging/man}
COMPLETION=${SL_COMPLETION:-$top/packaging/bash-completion/slicelimit}
PAGES=(slicelimit.8 slicelimit-rules.5 slicelimit-config.5)
USER=$top/user
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[ -x "$BIN" ] || die "no $BIN: run make first"
if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
	die "man and groff are needed (make deps installs man-db and groff-base)"
fi

# ---- reading the sources ----

# c_array FILE NAME: the strings of `NAME[] = { "a", "b", ... };`
c_array() {
	awk -v re="(^|[^A-Za-z0-9_])$2\\[" '
		$0 ~ re && /= *\{/ { on = 1 }
		on { s = $0
		     while (match(s, /"[^"]*"/)) {
			     print substr(s, RSTART + 1, RLENGTH - 2)
			     s = substr(s, RSTART + RLENGTH)
		     } }
		on && /\};/ { on = 0 }' "$1"
}

# cmd_opts: "COMMAND OPTION ARG" per getopt_long table entry of the
# commands and per letter of their optstring (ARG: required, no or
# optional); the table belongs to the function it is in, do_CMD or
# CMD_args_parse (replay's: sl_replay_args_parse).
cmd_opts() {
	awk '
		FNR == 1 { f = "" }
		/^(static )?int [a-z_]+\(/ {
			f = $0; sub(/\(.*/, "", f); sub(/.* /, "", f)
			sub(/^do_/, "", f); sub(/^sl_/, "", f)
			sub(/_args_parse$/, "", f)
		}
		f != "" && match($0, /\{ "[a-z-]+", (required|no|optional)_argument/) {
			e = substr($0, RSTART, RLENGTH)
			split(e, w, "\"")
			a = e; sub(/.*, /, "", a); sub(/_argument/, "", a)
			print f, "--" w[2], a
		}
		f != "" && match($0, /getopt_long\(argc, argv, "[^"]*"/) {
			s = substr($0, RSTART, RLENGTH); sub(/^[^"]*"/, "", s)
			sub(/"$/, "", s); gsub(/\+/, "", s)
			for (i = 1; i <= length(s); i++)
				if (substr(s, i, 1) != ":")
					print f, "-" substr(s, i, 1),
					      substr(s, i + 1, 1) == ":" ? "required" : "no"
		}' "$USER"/cli/cmd_*.c
}

# the commands of the dispatch table in cli/dispatch.c
table_commands() {
	sed -n '/^} commands\[\] = {/,/^};/s/^\t{ "\([a-z]*\)", do_.*/\1/p' "$USER/cli/dispatch.c"
}

# help_commands: the commands `slicelimit --help` lists
help_commands() {
	"$BIN" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\).*/\1/p' | sort -u
}

# long_opts: every --option a text names
long_opts() { grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }

# ---- reading the pages ----

# text PAGE: the page's source without comments, with the escapes that
# hide words undone (\- \f? \(dq \(aq \e)
text() {
	sed -e '/^\.\\"/d' -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' \
	    -e 's/\\(dq/"/g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g' \
	    -e 's/\\ / /g' "$MAN/$1"
}

# section PAGE LABEL: the text of one section: LABEL is "SH" or
# "SH/SS" (".SS attach" under ".SH COMMANDS" is COMMANDS/attach)
section() {
	text "$1" | awk -v want="$2" '
		/^\.SH / { sh = substr($0, 5); gsub(/"/, "", sh); label = sh; next }
		/^\.SS / { ss = substr($0, 5); gsub(/"/, "", ss); label = sh "/" ss; next }
		label == want'
}

# tags PAGE LABEL: the bold tags of the .TP entries of a section, one a
# line (".TP" then ".B slices" gives slices)
tags() {
	section "$1" "$2" | awk '
		/^\.TP/ { tp = 1; next }
		tp && /^\.BR? / { t = $2; gsub(/"/, "", t); print t }
		{ tp = 0 }' | sort -u
}

has_word() {	# WORD: is it in stdin as a word of its own?
	grep -qE -- "(^|[^A-Za-z0-9_-])$(printf '%s' "$1" | sed 's/[.]/\\./g')([^A-Za-z0-9_-]|$)"
}

# same_set DESC GOT WANT: two sets given one per line
same_set() {
	local missing extra
	missing=$(comm -13 <(sed '/^$/d' <<<"$2" | sort -u) <(sed '/^$/d' <<<"$3" | sort -u) | tr '\n' ' ')
	extra=$(comm -23 <(sed '/^$/d' <<<"$2" | sort -u) <(sed '/^$/d' <<<"$3" | sort -u) | tr '\n' ' ')
	if [ -z "$missing$extra" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "missing: ${missing:-none}" "not in the source: ${extra:-none}"
	fi
}

# all_in DESC HAYSTACK WORDS...: every word is a word of HAYSTACK
all_in() {
	local desc=$1 hay=$2 w missing=""
	shift 2
	for w in "$@"; do
		has_word "$w" <<<"$hay" || missing="$missing $w"
	done
	if [ -z "$missing" ]; then
		tap_ok "$desc"
	else
		tap_fail "$desc" "missing:$missing"
	fi
}

# ---- 1. the pages render cleanly ----

for page in "${PAGES[@]}"; do
	if [ ! -f "$MAN/$page" ]; then
		tap_fail "$page exists"
		continue
	fi
	warn=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$MAN/$page" 2>&1)
	for width in 60 80 120; do
		warn+=${warn:+$'\n'}$(LC_ALL=C.UTF-8 MANWIDTH=$width man --warnings -l "$MAN/$page" 2>&1 >/dev/null)
	done
	if [ -z "$warn" ]; then
		tap_ok "$page renders with groff -ww and man -l (60, 80, 120 columns) without a warning"
	else
		tap_fail "$page renders without a warning" "$warn"
	fi
done

# ---- 2. slicelimit.8: the commands and their options ----

help_cmds=$(help_commands)
same_set "slicelimit --help lists the commands of cli/dispatch.c's dispatch table" \
	"$help_cmds" "$(table_commands | sort -u)"
same_set "slicelimit.8 has a section per command of slicelimit --help, and no other" \
	"$(text slicelimit.8 | sed -n 's/^\.SS "\{0,1\}\([a-z]*\).*/\1/p' | sort -u)" \
	"$help_cmds"
# shellcheck disable=SC2046
all_in "slicelimit.8 names every rules subcommand of rules --help" \
	"$(section slicelimit.8 COMMANDS/rules)" \
	$("$BIN" rules --help | sed -n 's/^ *slicelimit rules \([a-z]*\).*/\1/p')

# shellcheck disable=SC2046
all_in "slicelimit.8 OPTIONS names every option of slicelimit --help" \
	"$(section slicelimit.8 OPTIONS)" \
	$("$BIN" --help | sed -n '/^Options/,$p' | grep -oE -- '(^| )-[A-Za-z]|--[a-z][a-z-]*' | sort -u)

cmd_opts >"$TMP/opts"
for cmd in $help_cmds; do
	sec=$(section slicelimit.8 "COMMANDS/$cmd")
	# what the --help prints, anywhere in the page (some name other
	# commands' options: attach's names detach --all)
	# shellcheck disable=SC2046
	all_in "slicelimit.8 names every option 'slicelimit $cmd --help' prints" \
		"$(text slicelimit.8)" $("$BIN" "$cmd" --help | long_opts)
	own=$(awk -v c="$cmd" '$1 == c && $2 != "--help" && $2 != "-h" { print $2 }' "$TMP/opts" | sort -u)
	[ -n "$own" ] || [ "$cmd" = version ] || [ "$cmd" = status ] ||
		[ "$cmd" = stats ] || [ "$cmd" = rules ] ||
		[ "$cmd" = unblock ] || [ "$cmd" = disallow ] ||
		[ "$cmd" = lists ] ||
		tap_fail "the option table of $cmd is found in user/"
	# shellcheck disable=SC2086
	[ -z "$own" ] || all_in "the $cmd section of slicelimit.8 has its options (${own//$'\n'/ })" "$sec" $own
done
known=$( { awk '{ print $2 }' "$TMP/opts"; c_array "$USER/cli/dispatch.c" global_opts | sed 's/^/--/'; } | sort -u)
man_opts=$( { section slicelimit.8 OPTIONS; text slicelimit.8 | awk '/^\.SH COMMANDS/ { on = 1; next } /^\.SH / { on = 0 } on'; } | long_opts)
same_set "every option slicelimit.8 names is in an option table of user/" \
	"$(comm -12 <(echo "$man_opts") <(echo "$known"))" "$man_opts"

# ---- 3. the rule and config fields ----

rule_fields=$( { c_array "$USER/rules/file.c" rule_keys; c_array "$USER/rules/file.c" key_keys; } | sort -u)
[ "$(wc -l <<<"$rule_fields")" -ge 10 ] || tap_fail "the rule keys are read from user/rules/file.c" "$rule_fields"
same_set "slicelimit-rules.5 FIELDS: an entry per field of rules/file.c's rule_keys and key_keys" \
	"$(tags slicelimit-rules.5 FIELDS)" "$rule_fields"
algorithms=$(c_array "$USER/rules/names.c" algorithm_names)
same_set "slicelimit-rules.5 ALGORITHMS: an entry per algorithm of rules/names.c" \
	"$(tags slicelimit-rules.5 ALGORITHMS)" "$algorithms"
rules_fields_text=$(section slicelimit-rules.5 FIELDS)
# shellcheck disable=SC2046
all_in "slicelimit-rules.5 names every protocol, unit and action" "$rules_fields_text" \
	$(c_array "$USER/rules/names.c" protocol_names) \
	$(c_array "$USER/rules/names.c" unit_names) \
	$(c_array "$USER/rules/names.c" action_names)

n=0
while IFS= read -r -d '' example; do
	n=$((n + 1))
	printf '%s' "$example" >"$TMP/example$n.yaml"
	tap_check "rule file example $n of slicelimit-rules.5 passes rules check" \
		"$BIN" rules check "$TMP/example$n.yaml"
done < <(text slicelimit-rules.5 | awk '/^\.EE/ { printf "%c", 0; on = 0 } on; /^\.EX/ { on = 1 }')
[ "$n" -ge 1 ] || tap_fail "slicelimit-rules.5 has examples"

config_fields=$(for a in config_keys device_keys http_keys service_keys; do c_array "$USER/service/config.c" $a; done | sort -u)
[ "$(wc -l <<<"$config_fields")" -ge 8 ] || tap_fail "the config keys are read from user/service/config.c" "$config_fields"
same_set "slicelimit-config.5 FIELDS: an entry per field of service/config.c's config_keys, device_keys, http_keys, service_keys" \
	"$(tags slicelimit-config.5 FIELDS)" "$config_fields"
layouts=$( { c_array "$USER/sync/engine.c" layout_names | grep -vx local; echo central; } | sort -u)
same_set "slicelimit-config.5 sync section: an entry per field of sync/config.c's sync_keys and per layout of sync/engine.c (and central)" \
	"$(tags slicelimit-config.5 "FIELDS/The sync section")" \
	"$( { c_array "$USER/sync/config.c" sync_keys; echo "$layouts"; } | sort -u)"
modes=$(c_array "$USER/instance/hook.c" mode_names)
# shellcheck disable=SC2086
all_in "slicelimit-config.5 names every device mode of instance/hook.c" "$(section slicelimit-config.5 FIELDS)" $modes
# shellcheck disable=SC2086
all_in "slicelimit.8 attach names every device mode of instance/hook.c" "$(section slicelimit.8 COMMANDS/attach)" $modes

# ---- 4. the bash completion ----

# complete WORD...: what the completion offers for the command line
# WORD... (the last word is the one completed), one a line, sorted
complete_words() {
	bash -c '
		. "$1" || exit 1
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_slicelimit
		printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPLETION" "$BIN" "$@" | sed '/^$/d' | sort -u
}

if ! bash -n "$COMPLETION" 2>"$TMP/err"; then
	tap_fail "the completion is valid bash" "$(cat "$TMP/err")"
fi
tap_eq "completion: 'slicelimit rul' gives rules" "$(complete_words rul)" rules
same_set "completion: 'slicelimit ' gives the commands of slicelimit --help" \
	"$(complete_words "" | grep -vx help)" "$help_cmds"
same_set "completion: 'slicelimit --' gives the global options of cli/dispatch.c" \
	"$(complete_words --)" "$(c_array "$USER/cli/dispatch.c" global_opts | sed 's/^/--/')"
for cmd in $help_cmds; do
	own=$(awk -v c="$cmd" '$1 == c && $2 ~ /^--/ { print $2 }' "$TMP/opts" | sort -u)
	[ -n "$own" ] || continue
	got=$(complete_words "$cmd" --)
	# shellcheck disable=SC2086
	all_in "completion: 'slicelimit $cmd --' gives $cmd's options (${own//$'\n'/ })" "$got" $own
done
value_opts=$(bash -c '. "$1"; printf "%s\n" $_slicelimit_value_opts' _ "$COMPLETION" | sort -u)
same_set "completion: the options that take a value are those of user/ with required_argument" \
	"$value_opts" \
	"$(awk '$3 == "required" { print $2 }' "$TMP/opts" | sort -u)"
same_set "completion: 'slicelimit attach ' gives the devices of /sys/class/net" \
	"$(complete_words attach "")" "$(ls /sys/class/net)"
tap_eq "completion: 'slicelimit detach l' gives lo" "$(complete_words detach l | grep -x lo)" lo
same_set "completion: 'slicelimit attach lo --mode ' gives the modes of instance/hook.c" \
	"$(complete_words attach lo --mode "")" "$modes"
same_set "completion: 'slicelimit replay --algorithm ' gives the algorithms of rules/names.c" \
	"$(complete_words replay --algorithm "")" "$algorithms"
same_set "completion: 'slicelimit replay --layout ' gives the layouts" \
	"$(complete_words replay --layout "")" "$layouts"
tap_eq "completion: 'slicelimit -j rules ' gives its subcommands" \
	"$(complete_words -j rules "" | tr '\n' ' ')" "apply check list "
tap_eq "completion: 'slicelimit --json=' gives yes and no" \
	"$(complete_words --json = | tr '\n' ' ')" "no yes "
tap_eq "completion: 'slicelimit stats --pretty=y' gives yes" \
	"$(complete_words stats --pretty = y)" yes
tap_eq "completion: 'slicelimit --json=yes sta' gives status and stats" \
	"$(complete_words --json = yes sta | tr '\n' ' ')" "stats status "

# rule names: applied for real, in this run's private bpffs (lib.sh)
cat >"$TMP/names.yaml" <<'EOF'
rules:
  - { name: alpha, limit: 10 }
  - { name: beta-2.x, limit: 20, protocol: udp }
EOF
if out=$("$BIN" rules apply "$TMP/names.yaml" 2>&1); then
	same_set "completion: 'slicelimit top --rule ' gives the running rules' names" \
		"$(complete_words top --rule "")" "$(printf 'alpha\nbeta-2.x\n')"
	tap_eq "completion: 'slicelimit query 192.0.2.1 -r b' gives beta-2.x" \
		"$(complete_words query 192.0.2.1 -r b)" beta-2.x
else
	tap_fail "rules apply, for the rule names to complete" "$out"
fi

tap_done
