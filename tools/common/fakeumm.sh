# SPDX-License-Identifier: MIT
# fakeumm.sh - a fake umm.ko tree for the tools' checks. Source it, then
#   fake_umm ROOT            ROOT/kernel/mm/umm with the files, modes and
#                            defaults of Documentation/ABI/testing/
#                            sysfs-kernel-mm-umm (the knobs from the tools'
#                            table, as build/ut-knobs prints it, or
#                            $UT_KNOBS): nodes 0 and 1 (1 GiB each),
#                            gpu0..gpu15, cgroup/ (remove it for a module
#                            without it), an empty inject file,
#                            ROOT/kernel/debug/umm/clients with two clients
#                            and .../cgroups with two watched cgroups
#                            (/slurm/job42 under a limit, low;
#                            "/system.slice/my trainer.service" without)
#   fake_cgroups ROOT N      N watched cgroups in place of those:
#                            /fake/cg1 .. /fake/cgN under a limit of 1 GiB,
#                            cgI using I MiB with 1024 - I MiB of room (the
#                            last has the least), I clients, 2*I events
#   fake_set ROOT REL VALUE  change one file
#   expect RC PATTERN CMD... CMD exits RC and its stderr matches PATTERN
#                            (the caller's $TMP holds its output)
# ROOT stands for /sys: it is DIR/sys for the tools' --sysroot DIR, or the
# DIR of their older --sysfs-root DIR.

expect() {
	local rc=$1 pat=$2
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	local got=$?
	if [ $got -ne "$rc" ] || ! grep -q -- "$pat" "$TMP/err"; then
		echo "'$*': exit $got (want $rc), stderr:"; cat "$TMP/err"
		return 1
	fi
}

fake_set() {
	printf '%s\n' "$3" >"$1/kernel/mm/umm/$2"
}

# _fake_files DIR MODE NAME=VALUE...
_fake_files() {
	local d=$1 mode=$2 kv
	shift 2
	mkdir -p "$d"
	for kv in "$@"; do
		printf '%s\n' "${kv#*=}" >"$d/${kv%%=*}"
		chmod "$mode" "$d/${kv%%=*}"
	done
}

_fake_knobs_bin=${UT_KNOBS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/build/ut-knobs}

# _fake_knobs DIR [KIND ID]: the knobs of the table at their defaults under
# DIR (ROOT/kernel/mm/umm): the global ones, those of KIND (nodes/node,
# gpus/gpu) for its directory ID, or those of a directory without an id
# (KIND cgroup/, no ID).
_fake_knobs() {
	local d=$1 kind=${2-} id=${3-} name def f tab
	tab=$("$_fake_knobs_bin") || return 1
	while read -r name _ _ _ def _; do
		case $name in
		'#'*) continue ;;
		*N/*) if [ -z "$kind" ] || [ "${name%%N/*}" != "$kind" ]; then
			continue
		     fi
		     f=$kind$id/${name#*N/} ;;
		*/*) [ -n "$kind" ] && [ "${name%/*}/" = "$kind" ] || continue
		     f=$name ;;
		*) [ -z "$kind" ] || continue; f=$name ;;
		esac
		_fake_files "$d/$(dirname "$f")" 0600 "$(basename "$f")=$def"
	done <<<"$tab"
}

_fake_cg_header='id path usage_bytes limit_bytes room_bytes level clients eta_ms fill_bps events'

fake_cgroups() {
	local f=$1/kernel/debug/umm/cgroups i
	{
		echo "$_fake_cg_header"
		for i in $(seq 1 "$2"); do
			echo "$((1000 + i)) /fake/cg$i $((i << 20)) $((1 << 30))" \
				"$(((1024 - i) << 20)) normal $i 4294967295 0 $((2 * i))"
		done
	} >"$f"
	fake_set "$1" cgroup/watched "$2"
}

fake_umm() {
	local u=$1/kernel/mm/umm n g
	mkdir -p "$u"
	_fake_knobs "$u" || return 1
	# ring_bytes: the two clients' rings of 257 records of 64 bytes
	_fake_files "$u" 0400 api_version=1 clients=2 events_sent=40 \
		events_dropped=1 overflows=1 acks=12 bytes_freed=268435456 \
		ack_latency_ns_avg=1500000 ack_latency_ns_max=4000000 \
		shrinker_calls=3 oom_calls=0 oom_deferred=0 ring_bytes=32896
	: >"$u/inject"
	chmod 0200 "$u/inject"
	for n in 0 1; do
		mkdir -p "$u/nodes/node$n"
		_fake_knobs "$u" nodes/node "$n" || return 1
		_fake_files "$u/nodes/node$n" 0400 level=normal \
			critical_effective_bytes=53687091 \
			free_bytes=$((600 << 20)) total_bytes=$((1 << 30)) \
			resident_bytes=$((64 << 20)) \
			reclaimable_bytes=$((32 << 20)) eta_ms=4294967295 \
			events=$((n * 5))
	done
	for g in $(seq 0 15); do
		mkdir -p "$u/gpus/gpu$g"
		_fake_knobs "$u" gpus/gpu "$g" || return 1
		_fake_files "$u/gpus/gpu$g" 0400 level=normal used_bytes=0 \
			reclaimable_bytes=0 events=0
	done
	mkdir -p "$u/cgroup"
	_fake_knobs "$u" cgroup/ || return 1
	_fake_files "$u/cgroup" 0400 watched=2
	mkdir -p "$1/kernel/debug/umm"
	cat >"$1/kernel/debug/umm/clients" <<-'EOF'
	pid name priority ready queue_len queued events drops acks bytes_freed ack_ns_avg tiers(resident/reclaimable) ack_ns_sum ack_ms_le(1,2,5,10,20,50,100,200,500,1000,2000,5000,10000,inf)
	4242 umtrain 0 1 256 0 30 1 10 201326592 1200000 node0:67108864/33554432,gpu1:1048576/0 12000000 2,7,1,0,0,0,0,0,0,0,0,0,0,0
	4343 my\040trainer\0402 -5 1 256 2 10 0 2 67108864 2100000 - 4200000 0,0,2,0,0,0,0,0,0,0,0,0,0,0
	EOF
	chmod 0400 "$1/kernel/debug/umm/clients"
	# job42: 3.5 of 4 GiB used, 12.5 % left (low), 4 MiB/s less room
	cat >"$1/kernel/debug/umm/cgroups" <<-EOF
	$_fake_cg_header
	4097 /slurm/job42 3758096384 4294967296 536870912 low 1 90000 4194304 2
	4098 /system.slice/my\040trainer.service 268435456 18446744073709551615 18446744073709551615 normal 1 4294967295 0 0
	EOF
	chmod 0400 "$1/kernel/debug/umm/cgroups"
}
