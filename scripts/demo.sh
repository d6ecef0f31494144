#!/bin/bash
# demo.sh - the kernel-assisted scene of `make demo`.
#
# A trainer bound to NUMA node 0 keeps stepping while umpressure fills node 0
# with real memory; umm.ko warns before the node runs out, libum moves the
# trainer's host copies to node 1 and ACKs. The lines below stream as it
# happens; a summary ends it: events, bytes moved per tier, lead time to the
# critical level, OOM kills (from the kernel: must be 0), the final state
# checksum against an unconstrained run of the same steps, and PASS/FAIL.
#
# --cgroup is the container scene: the same trainer in a cgroup v2 whose
# memory.max (320 MiB) is below what it and the filler, umpressure --cgroup
# in the same cgroup, would take together; umm.ko warns the trainer before
# the limit, libum writes its released host copies to its spill directory
# (LIBUM_SPILL_DIR, on a disk) and ACKs. Its summary adds the cgroup's
# limit and usage, bytes spilled and memory.events (oom_kill must be 0).
#
# Where /dev/umm works on this machine (module loaded, device openable;
# for --cgroup also a cgroup v2 memory controller) the scene runs here;
# otherwise in the VM rig (tests/vm/run-vm.sh: Debian's 6.1 kernel, or
# 6.12, two NUMA nodes of 512 MiB, software emulation; --cgroup adds a
# virtio ext4 disk for the spill).
#
# Usage: scripts/demo.sh [--vm] [--kernel SERIES] [--steps N] [--rate MIB_S]
#                        [--cgroup] [--no-reaction]
#   --vm            use the VM even where /dev/umm works here
#   --cgroup        the container scene (above) instead of the node one
#   --no-reaction   the control run: libum ignores the events
#                   (LIBUM_PRESSURE=0); expect the OOM killer and a FAIL
#   --kernel S      kernel series for the VM (default: 6.1, else 6.12)
#   --steps N       trainer steps (default 30; both runs do exactly N)
#   --rate MIB_S    how fast umpressure fills node 0, or the cgroup
#                   (default 16; 1..4096)
# Exit status: 0 PASS, 1 FAIL, 2 could not run.
# Expects the programs built (the top-level `make demo` does that).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
demo=$top/examples/demo/build/demo
ump=$top/tools/umpressure/build/umpressure-static
work=$top/examples/demo/build
force_vm=0 series= steps=30 extra= rate=16 scene=
die() { echo "demo.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--vm) force_vm=1; shift ;;
	--kernel) series=$2; shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--no-reaction) extra=--no-reaction; shift ;;
	--cgroup) scene=--cgroup; shift ;;
	-h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done
case "$steps" in ''|*[!0-9]*) die "--steps wants a number" ;; esac
case "$rate" in ''|*[!0-9]*|0*) die "--rate wants MiB/s, 1..4096" ;; esac
[ "$rate" -le 4096 ] || die "--rate wants MiB/s, 1..4096"
[ -x "$demo" ] || die "$demo is missing (make -C examples/demo)"
[ -x "$ump" ] || die "$ump is missing (make -C tools/umpressure)"

t0=${EPOCHREALTIME/,/.}
elapsed() { awk -v a="$t0" -v b="${EPOCHREALTIME/,/.}" 'BEGIN { printf "%5.1f", b - a }'; }
say() { printf '[%s s] %s\n' "$(elapsed)" "$*"; }

# pretty (the scene's lines for a person) and demo_lines_bad (its judge)
# shellcheck source=demo-lines.sh
. "$top/scripts/demo-lines.sh"

# Where the scene's "DEMO-RESULT k=v" lines are, get the value of k.
val() { grep -h '^DEMO-' "$2" | grep -o "\b$1=[^ ]*" | tail -n 1 | cut -d= -f2; }

if [ -n "$scene" ]; then
	echo "== um demo: umm.ko warns before the memory cgroup's limit, libum spills optimizer state to disk"
else
	echo "== um demo: umm.ko warns, libum moves optimizer state off a filling node"
fi
say "reference: the same trainer, $steps steps, no pressure, no module (host, sim backend)"
"$demo" --reference --steps "$steps" >"$work/reference.log" 2>&1 ||
	{ cat "$work/reference.log"; die "the reference run failed"; }
ref=$(val checksum "$work/reference.log")
say "reference checksum $ref"

host_umm=0
if [ "$force_vm" = 0 ] && [ -c /dev/umm ] && (exec 3<>/dev/umm) 2>/dev/null &&
   [ -d /sys/kernel/mm/umm/nodes/node1 ]; then
	host_umm=1
fi
# the container scene also wants the memory controller on cgroup v2
if [ -n "$scene" ] && ! grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	host_umm=0
fi

res=$work/scene.log
if [ "$host_umm" = 1 ]; then
	where="this machine ($(uname -r), /dev/umm)"
	say "scene: /dev/umm works here; running on $where"
	oom0=$(dmesg 2>/dev/null | grep -c 'Killed process')
	mkdir -p "$work/bin" "$work/spill"
	ln -sf "$ump" "$work/bin/umpressure"
	PATH=$work/bin:$PATH LIBUM_SPILL_DIR=$work/spill "$demo" $scene \
		--steps "$steps" --rate "$rate" $extra 2>&1 | tee "$res" | pretty
	oom_dmesg=$(( $(dmesg 2>/dev/null | grep -c 'Killed process') - oom0 ))
	judge=0
else
	if [ -z "$series" ]; then
		for s in 6.1 6.12; do
			"$top/tests/vm/kernels.sh" "$s" >/dev/null 2>&1 && { series=$s; break; }
		done
	fi
	[ -n "$series" ] || die "no /dev/umm here and no Debian 6.1/6.12 kernel with headers (scripts/deps.sh fetches them)"
	kline=$("$top/tests/vm/kernels.sh" --paths "$series") ||
		die "no kernel $series with headers (scripts/deps.sh fetches it)"
	read -r ver _ kdir _ <<-EOF
	$kline
	EOF
	where="VM: Linux $ver under qemu, 2 NUMA nodes x 512 MiB"
	say "scene: no usable /dev/umm here ($(uname -r)); booting the VM rig ($ver)"
	# umm.ko once per kernel and source change, in a private copy of kmod/
	# (run-vm.sh would rebuild it on every boot).
	kb=$work/kmod-$ver
	ko=$kb/kmod/umm.ko
	if [ ! -f "$ko" ] || [ -n "$(find "$top/kmod" "$top/include" "$top/VERSION" -newer "$ko" \
		\( -name '*.c' -o -name '*.h' -o -name Kbuild -o -name Makefile \
		-o -name VERSION \) \
		-print -quit)" ]; then
		say "building umm.ko for $ver"
		rm -rf "$kb"
		"$top/kmod/scripts/copytree.sh" "$top" "$kb"
		make -C "$kdir" M="$kb/kmod" modules \
			>"$kb/build.log" 2>&1 || { cat "$kb/build.log"; die "umm.ko does not build for $ver"; }
	fi
	say "booting it (software emulation: 10-20 s to the first line)"
	tag=demo vmargs=()
	if [ -n "$scene" ]; then
		# the spill on a fresh ext4 disk: the guest's /tmp is a tmpfs,
		# whose pages would stay charged to the cgroup
		tag="demo-cgroup"
		rm -f "$work/spill.img"
		truncate -s 512M "$work/spill.img" &&
			mkfs.ext4 -q -F "$work/spill.img" ||
			die "cannot make the spill disk (mkfs.ext4: scripts/deps.sh)"
		vmargs=(--disk "$work/spill.img" --env LIBUM_SPILL_DIR=/mnt/um-demo-spill)
	fi
	# The rig writes the guest's output to tap.log as it comes: follow it
	# (a fresh one: the rig creates it again for this boot).
	vmb=$top/tests/vm/build/$ver/$tag
	rm -f "$vmb/tap.log" "$work/stream"
	mkfifo "$work/stream"
	pretty <"$work/stream" &
	prettypid=$!
	tail -n +1 -F "$vmb/tap.log" 2>/dev/null >"$work/stream" &
	tailpid=$!
	UM_VM_NAME=$tag "$top/tests/vm/run-vm.sh" --kernel "$ver" --ko "$ko" \
		--tag "$tag" --mem 512 --timeout 600 "${vmargs[@]}" \
		--file "$ump:/t/umpressure" \
		-- "$demo $scene --steps $steps --rate $rate $extra" >"$work/judge.log" 2>&1
	judge=$?
	sleep 0.5	# let tail see the end of the file
	kill "$tailpid" 2>/dev/null
	wait "$prettypid" 2>/dev/null
	rm -f "$work/stream"
	cp "$vmb/tap.log" "$res" 2>/dev/null
	rm -f "$work/spill.img"	# the spill's files are gone with the run
	# the kernel's own word: the OOM killer's report in the guest's log
	# (the console has each report once; tap.log may repeat them)
	oom_dmesg=$(grep -c 'Killed process' "$vmb/console.log" 2>/dev/null)
fi

# the value, or "?" where the scene did not get that far
v() { local x; x=$(val "$1" "$res"); echo "${x:-?}"; }
got=$(val checksum "$res")
steps_done=$(val steps "$res")
oom_vm=$(val oom_kills "$res")
events=$(val umm_events "$res")
fails=()
if [ -z "$(val trainer_status "$res")" ]; then
	fails+=("the scene did not finish (see $res)")
elif [ "$(val killed "$res")" != 0 ]; then
	fails+=("the trainer was killed (SIGKILL)")
else
	[ "$(val error "$res")" = 0 ] || fails+=("the trainer failed (error $(val error "$res"))")
	[ "$(val bad "$res")" = 0 ] || fails+=("$(val bad "$res") region(s) differ from the expected contents")
	[ "$steps_done" = "$steps" ] || fails+=("the trainer did ${steps_done:-?} of $steps steps")
fi
[ "$got" = "$ref" ] || fails+=("final checksum ${got:-none} is not the reference $ref")
# the kernel's oom_kill counter (/proc/vmstat, read by the program) and
# the kernel log: the larger
oom=${oom_dmesg:-0}
[ "${oom_vm:-0}" -gt "$oom" ] 2>/dev/null && oom=$oom_vm
[ "$oom" = 0 ] || fails+=("$oom OOM kill(s) (kernel log and /proc/vmstat oom_kill)")
[ -z "$extra" ] && ! [ "${events:-0}" -gt 0 ] 2>/dev/null &&
	fails+=("no umm.ko event reached the trainer")
if [ -n "$scene" ]; then
	# the cgroup's own word: its memory.events, and the spill
	cg_kill=$(val cg_oom_kill "$res")
	[ "${cg_kill:-?}" = 0 ] ||
		fails+=("memory.events oom_kill +${cg_kill:-?} in the cgroup")
	[ -z "$extra" ] && ! [ "$(val cg_events "$res")" -gt 0 ] 2>/dev/null &&
		fails+=("no umm.ko event about the cgroup reached the trainer")
	[ -z "$extra" ] && ! [ "$(val spill_mib "$res")" -gt 0 ] 2>/dev/null &&
		fails+=("nothing was spilled")
fi
[ "$judge" = 0 ] || fails+=("the VM rig judged the run failed ($work/judge.log)")

# ms from a to b (seconds)
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
lead=$(val lead_ms "$res") first=$(val first_event_s "$res") crit=$(val critical_s "$res")
what="node 0" key=node0
[ -n "$scene" ] && what="the cgroup" key=cgroup
if [ -z "$lead" ]; then
	lead_txt=?
elif [ "${first%%.*}" = -1 ]; then
	lead_txt="no pressure event reached the trainer$([ "${crit%%.*}" != -1 ] && echo "; $what critical at $crit s")"
elif [ "${crit%%.*}" = -1 ]; then
	pk=$(val peak_s "$res")
	lead_txt="never reached critical; its worst level, $(val ${key}_max_level "$res"), came $(ms "$first" "$pk") ms after the first event"
else
	lead_txt="$lead ms (first event at $first s, critical at $crit s)"
fi
if [ -n "$scene" ]; then
	lim=$(val limit_s "$res")
	if [ -z "$lim" ]; then
		limit_txt="?"
	elif [ "${lim%%.*}" = -1 ]; then
		limit_txt="never hit (memory.events max +0)"
	elif [ "${first%%.*}" = -1 ]; then
		limit_txt="hit at $lim s, no event before it"
	else
		limit_txt="hit at $lim s, $(ms "$first" "$lim") ms after the first event (memory.events max +$(v cg_max))"
	fi
	cat <<EOF

== summary ($where)
  cgroup                          $(v cgroup): memory.max $(v cg_limit_mib) MiB; used $(v cg_start_mib) MiB with the trainer up, peak $(v cg_peak_mib) MiB
  filler (umpressure --cgroup)    $(v fill_held_mib) of $(v fill_mib) MiB taken at $(v fill_mib_s) MiB/s (asked $rate), exit $(v umpressure_status)
  events from umm.ko received     $(v umm_events), $(v cg_events) about the cgroup (ACKs $(v acks): $(v acked_mib) MiB freed; event-to-ACK avg $(v ack_avg_ms) ms, max $(v ack_max_ms) ms)
  host copies, node 0 -> node 1   $(v to_node1_mib) MiB moved (none should: moving frees nothing in a cgroup)
  device <-> host (budget)        $(v evict_mib) MiB evicted, $(v restore_mib) MiB restored (sim device: one region fits)
  spill to disk                   $(v spill_mib) MiB written (LIBUM_SPILL_DIR), $(v spill_end_mib) MiB there at the end
  lead time, event -> critical    $lead_txt
  the limit (memory.max)          $limit_txt
  memory.events                   oom +$(v cg_oom), oom_kill +$(v cg_oom_kill)
  OOM kills (kernel)              $oom (kernel log ${oom_dmesg:-?}, /proc/vmstat oom_kill +$(v oom_kills))
  trainer                         $(v steps) of $steps steps, $(v bad) region(s) differ
  final state checksum            ${got:-none}
  unconstrained reference         $ref
  wall time                       $(elapsed) s
EOF
	if [ ${#fails[@]} = 0 ]; then
		echo "PASS: no OOM kill (memory.events oom_kill 0), checksum equal to the unconstrained run"
		exit 0
	fi
	for f in "${fails[@]}"; do echo "FAIL: $f"; done
	exit 1
fi
cat <<EOF

== summary ($where)
  events from umm.ko received     $(v umm_events) (ACKs $(v acks): $(v acked_mib) MiB freed; event-to-ACK avg $(v ack_avg_ms) ms, max $(v ack_max_ms) ms)
  host copies, node 0 -> node 1   $(v to_node1_mib) MiB moved (node 0 held $(v node0_start_mib) MiB at the start; node 1 peak $(v node1_peak_mib) MiB)
  moves between nodes             $(v moves_paged) by move_pages (whole pool chunks), $(v moves_copied) copied
  host copies, node 1 -> node 0   $(v to_node0_mib) MiB back home once node 0 had room
  device <-> host (budget)        $(v evict_mib) MiB evicted, $(v restore_mib) MiB restored (sim device: one region fits)
  spill to disk                   0 MiB (no spill tier in this scene; see tests/e2e e2e_spill)
  lead time, event -> critical    $lead_txt
  OOM kills (kernel)              $oom (kernel log ${oom_dmesg:-?}, /proc/vmstat oom_kill +$(v oom_kills))
  trainer                         $(v steps) of $steps steps, $(v bad) region(s) differ
  final state checksum            ${got:-none}
  unconstrained reference         $ref
  wall time                       $(elapsed) s
EOF
if [ ${#fails[@]} = 0 ]; then
	echo "PASS: no OOM kill, checksum equal to the unconstrained run"
	exit 0
fi
for f in "${fails[@]}"; do echo "FAIL: $f"; done
exit 1
