#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The layering of user/, read from the built objects (nm), not the text:
#
#   1. No object of a layer calls into a layer above it, in the order of
#      USER_LAYERS in the Makefile (the build checks the includes; this
#      checks the calls, which a declaration written by hand would hide
#      from it: util/log.c once printed the --json error envelope with
#      cli/output.c's printer, and replay/ drew its progress line with
#      cli/progress.c, now util/progress.c).
#   2. The Redis backend's link (one connection, the outage) calls nothing
#      of its Cluster file, which builds on it: one direction.
#
# Usage: test_layers.sh BUILD_DIR      (prints TAP lines: ok - / not ok -)
set -u
build=${1:-build}
obj=$build/user
command -v nm >/dev/null || { echo "Bail out! nm not found (binutils)"; exit 1; }
[ -f "$obj/util/log.o" ] || { echo "Bail out! $obj/util/log.o is not built (make all)"; exit 1; }
layers=$(sed -n 's/^USER_LAYERS *:= *//p' "$(dirname "$0")/../../Makefile")
[ -n "$layers" ] || { echo "Bail out! no USER_LAYERS in the Makefile"; exit 1; }
failed=0
checks=0

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

# each layer against all those above it
set -- $layers
while [ $# -gt 1 ]; do
	low=$1
	shift
	above=()
	for d in "$@"; do
		above+=("$obj/$d"/*.o)
	done
	bad=$(calls "$obj/$low"/*.o -- "${above[@]}")
	checks=$((checks + 1))
	if [ -z "$bad" ]; then
		ok "no object of $low/ calls into a layer above it ($*)"
	else
		not_ok "no object of $low/ calls into a layer above it ($*)" "$bad"
	fi
done
bad=$(calls "$obj/sync/redis_link.o" -- "$obj/sync/redis_cluster.o")
checks=$((checks + 1))
if [ -z "$bad" ]; then
	ok "sync/redis_link.o calls nothing of sync/redis_cluster.o (cluster builds on link, one way)"
else
	not_ok "sync/redis_link.o calls nothing of sync/redis_cluster.o (cluster builds on link, one way)" "$bad"
fi
echo "# $((checks - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
