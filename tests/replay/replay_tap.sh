# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# The TAP lines of the replay tests written in bash; source it, don't run
# it. ok DESC; not_ok DESC DIAGNOSTIC...; is DESC GOT WANT. $failed is 1
# once a check failed: the script's last line is [ "$failed" -eq 0 ].
failed=0

ok() { echo "ok - $1"; }
not_ok() {		# DESC DIAGNOSTIC...
	echo "not ok - $1"
	shift
	printf '%s\n' "$@" | sed 's/^/#   /'
	# shellcheck disable=SC2034  # read by the sourcing script
	failed=1
}
is() {			# DESC GOT WANT
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$2', want '$3'"; fi
}
