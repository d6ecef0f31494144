#!/bin/bash
# SPDX-License-Identifier: MIT
#
# demo-lines-check.sh - what `make demo` prints, without the VM: lines the
# scene logged (umm.ko's events as libum logs them, libum's moves) go
# through scripts/demo.sh's pretty, and demo_lines_bad (the judge
# demo-check.sh also runs on a real scene) must find nothing. The events
# are ones a scene printed nonsense for: an ETA of three weeks while the
# node filled, and 80 s with 40 MiB left at 16 MiB/s.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=../harness/tap.sh
. "$top/tests/harness/tap.sh"
# shellcheck source=../../scripts/demo-lines.sh
. "$top/scripts/demo-lines.sh"
say() { printf '[  0.0 s] %s\n' "$*"; }
rate=16

scene() {
	cat <<'LOG'
[1.2] L7 pressure: umm pressure seq 3 tier 1/0 level 2 ask 16777216 free 335544320 dest 1 eta 1803579666 ms
[1.3] L7 pressure: umm pressure seq 4 tier 1/0 level 3 ask 33554432 free 41943040 dest 1 eta 80647 ms
[1.4] L7 pressure: umm pressure seq 5 tier 1/0 level 3 ask 33554432 free 83886080 dest 1 eta 2000 ms
[1.5] L7 pressure: umm pressure seq 6 tier 3/0 level 2 ask 8388608 free 67108864 dest -1 eta 4294967295 ms
[1.6] L7 pressure: freed 16 MiB of 32 MiB asked in 412.5 ms
LOG
}

# The ETA said only where the fill gives one: 80 MiB at 16 MiB/s in 2 s.
etas_sane() {
	out=$(scene | pretty)
	! demo_lines_bad <<<"$out" >/dev/null &&
		[ "$(grep -c 'not approaching critical' <<<"$out")" = 3 ] &&
		grep -q 'critical in ~2.0 s' <<<"$out" &&
		grep -q 'shed 16 MiB of 32 MiB asked in 412.5 ms; ACK 16 MiB' <<<"$out"
}

# The judge itself: it finds a raw handle, a hex tier, an ETA in ms or
# past the scene's end.
judge_finds_nonsense() {
	local l
	out=
	for l in \
	    'libum: pressure: region 281474993487878 off node 0 to tier 0x20001: 0 in 101.1 ms' \
	    'libum <- umm.ko  event #3 PRESSURE node 0 level medium, critical in ~80647 ms' \
	    'libum <- umm.ko  event #3 PRESSURE node 0 level medium, critical in ~1803579.7 s'; do
		demo_lines_bad <<<"$l" >/dev/null || out+="passed: $l"$'\n'
	done
	demo_lines_bad <<<'libum: pressure: region "adam.m" moved off node 0 to node1: 16 MiB in 101.1 ms' \
		>/dev/null && out+="flagged a good line"
	[ -z "$out" ]
}

echo "TAP version 13"
echo "1..2"
ok e2e.demo_lines.etas_sane etas_sane
ok e2e.demo_lines.judge_finds_nonsense judge_finds_nonsense
totals
