#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: umpressure's options, safety stops and JSON summary. The
# floor and level stops run against fake /sys trees (--sysroot), so they do
# not depend on this machine's memory; one real run allocates 32 MiB and
# checks it was held and released; SIGTERM during the hold ends the run with
# 130 and the memory released. Real pressure on a node is exercised in the
# VM by tests/e2e.
# Usage: check.sh UMPRESSURE UT-JSONCHECK
set -u
UMP=$1
JC=$2
. "$(dirname "$0")/../common/tap.sh"

tap_tmpdir

# fake_node ROOT NODE TOTAL_KB FREE_KB [LEVEL]
fake_node() {
	local d=$1/sys/devices/system/node/node$2
	mkdir -p "$d"
	printf 'Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\nNode %d MemUsed:        %d kB\n' \
		"$2" "$3" "$2" "$4" "$2" $(($3 - $4)) >"$d/meminfo"
	if [ -n "${5:-}" ]; then
		mkdir -p "$1/sys/kernel/mm/umm/nodes/node$2"
		echo "$5" >"$1/sys/kernel/mm/umm/nodes/node$2/level"
	fi
}

# json_is FILE KEY VALUE: "KEY": VALUE appears in the pretty-printed JSON
json_is() {
	grep -q "\"$2\": $3[,]*\$" "$1" || {
		echo "want \"$2\": $3 in:"; cat "$1"; return 1; }
}

usage_errors() {
	local bad=0 a
	for a in "--rate 0" "--rate x" "--until-level high" "--node -1" \
		"--node 5000" "--target 0" "--step 1" "--min-free 101%" \
		"--hold -3" "--bogus" "extra" "--oom-score-adj 2000"; do
		# shellcheck disable=SC2086
		"$UMP" $a >/dev/null 2>"$TMP/err"
		rc=$?
		if [ $rc -ne 2 ] || ! grep -q . "$TMP/err"; then
			echo "'$a' exited $rc (want 2 with a message)"; bad=1
		fi
	done
	"$UMP" --help | grep -q -- --until-level || { echo "--help"; bad=1; }
	"$UMP" --version | grep -q '^umpressure (um) [0-9]' ||
		{ echo "--version"; bad=1; }
	return $bad
}

floor_stop() {
	fake_node "$TMP/low" 0 1048576 10240	# 1 GiB node, 10 MiB free
	"$UMP" --sysroot "$TMP/low" --node 0 --target 1G --json >"$TMP/f.json"
	rc=$?
	[ $rc -eq 3 ] || { echo "exit $rc, want 3"; return 1; }
	"$JC" "$TMP/f.json" stop_reason:string peak_bytes:number \
		floor_bytes:number goal_reached:bool || return 1
	json_is "$TMP/f.json" stop_reason '"floor"' &&
	json_is "$TMP/f.json" peak_bytes 0 &&
	json_is "$TMP/f.json" floor_bytes 21474836 &&	# 2 % of 1 GiB
	json_is "$TMP/f.json" goal_reached false
}

floor_explicit() {
	fake_node "$TMP/low2" 1 1048576 10240
	"$UMP" --sysroot "$TMP/low2" --node 1 --target 1G --min-free 20M \
		--json >"$TMP/f2.json"
	[ $? -eq 3 ] && json_is "$TMP/f2.json" floor_bytes 20971520
}

# The default floor stands on the node's min watermark: 2 % alone sat
# under it on small nodes and got the tool OOM-killed.
floor_above_min_watermark() {
	local pg want
	fake_node "$TMP/wm" 1 1048576 10240
	mkdir -p "$TMP/wm/proc"
	cat >"$TMP/wm/proc/zoneinfo" <<-EOF
	Node 0, zone      DMA
	  pages free     3968
	        min      100
	        low      125
	Node 1, zone   Normal
	  pages free     2000
	        min      6000
	        low      7500
	Node 1, zone  Movable
	  pages free     0
	        min      144
	        low      180
	EOF
	pg=$(getconf PAGESIZE)
	want=$((6144 * pg + 21474836))
	"$UMP" --sysroot "$TMP/wm" --node 1 --target 1G --json >"$TMP/wm.json"
	[ $? -eq 3 ] || { echo "default floor: exit $?"; return 1; }
	json_is "$TMP/wm.json" min_watermark_bytes $((6144 * pg)) &&
	json_is "$TMP/wm.json" floor_bytes "$want" || return 1
	# an explicit percentage replaces the default, as a size does
	"$UMP" --sysroot "$TMP/wm" --node 1 --target 1G --min-free 2% \
		--json >"$TMP/wm2.json"
	json_is "$TMP/wm2.json" floor_bytes 21474836 || return 1
	"$UMP" --sysroot "$TMP/wm" --node 1 --target 1G >"$TMP/wm.out"
	grep -q "held 0 B\|held 0B" "$TMP/wm.out" &&
		! grep -q "floor 0" "$TMP/wm.out" ||
		{ echo "text:"; cat "$TMP/wm.out"; return 1; }
}

level_stop() {
	fake_node "$TMP/crit" 0 1048576 524288 critical
	"$UMP" --sysroot "$TMP/crit" --node 0 --until-level medium --json \
		>"$TMP/l.json"
	rc=$?
	[ $rc -eq 0 ] || { echo "exit $rc, want 0"; return 1; }
	"$JC" "$TMP/l.json" level_first_ms.critical:number \
		level_first_ms.low:number level_max:string || return 1
	json_is "$TMP/l.json" stop_reason '"level"' &&
	json_is "$TMP/l.json" level_max '"critical"' &&
	json_is "$TMP/l.json" peak_bytes 0
}

level_needs_module() {
	fake_node "$TMP/nomod" 0 1048576 524288
	"$UMP" --sysroot "$TMP/nomod" --node 0 --until-level low 2>"$TMP/err"
	[ $? -eq 2 ] && grep -q 'umm' "$TMP/err"
}

missing_node() {
	"$UMP" --sysroot "$TMP/nomod" --node 7 --target 1M 2>"$TMP/err"
	[ $? -eq 2 ] && grep -q 'node 7' "$TMP/err"
}

real_run() {
	"$UMP" --target 32M --step 8M --rate 2000 --json >"$TMP/r.json"
	rc=$?
	[ $rc -eq 0 ] || { echo "exit $rc"; cat "$TMP/r.json"; return 1; }
	"$JC" "$TMP/r.json" tool:string node:number rate_mib_s:number \
		target_bytes:number until_level:string step_bytes:number \
		force:bool floor_bytes:number node_total_bytes:number \
		node_free_start_bytes:number node_free_min_bytes:number \
		node_free_end_bytes:number peak_bytes:number \
		stop_reason:string goal_reached:bool alloc_s:number \
		achieved_mib_s:number hold_s:number release_s:number \
		level_max:string level_first_ms:object || return 1
	json_is "$TMP/r.json" peak_bytes 33554432 &&
	json_is "$TMP/r.json" stop_reason '"target"' &&
	json_is "$TMP/r.json" goal_reached true
}

signal_releases() {
	"$UMP" --target 16M --hold 60 --json >"$TMP/s.json" &
	pid=$!
	# wait until it holds the memory (its RSS is at least 16 MiB)
	for _ in $(seq 1 200); do
		rss=$(awk '/^VmRSS:/ { print $2 }' /proc/$pid/status 2>/dev/null)
		[ "${rss:-0}" -ge 16384 ] && break
		sleep 0.05
	done
	kill -TERM $pid
	wait $pid
	rc=$?
	[ $rc -eq 130 ] || { echo "exit $rc, want 130"; return 1; }
	json_is "$TMP/s.json" stop_reason '"signal"' &&
	json_is "$TMP/s.json" peak_bytes 16777216
}

text_output() {
	fake_node "$TMP/txt" 0 1048576 10240
	"$UMP" --sysroot "$TMP/txt" --node 0 >"$TMP/t.out"
	[ $? -eq 0 ] && grep -q 'stop: floor' "$TMP/t.out" &&
	"$UMP" --sysroot "$TMP/txt" --node 0 -q >"$TMP/q.out" &&
	[ ! -s "$TMP/q.out" ]
}

tap_begin 11
tap_check "umpressure.usage_errors" usage_errors
tap_check "umpressure.floor_stops_before_goal" floor_stop
tap_check "umpressure.floor_explicit" floor_explicit
tap_check "umpressure.floor_above_min_watermark" floor_above_min_watermark
tap_check "umpressure.until_level" level_stop
tap_check "umpressure.until_level_needs_module" level_needs_module
tap_check "umpressure.missing_node" missing_node
tap_check "umpressure.real_32m" real_run
tap_check "umpressure.sigterm_releases" signal_releases
tap_check "umpressure.text_and_quiet" text_output
if "$JC" "$TMP/r.json" >/dev/null 2>&1; then
	tap_ok "umpressure.json_valid"
else
	tap_fail "umpressure.json_valid"
fi
tap_end
