#!/bin/bash
# test-bookkeeping.sh - soak.sh's e2e bookkeeping on a made-up boot log, no
# VM: two runs in one boot, the first clean (e2e_oom_off's own OOM kill
# only), the second with an unexpected OOM kill and a lost byte. The log is
# cut into runs (runsplit.awk), each run judged (tests/vm/judge.awk) and
# counted (taplog.awk, lib.sh) as `make soak` does, and every figure of the
# per-run lines and the summary is compared with what the log holds.
# Part of `make -C tests/soak check` (so of `make check`).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
. "$top/tests/harness/tap.sh"

echo "TAP version 13"
echo "1..11"
work=$here/build/test-bookkeeping
rm -rf "$work"
mkdir -p "$work"
scenarios=(e2e_node_fill e2e_oom_off)

# One scenario's section: its TAP, result line and kernel log.
scenario() {	# N NAME LOST ACK_MS DMESG...
	local n=$1 name=$2 lost=$3 ack=$4 status=ok rc=0
	shift 4
	[ "$lost" = 0 ] || { status="not ok"; rc=1; }
	echo "### UM-BEGIN $n $name"
	[ "$name" = e2e_oom_off ] && echo "# expect-dmesg: Out of memory|oom|RIP: 0033:"
	echo "TAP version 13"
	echo "1..1"
	echo "# ${name#e2e_}: umm events 3, ACKs 3 (8 MiB freed), shed 0 MiB, event-to-ACK avg 1.0 ms max $ack ms, sources 0x3, fallbacks 0"
	echo "# E2E-RESULT scenario=${name#e2e_} rate_mib=16 killed=0 error=0 lost_bytes=$lost steps=9 ack_max_ms=$ack module_ack_max_ms=1.0 max_level=2 first_event_ms=5 lead_ms=-1 killed_after_low_ms=-1"
	echo "$status 1 $name"
	echo "# Totals: pass:$((1 - rc)) fail:$rc xfail:0 xpass:0 skip:0 error:0"
	echo "### UM-END $n rc=$rc"
	echo "### UM-DMESG-BEGIN $n"
	printf '%s\n' "$@"
	echo "### UM-DMESG-END $n"
}

clean() {	# N ARG
	echo "### UM-BEGIN $1 soak-clean $2"
	echo "TAP version 13"
	echo "1..1"
	echo "ok 1 soak.no_stray_process"
	echo "# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0"
	echo "### UM-END $1 rc=0"
	echo "### UM-DMESG-BEGIN $1"
	echo "### UM-DMESG-END $1"
}

oom_kill='[   50.1] Out of memory: Killed process 77 (e2e_oom_off) total-vm:1kB'
{
	echo "### UM-BOOTED kernel=6.1.0-test-amd64 nodes=2 cpus=2"
	echo "### UM-INSMOD rc=0"
	echo "### UM-DMESG-BEGIN boot"
	echo "### UM-DMESG-END boot"
	clean 1 record
	scenario 2 e2e_node_fill 0 120.5
	scenario 3 e2e_oom_off 0 80.0 "$oom_kill"
	clean 4 1
	scenario 5 e2e_node_fill 1 250.5 \
		'[  120.2] Out of memory: Killed process 99 (e2e_node_fill) total-vm:1kB'
	scenario 6 e2e_oom_off 0 90.0 "$oom_kill"
	clean 7 2
	echo "### UM-RMMOD rc=0"
	echo "### UM-DMESG-BEGIN shutdown"
	echo "### UM-DMESG-END shutdown"
	echo "### UM-DONE"
} >"$work/boot.tap.log"

nruns=$(split_boot "$work/boot.tap.log" "$work/runs")
out="split into '$nruns' run(s): $(ls "$work/runs")"
ok soak.split_two_runs test "$nruns" = 2
out=$(cat "$work/runs/run-2.tap.log")
ok soak.run2_numbered_from_1 grep -qx '### UM-BEGIN 1 e2e_node_fill' "$work/runs/run-2.tap.log"
ok soak.run2_has_header grep -qx '### UM-INSMOD rc=0' "$work/runs/run-2.tap.log"
ok soak.run1_ended grep -qx '### UM-DONE' "$work/runs/run-1.tap.log"

e2e_reset
lines=()
for i in 1 2 3; do	# run 3 was planned but never ran: it must count as failed
	run_cmds "$i" "${scenarios[@]}" >"$work/runs/run-$i.cmds"
	judge_run "$work/runs/run-$i.tap.log" "$work/runs/run-$i.cmds" 6.1.0-test-amd64 1
	rc=$?
	e2e_account "$rc" "$work/runs/run-$i.tap.log"
	lines+=("$e_line")
done
out=$(printf '%s\n' "${lines[@]}"; cat "$work/runs/run-1.judge.log")
ok soak.run1_passed test "${lines[0]}" = "passed; OOM kills 0 unexpected, 1 expected; bytes lost 0; slowest event-to-ACK 120.5 ms"
ok soak.run2_failed_kill_and_byte test "${lines[1]}" = "FAILED; OOM kills 1 unexpected, 1 expected; bytes lost 1; slowest event-to-ACK 250.5 ms"
ok soak.run3_missing_failed test "${lines[2]}" = "FAILED; OOM kills 0 unexpected, 0 expected; bytes lost 0; slowest event-to-ACK -1 ms"
s=$(e2e_summary 6.1)
out=$s
ok soak.summary_line test "$s" = "e2e 6.1: 1/3 runs passed; OOM kills 1 unexpected, 2 expected (e2e_oom_off, one per run); bytes lost 1; slowest event-to-ACK 250.5 ms"
out=$(e2e_json 6.1)
ok soak.summary_json test "$out" = '{"kernel":"6.1","runs":3,"passed":1,"unexpected_oom_kills":1,"expected_oom_kills":2,"lost_bytes":1,"ack_max_ms":250.5}'
out="e2e_verdict passed a kernel with a failed run"
ok soak.verdict_fails eval '! e2e_verdict'
e2e_reset
e2e_account 0 "$work/runs/run-1.tap.log"
out=$(e2e_summary 6.1)
ok soak.verdict_passes_clean_run e2e_verdict
totals
