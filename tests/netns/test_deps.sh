#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `make deps` keeps the services it installs from starting: while apt-get
# runs there is a policy-rc.d answering 101 (action forbidden), written
# only if the host has none, and removed afterwards, also when the install
# fails. Driven through the Makefile's own recipe with a fake apt-get,
# dpkg-query and mountpoint first on PATH, and SL_POLICY_RC pointed at a
# file of this test's (the host's /usr/sbin/policy-rc.d is never touched).
#
#   tests/netns/test_deps.sh [BUILD_DIR]    (TAP lines)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d /tmp/slicelimit-deps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; shift; printf '#   %s\n' "$@"; failed=1; }
is() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$2', want '$3'"; fi; }

# fakes: nothing is installed; apt-get notes what the policy said while it
# ran (and fails when FAKE_APT_FAIL is set); the bpffs is mounted
mkdir -p "$tmp/bin"
cat >"$tmp/bin/dpkg-query" <<'EOF'
#!/bin/sh
exit 1
EOF
cat >"$tmp/bin/apt-get" <<'EOF'
#!/bin/sh
[ "$1" = update ] && exit 0
if [ -x "$SL_POLICY_RC" ]; then "$SL_POLICY_RC" nginx start; echo "policy $?" >>"$FAKE_LOG"
else echo "policy none" >>"$FAKE_LOG"; fi
echo "Unpacking fake-package (apt's own log line)"
[ -z "${FAKE_APT_FAIL:-}" ]
EOF
cat >"$tmp/bin/mountpoint" <<'EOF'
#!/bin/sh
exit 0
EOF
chmod 755 "$tmp/bin"/*

run_deps() {		# LOG [VAR=VALUE...]: make deps with the fakes
	local log=$1
	shift
	env PATH="$tmp/bin:$PATH" FAKE_LOG="$log" SL_POLICY_RC="$tmp/policy-rc.d" "$@" \
		make -s -C "$root" deps SL_POLICY_RC="$tmp/policy-rc.d" >"$log.out" 2>&1
}

run_deps "$tmp/a.log"
is "make deps with the fakes: exit 0" "$?" 0
is "make deps: while apt-get ran, policy-rc.d answered 101 for every install" \
	"$(sort -u "$tmp/a.log")" "policy 101"
is "... and it is gone afterwards" "$([ -e "$tmp/policy-rc.d" ] && echo there || echo gone)" gone
is "... and apt-get's log is not shown when it succeeds" \
	"$(grep -c "apt's own log line" "$tmp/a.log.out")" 0

run_deps "$tmp/b.log" FAKE_APT_FAIL=1
is "apt-get failing: make deps fails" "$?" 2
is "... and shows apt-get's log" "$(grep -c "apt's own log line" "$tmp/b.log.out")" 1
is "... and the policy-rc.d it wrote is gone all the same" \
	"$([ -e "$tmp/policy-rc.d" ] && echo there || echo gone)" gone

printf '#!/bin/sh\n# the host'"'"'s own\nexit 0\n' >"$tmp/policy-rc.d"
chmod 755 "$tmp/policy-rc.d"
cp "$tmp/policy-rc.d" "$tmp/own"
run_deps "$tmp/c.log"
is "a host with a policy-rc.d of its own: make deps leaves it as it was" \
	"$(cmp -s "$tmp/own" "$tmp/policy-rc.d" && echo same)" same

[ "$failed" -eq 0 ]
