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
#
# Two run at once (SL_TEST_JOBS, default the CPU count, at most 4): most
# of a network test's time is waiting (for a sync round, a deadline, a
# VM), which the other one uses. The tests already run beside each other
# safely: each makes its own namespaces, private bpffs, ports and files.
# A test that needs every CPU to itself (threads pinned to each one, all
# at once) runs alone: the ones in `alone` below.
#
# SL_TEST_LIST=1: print what would run, one path a line, and run nothing
# (how a change to where tests live shows it found the same ones).
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
jobs=${SL_TEST_JOBS:-$(nproc)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
[ "$jobs" -le 4 ] || jobs=4
alone=" test_bpf_cpus test_cpus_flood.sh "
out=$(mktemp -d /tmp/slicelimit-suite.XXXXXX)
trap 'rm -rf "$out"' EXIT
passed=0
failed=0
times=()		# "SECONDS NAME", one per binary or script

# count_cmocka BINARY / count_tap SCRIPT: run it; print "PASSED FAILED"
# on the first line, then the lines worth showing of its output
count_cmocka() {
	local out rc p f report
	out=$("$1" 2>&1); rc=$?
	report=$(printf '%s\n' "$out" | grep -E '^\[ +(OK|FAILED|ERROR) +\]|^\[==========\]' | sed 's/^/  /')
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	p=${p:-0}; f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		report+=${report:+$'\n'}$(printf '%s\n' "$out" | tail -20 | sed 's/^/  | /')
		f=1
	fi
	echo "$p $f"
	[ -z "$report" ] || printf '%s\n' "$report"
}

count_tap() {
	local out rc p f report
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
	echo "$p $f"
	[ -z "$report" ] || printf '%s\n' "$report"
}

# What runs, in order: the scripts first (the long ones are there, so
# the last to end is short), then the binaries. "count_tap PATH" lines.
list=()
for script in "$here"/netns/test_*.sh "$here"/replay/test_*.sh "$here"/fuzz/run.sh; do
	[ -f "$script" ] && list+=("count_tap $script")
done
for bin in "$build"/tests/test_*; do
	[ -x "$bin" ] || continue
	# one left in the build directory by a test file since split or
	# renamed is stale: only binaries with a source (tests/*/NAME.c) run
	sources=("$here"/*/"$(basename "$bin")".c)
	[ -f "${sources[0]}" ] || continue
	list+=("count_cmocka $bin")
done
if [ "${SL_TEST_LIST:-0}" = 1 ]; then
	printf '%s\n' "${list[@]#* }"
	exit 0
fi

declare -A running=()	# pid -> index into list
declare -A started=()	# index -> SECONDS at its start

# finish PID: its header line, its results, its counts
finish() {
	local i=${running[$1]} name res
	unset "running[$1]"
	name=$(basename "${list[i]#* }")
	echo "== $name ($((SECONDS - started[$i])) s)"
	times+=("$((SECONDS - started[$i])) $name")
	res=$(head -1 "$out/$i")
	passed=$((passed + ${res% *})); failed=$((failed + ${res#* }))
	tail -n +2 "$out/$i"
}

# reap: wait for any one running test to end, and report it
reap() {
	local pid
	wait -n -p pid
	finish "$pid"
}

for i in "${!list[@]}"; do
	name=$(basename "${list[i]#* }")
	if [[ $alone == *" $name "* ]]; then
		while [ "${#running[@]}" -gt 0 ]; do reap; done
	else
		while [ "${#running[@]}" -ge "$jobs" ]; do reap; done
	fi
	started[$i]=$SECONDS
	${list[i]} >"$out/$i" &
	running[$!]=$i
	if [[ $alone == *" $name "* ]]; then reap; fi
done
while [ "${#running[@]}" -gt 0 ]; do reap; done

echo "== slowest ten, of $SECONDS s ($jobs at once)"
printf '%s\n' "${times[@]}" | sort -rn | head -10 |
	while read -r s name; do printf '  %4d s  %s\n' "$s" "$name"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
