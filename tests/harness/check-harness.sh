#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check-harness.sh BUILD_DIR - proves that the harness reports failures.
#
# Runs the programs built from fail.c, hang.c, allskip.c and selftest.c and
# checks their output and exit status: failing tests must say "not ok", a
# hanging test must be killed at its timeout (with what it forked), a
# program whose tests all skip must exit 4, and the filters must select
# what they say. Prints TAP with a Totals line of its own. The output of the
# deliberately failing programs is shown only on a mismatch, indented, so
# that its Totals line is not counted by scripts/check.sh.
set -u
B=${1:-build}
unset UM_TEST_TIMEOUT

. "$(dirname "$0")/tap.sh"

# run PROGRAM ARGS...: output (stdout+stderr) into $out, status into $rc
run() {
	out=$(timeout -k 5 60 "$@" 2>&1)
	rc=$?
}

has() { grep -qF -- "$1" <<<"$out"; }
hasnt() { ! has "$1"; }
lines() { grep -cE -- "$1" <<<"$out"; }

echo "TAP version 13"

run "$B/fail"
ok "fail: exits 1" test "$rc" -eq 1
ok "fail: passing test still ok" has "ok 1 global.pass_one"
for t in assert_stops_test expect_continues mixed_sign_is_not_equal \
	 statement_after_failed_check null_check unexpected_signal \
	 missing_signal odd_exit_code exit_skip_code_without_skip \
	 assert_in_thread expect_then_skip; do
	ok "fail: $t is not ok" grep -qE "^not ok [0-9]+ global\.$t\$" <<<"$out"
done
ok "fail: teardown_after_assert is not ok" has "not ok 13 torn.teardown_after_assert"
ok "fail: failed setup is not ok" has "not ok 14 bad_setup.body_skipped"
ok "fail: totals" has "# Totals: pass:1 fail:13 xfail:0 xpass:0 skip:0 error:0"
ok "fail: plan" has "1..14"
ok "fail: one result line per test" test "$(lines '^(not )?ok [0-9]+ ')" -eq 14
ok "fail: every line is TAP or a comment" \
	test "$(grep -cvE '^(TAP version 13|1\.\.[0-9]+|(not )?ok [0-9]+ .*|#.*)$' <<<"$out")" -eq 0
ok "fail: both values printed with file:line" \
	has "# fail.c:18:assert_stops_test:Expected 1 (1) == 2 (2)"
ok "fail: ASSERT stops the test" hasnt "NOT REACHED after ASSERT"
ok "fail: EXPECT goes on" has "reached after EXPECT"
ok "fail: -1 differs from SIZE_MAX" \
	has "Expected -1 (-1) == big (18446744073709551615 = 0xffffffffffffffff)"
ok "fail: strings printed" has 'Expected "abc" ("abc") == "abd" ("abd")'
ok "fail: statement after failed check runs" has "extra message on failure"
ok "fail: NULL check explains" has "to be NULL"
ok "fail: unexpected signal named" has "Test terminated unexpectedly by signal 11"
ok "fail: missing signal named" has "instead of by signal 6"
ok "fail: odd exit code named" has "Test exited with unexpected code 3"
ok "fail: exit 4 without SKIP named" has "Test exited with unexpected code 4"
ok "fail: teardown runs after a failed ASSERT" has "teardown ran, ready=1"
ok "fail: failed setup skips the body" hasnt "NOT REACHED after failed setup"
ok "fail: ASSERT says it ended the test" has "assert_stops_test: Test terminated by assertion"

pidfile=$(mktemp)
start=$SECONDS
HANG_PIDFILE=$pidfile run "$B/hang" -t hang_with_grandchild -t pass_after
ok "hang: exits 1" test "$rc" -eq 1
ok "hang: reported as timeout" has "hang_with_grandchild: Test terminated by timeout (1 s)"
ok "hang: not ok" has "not ok 1 global.hang_with_grandchild"
ok "hang: run goes on" has "ok 2 global.pass_after"
ok "hang: totals" has "# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:0 error:0"
ok "hang: killed within its timeout" test $((SECONDS - start)) -le 10
gc=$(cat "$pidfile" 2>/dev/null)
gone() {	# a pid is gone once it is neither running nor a zombie
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		[ -r "/proc/$1/stat" ] || return 0
		grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" && return 0
		sleep 0.2
	done
	return 1
}
gc_gone() { [ -n "$gc" ] && gone "$gc"; }
ok "hang: grandchild killed with the test" gc_gone
[ -n "$gc" ] && kill -9 "$gc" 2>/dev/null
rm -f "$pidfile"

UM_TEST_TIMEOUT=1 run "$B/hang" -t sleep_long
ok "hang: UM_TEST_TIMEOUT overrides the default" has "sleep_long: Test terminated by timeout (1 s)"
UM_TEST_TIMEOUT=abc run "$B/hang" -t pass_after
ok "hang: bad UM_TEST_TIMEOUT is reported" has "UM_TEST_TIMEOUT=abc is not a number"
ok "hang: and the run goes on" test "$rc" -eq 0

run "$B/allskip"
ok "allskip: exits 4" test "$rc" -eq 4
ok "allskip: reason on the result line" has "ok 1 global.skip_a # SKIP no device"
ok "allskip: totals" has "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:2 error:0"

run "$B/selftest" -l
ok "filter: -l lists every test" test "$(lines .)" -eq 18
ok "filter: -l runs nothing" hasnt "RUN"
run "$B/selftest" -t step_adds
ok "filter: -t selects by test name, every variant" has "1..2"
run "$B/selftest" -f counter -v from_ten
ok "filter: -f and -v select together" has "1..3"
run "$B/selftest" -f counter -V from_ten
ok "filter: -V excludes a variant" has "1..3"
run "$B/selftest" -r counter.from_zero.step_adds -r plain.fd_valid
ok "filter: -r selects full names" has "1..2"
ok "filter: -r result" test "$(lines '^ok ')" -eq 2
run "$B/selftest" -F global -F counter -T body_not_run
ok "filter: -F/-T exclude" has "1..1"
run "$B/selftest" -x
ok "filter: unknown option is an error" test "$rc" -ne 0 -a "$rc" -ne 4
run "$B/selftest" -t no_such_test
ok "filter: nothing selected exits 4" test "$rc" -eq 4
run "$B/selftest"
ok "selftest: first lines are TAP 13 and the plan" \
	test "$(head -2 <<<"$out" | tr '\n' ' ')" = "TAP version 13 1..18 "

echo "1..$n"
totals
