#!/usr/bin/env bash
# Run the whole suite and print one closing line: "N passed, N failed".
#
# Each cmocka binary in BUILD/tests counts its own tests; each
# tests/{replay,netns}/test_*.sh prints TAP lines ("ok - what" /
# "not ok - what").
# A binary or script that dies without reporting counts as one failure.
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0

count_cmocka() {	# $1: binary
	local out rc p f
	out=$("$1" 2>&1); rc=$?
	printf '%s\n' "$out" | grep -E '^\[ +(OK|FAILED|ERROR) +\]|^\[==========\]' | sed 's/^/  /'
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	p=${p:-0}; f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		printf '%s\n' "$out" | tail -20 | sed 's/^/  | /'
		f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
}

count_tap() {		# $1: script
	local out rc p f
	out=$(bash "$1" "$build" 2>&1); rc=$?
	# the diagnostics of a failure (tap_fail's indented lines) too: CI
	# shows nothing else
	printf '%s\n' "$out" | grep -E '^(not )?ok|^#   ' | sed 's/^/  /'
	p=$(printf '%s\n' "$out" | grep -c '^ok')
	f=$(printf '%s\n' "$out" | grep -c '^not ok')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		printf '%s\n' "$out" | tail -20 | sed 's/^/  | /'
		f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
}

for bin in "$build"/tests/test_*; do
	[ -x "$bin" ] || continue
	# one left in the build directory by a test file since split or
	# renamed is stale: only binaries with a source run
	[ -f "$here/unit/$(basename "$bin").c" ] ||
		[ -f "$here/bpf/$(basename "$bin").c" ] || continue
	echo "== $(basename "$bin")"
	count_cmocka "$bin"
done
for script in "$here"/replay/test_*.sh "$here"/netns/test_*.sh "$here"/fuzz/run.sh; do
	[ -f "$script" ] || continue
	echo "== $(basename "$script")"
	count_tap "$script"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
