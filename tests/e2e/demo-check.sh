#!/bin/bash
# SPDX-License-Identifier: MIT
#
# demo-check.sh - `make demo`'s scene (scripts/demo.sh) as one TAP test, so
# that the README's first command is tested by `make check`: it passes when
# the scene ends in PASS (no OOM kill, checksum equal to the unconstrained
# run) and prints nothing a person cannot read (demo_lines_bad: a nonsense
# ETA, a raw region handle, a tier in hex). The scene's output is kept in
# build/demo.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=../harness/tap.sh
. "$top/tests/harness/tap.sh"
# shellcheck source=../../scripts/demo-lines.sh
. "$top/scripts/demo-lines.sh"
log=$here/build/demo.log
mkdir -p "$here/build"

scene_passes() {
	make -s -C "$top/tools/umpressure" build/umpressure-static >"$log" 2>&1 &&
		make -s -C "$top/examples/demo" >>"$log" 2>&1 &&
		"$top/scripts/demo.sh" </dev/null >>"$log" 2>&1
	rc=$?
	out=$(tail -n 20 "$log")
	[ $rc -eq 0 ] && grep -q '^PASS' "$log"
}

lines_readable() {
	out=$(demo_lines_bad <"$log") && return 1
	out=
}

echo "TAP version 13"
echo "1..2"
ok e2e.demo_scene scene_passes
ok e2e.demo_lines_readable lines_readable
totals
