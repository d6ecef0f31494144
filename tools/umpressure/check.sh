#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: umpressure's options, safety stops and JSON summary. The
# floor and level stops run against fake /sys trees (--sysroot), so they do
# not depend on this machine's memory; one real run allocates 32 MiB and
# checks it was held and released; SIGTERM during the hold ends the run with
# 130 and the memory released. --cgroup runs against fake cgroup2 trees
# (the mount from a fake /proc/self/mountinfo, --sysroot): its refusals,
# the effective limit over the path, the stop short of it. Real pressure
# on a node is exercised in the VM by tests/e2e, a real cgroup limit by
# tests/kmod/umpressure-vm.sh.
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
		"--hold -3" "--bogus" "extra" "--oom-score-adj 2000" \
		"--create" "--cgroup"; do
		# shellcheck disable=SC2086
		"$UMP" $a >/dev/null 2>"$TMP/err"
		rc=$?
		if [ $rc -ne 2 ] || ! grep -q . "$TMP/err"; then
			echo "'$a' exited $rc (want 2 with a message)"; bad=1
		fi
	done
	"$UMP" --cgroup '' >/dev/null 2>"$TMP/err"
	[ $? -eq 2 ] && grep -q cgroup "$TMP/err" || { echo "--cgroup ''"; bad=1; }
	"$UMP" --help | grep -q -- --until-level || { echo "--help"; bad=1; }
	"$UMP" --help | grep -q -- --cgroup || { echo "--help: --cgroup"; bad=1; }
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

# fake_cgroup ROOT: a machine with cgroup2 on /sys/fs/cgroup (mountinfo,
# meminfo, the root cgroup)
fake_cgroup() {
	mkdir -p "$1/proc/self" "$1/sys/fs/cgroup"
	cat >"$1/proc/self/mountinfo" <<-EOF
	22 27 0:21 / /proc rw,relatime - proc proc rw
	23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
	30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate
	EOF
	printf 'MemTotal:       4194304 kB\nMemFree:        4000000 kB\n' \
		>"$1/proc/meminfo"
	: >"$1/sys/fs/cgroup/cgroup.procs"
}

# bytes VALUE: "max", or a number with an optional M or G, as the kernel
# writes it
bytes() {
	case "$1" in
	*M) echo $((${1%M} * 1048576)) ;;
	*G) echo $((${1%G} * 1073741824)) ;;
	*) echo "$1" ;;
	esac
}

# cg ROOT PATH MAX HIGH CURRENT: a cgroup with the memory controller
# (a value "-" leaves that file out)
cg() {
	local d=$1/sys/fs/cgroup/$2
	mkdir -p "$d"
	: >"$d/cgroup.procs"
	[ "$3" = - ] || bytes "$3" >"$d/memory.max"
	[ "$4" = - ] || bytes "$4" >"$d/memory.high"
	[ "$5" = - ] || bytes "$5" >"$d/memory.current"
	printf 'low 0\nhigh 2\nmax 5\noom 1\noom_kill 1\n' >"$d/memory.events"
}

# refused MESSAGE ARGS...: exit 2 and MESSAGE on stderr
refused() {
	local want=$1
	shift
	"$UMP" "$@" >/dev/null 2>"$TMP/err"
	rc=$?
	[ $rc -eq 2 ] && grep -q -- "$want" "$TMP/err" || {
		echo "'$*' exited $rc (want 2 and '$want'):"; cat "$TMP/err"
		return 1; }
}

cgroup_refusals() {
	local R=$TMP/cgr bad=0
	fake_cgroup "$R"
	cg "$R" job max max 0
	cg "$R" nolimit max max 4096
	mkdir -p "$R/sys/fs/cgroup/plain"
	cg "$R" nomem 128M - -
	refused 'no such\|No such' --sysroot "$R" --cgroup missing --target 1M ||
		bad=1
	refused '--create' --sysroot "$R" --cgroup missing --target 1M || bad=1
	refused 'not under a cgroup2' --sysroot "$R" --cgroup /tmp/x \
		--target 1M || bad=1
	refused 'outside' --sysroot "$R" --cgroup job/../.. --target 1M ||
		bad=1
	refused 'not a cgroup' --sysroot "$R" --cgroup plain --target 1M ||
		bad=1
	refused 'root cgroup' --sysroot "$R" --cgroup /sys/fs/cgroup \
		--target 1M || bad=1
	refused 'no memory controller' --sysroot "$R" --cgroup nomem \
		--target 1M || bad=1
	refused 'no memory limit' --sysroot "$R" --cgroup nolimit || bad=1
	refused 'no memory limit' --sysroot "$R" --cgroup nolimit --force ||
		bad=1
	# --create makes the directory, and takes it away when refusing
	refused 'not a cgroup' --sysroot "$R" --cgroup job/new --create \
		--target 1M || bad=1
	[ ! -e "$R/sys/fs/cgroup/job/new" ] || { echo "job/new left"; bad=1; }
	refused 'No such' --sysroot "$R" --cgroup a/b --create --target 1M ||
		bad=1
	# refused before it moved
	[ ! -s "$R/sys/fs/cgroup/nolimit/cgroup.procs" ] ||
		{ echo "moved although refused"; bad=1; }
	# cgroup v1 only (as on this machine): no cgroup2 line
	sed -i '/cgroup2/d' "$R/proc/self/mountinfo"
	echo '31 23 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory' \
		>>"$R/proc/self/mountinfo"
	refused 'no cgroup2' --sysroot "$R" --cgroup job --target 1M || bad=1
	rm "$R/proc/self/mountinfo"
	refused 'no cgroup2' --sysroot "$R" --cgroup job --target 1M || bad=1
	return $bad
}

# Writing cgroup.procs is refused: the kernel's EACCES (nobody here).
cgroup_permission() {
	local R=$TMP/cgp
	fake_cgroup "$R"
	cg "$R" job 128M max 0
	chmod -R a+rX "$TMP"
	chmod 0644 "$R/sys/fs/cgroup/job/cgroup.procs"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$UMP" \
		--sysroot "$R" --cgroup job --target 1M >/dev/null 2>"$TMP/err"
	rc=$?
	[ $rc -eq 2 ] && grep -q 'cannot join.*Permission denied' "$TMP/err" || {
		echo "exit $rc (want 2, Permission denied):"; cat "$TMP/err"
		return 1; }
}

# The effective limit is the lowest memory.max or memory.high up to the
# root; the room under a parent's limit counts its other children too.
cgroup_floor() {
	local R=$TMP/cgf pg
	fake_cgroup "$R"
	cg "$R" par 256M max 1M
	cg "$R" par/job max 128M 127M	# 1 MiB left under its memory.high
	"$UMP" --sysroot "$R" --cgroup par/job --target 1G --json \
		>"$TMP/cf.json"
	rc=$?
	[ $rc -eq 3 ] || { echo "exit $rc, want 3"; cat "$TMP/cf.json"; return 1; }
	json_is "$TMP/cf.json" stop_reason '"cgroup_floor"' &&
	json_is "$TMP/cf.json" peak_bytes 0 &&
	json_is "$TMP/cf.json" path '"/sys/fs/cgroup/par/job"' &&
	json_is "$TMP/cf.json" limit_bytes 134217728 &&
	json_is "$TMP/cf.json" limit_path '"/sys/fs/cgroup/par/job"' &&
	json_is "$TMP/cf.json" limit_file '"memory.high"' &&
	json_is "$TMP/cf.json" margin_bytes 4194304 &&	# 2 % < 4 MiB
	json_is "$TMP/cf.json" memory_current_start_bytes 133169152 &&
	json_is "$TMP/cf.json" oom_kill_delta 0 || return 1
	pg=$(cat "$R/sys/fs/cgroup/par/job/cgroup.procs")
	[ "$pg" -gt 0 ] 2>/dev/null || { echo "cgroup.procs: '$pg'"; return 1; }
	# the parent's limit binds: its other children use 250 MiB of it
	cg "$R" par 256M max 250M
	cg "$R" par/job max max 1M
	"$UMP" --sysroot "$R" --cgroup /sys/fs/cgroup/par/job --target 1G \
		--json >"$TMP/cp.json"
	rc=$?
	[ $rc -eq 3 ] || { echo "parent: exit $rc, want 3"; return 1; }
	json_is "$TMP/cp.json" stop_reason '"cgroup_floor"' &&
	json_is "$TMP/cp.json" limit_path '"/sys/fs/cgroup/par"' &&
	json_is "$TMP/cp.json" limit_file '"memory.max"' &&
	json_is "$TMP/cp.json" room_min_bytes $((6 * 1048576)) || return 1
	# --force ignores the cgroup's floor as it does the node's
	"$UMP" --sysroot "$R" --cgroup par/job --target 8M --force \
		>"$TMP/cx.out" && grep -q 'stop: target' "$TMP/cx.out" &&
		grep -q 'cgroup /sys/fs/cgroup/par/job: limit 256 MiB (memory.max above it)' "$TMP/cx.out" &&
		grep -q 'oom_kill +0' "$TMP/cx.out" ||
		{ echo "--force:"; cat "$TMP/cx.out"; return 1; }
}

# Room under the limit: the fill runs to its target; no limit but a target.
cgroup_fill() {
	local R=$TMP/cgo
	fake_cgroup "$R"
	cg "$R" big 1G max 0
	cg "$R" free max max 0
	"$UMP" --sysroot "$R" --cgroup big --target 16M --json >"$TMP/co.json" ||
		{ echo "exit $?"; cat "$TMP/co.json"; return 1; }
	"$JC" "$TMP/co.json" cgroup.path:string cgroup.created:bool \
		cgroup.limit_bytes:number cgroup.limit_path:string \
		cgroup.limit_file:string cgroup.margin_bytes:number \
		cgroup.room_min_bytes:number \
		cgroup.memory_current_start_bytes:number \
		cgroup.memory_current_peak_bytes:number \
		cgroup.memory_current_end_bytes:number \
		cgroup.oom_kill_delta:number cgroup.max_delta:number \
		cgroup.high_delta:number || return 1
	json_is "$TMP/co.json" peak_bytes 16777216 &&
	json_is "$TMP/co.json" stop_reason '"target"' &&
	json_is "$TMP/co.json" margin_bytes 21474836 || return 1  # 2 % of 1 GiB
	"$UMP" --sysroot "$R" --cgroup free --target 8M --json >"$TMP/cn.json" ||
		{ echo "no limit: exit $?"; return 1; }
	json_is "$TMP/cn.json" limit_bytes 0 &&
	json_is "$TMP/cn.json" limit_path null &&
	json_is "$TMP/cn.json" room_min_bytes null
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
		level_max:string level_first_ms:object cgroup:null || return 1
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

# Without --node it fills the machine, and says so ("node -1" it said).
text_all_nodes() {
	mkdir -p "$TMP/all/proc"
	printf 'MemTotal:        1048576 kB\nMemFree:           10240 kB\n' \
		>"$TMP/all/proc/meminfo"
	"$UMP" --sysroot "$TMP/all" >"$TMP/all.out"
	grep -q '^umpressure: all nodes: held 0 B (stop: floor), free 10 MiB' \
		"$TMP/all.out" && ! grep -q 'node -1' "$TMP/all.out" ||
		{ cat "$TMP/all.out"; return 1; }
	"$UMP" --sysroot "$TMP/nowhere" 2>"$TMP/all.err"
	grep -q 'memory of all nodes under' "$TMP/all.err" ||
		{ cat "$TMP/all.err"; return 1; }
}

tap_begin 16
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
tap_check "umpressure.text_all_nodes" text_all_nodes
tap_check "umpressure.cgroup_refusals" cgroup_refusals
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	tap_check "umpressure.cgroup_permission" cgroup_permission
else
	tap_skip "umpressure.cgroup_permission" "needs root and setpriv to become nobody"
fi
tap_check "umpressure.cgroup_floor" cgroup_floor
tap_check "umpressure.cgroup_fill" cgroup_fill
if "$JC" "$TMP/r.json" >/dev/null 2>&1; then
	tap_ok "umpressure.json_valid"
else
	tap_fail "umpressure.json_valid"
fi
tap_end
