#!/usr/bin/env bash
# Run the whole suite and print one closing line: "N passed, N failed".
#
# Each cmocka binary in BUILD/tests counts its own tests; each
# tests/{replay,netns}/test_*.sh prints TAP lines ("ok - what" /
# "not ok - what").
# A binary or script that dies without reporting counts as one failure.
# Each one's "== name (N s)" line, printed when it ends, gives its wall
# time, and the ten slowest are listed before the closing line: the
# suite's time goes where that list says.
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0
times=()		# "SECONDS NAME", one per binary or script
report=			# what count_* keeps of one run's output

count_cmocka() {	# $1: binary
	local out rc p f
	out=$("$1" 2>&1); rc=$?
	report=$(printf '%s\n' "$out" | grep -E '^\[ +(OK|FAILED|ERROR) +\]|^\[==========\]' | sed 's/^/  /')
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	p=${p:-0}; f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		report+=${report:+$'\n'}$(printf '%s\n' "$out" | tail -20 | sed 's/^/  | /')
		f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
}

count_tap() {		# $1: script
	local out rc p f
	out=$(bash "$1" "$build" 2>&1); rc=$?
	# the diagnostics of a failure (tap_fail's indented lines) too: CI
	# shows nothing else
	report=$(printf '%s\n' "$out" | grep -E '^(not )?ok|^#   ' | sed 's/^/  /')
	p=$(printf '%s\n' "$out" | grep -c '^ok')
	f=$(printf '%s\n' "$out" | grep -c '^not ok')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		report+=${report:+$'\n'}$(printf '%s\n' "$out" | tail -20 | sed 's/^/  | /')
		f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
}

# $1: count_cmocka or count_tap, $2: the binary or script. Its header
# line comes when it ends, with its wall time, then its results.
run_timed() {
	local name start
	name=$(basename "$2")
	start=$SECONDS
	"$1" "$2"
	echo "== $name ($((SECONDS - start)) s)"
	[ -z "$report" ] || printf '%s\n' "$report"
	times+=("$((SECONDS - start)) $name")
}

for bin in "$build"/tests/test_*; do
	[ -x "$bin" ] || continue
	# one left in the build directory by a test file since split or
	# renamed is stale: only binaries with a source run
	[ -f "$here/unit/$(basename "$bin").c" ] ||
		[ -f "$here/bpf/$(basename "$bin").c" ] || continue
	run_timed count_cmocka "$bin"
done
for script in "$here"/replay/test_*.sh "$here"/netns/test_*.sh "$here"/fuzz/run.sh; do
	[ -f "$script" ] || continue
	run_timed count_tap "$script"
done

echo "== slowest ten, of $SECONDS s"
printf '%s\n' "${times[@]}" | sort -rn | head -10 |
	while read -r s name; do printf '  %4d s  %s\n' "$s" "$name"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
