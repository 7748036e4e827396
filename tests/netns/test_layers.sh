#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The layering of user/, read from the built objects (nm), not the text:
#
#   1. Nothing under core/, rules/, sync/, service/ or replay/ calls into
#      cli/ (the command line is the top: core/log.c used to print the
#      --json error envelope with cli/output.c's printer, and replay/ drew
#      its progress line with cli/progress.c, now core/progress.c).
#   2. The Redis backend's link (one connection, the outage) calls nothing
#      of its Cluster file, which builds on it: one direction.
#
# Usage: test_layers.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
set -u
build=${1:-build}
obj=$build/user
command -v nm >/dev/null || { echo "Bail out! nm not found (binutils)"; exit 1; }
[ -f "$obj/core/log.o" ] || { echo "Bail out! $obj/core/log.o is not built (make all)"; exit 1; }
failed=0

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; printf '%s\n' "$2" | sed 's/^/#   /'; failed=$((failed + 1)); }

defined() { nm --defined-only -g "$@" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u; }
undefined() { nm -u "$1" 2>/dev/null | awk '{ print $2 }' | sort -u; }

# calls FROM... -- TO...: "FROM -> SYMBOL" for each symbol a FROM object
# uses that a TO object defines
calls() {
	local from=() to=() f
	while [ "$1" != -- ]; do from+=("$1"); shift; done
	shift
	to=("$@")
	for f in "${from[@]}"; do
		comm -12 <(undefined "$f") <(defined "${to[@]}") | sed "s|^|${f#"$obj"/} -> |"
	done
}

lower=()
for d in core rules sync service replay; do
	lower+=("$obj/$d"/*.o)
done
bad=$(calls "${lower[@]}" -- "$obj"/cli/*.o)
if [ -z "$bad" ]; then
	ok "no object of core/, rules/, sync/, service/ or replay/ calls into cli/"
else
	not_ok "no object of core/, rules/, sync/, service/ or replay/ calls into cli/" "$bad"
fi
bad=$(calls "$obj/sync/redis_link.o" -- "$obj/sync/redis_cluster.o")
if [ -z "$bad" ]; then
	ok "sync/redis_link.o calls nothing of sync/redis_cluster.o (cluster builds on link, one way)"
else
	not_ok "sync/redis_link.o calls nothing of sync/redis_cluster.o (cluster builds on link, one way)" "$bad"
fi
echo "# $((2 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
