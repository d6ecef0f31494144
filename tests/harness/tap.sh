# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# tap.sh - TAP output for the harness's shell tests; source it.
#
#   ok DESCRIPTION CONDITION...   runs CONDITION: "ok N DESCRIPTION", or
#                                 "not ok N DESCRIPTION" followed by $out,
#                                 indented (so its Totals lines, if any, are
#                                 not counted by scripts/check.sh)
#   totals                        the Totals line; fails if any test did
n=0 pass=0 fail=0
# shellcheck disable=SC2034 # out and rc: set by the tests that source this
out="" rc=0

ok() {
	local d=$1
	shift
	n=$((n + 1))
	if "$@"; then
		pass=$((pass + 1))
		echo "ok $n $d"
	else
		fail=$((fail + 1))
		echo "not ok $n $d"
		printf '%s\n' "$out" | sed 's/^/#   | /'
	fi
}

totals() {
	echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
	[ "$fail" -eq 0 ]
}
