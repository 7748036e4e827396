#!/usr/bin/env bash
# Run every built libFuzzer target for SECONDS with its seed corpus and
# print one TAP line per target:
#   ok - fuzz_rules: N executions, 0 crashes
#   not ok - fuzz_rules: N executions, 1 crash (artifact: PATH)
# Builds nothing (make fuzz builds build/fuzz/fuzz_*); exits non-zero on
# any finding, and on a target that is not built.
#
#   tests/fuzz/run.sh [BUILD_DIR] [SECONDS]
#
# BUILD_DIR holds the fuzz_* binaries, or is a build directory whose fuzz/
# does (so tests/run.sh can pass its own BUILD); SECONDS defaults to
# $FUZZ_SECONDS, else 5. The seed corpora (tests/fuzz/corpus/TARGET) are
# read only: what the fuzzer adds goes to a scratch directory under
# $FUZZ_WORK (default: a fresh temporary directory, removed afterwards
# unless something failed), and a crashing input is kept in its artifacts/. A regression seed of a
# known product bug (corpus/*/regress-*) fails its target until the bug is
# fixed. FUZZ_ARGS adds libFuzzer options. FUZZ_JOBS targets run at once
# (default: the CPUs, at most 2): each fuzzer is one process on one CPU,
# so two on two CPUs each run as many executions in their SECONDS as
# alone, in half the wall time; the lines still come in target order.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-build}
seconds=${2:-${FUZZ_SECONDS:-5}}
[ -d "$dir/fuzz" ] && ! ls "$dir"/fuzz_* >/dev/null 2>&1 && dir=$dir/fuzz

if [ -n "${FUZZ_WORK:-}" ]; then
	work=$FUZZ_WORK
	mkdir -p "$work"
else
	work=$(mktemp -d /tmp/slicelimit-fuzz.XXXXXX)
	fresh=1
fi
mkdir -p "$work/artifacts"

# per target: the longest input worth trying
declare -A max_len=([fuzz_packet]=1514 [fuzz_rules]=4096 [fuzz_trace]=2048
		    [fuzz_http_body]=8192 [fuzz_http_head]=9000 [fuzz_sync]=1452)

jobs=${FUZZ_JOBS:-$(nproc)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
[ "$jobs" -le 2 ] || jobs=2

# fuzz NAME: run one target, its log in $work/NAME.log and its exit
# status in $work/NAME.rc
fuzz() {
	local name=$1
	# -close_fd_mask=2: the code under test prints every problem it
	# rejects; libFuzzer and the sanitizers still report on a copy of stderr
	"$dir/$name" -max_total_time="$seconds" -max_len="${max_len[$name]:-4096}" \
		-close_fd_mask=2 -print_final_stats=1 -timeout=25 -rss_limit_mb=4096 \
		-artifact_prefix="$work/artifacts/$name-" ${FUZZ_ARGS:-} \
		"$work/corpus/$name" "$here/corpus/$name" >"$work/$name.log" 2>&1
	echo "$?" >"$work/$name.rc"
}

names=()
for src in "$here"/fuzz_*.c; do
	name=$(basename "$src" .c)
	names+=("$name")
	[ -x "$dir/$name" ] || continue
	mkdir -p "$work/corpus/$name"
	fuzz "$name" &
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
done
wait

failed=0
for name in "${names[@]}"; do
	bin=$dir/$name
	if [ ! -x "$bin" ]; then
		echo "not ok - $name: not built ($bin; make fuzz builds it)"
		failed=1
		continue
	fi
	log=$work/$name.log
	rc=$(cat "$work/$name.rc" 2>/dev/null || echo 1)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
	artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
	if [ "$rc" -eq 0 ] && [ -z "$artifact" ]; then
		echo "ok - $name: ${runs:-0} executions, 0 crashes"
	else
		echo "not ok - $name: ${runs:-0} executions, 1 crash (exit $rc${artifact:+, artifact: $artifact})"
		# the finding, from the copy of stderr: what broke and where
		grep -E '^(fuzz_[a-z_]+: |  expected|  got|.*runtime error|==[0-9]+==ERROR|SUMMARY)|^    #[0-9]+ .* (/work/[^ ]*/)?(user|tests/fuzz)/' "$log" |
			head -20 | sed 's/^/# /'
		failed=1
	fi
done
if [ "$failed" -eq 0 ] && [ -n "${fresh:-}" ]; then
	rm -rf "$work"
elif [ "$failed" -ne 0 ]; then
	echo "# logs and artifacts kept in $work"
fi
exit "$failed"
