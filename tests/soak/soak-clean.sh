#!/bin/sh
# soak-clean.sh - runs inside the VM (busybox sh) between two e2e runs of one
# boot of `make soak` (soak.sh puts it in the initramfs as /t/soak-clean).
#
#   soak-clean record   first command of a boot: note each node's free
#                       memory as the state a run starts in
#   soak-clean RUN      last command of run RUN: put that state back for the
#                       next run, and fail (TAP "not ok") where it cannot:
#                       a process of a scenario still alive, a client still
#                       open on /dev/umm, a node whose level stays above
#                       normal or whose free memory does not come back, a
#                       module that does not unload and load again
#
# What it puts back without failing (a scenario may leave it on purpose):
# the spill directory on /mnt, umpressure's reports in /tmp, the page cache;
# and umm.ko, where the boot has it, is unloaded and loaded again (with the
# boot's parameters): its knobs (the watermarks, enabled) start from their
# defaults again, and its figures from zero, so that the module's slowest
# event-to-ACK a scenario prints is that of its own run.
# A node may take SETTLE_S seconds to cool down and may lack SLACK_MIB of
# the free memory recorded (allocator caches, the kernel's own growth).
set -u
state=/tmp/soak-state
umm=/sys/kernel/mm/umm
SETTLE_S=60
SLACK_MIB=64
n=0
failed=0
skipped=0

check() {	# ok NAME [WHY]: one TAP line
	n=$((n + 1))
	if [ "$1" = ok ]; then
		echo "ok $n soak.$2"
	else
		echo "not ok $n soak.$2 # ${3:-}"
		failed=$((failed + 1))
	fi
}

node_free_mib() {	# node -> MemFree in MiB
	awk '/MemFree/ { print int($4 / 1024) }' \
		"/sys/devices/system/node/node$1/meminfo"
}

nodes() { ls -d /sys/devices/system/node/node[0-9]* | sed 's/.*node//'; }

record() {
	mkdir -p $state
	sync
	echo 3 >/proc/sys/vm/drop_caches
	for nd in $(nodes); do
		echo "$nd $(node_free_mib "$nd")"
	done >$state/free
	echo "TAP version 13"
	echo "1..1"
	check ok record
	echo "# soak-clean: free MiB per node: $(tr '\n' ' ' <$state/free)"
}

# The processes a scenario starts; none may outlive its run.
strays() {
	for p in /proc/[0-9]*; do
		c=$(cat "$p/comm" 2>/dev/null) || continue
		case "$c" in
		umpressure|e2e_*|test_numa) echo "${p#/proc/}:$c" ;;
		esac
	done
}

# A fresh umm.ko for the next run; a boot without it skips this.
reload_module() {
	if [ ! -f /lib/um/umm.ko ] || ! grep -q '^umm ' /proc/modules; then
		n=$((n + 1))
		skipped=$((skipped + 1))
		echo "ok $n soak.module_reloaded # SKIP umm.ko is not loaded in this boot"
		return
	fi
	# shellcheck disable=SC2046 # the parameters are words
	if rmmod umm && insmod /lib/um/umm.ko $(cat /etc/um/umm-params); then
		check ok module_reloaded
	else
		check fail module_reloaded "rmmod or insmod umm failed: no fresh module for the next run"
	fi
}

clean_after() {
	echo "TAP version 13"
	echo "1..4"
	[ -f $state/free ] || echo "# soak-clean: no record (soak-clean record did not run)"
	s=$(strays)
	if [ -n "$s" ]; then
		for x in $s; do kill -9 "${x%%:*}" 2>/dev/null; done
		check fail no_stray_process "still running after run $run, killed: $s"
	else
		check ok no_stray_process
	fi
	clients=0
	if [ -r /sys/kernel/debug/umm/clients ]; then
		clients=$(($(wc -l </sys/kernel/debug/umm/clients) - 1))
	fi
	if [ "$clients" -gt 0 ]; then
		check fail no_client_open "$clients client(s) of /dev/umm still open"
		sed 's/^/# clients: /' /sys/kernel/debug/umm/clients
	else
		check ok no_client_open
	fi
	spill=$(ls /mnt/um-spill 2>/dev/null | wc -l)
	rm -rf /mnt/um-spill /tmp/umpressure-*.json
	[ "$spill" -gt 0 ] && echo "# soak-clean: removed $spill spill file(s)"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# A hot node: wait for the levels to come down and the memory back.
	i=0 hot=
	while :; do
		hot=
		for nd in $(nodes); do
			lv=$(cat $umm/nodes/node$nd/level 2>/dev/null || echo normal)
			want=$(awk -v n="$nd" '$1 == n { print $2 }' $state/free 2>/dev/null)
			have=$(node_free_mib "$nd")
			[ "$lv" = normal ] || hot="$hot node$nd:level-$lv"
			[ -n "$want" ] && [ "$have" -lt $((want - SLACK_MIB)) ] &&
				hot="$hot node$nd:free-${have}MiB-of-${want}MiB"
		done
		[ -z "$hot" ] || [ $i -ge $SETTLE_S ] && break
		i=$((i + 1))
		sleep 1
	done
	[ $i -gt 0 ] && echo "# soak-clean: nodes settled after ${i}s"
	echo "# soak-clean: free MiB per node after run $run: $(for nd in $(nodes); do printf '%s %s ' "$nd" "$(node_free_mib "$nd")"; done)"
	if [ -n "$hot" ]; then
		check fail nodes_cool "after ${SETTLE_S}s:$hot"
	else
		check ok nodes_cool
	fi
	reload_module
	echo "# SOAK-RUN-END $run"
}

case "${1:-}" in
record) record ;;
''|*[!0-9]*) echo "usage: soak-clean record|RUN" >&2; exit 2 ;;
*) run=$1; clean_after ;;
esac
p=0
[ $failed = 0 ] || p=1
echo "# Totals: pass:$((n - failed - skipped)) fail:$failed xfail:0 xpass:0 skip:$skipped error:0"
exit $p
