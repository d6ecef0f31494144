#!/bin/bash
# SPDX-License-Identifier: MIT
#
# demo-check.sh - `make demo`'s scene (scripts/demo.sh) as one TAP test, so
# that the README's first command is tested by `make check`: it passes when
# the scene ends in PASS (no OOM kill, checksum equal to the unconstrained
# run). The scene's output is kept in build/demo.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=../harness/tap.sh
. "$top/tests/harness/tap.sh"
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

echo "TAP version 13"
echo "1..1"
ok e2e.demo_scene scene_passes
totals
