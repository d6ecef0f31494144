#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: umctl against a fake umm.ko tree (--sysroot): status,
# clients and watched cgroups in text and JSON (a table missing, malformed
# or from an older module refused), metrics in the Prometheus format
# (promtool's check, values, escaped names and paths, at most 64 cgroups
# with series of their own, the atomic file, partial trees), get/set of
# every kind of knob with the value landing in the file (ring_bytes_max at
# both ends of its range), ranges and watermark order (a node's, cgroup/'s)
# refused before writing, a module without cgroup/, inject commands as the
# kernel's grammar wants them, the module absent, a write the kernel refuses
# (ENOSPC from /dev/full), and non-root (EACCES) when we can drop privileges.
# The real module is exercised in the VM by tests/kmod (umctl-vm.sh).
# Usage: check.sh UMCTL UT-JSONCHECK
set -u
UMCTL=$1
JC=$2
here=$(dirname "$0")
. "$here/../common/tap.sh"
. "$here/../common/fakeumm.sh"

tap_tmpdir
chmod 0755 "$TMP"	# like /sys: anyone may look, the files decide
R=$TMP/sys
U=$R/kernel/mm/umm
fake_umm "$R"
u() { "$UMCTL" --sysroot "$TMP" "$@"; }

# json_is FILE KEY VALUE: "KEY": VALUE appears in the pretty-printed JSON
json_is() {
	grep -q "\"$2\": $3[,]*\$" "$1" || {
		echo "want \"$2\": $3 in:"; cat "$1"; return 1; }
}

file_is() {
	[ "$(cat "$U/$1")" = "$2" ] || {
		echo "$1 holds '$(cat "$U/$1")', want '$2'"; return 1; }
}

status_text() {
	u status >"$TMP/s.txt" || return 1
	grep -q 'loaded, API 1, events enabled' "$TMP/s.txt" &&
	grep -q '^clients: *2, rings 32.1 KiB (ring_bytes_max 64 MiB)$' \
		"$TMP/s.txt" &&
	grep -q '^events: *40 sent, 1 dropped, 1 overflows' "$TMP/s.txt" &&
	grep -q 'latency avg 1.500 ms, max 4.000 ms' "$TMP/s.txt" &&
	grep -Eq '^node1 +normal +600 MiB +1 GiB +58.6%' "$TMP/s.txt" &&
	! grep -q '^GPU' "$TMP/s.txt" || { cat "$TMP/s.txt"; return 1; }
	# a GPU with a budget is listed, the idle ones are not
	fake_set "$R" gpus/gpu3/budget_bytes 2147483648
	fake_set "$R" gpus/gpu3/level critical
	u status >"$TMP/s.txt" &&
	grep -Eq '^gpu3 +critical +2 GiB' "$TMP/s.txt" &&
	[ "$(grep -c '^gpu' "$TMP/s.txt")" -eq 1 ] ||
		{ cat "$TMP/s.txt"; return 1; }
}

status_json() {
	u status --json >"$TMP/s.json" || return 1
	"$JC" "$TMP/s.json" module.loaded:bool module.api_version:number \
		module.ack_latency_ns_max:number module.oom_calls:number \
		module.ring_bytes:number module.ring_bytes_max:number \
		nodes.1.node:number nodes.*.level:string \
		nodes.*.critical_effective_bytes:number nodes.*.eta_ms:number \
		gpus.15.gpu:number gpus.*.budget_bytes:number || return 1
	json_is "$TMP/s.json" events_sent 40 &&
	json_is "$TMP/s.json" ring_bytes 32896 &&
	json_is "$TMP/s.json" ring_bytes_max 67108864 &&
	json_is "$TMP/s.json" free_bytes 629145600 &&
	json_is "$TMP/s.json" budget_bytes 2147483648
}

clients() {
	u clients >"$TMP/c.txt" &&
	grep -Eq '^ *4343 +my trainer 2 +-5 +yes' "$TMP/c.txt" || {
		cat "$TMP/c.txt"; return 1; }
	u -J clients >"$TMP/c.json" &&
	"$JC" "$TMP/c.json" clients.1.name:string clients.0.books.1.tier:string \
		clients.1.books:array clients.*.ack_ns_avg:number \
		clients.*.ack_ns_sum:number clients.1.ack_ms_le.2:number \
		clients.*.ack_ms_le.13:number || return 1
	json_is "$TMP/c.json" name '"my trainer 2"' &&
	json_is "$TMP/c.json" priority -5 &&
	json_is "$TMP/c.json" resident_bytes 1048576
}

# The watched cgroups: human sizes, no limit as "none", the escaped path
# back; JSON with every figure a number, bytes exact.
cgroups() {
	u cgroups >"$TMP/cg.txt" &&
	grep -Eq '^PATH +USAGE +LIMIT +USED% +ROOM +LEVEL +CLIENTS +ETA +EVENTS$' \
		"$TMP/cg.txt" &&
	grep -Eq '^/slurm/job42 +3.5 GiB +4 GiB +87.5% +512 MiB +low +1 +1m30s +2$' \
		"$TMP/cg.txt" &&
	grep -Eq '^/system.slice/my trainer.service +256 MiB +none +- +- +normal +1 +- +0$' \
		"$TMP/cg.txt" || { cat "$TMP/cg.txt"; return 1; }
	u --json cgroups >"$TMP/cg.json" &&
	"$JC" "$TMP/cg.json" cgroups:array cgroups.1.path:string \
		cgroups.*.id:number cgroups.*.usage_bytes:number \
		cgroups.*.limit_bytes:number cgroups.*.room_bytes:number \
		cgroups.*.level:string cgroups.*.clients:number \
		cgroups.*.eta_ms:number cgroups.*.fill_bps:number \
		cgroups.*.events:number || return 1
	json_is "$TMP/cg.json" path '"/system.slice/my trainer.service"' &&
	json_is "$TMP/cg.json" limit_bytes 18446744073709551615 &&
	json_is "$TMP/cg.json" room_bytes 536870912 &&
	json_is "$TMP/cg.json" usage_bytes 3758096384 &&
	json_is "$TMP/cg.json" eta_ms 90000 &&
	json_is "$TMP/cg.json" fill_bps 4194304 || return 1
	# none watched: no rows and no header (libsmartcols prints nothing for
	# an empty table), an empty array
	mkdir -p "$TMP/cg0"
	fake_umm "$TMP/cg0" && fake_cgroups "$TMP/cg0" 0 &&
	"$UMCTL" -r "$TMP/cg0" cgroups >"$TMP/cg0.txt" &&
	[ ! -s "$TMP/cg0.txt" ] &&
	"$UMCTL" -r "$TMP/cg0" cgroups --json >"$TMP/cg0.json" &&
	"$JC" "$TMP/cg0.json" cgroups:array && grep -q '"cgroups": \[\]' \
		"$TMP/cg0.json" || { cat "$TMP/cg0.txt" "$TMP/cg0.json"; return 1; }
}

# Exit 1 and why, as for clients: debugfs not mounted, a module before the
# cgroup table, a row or a header that is not the module's.
cgroups_errors() {
	local T=$TMP/cge
	mkdir -p "$T"
	fake_umm "$T"
	rm "$T/kernel/debug/umm/cgroups"
	expect 1 'cgroups: not supported by this umm.ko' \
		"$UMCTL" -r "$T" cgroups &&
	rm -rf "$T/kernel/debug/umm" &&
	expect 1 'cgroups: debugfs is not mounted' "$UMCTL" -r "$T" cgroups &&
	expect 1 'cgroups: debugfs is not mounted' "$UMCTL" -r "$T" --json \
		cgroups || return 1
	[ ! -s "$TMP/out" ] || { echo "stdout not empty"; return 1; }
	fake_umm "$T"
	sed -i '2s/ low / 3 /' "$T/kernel/debug/umm/cgroups"
	expect 1 'cgroups: unexpected contents' "$UMCTL" -r "$T" cgroups &&
	fake_umm "$T" && sed -i '3s/ 0 0$/ 0/' "$T/kernel/debug/umm/cgroups" &&
	expect 1 'cgroups: unexpected contents' "$UMCTL" -r "$T" --json cgroups &&
	fake_umm "$T" && sed -i '1s/usage_bytes/usage/' \
		"$T/kernel/debug/umm/cgroups" &&
	expect 1 'cgroups: unexpected contents' "$UMCTL" -r "$T" cgroups &&
	expect 2 "unexpected argument 'x'" "$UMCTL" -r "$T" cgroups x
}

clients_no_debugfs() {
	mkdir -p "$TMP/nd"
	fake_umm "$TMP/nd"
	rm -rf "$TMP/nd/kernel/debug/umm"
	expect 1 'debugfs is not mounted' "$UMCTL" -r "$TMP/nd" clients
}

get_set() {
	u set interval_ms 250 && file_is interval_ms 250 &&
	[ "$(u get interval_ms)" = 250 ] &&
	u set enabled off && file_is enabled 0 &&
	u set gpus/gpu2/budget_bytes 1.5G &&
	file_is gpus/gpu2/budget_bytes 1610612736 &&
	u set nodes/node1/critical_bp 400 &&
	file_is nodes/node1/critical_bp 400 &&
	u get >"$TMP/all" && grep -qx 'nodes/node1/critical_bp 400' "$TMP/all" &&
	grep -qx 'gpus/gpu15/budget_bytes 0' "$TMP/all" &&
	u get --json >"$TMP/g.json" &&
	"$JC" "$TMP/g.json" repeat_interval_ms:number \
		nodes/node0/low_bp:number &&
	json_is "$TMP/g.json" interval_ms 250
}

# The refusals state the grammar umctl takes, not another ("not a number"
# it said of enabled, which takes 0x1; and sizes without fractions, P or E).
grammar_in_refusals() {
	expect 2 'or a number that is 0 or 1)' u set enabled 0x2 &&
	expect 2 'optional fraction and a K, M, G, T, P or E suffix' \
		u set gpus/gpu3/budget_bytes 12Q &&
	u set gpus/gpu3/budget_bytes 0.001P &&
	file_is gpus/gpu3/budget_bytes 1125899906842 &&
	u set gpus/gpu3/budget_bytes 1G
}

# The module's grammar (the ABI document's "Values"): hex, decimal with
# leading zeros, boolean words in any case or a number that is 0 or 1.
# Every knob of the table is known.
grammar() {
	u set interval_ms 0x64 && file_is interval_ms 100 &&
	u set interval_ms 0250 && file_is interval_ms 250 &&
	u set enabled Y && file_is enabled 1 &&
	u set enabled OFF && file_is enabled 0 &&
	u set enabled ON && file_is enabled 1 &&
	u set enabled 0 && u set enabled 0x1 && file_is enabled 1 &&
	expect 2 "bad value '0x2' (a boolean" u set enabled 0x2 &&
	expect 2 "bad value '10' (a boolean" u set enabled 10 &&
	file_is enabled 1 &&
	u set gpus/gpu3/budget_bytes 0x40000000 &&
	file_is gpus/gpu3/budget_bytes 1073741824 &&
	u set gpus/gpu3/budget_bytes 0.5G &&
	file_is gpus/gpu3/budget_bytes 536870912 &&
	expect 2 'bad size' u set gpus/gpu3/budget_bytes 0x1G &&
	expect 2 'bad value' u set queue_len +5 &&
	grammar_in_refusals &&
	u knobs >"$TMP/knobs" &&
	grep -qx 'queue_len num 4 65536 256 0' "$TMP/knobs" &&
	grep -qx 'gpus/gpuN/budget_bytes size 0 18446744073709551615 0 1048576' \
		"$TMP/knobs" &&
	[ "$(grep -vc '^#' "$TMP/knobs")" = "$(u get | grep -c 'node0/\|gpu0/\|^cgroup/\|^[a-z_]* ')" ]
}

# cgroup/: its thresholds are checked as the node watermarks are (range,
# then low_bp > medium_bp > critical_bp against the files) before writing;
# get, status and "knobs" show it.
cgroup_knobs() {
	[ "$(u get cgroup/low_bp)" = 2000 ] &&
	expect 2 'cgroup/low_bp 900: the watermarks must stay low_bp > medium_bp' \
		u set cgroup/low_bp 900 &&
	expect 2 'low_bp > medium_bp' u set cgroup/critical_bp 1000 &&
	expect 2 'low_bp > medium_bp' u set cgroup/medium_bp 2000 &&
	expect 2 "cgroup/low_bp: bad value '10001': a number (0..10000)" \
		u set cgroup/low_bp 10001 &&
	expect 2 "unknown knob 'cgroup/watched'" u set cgroup/watched 1 &&
	expect 2 "unknown knob 'cgroup0/low_bp'" u set cgroup0/low_bp 3000 &&
	file_is cgroup/low_bp 2000 && file_is cgroup/medium_bp 1000 &&
	file_is cgroup/critical_bp 500 &&
	u set cgroup/low_bp 3000 && file_is cgroup/low_bp 3000 &&
	u set cgroup/medium_bp 2500 && file_is cgroup/medium_bp 2500 &&
	u get >"$TMP/all" && grep -qx 'cgroup/low_bp 3000' "$TMP/all" &&
	grep -qx 'cgroup/critical_bp 500' "$TMP/all" &&
	! grep -q 'cgroup/watched' "$TMP/all" &&
	u get --json >"$TMP/g.json" &&
	"$JC" "$TMP/g.json" cgroup/medium_bp:number &&
	fake_set "$R" cgroup/watched 3 &&
	u status >"$TMP/s.txt" &&
	grep -qx 'cgroups:  3 watched, thresholds low 3000, medium 2500, critical 500 bp' \
		"$TMP/s.txt" &&
	u status --json >"$TMP/s.json" &&
	"$JC" "$TMP/s.json" cgroup.watched:number cgroup.low_bp:number &&
	json_is "$TMP/s.json" watched 3 &&
	u knobs | grep -qx 'cgroup/low_bp wm 0 10000 2000 0' &&
	u help | grep -q 'cgroup/low_bp' &&
	u set cgroup/medium_bp 1000 && u set cgroup/low_bp 2000 &&
	fake_set "$R" cgroup/watched 2 || { cat "$TMP/s.txt"; return 1; }
}

# A module built before cgroup/: everything else works, the cgroup knobs
# are "not supported" (a runtime failure, nothing written), not a usage
# error or a broken tree.
cgroup_absent() {
	local T=$TMP/ncg
	mkdir -p "$T/sys"
	fake_umm "$T/sys"
	rm -r "$T/sys/kernel/mm/umm/cgroup"
	"$UMCTL" --sysroot "$T" status >"$T/s.txt" &&
	grep -q 'loaded, API 1' "$T/s.txt" && ! grep -q '^cgroups:' "$T/s.txt" &&
	"$UMCTL" --sysroot "$T" status --json >"$T/s.json" &&
	! grep -q '"cgroup"' "$T/s.json" &&
	"$UMCTL" --sysroot "$T" get >"$T/all" &&
	grep -qx 'nodes/node0/low_bp 2000' "$T/all" &&
	! grep -q '^cgroup/' "$T/all" &&
	expect 1 'cgroup/low_bp: not supported by this umm.ko' \
		"$UMCTL" --sysroot "$T" get cgroup/low_bp &&
	expect 1 'cgroup/critical_bp: not supported by this umm.ko' \
		"$UMCTL" --sysroot "$T" set cgroup/critical_bp 400 &&
	[ ! -e "$T/sys/kernel/mm/umm/cgroup" ] &&
	# there, but a file of it missing: a tree the tools do not know
	fake_umm "$T/sys" && rm "$T/sys/kernel/mm/umm/cgroup/watched" &&
	expect 1 'cgroup/watched: unexpected contents' \
		"$UMCTL" --sysroot "$T" status
}

# A byte knob under its floor is a unit forgotten ("20" for "20G"): refused
# with the unit named, unless --force; 0 (no budget) is no mistake.
floor() {
	expect 2 'budget_bytes: 20 is 20 bytes, under 1 MiB: a unit forgotten' \
		u set gpus/gpu1/budget_bytes 20 &&
	expect 2 'or --force' u set gpus/gpu1/budget_bytes 1048575 &&
	file_is gpus/gpu1/budget_bytes 0 &&
	u set --force gpus/gpu1/budget_bytes 20 &&
	file_is gpus/gpu1/budget_bytes 20 &&
	u set gpus/gpu1/budget_bytes 1M -f && file_is gpus/gpu1/budget_bytes 1048576 &&
	u set gpus/gpu1/budget_bytes 0 && file_is gpus/gpu1/budget_bytes 0 &&
	expect 2 'bad size' u set --force gpus/gpu1/budget_bytes 12Q
}

# ring_bytes_max: a size, its range's ends land; the figure beside it is no
# knob. It is left at 128 MiB for the checks after this one.
ring_bytes_max() {
	u set ring_bytes_max 4096 && file_is ring_bytes_max 4096 &&
	u set ring_bytes_max 1T && file_is ring_bytes_max 1099511627776 &&
	u set ring_bytes_max 128M && file_is ring_bytes_max 134217728 &&
	[ "$(u get ring_bytes_max)" = 134217728 ] &&
	u get >"$TMP/all" && grep -qx 'ring_bytes_max 134217728' "$TMP/all" &&
	! grep -q '^ring_bytes ' "$TMP/all" &&
	u get --json >"$TMP/g.json" &&
	"$JC" "$TMP/g.json" ring_bytes_max:number &&
	json_is "$TMP/g.json" ring_bytes_max 134217728 || return 1
	expect 2 'unknown knob' u get ring_bytes &&
	expect 2 'unknown knob' u set ring_bytes 4096 &&
	file_is ring_bytes 32896
}

bad_values() {
	local bad=0
	while IFS='|' read -r rc pat args; do
		# shellcheck disable=SC2086
		expect "$rc" "$pat" u $args || bad=1
	done <<-'EOF'
	2|(10..60000)|set interval_ms 5
	2|(4..65536)|set queue_len 65537
	2|4096..1099511627776)|set ring_bytes_max 4095
	2|4096..1099511627776)|set ring_bytes_max 0
	2|4096..1099511627776)|set ring_bytes_max 1099511627777
	2|4096..1099511627776)|set ring_bytes_max 1.5T
	2|bad size '64Q'|set ring_bytes_max 64Q
	2|bad value '-1'|set hysteresis_bp -1
	2|bad value 'maybe'|set enabled maybe
	2|bad size|set gpus/gpu0/budget_bytes 12Q
	2|GPU ids|set gpus/gpu16/budget_bytes 1G
	2|unknown knob|set api_version 2
	2|unknown knob|get nodes/node0/level
	2|low_bp > medium_bp|set nodes/node0/low_bp 900
	2|low_bp > medium_bp|set nodes/node0/critical_bp 1000
	2|no node 7|set nodes/node7/low_bp 3000
	2|usage|set interval_ms
	2|unknown command|frob
	2|no command|
	2|unexpected|status extra
	2|bad level|inject node 0 high
	2|bad gpu id|inject gpu 16 low
	2|SIZE|inject node 0 shrink 0
	2|unknown|inject reboot
	2|no node 3|inject node 3 low
	2|'--bogus'|--bogus status
	EOF
	file_is interval_ms 250 && file_is nodes/node0/low_bp 2000 &&
	file_is ring_bytes_max 134217728 &&
	[ ! -s "$U/inject" ] && return $bad
}

inject() {
	u inject node 1 critical && u inject gpu 4 low &&
	u inject node 0 shrink 64M && u inject oom && u inject clear || return 1
	head -n 4 "$U/inject" >"$TMP/inj"
	printf '%s\n' 'node 1 critical' 'gpu 4 low' 'node 0 shrink 67108864' \
		oom | cmp -s - "$TMP/inj" || { cat "$U/inject"; return 1; }
	# clear: every node and every GPU, nothing else
	[ "$(grep -c 'clear$' "$U/inject")" -eq 18 ] &&
	grep -qx 'gpu 15 clear' "$U/inject" && grep -qx 'node 1 clear' "$U/inject"
}

kernel_refuses() {
	ln -sf /dev/full "$U/repeat_interval_ms"
	expect 1 'set repeat_interval_ms 5: No space left on device (ENOSPC)' \
		u set repeat_interval_ms 5
}

no_module() {
	local bad=0 c
	for c in status clients cgroups get "get enabled" "set enabled 1" \
		"inject oom"; do
		# shellcheck disable=SC2086
		expect 1 'umm.ko is not loaded' "$UMCTL" -r "$TMP/none" $c ||
			bad=1
	done
	UMM_SYSFS_ROOT=$TMP/none "$UMCTL" --json status >"$TMP/n.json"
	[ $? -eq 1 ] && json_is "$TMP/n.json" loaded false && return $bad
}

not_root() {
	local bad=0 c nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	chmod -R a+rX "$TMP"
	for f in $(find "$R" -type f); do chmod go-rwx "$f"; done
	for c in status clients cgroups metrics "get queue_len" "set queue_len 64" \
		"get ring_bytes_max" "set ring_bytes_max 64M" "inject clear"; do
		# shellcheck disable=SC2086
		expect 1 'ermission denied' "${nobody[@]}" "$UMCTL" -r "$R" $c ||
			bad=1
	done
	expect 1 'EACCES' "${nobody[@]}" "$UMCTL" -r "$R" set queue_len 64 ||
		bad=1
	return $bad
}

# has FILE LINE: FILE holds LINE exactly
has() {
	grep -qxF -- "$2" "$1" || { echo "no line '$2' in $1"; return 1; }
}

# promtool's own check of the format and Prometheus' naming rules
promcheck() {
	promtool check metrics <"$1" || { echo "promtool on $1"; return 1; }
}

metrics_text() {
	u metrics >"$TMP/m.prom" && promcheck "$TMP/m.prom" &&
	has "$TMP/m.prom" 'umm_up 1' &&
	has "$TMP/m.prom" 'umm_info{api_version="1"} 1' &&
	has "$TMP/m.prom" 'umm_events_sent_total 40' &&
	has "$TMP/m.prom" 'umm_ring_bytes 32896' &&
	has "$TMP/m.prom" 'umm_ring_max_bytes 134217728' &&
	has "$TMP/m.prom" 'umm_ack_latency_mean_seconds 0.0015' &&
	has "$TMP/m.prom" 'umm_node_free_bytes{node="1"} 629145600' &&
	has "$TMP/m.prom" \
		'umm_node_watermark_ratio{node="0",watermark="critical"} 0.05' &&
	has "$TMP/m.prom" 'umm_node_critical_eta_seconds{node="0"} +Inf' &&
	has "$TMP/m.prom" 'umm_node_events_total{node="1"} 5' &&
	has "$TMP/m.prom" 'umm_gpu_level{gpu="15"} 0' &&
	has "$TMP/m.prom" 'umm_client_table_readable 1' &&
	has "$TMP/m.prom" \
		'umm_client_info{name="umtrain",slot="0",pid="4242"} 1' &&
	! grep -v '^umm_client_info' "$TMP/m.prom" | grep -q 'pid=' &&
	has "$TMP/m.prom" \
		'umm_client_priority{name="my trainer 2",slot="0"} -5' &&
	has "$TMP/m.prom" \
		'umm_client_resident_bytes{name="umtrain",slot="0",tier="gpu1"} 1048576' &&
	has "$TMP/m.prom" \
		'umm_client_reclaimable_bytes{name="umtrain",slot="0",tier="node0"} 33554432' &&
	has "$TMP/m.prom" \
		'umm_client_ack_latency_mean_seconds{name="my trainer 2",slot="0"} 0.0021' &&
	has "$TMP/m.prom" 'umm_client_ack_latency_seconds_bucket{name="umtrain",slot="0",le="0.001"} 2' &&
	has "$TMP/m.prom" 'umm_client_ack_latency_seconds_bucket{name="umtrain",slot="0",le="0.002"} 9' &&
	has "$TMP/m.prom" 'umm_client_ack_latency_seconds_bucket{name="umtrain",slot="0",le="10"} 10' &&
	has "$TMP/m.prom" 'umm_client_ack_latency_seconds_sum{name="umtrain",slot="0"} 0.012' &&
	has "$TMP/m.prom" 'umm_client_ack_latency_seconds_bucket{name="my trainer 2",slot="0",le="0.002"} 0' &&
	has "$TMP/m.prom" 'umm_client_ack_latency_seconds_bucket{name="my trainer 2",slot="0",le="0.005"} 2' &&
	has "$TMP/m.prom" 'umm_client_ack_latency_seconds_bucket{name="my trainer 2",slot="0",le="+Inf"} 2' &&
	has "$TMP/m.prom" 'umm_client_ack_latency_seconds_count{name="my trainer 2",slot="0"} 2' &&
	has "$TMP/m.prom" 'umm_cgroups_watched 2' &&
	has "$TMP/m.prom" 'umm_cgroup_table_readable 1' &&
	has "$TMP/m.prom" 'umm_cgroup_level{cgroup="/slurm/job42"} 1' &&
	has "$TMP/m.prom" 'umm_cgroup_usage_bytes{cgroup="/slurm/job42"} 3758096384' &&
	has "$TMP/m.prom" 'umm_cgroup_limit_bytes{cgroup="/slurm/job42"} 4294967296' &&
	has "$TMP/m.prom" 'umm_cgroup_room_bytes{cgroup="/slurm/job42"} 536870912' &&
	has "$TMP/m.prom" 'umm_cgroup_clients{cgroup="/slurm/job42"} 1' &&
	has "$TMP/m.prom" 'umm_cgroup_events_total{cgroup="/slurm/job42"} 2' &&
	has "$TMP/m.prom" \
		'umm_cgroup_limit_bytes{cgroup="/system.slice/my trainer.service"} +Inf' &&
	has "$TMP/m.prom" \
		'umm_cgroup_room_bytes{cgroup="/system.slice/my trainer.service"} +Inf' &&
	! grep -q '^umm_[a-z_]*{cgroup="_other"}' "$TMP/m.prom" || return 1
	# buckets per client: 14, cumulative, +Inf equal to _count
	awk '{ k = $0; sub(/ [^ ]*$/, "", k); sub(/^[^{]*/, "", k)
	       sub(/,le=.*/, "", k); sub(/}$/, "", k) }
	     /^umm_client_ack_latency_seconds_bucket/ {
		if ($NF + 0 < last[k] + 0) bad = 1; last[k] = $NF
		if (!nb[k]++) clients++
		if ($0 ~ /le="\+Inf"/) inf[k] = $NF }
	     /^umm_client_ack_latency_seconds_count/ { cnt[k] = $NF }
	     END { for (k in nb) if (nb[k] != 14 || inf[k] != cnt[k]) bad = 1
		   exit bad || clients != 2 }' "$TMP/m.prom" ||
		{ echo "histogram buckets"; return 1; }
	# every family once, with its help and type before its samples
	awk '/^# HELP /{h[$3]++} /^# TYPE /{t[$3]++; ty[$3] = $4; if (!h[$3]) bad = 1}
	     !/^#/{n = $1; sub(/\{.*/, "", n)
		   if (!t[n] && sub(/_(bucket|sum|count)$/, "", n) &&
		       ty[n] != "histogram") bad = 1
		   if (!t[n]) bad = 1}
	     END {for (k in h) if (h[k] != 1 || t[k] != 1) bad = 1; exit bad}' \
		"$TMP/m.prom"
}

# A level raised, a node falling, no ACK yet (no mean: NaN), a name with a
# quote, a backslash, a tab and a byte that is not UTF-8: the values
# follow, the labels stay valid.
metrics_changes_and_names() {
	mkdir -p "$TMP/mc"
	fake_umm "$TMP/mc/sys"
	fake_set "$TMP/mc/sys" nodes/node1/level critical
	fake_set "$TMP/mc/sys" nodes/node1/eta_ms 2500
	fake_set "$TMP/mc/sys" gpus/gpu3/level medium
	fake_set "$TMP/mc/sys" acks 0
	printf '%s\n%s\n%s\n%s\n' "$(head -n 1 "$TMP/mc/sys/kernel/debug/umm/clients")" \
		$'77 a"b\\c\td\xff 0 1 256 0 3 0 1 5 100 node1:4096/0 100 1,0,0,0,0,0,0,0,0,0,0,0,0,0' \
		'90 twin 0 1 256 0 0 0 0 0 0 node0:1024/0 0 0,0,0,0,0,0,0,0,0,0,0,0,0,0' \
		'80 twin 0 1 256 0 0 0 0 0 0 node0:2048/0 0 0,0,0,0,0,0,0,0,0,0,0,0,0,0' \
		>"$TMP/mc/sys/kernel/debug/umm/clients"
	"$UMCTL" --sysroot "$TMP/mc" metrics >"$TMP/mc.prom" &&
	promcheck "$TMP/mc.prom" &&
	has "$TMP/mc.prom" 'umm_node_level{node="1"} 3' &&
	has "$TMP/mc.prom" 'umm_node_critical_eta_seconds{node="1"} 2.5' &&
	has "$TMP/mc.prom" 'umm_gpu_level{gpu="3"} 2' &&
	has "$TMP/mc.prom" 'umm_ack_latency_mean_seconds NaN' &&
	has "$TMP/mc.prom" \
		'umm_client_resident_bytes{name="a\"b\\c\\x09d\\xff",slot="0",tier="node1"} 4096' &&
	# two clients of one name: slots in pid order, one series each
	has "$TMP/mc.prom" 'umm_client_info{name="twin",slot="0",pid="80"} 1' &&
	has "$TMP/mc.prom" 'umm_client_info{name="twin",slot="1",pid="90"} 1' &&
	has "$TMP/mc.prom" \
		'umm_client_resident_bytes{name="twin",slot="1",tier="node0"} 1024' || return 1
	# a cgroup path with a quote, a backslash (\134) and a newline (\012,
	# which stays written so): a valid label, one series
	printf '%s\n%s\n' "$(head -n 1 "$TMP/mc/sys/kernel/debug/umm/cgroups")" \
		'5 /a"b\134c\012d 1 2 1 critical 1 0 0 7' \
		>"$TMP/mc/sys/kernel/debug/umm/cgroups"
	"$UMCTL" --sysroot "$TMP/mc" metrics >"$TMP/mc.prom" &&
	promcheck "$TMP/mc.prom" &&
	has "$TMP/mc.prom" 'umm_cgroup_level{cgroup="/a\"b\\c\\012d"} 3' &&
	has "$TMP/mc.prom" 'umm_cgroup_events_total{cgroup="/a\"b\\c\\012d"} 7'
}

# 70 watched cgroups: the 64 with the least room (cg7 .. cg70) have series
# of their own, cg1 .. cg6 are summed into cgroup="_other" (no room, no
# level: a sum of those means nothing); the count is all 70. With 64, no
# _other; a path twice (a cgroup made again while the old one is still
# watched) is one series, the second goes to _other.
metrics_cgroups_bounded() {
	local T=$TMP/cg70 f
	mkdir -p "$T/sys"
	fake_umm "$T/sys" && fake_cgroups "$T/sys" 70 &&
	"$UMCTL" --sysroot "$T" metrics >"$T/m.prom" && promcheck "$T/m.prom" ||
		return 1
	for f in level usage_bytes limit_bytes room_bytes clients events_total; do
		[ "$(grep -c "^umm_cgroup_$f{cgroup=\"/fake/" "$T/m.prom")" = 64 ] ||
			{ echo "umm_cgroup_$f: not 64 series"; return 1; }
	done
	! grep -Eq '^umm_cgroup_[a-z_]*\{cgroup="/fake/cg[1-6]"\}' "$T/m.prom" &&
	has "$T/m.prom" 'umm_cgroups_watched 70' &&
	has "$T/m.prom" 'umm_cgroup_room_bytes{cgroup="/fake/cg70"} 1000341504' &&
	has "$T/m.prom" 'umm_cgroup_clients{cgroup="/fake/cg7"} 7' &&
	has "$T/m.prom" 'umm_cgroup_usage_bytes{cgroup="_other"} 22020096' &&
	has "$T/m.prom" 'umm_cgroup_limit_bytes{cgroup="_other"} 6442450944' &&
	has "$T/m.prom" 'umm_cgroup_clients{cgroup="_other"} 21' &&
	has "$T/m.prom" 'umm_cgroup_events_total{cgroup="_other"} 42' &&
	[ "$(grep -c '^umm_[a-z_]*{cgroup="_other"}' "$T/m.prom")" = 4 ] ||
		return 1
	fake_cgroups "$T/sys" 64 &&
	"$UMCTL" --sysroot "$T" metrics >"$T/m.prom" && promcheck "$T/m.prom" &&
	! grep -q '^umm_[a-z_]*{cgroup="_other"}' "$T/m.prom" &&
	[ "$(grep -c '^umm_cgroup_level{' "$T/m.prom")" = 64 ] || return 1
	sed -n 2p "$T/sys/kernel/debug/umm/cgroups" | sed 's/^1001 /9999 /' \
		>>"$T/sys/kernel/debug/umm/cgroups"
	"$UMCTL" --sysroot "$T" metrics >"$T/m.prom" && promcheck "$T/m.prom" &&
	[ "$(grep -c '^umm_cgroup_level{cgroup="/fake/cg1"}' "$T/m.prom")" = 1 ] &&
	has "$T/m.prom" 'umm_cgroup_usage_bytes{cgroup="_other"} 1048576'
}

# FILE is replaced whole (rename of a temporary beside it, mode 0644) and
# holds what stdout would; nothing is left behind; a FILE that cannot be
# written is an error (exit 1) that leaves the old one.
metrics_file() {
	mkdir -p "$TMP/tf"
	echo old >"$TMP/tf/umm.prom"
	ln "$TMP/tf/umm.prom" "$TMP/tf/old-link"
	u metrics "$TMP/tf/umm.prom" &&
	cmp -s "$TMP/tf/umm.prom" "$TMP/m.prom" &&
	[ "$(stat -c %a "$TMP/tf/umm.prom")" = 644 ] &&
	[ "$(cat "$TMP/tf/old-link")" = old ] &&
	[ "$(ls "$TMP/tf" | wc -l)" = 2 ] || { ls -l "$TMP/tf"; return 1; }
	expect 1 'nodir/umm.prom: No such file' u metrics "$TMP/nodir/umm.prom"
}

# umm.ko not loaded is a fact to export: umm_up 0, exit 0. No debugfs:
# the table is said to be unreadable and no client series appear.
metrics_partial() {
	"$UMCTL" --sysroot "$TMP/none" metrics >"$TMP/n.prom" &&
	promcheck "$TMP/n.prom" && has "$TMP/n.prom" 'umm_up 0' &&
	[ "$(grep -vc '^#' "$TMP/n.prom")" = 1 ] || return 1
	mkdir -p "$TMP/md"
	fake_umm "$TMP/md"
	rm -rf "$TMP/md/kernel/debug/umm"
	"$UMCTL" -r "$TMP/md" metrics >"$TMP/nd.prom" &&
	promcheck "$TMP/nd.prom" &&
	has "$TMP/nd.prom" 'umm_client_table_readable 0' &&
	! grep -q '^umm_client_[a-z_]*{' "$TMP/nd.prom" &&
	has "$TMP/nd.prom" 'umm_cgroup_table_readable 0' &&
	has "$TMP/nd.prom" 'umm_cgroups_watched 2' &&
	! grep -q '^umm_cgroup_[a-z_]*{' "$TMP/nd.prom" || return 1
	# a malformed cgroup table alone: the rest is there
	fake_umm "$TMP/md"
	echo 'id path' >"$TMP/md/kernel/debug/umm/cgroups"
	"$UMCTL" -r "$TMP/md" metrics >"$TMP/nd.prom" &&
	promcheck "$TMP/nd.prom" &&
	has "$TMP/nd.prom" 'umm_cgroup_table_readable 0' &&
	has "$TMP/nd.prom" 'umm_client_table_readable 1' &&
	! grep -q '^umm_cgroup_[a-z_]*{' "$TMP/nd.prom"
}

metrics_usage() {
	expect 2 'does not apply' u --json metrics &&
	expect 2 "unexpected argument 'b'" u metrics a b
}

help_version() {
	u --help | grep -q 'inject' && u help | grep -q 'KNOB' &&
	u help | grep -q '^  cgroups ' &&
	u -V | grep -q '^umctl[-a-z]* (um) [0-9]'
}

# --sysroot DIR (DIR stands for /) before or after the command, with or
# without '=', and the older -r/--sysfs-root DIR and $UMM_SYSFS_ROOT (DIR
# stands for /sys): the same tree, the same output.
sysroot_forms() {
	local f bad=0
	u get >"$TMP/want" || return 1
	for f in "--sysroot=$TMP get" "get --sysroot $TMP" "-r $R get" \
		"get --sysfs-root=$R" "--sysfs-root $R get"; do
		# shellcheck disable=SC2086
		"$UMCTL" $f | cmp -s - "$TMP/want" || { echo "$f"; bad=1; }
	done
	UMM_SYSFS_ROOT=$R "$UMCTL" get | cmp -s - "$TMP/want" || bad=1
	expect 2 'needs a directory' "$UMCTL" get --sysroot || bad=1
	return $bad
}

# The alert rules and the dashboard shipped in dist/monitoring: the rules
# pass promtool's check and their unit tests (each alert fires on series
# that warrant it, and only there), and every umm_ series either names is
# one umctl metrics writes (a renamed series would leave a silent panel).
monitoring() {
	local m=$here/../../dist/monitoring names
	promtool check rules "$m/umm.rules.yml" &&
	(cd "$m" && promtool test rules umm.rules.test.yml) || return 1
	u metrics >"$TMP/all.prom" || return 1
	names=$( { grep -ho 'umm_[a-z_]*' "$m/umm.rules.yml"
		python3 -c 'import json, sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p["targets"]:
        print(t["expr"])' "$m/umm-dashboard.json" |
			grep -o 'umm_[a-z_]*'; } | sort -u) || return 1
	[ -n "$names" ] || return 1
	for n in $names; do
		grep -q "^# TYPE ${n%_bucket} " "$TMP/all.prom" ||
			{ echo "$n: not a series of umctl metrics"; return 1; }
	done
}

tap_begin 27
tap_check "umctl.status_text" status_text
tap_check "umctl.status_json" status_json
tap_check "umctl.clients" clients
tap_check "umctl.clients_without_debugfs" clients_no_debugfs
tap_check "umctl.cgroups" cgroups
tap_check "umctl.cgroups_missing_malformed_refused" cgroups_errors
tap_check "umctl.get_set" get_set
tap_check "umctl.ring_bytes_max_range" ring_bytes_max
tap_check "umctl.grammar_of_the_module" grammar
tap_check "umctl.cgroup_knobs_checked" cgroup_knobs
tap_check "umctl.cgroup_absent_not_supported" cgroup_absent
tap_check "umctl.byte_floor_needs_force" floor
tap_check "umctl.sysroot_and_older_forms" sysroot_forms
tap_check "umctl.bad_values_refused_before_writing" bad_values
tap_check "umctl.inject" inject
if command -v promtool >/dev/null; then
	tap_check "umctl.metrics_text" metrics_text
	tap_check "umctl.metrics_follow_changes_escape_names" \
		metrics_changes_and_names
	tap_check "umctl.metrics_cgroups_bounded_64_and_other" \
		metrics_cgroups_bounded
	tap_check "umctl.metrics_file_atomic" metrics_file
	tap_check "umctl.metrics_module_absent_no_debugfs" metrics_partial
else
	for t in text follow_changes_escape_names cgroups_bounded_64_and_other \
		file_atomic module_absent_no_debugfs; do
		tap_skip "umctl.metrics_$t" "promtool not installed (prometheus)"
	done
fi
if command -v promtool >/dev/null && command -v python3 >/dev/null; then
	tap_check "umctl.monitoring_rules_and_dashboard" monitoring
else
	tap_skip "umctl.monitoring_rules_and_dashboard" "needs promtool and python3"
fi
tap_check "umctl.metrics_usage" metrics_usage
tap_check "umctl.kernel_errno_reported" kernel_refuses
tap_check "umctl.module_absent" no_module
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	tap_check "umctl.not_root" not_root
else
	tap_skip "umctl.not_root" "needs root and setpriv to become nobody"
fi
tap_check "umctl.help_version" help_version
if "$JC" "$TMP/s.json" >/dev/null 2>&1 && "$JC" "$TMP/c.json" >/dev/null 2>&1 &&
	"$JC" "$TMP/cg.json" >/dev/null 2>&1
then
	tap_ok "umctl.json_valid"
else
	tap_fail "umctl.json_valid"
fi
tap_end
