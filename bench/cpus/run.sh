#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The many-CPU bed (make bench-cpus): for each CPU count, boot Debian's 6.1
# kernel under qemu (TCG: this host's KVM cannot run vCPUs) with an
# initramfs holding busybox, build/slicelimit, build/bench/bench_xdp, their
# libraries and replay traces made for that CPU count; bench/cpus/init runs
# them and writes their JSON to a second serial port. Then results.py turns
# the VMs' outputs into bench/RESULTS-cpus.json and .md.
#
#   bench/cpus/run.sh [BUILD]        (default build)
#
# Environment (make passes its variables of the same names):
#   CPUS         CPU counts, one VM each, one at a time ("2 16 64")
#   BENCH_ARGS   bench_xdp's flags in every VM: TCG is 10-50 x slower, so
#                fewer rounds and packets than on the host, and small
#                tables for the instances that need no more
#   VM_MEM_MB    guest memory; default 1024 + 140 per CPU: the per-CPU
#                client tables of today's layout grow with the CPU count
#   VM_TIMEOUT   seconds before a VM is killed; default 900 + 20 per CPU
#   CASES        extra traces for the accuracy check (T_MS CLIENT [CPU])
#   KERNEL       the guest kernel (default: the newest /boot/vmlinuz-6.1.*)
set -eu

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
cpus=${CPUS:-2 16 64}
bench_args=${BENCH_ARGS:---rounds 5 --packets 20000 --clients 32768}
cases=${CASES:-/work/shared/cases/nfr1-two-cpus.trace}
work=$build/bench/cpus

for bin in "$build/slicelimit" "$build/bench/bench_xdp" "$build/tests/test_bpf_cpus"; do
	[ -x "$bin" ] || { echo "bench-cpus: $bin is missing: run make first" >&2; exit 1; }
done
# Debian's linux-image-amd64 (6.1): the newest one installed, whatever its
# point release
# point release; KERNEL names another bzImage (no modules are needed)
kernel=${KERNEL:-$(ls /boot/vmlinuz-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)}
[ -r "$kernel" ] || { echo "bench-cpus: no /boot/vmlinuz-6.1.*-amd64 (linux-image-amd64)" >&2; exit 1; }
existing_cases=
for c in $cases; do
	if [ -r "$c" ]; then
		existing_cases="$existing_cases $c"
	else
		echo "bench-cpus: $c: not readable, left out of the accuracy check" >&2
	fi
done

# root ROOT: the files every VM shares
make_root() {
	local root=$1 bin lib
	rm -rf "$root"
	mkdir -p "$root"/{bin,bench/traces,proc,sys,dev,tmp}
	cp /bin/busybox "$root/bin/busybox"
	cp "$here/init" "$root/init"
	chmod 755 "$root/init"
	for bin in "$build/slicelimit" "$build/bench/bench_xdp" "$build/tests/test_bpf_cpus"; do
		cp "$bin" "$root/bench/"
		# the loader and every library, at the paths the binary asks for
		for lib in $(ldd "$bin" | awk '/=> \// {print $3} /^\t\// {print $1}'); do
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
	done
}

results=
for n in $cpus; do
	dir=$work/$n
	mem=${VM_MEM_MB:-$((1024 + 140 * n))}
	limit=${VM_TIMEOUT:-$((900 + 20 * n))}
	mkdir -p "$dir"
	make_root "$dir/root"
	# shellcheck disable=SC2086 # one path per word
	python3 "$here/gen_traces.py" "$n" "$dir/root/bench/traces" $existing_cases
	cp "$dir/root/bench/traces/traces.json" "$dir/traces.json"
	{
		echo "BENCH_ARGS='$bench_args'"
		echo "STEP_TIMEOUT=$((limit / 2))"
	} > "$dir/root/bench/params"
	(cd "$dir/root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$dir/initrd.gz"
	echo "bench-cpus: $n CPUs, $mem MiB, $(basename "$kernel"), at most $limit s"
	rm -f "$dir/results.txt"
	start=$(date +%s)
	# -nodefaults: no NIC or VGA to probe; ttyS0 the console, ttyS1 results
	timeout --kill-after=10 "$limit" qemu-system-x86_64 -accel tcg -smp "$n" \
		-m "$mem" -nodefaults -display none -no-reboot \
		-kernel "$kernel" -initrd "$dir/initrd.gz" \
		-append "console=ttyS0 quiet loglevel=3 panic=-1" \
		-serial "file:$dir/console.log" -serial "file:$dir/results.txt" \
		< /dev/null || echo "bench-cpus: qemu exited with $? (124: timed out)" >&2
	echo "bench-cpus: $n CPUs done in $(( $(date +%s) - start )) s; console in $dir/console.log"
	results="$results $dir"
done

# shellcheck disable=SC2086
python3 "$here/results.py" --command "make bench-cpus CPUS=\"$cpus\"" \
	--bench-args "$bench_args" --json bench/RESULTS-cpus.json \
	--md bench/RESULTS-cpus.md $results
