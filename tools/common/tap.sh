# SPDX-License-Identifier: MIT
# tap.sh - TAP 13 output for shell checks, in the look of kselftest.
# Source it, call tap_begin N, then tap_ok/tap_fail/tap_skip or
# tap_check "description" command..., and finally tap_end (prints the
# "# Totals:" line that scripts/check.sh sums, and returns 1 on failure).

_tap_n=0 _tap_pass=0 _tap_fail=0 _tap_skip=0

tap_tmpdir() {
	TMP=$(mktemp -d) || exit 1
	trap 'rm -rf "$TMP"' EXIT
}

tap_begin() {
	echo "TAP version 13"
	echo "1..$1"
}

tap_ok() {
	_tap_n=$((_tap_n + 1)) _tap_pass=$((_tap_pass + 1))
	echo "ok $_tap_n $1"
}

tap_fail() {
	_tap_n=$((_tap_n + 1)) _tap_fail=$((_tap_fail + 1))
	echo "not ok $_tap_n $1"
}

tap_skip() {
	_tap_n=$((_tap_n + 1)) _tap_skip=$((_tap_skip + 1))
	echo "ok $_tap_n $1 # SKIP $2"
}

# tap_check DESC CMD...: runs CMD, its output as "# " comments on failure.
tap_check() {
	_desc=$1
	shift
	if _out=$("$@" 2>&1); then
		tap_ok "$_desc"
	else
		printf '%s\n' "$_out" | sed 's/^/# /'
		tap_fail "$_desc"
	fi
}

tap_end() {
	echo "# Totals: pass:$_tap_pass fail:$_tap_fail xfail:0 xpass:0" \
		"skip:$_tap_skip error:0"
	[ "$_tap_fail" -eq 0 ]
}

# tap_result DESC DETAILS: passes when DETAILS is empty, else fails with
# DETAILS (what is wrong, one item a line) as "# " comments.
tap_result() {
	if [ -z "$2" ]; then
		tap_ok "$1"
	else
		printf '%s\n' "$2" | sed 's/^/# /'
		tap_fail "$1"
	fi
}

# tap_ns_results PREFIX RESULTS LOG CHECK...: one result per CHECK, named
# PREFIX CHECK, from what a script run in a namespace wrote: RESULTS holds
# "PASS name" / "FAIL name" lines, or a "CANNOT why" line that skips them
# all; a failure shows its "=== name" section of LOG.
tap_ns_results() {
	_pre=$1 _res=$2 _log=$3
	shift 3
	_cannot=$(sed -n 's/^CANNOT //p' "$_res")
	for _c in "$@"; do
		if [ -n "$_cannot" ]; then
			tap_skip "$_pre$_c" "cannot $_cannot here"
			continue
		fi
		_line=$(grep -m1 "^[A-Z]* $_c\$" "$_res")
		if [ "${_line%% *}" = PASS ]; then
			tap_ok "$_pre$_c"
		else
			tap_result "$_pre$_c" "$(sed -n "/^=== $_c\$/,/^=== /p" \
				"$_log" | grep -v '^=== ' | tail -15)
${_line:-(not run)}"
		fi
	done
}
