#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The packaging: `make deb` builds a package lintian finds no error in;
# installed with dpkg it puts a working /usr/sbin/slicelimit (the binary of
# this build: same BPF object), the example rules pass `rules check`, the
# unit starts a binary that exists, the postinst makes the user the
# service drops to, and a purge leaves none of it (but that user, as Debian
# keeps system users; this test removes it if it made it). And
# `make install/uninstall DESTDIR= PREFIX=/usr` write the unit with the
# PREFIX's ExecStart and take away all but the /etc config.
#
# Usage: test_package.sh BUILD_DIR   (prints TAP lines: ok - / not ok -)
# It installs a package on this host for a few seconds (the service is
# neither enabled nor started); it fails, touching nothing, if slicelimit is already
# installed in /usr (a package or make install PREFIX=/usr), and puts back
# an /etc/slicelimit it found.
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

REPO=$(cd "$here/../.." && pwd)
[ "$(id -u)" -eq 0 ] || die "needs root (dpkg -i)"
sl_need dpkg-deb dpkg-shlibdeps lintian make
mkdir -p "$build" && BUILD_ABS=$(cd "$build" && pwd)
UNIT=/usr/lib/systemd/system/slicelimit.service
BIN=/usr/sbin/slicelimit
TMP=$(mktemp -d /tmp/sl-package.XXXXXX)

# make ARGS: this tree's Makefile, the test's build directory
mk() { make -s --no-print-directory -C "$REPO" BUILD="$BUILD_ABS" "$@"; }

# dpkg ARGS, waiting (bounded) while another apt or dpkg holds the lock
dpkg_locked() {
	local i out
	for i in $(seq 1 30); do
		out=$(dpkg "$@" 2>&1) && { printf '%s\n' "$out"; return 0; }
		printf '%s\n' "$out" | grep -q 'lock' || { printf '%s\n' "$out"; return 1; }
		sleep 1
	done
	printf '%s\n' "$out"
	return 1
}

cleanup() {
	trap - EXIT INT TERM
	sl_stop_body
	if [ -e "$TMP/installed" ]; then
		dpkg_locked --purge slicelimit >/dev/null || echo "# cleanup: dpkg --purge slicelimit failed"
	fi
	# the postinst's user, when this run made it (a purge keeps it, as
	# Debian keeps system users)
	if [ -e "$TMP/made-user" ]; then
		userdel slicelimit 2>/dev/null || echo "# cleanup: userdel slicelimit failed"
	fi
	if [ -e "$TMP/saved-etc" ]; then
		rm -rf /etc/slicelimit
		mv "$TMP/etc-slicelimit" /etc/slicelimit
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

test_package_deb() {
	local deb out ver sha exec
	mk deb >"$TMP/make-deb.log" 2>&1 ||
		{ tap_fail "make deb builds the package" "$(tail -20 "$TMP/make-deb.log")"; return; }
	deb=$(ls "$BUILD_ABS"/slicelimit_*.deb 2>/dev/null | head -1)
	if [ -n "$deb" ]; then
		tap_ok "make deb builds $(basename "$deb")"
	else
		tap_fail "make deb builds the package" "no $BUILD_ABS/slicelimit_*.deb"
		return
	fi

	lintian "$deb" >"$TMP/lintian.log" 2>&1
	if grep -q '^E:' "$TMP/lintian.log"; then
		tap_fail "lintian reports no error" "$(grep '^E:' "$TMP/lintian.log")"
	else
		tap_ok "lintian reports no error"
	fi
	grep '^W:' "$TMP/lintian.log" | sed 's/^/# lintian /'

	: >"$TMP/installed"	# from here on the cleanup purges
	getent passwd slicelimit >/dev/null || : >"$TMP/made-user"
	tap_check "dpkg -i installs it" dpkg_locked -i "$deb"
	tap_eq "the postinst made the service's user: slicelimit, a system user with no home and no login" \
		"$(getent passwd slicelimit | awk -F: '{ print ($3 < 1000), $6, $7 }')" "1 /nonexistent /usr/sbin/nologin"
	tap_check "dpkg --verify: every file as its md5sums say" dpkg --verify slicelimit
	tap_eq "conffiles: /etc/slicelimit/config.yaml and rules.yaml" \
		"$(dpkg-query -W -f='${Conffiles}\n' slicelimit | awk 'NF {print $1}' | sort | paste -sd' ')" \
		"/etc/slicelimit/config.yaml /etc/slicelimit/rules.yaml"

	tap_check "$BIN --version exits 0" "$BIN" --version
	out=$("$BIN" -j version 2>"$TMP/version.err")
	ver=$(printf '%s' "$out" | json_get 'd["version"]' 2>/dev/null)
	if [ -n "$ver" ]; then
		tap_ok "$BIN -j version is JSON with a version ($ver)"
	else
		tap_fail "$BIN -j version is JSON with a version" "$out" "$(cat "$TMP/version.err")"
	fi
	sha=$(printf '%s' "$out" | json_get 'd["bpf_object_sha256"]' 2>/dev/null)
	tap_eq "the installed binary carries this build's BPF object" \
		"$sha" "$(sha256sum "$BUILD_ABS/slicelimit.bpf.o" | cut -d' ' -f1)"
	tap_check "$BIN rules check /etc/slicelimit/rules.yaml (the installed example)" \
		"$BIN" rules check /etc/slicelimit/rules.yaml

	exec=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$UNIT" 2>/dev/null)
	tap_eq "$UNIT: ExecStart starts $BIN" "$exec" "$BIN"
	if [ -n "$exec" ] && [ -x "$exec" ]; then
		tap_ok "the unit's ExecStart ($exec) exists and is executable"
	else
		tap_fail "the unit's ExecStart exists and is executable" "ExecStart: '$exec'"
	fi

	tap_check "dpkg --purge removes it" dpkg_locked --purge slicelimit
	rm -f "$TMP/installed"
	local left=""
	for f in "$BIN" "$UNIT" /usr/share/doc/slicelimit /etc/slicelimit; do
		[ -e "$f" ] && left="$left $f"
	done
	tap_eq "after the purge no binary, unit, docs or /etc/slicelimit are left" "${left# }" ""
}

test_install_destdir_prefix() {
	local root=$TMP/root left
	mk install DESTDIR="$root" PREFIX=/usr >"$TMP/install.log" 2>&1 ||
		{ tap_fail "make install DESTDIR PREFIX=/usr" "$(tail -20 "$TMP/install.log")"; return; }
	tap_eq "make install PREFIX=/usr: ExecStart=/usr/sbin/slicelimit in usr/lib/systemd/system" \
		"$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$root/usr/lib/systemd/system/slicelimit.service" 2>/dev/null)" \
		"/usr/sbin/slicelimit"
	tap_check "make install PREFIX=/usr: the binary in usr/sbin, examples in /etc/slicelimit, the nginx example, Prometheus alerts and Grafana dashboard in the docs" \
		test -x "$root/usr/sbin/slicelimit" -a -f "$root/etc/slicelimit/config.yaml" \
		-a -f "$root/etc/slicelimit/rules.yaml" \
		-a -f "$root/usr/share/doc/slicelimit/examples/nginx-slicelimit.conf" \
		-a -f "$root/usr/share/doc/slicelimit/examples/slicelimit-alerts.yml" \
		-a -f "$root/usr/share/doc/slicelimit/examples/slicelimit-dashboard.json"
	# the operator's edit survives a second install
	echo "# edited" >>"$root/etc/slicelimit/rules.yaml"
	mk install DESTDIR="$root" PREFIX=/usr >>"$TMP/install.log" 2>&1
	tap_eq "make install again keeps an edited /etc/slicelimit/rules.yaml" \
		"$(tail -1 "$root/etc/slicelimit/rules.yaml")" "# edited"
	mk uninstall DESTDIR="$root" PREFIX=/usr >"$TMP/uninstall.log" 2>&1 ||
		{ tap_fail "make uninstall DESTDIR PREFIX=/usr" "$(tail -20 "$TMP/uninstall.log")"; return; }
	left=$(cd "$root" && find . -type f | sort | paste -sd' ')
	tap_eq "make uninstall leaves only the /etc/slicelimit config" \
		"$left" "./etc/slicelimit/config.yaml ./etc/slicelimit/rules.yaml"
}

body() {
	local start=$SECONDS
	local status
	status=$(dpkg-query -W -f='${Status}' slicelimit 2>/dev/null)
	if { [ -n "$status" ] && [ "${status% not-installed}" = "$status" ]; } ||
		[ -e "$BIN" ] || [ -e "$UNIT" ]; then
		tap_fail "the package test needs a host without slicelimit in /usr (not touched here)" \
			"dpkg status '$status'; purge it, or remove $BIN and $UNIT, and run again"
	else
		if [ -e /etc/slicelimit ]; then
			mv /etc/slicelimit "$TMP/etc-slicelimit" && : >"$TMP/saved-etc"
		fi
		test_package_deb
	fi
	test_install_destdir_prefix
	tap_elapsed "$start" 60
	tap_done
}

# One run at a time on a host: two would install and purge the same
# package under each other. The parent holds the lock until its cleanup
# has purged.
exec 9>/run/lock/slicelimit-test-package.lock
flock -w 120 9 || die "another test_package.sh has held the package lock for 120s"
sl_run body
