#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run.sh PROGRAM [ARGS...] [-- PROGRAM [ARGS...]]...
#
# Runs harness test programs one after the other and shows their TAP. Exit
# status 0 (all passed) and 4 (all skipped) count as success; anything else
# (1 = a test failed, or a crash before the Totals line) is a failure, and
# the status of run.sh is 1 if any program failed. Every program runs even
# after a failure. Use it from `check` targets so that a suite whose tests
# all skip (exit 4) does not fail make:
#
#	check: all
#		$(TOP)/tests/harness/run.sh build/test_a -- build/test_b -t foo
#
# With a single program per argument and no options, `--` may be left out:
#	run.sh build/test_a build/test_b
set -u

failed=0
run_one() {
	local rc
	"$@"
	rc=$?
	case $rc in
	0 | 4) ;;
	*)
		echo "# run.sh: $* exited with status $rc"
		failed=1
		;;
	esac
}

if [ $# -eq 0 ]; then
	echo "usage: $0 PROGRAM [ARGS...] [-- PROGRAM [ARGS...]]..." >&2
	exit 2
fi

# Without any "--" every argument is a program of its own.
case " $* " in
*" -- "*)
	cmd=()
	for a in "$@"; do
		if [ "$a" = "--" ]; then
			[ ${#cmd[@]} -gt 0 ] && run_one "${cmd[@]}"
			cmd=()
		else
			cmd+=("$a")
		fi
	done
	[ ${#cmd[@]} -gt 0 ] && run_one "${cmd[@]}"
	;;
*)
	for p in "$@"; do
		run_one "$p"
	done
	;;
esac
exit $failed
