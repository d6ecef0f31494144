# SPDX-License-Identifier: MIT
#
# tap.sh - sourced by the TAP scripts of tests/gpu/vgpu: t NAME STATUS
# prints one result and counts it; tap_end prints the totals and returns 1
# when something failed.
pass=0
fail=0
t() {
	if [ "$2" -eq 0 ]; then
		echo "ok $1"
		pass=$((pass + 1))
	else
		echo "not ok $1"
		fail=$((fail + 1))
	fi
}
tap_end() {
	echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
	[ "$fail" -eq 0 ]
}
