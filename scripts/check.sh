#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/check.sh - run every test suite and add up the results.
#
# UM_SUITES="dir..." (set by the top-level Makefile, which holds the list):
# for each of those directories that has a Makefile with a `check` target,
# runs `make -C DIR check`, shows its output as it comes and saves it in
# build/check/<dir>.log. Every kselftest line
#   # Totals: pass:N fail:N xfail:N xpass:N skip:N error:N
# in that output is added up (fail, xpass and error count as failed). A
# suite whose make fails without any failing Totals line (a crash, a build
# error, a missing binary) counts as one failure, and so does a suite that
# prints no Totals line at all: nothing fails or passes silently.
# Ends with one line "N passed, N failed, N skipped"; exits 1 on any failure.
#
# UM_BUILD_DIRS="dir..." (set by the top-level Makefile) first runs
# `make -C dir all` in each, in order, going on after a failure; a failed
# build counts as one failure (log: build/check/build.log).
# UM_SKIP_VM=1 skips the suites of UM_VM_SUITES="dir...", those that boot
# kernels in qemu; `make check-fast` sets it.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
MAKE=${MAKE:-make}
if [ -z "${UM_SUITES:-}" ]; then
	echo "$0: UM_SUITES is not set: run it as make check or make check-fast" >&2
	exit 2
fi
read -ra SUITES <<<"$UM_SUITES"
VM_SUITES=" ${UM_VM_SUITES:-} "
LOGDIR=build/check
mkdir -p "$LOGDIR"

total_pass=0 total_fail=0 total_skip=0
summary=()

if [ -n "${UM_BUILD_DIRS:-}" ]; then
	echo "=== build: make all in $UM_BUILD_DIRS (log: $LOGDIR/build.log)"
	start=$SECONDS
	broken=""
	for d in $UM_BUILD_DIRS; do
		$MAKE --no-print-directory -C "$d" all || broken+=" $d"
	done > >(tee "$LOGDIR/build.log") 2>&1
	wait $! 2>/dev/null	# let tee finish
	if [ -n "$broken" ]; then
		total_fail=$((total_fail + 1))
		summary+=("$(printf '%-14s FAILED in%s: counted as 1 failure' \
			build "$broken")")
	else
		summary+=("$(printf '%-14s ok in %ds' build $((SECONDS - start)))")
	fi
fi

for d in "${SUITES[@]}"; do
	if [ ! -f "$d/Makefile" ]; then
		summary+=("$(printf '%-14s absent (no Makefile yet)' "$d")")
		continue
	fi
	if [ "${UM_SKIP_VM:-0}" != 0 ] && [[ $VM_SUITES == *" $d "* ]]; then
		summary+=("$(printf '%-14s SKIPPED suite (UM_SKIP_VM=1)' "$d")")
		continue
	fi
	# Only a missing target skips a suite; any other dry-run error (say a
	# prerequisite that failed to build) runs it, so that it is counted.
	dry=$(LC_ALL=C $MAKE -C "$d" -n check 2>&1 >/dev/null)
	if [[ $dry == *"No rule to make target 'check'"* ]]; then
		summary+=("$(printf '%-14s no check target' "$d")")
		continue
	fi

	log="$LOGDIR/${d//\//-}.log"
	echo "=== $d: make check (log: $log)"
	start=$SECONDS
	$MAKE --no-print-directory -C "$d" check 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}

	# pass fail skip of this suite, and how many Totals lines it has.
	# Counted in the one awk that reads the whole log: a `grep -q` reading
	# a pipe quits at its first match, and under pipefail the SIGPIPE of
	# the writer made a log with Totals lines look like one without.
	read -r p f s t < <(tr -d '\r' <"$log" | awk '
		/^[ \t]*# Totals: / {
			t++
			for (i = 3; i <= NF; i++) {
				split($i, kv, ":")
				if (kv[1] == "pass" || kv[1] == "xfail") p += kv[2]
				else if (kv[1] == "fail" || kv[1] == "xpass" ||
					 kv[1] == "error") f += kv[2]
				else if (kv[1] == "skip") s += kv[2]
			}
		}
		END { print p + 0, f + 0, s + 0, t + 0 }')
	note=""
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		note=" + make exited $rc with no failing test: counted as 1 failure"
	elif [ "$rc" -ne 0 ]; then
		note=" (make exited $rc)"
	elif [ "$t" -eq 0 ]; then
		f=1
		note=" + no '# Totals:' line: counted as 1 failure"
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + s))
	summary+=("$(printf '%-14s %5d passed, %d failed, %d skipped in %ds%s' \
		"$d" "$p" "$f" "$s" $((SECONDS - start)) "$note")")
done

echo
echo "=== summary (logs in $LOGDIR/)"
printf '%s\n' "${summary[@]}"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
