#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The object loads on Debian 12's own kernel, 6.1, and not only on the
# newer one the suite runs on: 6.1's verifier limits the deepest call
# chain's stack to 512 bytes with every frame rounded up to 32 (an empty
# bpf_loop callback's included), where newer kernels count less, so a
# tree can pass every other test here and fail to load on a stock
# Debian 12 host.
#
#   Boots the newest /boot/vmlinuz-6.1.* (linux-image-amd64) under qemu
#   (TCG: no KVM needed) with an initramfs of busybox and
#   BUILD/tests/test_bpf_load, which loads every program, production and
#   model clock, and holds its verified instructions under the budget.
#
# Usage: test_debian_kernel.sh BUILD_DIR  (prints TAP lines: ok - / not ok -)
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

sl_need qemu-system-x86_64 busybox cpio gzip
bin=$build/tests/test_bpf_load
[ -x "$bin" ] || die "$bin is missing: run make first"
kernel=$(ls /boot/vmlinuz-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -r "$kernel" ] || die "no /boot/vmlinuz-6.1.*-amd64 (make deps installs linux-image-amd64)"

work=$(mktemp -d /tmp/sl-kernel61.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp "$(command -v busybox)" "$root/bin/busybox"
cp "$bin" "$root/bin/test_bpf_load"
for lib in $(ldd "$bin" | awk '/=> \// {print $3} /^\t\// {print $1}'); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t bpf bpf /sys/fs/bpf
echo "@@KERNEL $(uname -r)"
/bin/test_bpf_load > /tmp/out 2>&1
echo "@@RC $?"
sed 's/^/@@OUT /' /tmp/out
poweroff -f
INIT
chmod 755 "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$work/initrd.gz"

timeout 600 qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 1 -m 1024 \
	-kernel "$kernel" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 quiet panic=-1" \
	-nographic -no-reboot > "$work/console" 2>&1
console=$(tr -d '\r' < "$work/console")

running=$(printf '%s\n' "$console" | sed -n 's/.*@@KERNEL //p')
case "$running" in
6.1.*) tap_ok "the VM runs Debian's 6.1 kernel ($running)" ;;
*) tap_fail "the VM runs Debian's 6.1 kernel" "got '$running'" \
	"$(printf '%s\n' "$console" | tail -20)" ;;
esac
rc=$(printf '%s\n' "$console" | sed -n 's/.*@@RC //p')
out=$(printf '%s\n' "$console" | sed -n 's/.*@@OUT //p')
if [ "$rc" = 0 ]; then
	tap_ok "every program loads on $running, production and model clock"
else
	tap_fail "every program loads on ${running:-6.1}, production and model clock" \
		"test_bpf_load exit: '${rc:-none}'" \
		"$(printf '%s\n' "$out" | grep -v '^libbpf: \(map\|elf\|sec\)' | tail -40)"
fi
# the per-program counts, for the log
printf '%s\n' "$out" | grep -i 'verified' | while read -r l; do diag "$l"; done
tap_done
