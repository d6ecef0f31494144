#!/bin/bash
# soak.sh - `make soak`: the long runs that `make check` has no time for.
#
#  1. e2e: the end-to-end scenarios of tests/e2e (those of the boot with
#     umm.ko and the spill disk: test_numa e2e_node_fill e2e_spill
#     e2e_priority e2e_oom_off e2e_disable; and e2e_nomodule, booted
#     without the module) SOAK_RUNS times on each kernel of SOAK_KERNELS.
#     umm.ko is built once per kernel; each boot runs the list
#     SOAK_RUNS_PER_BOOT times (soak-clean.sh between two runs puts back
#     what a run may change, and fails the run that left a process, a
#     client or a hot node behind), so a kernel takes SOAK_RUNS /
#     SOAK_RUNS_PER_BOOT boots with the module and as many without. Each
#     run is judged and counted on its own (runsplit.awk cuts the boot's
#     log): a run passes when every command of it passed in both boots;
#     a boot that dies fails the runs it did not finish;
#  2. stress: libum under random acquire/release/evict/budget/shed/free from
#     many threads for SOAK_SECONDS, built with ASan+UBSan and with TSan,
#     bytes checked by XXH3-64 (stress.c; --strict: known libum defects
#     fail too);
#  3. sweep: the fill-rate sweep (fill-sweep.sh) on SOAK_SWEEP_KERNEL,
#     SOAK_SWEEP_RUNS boots per rate of SOAK_SWEEP_RATES.
# Then one summary: runs passed per kernel, OOM kills (unexpected, and the
# ones e2e_oom_off must cause), bytes lost by checksum, the slowest
# event-to-ACK, the stress figures, the fastest fill rate survived.
#
# Environment (each checked; defaults in brackets):
#   SOAK_PARTS          which parts, in order ["e2e stress sweep"]
#   SOAK_RUNS           e2e runs per kernel [20]
#   SOAK_RUNS_PER_BOOT  e2e runs in one boot [5]; the last boot of a
#                       kernel takes what is left
#   SOAK_KERNELS        kernel series for e2e ["6.1 6.12"]
#   SOAK_PARALLEL       1: the kernels' e2e runs at once (each has its own
#                       build and work directories; wants 4 or more CPUs,
#                       two qemu with two CPUs each), 0: one after the
#                       other [0]
#   SOAK_SECONDS        each stress run [60]
#   SOAK_THREADS        stress threads [8]
#   SOAK_SWEEP_KERNEL   [6.1]
#   SOAK_SWEEP_RUNS     boots per fill rate [2]
#   SOAK_SWEEP_RATES    MiB/s, ascending ["16 32 64 128 256 512"]
#   E2E_FILL_RATE       where set, the e2e node scenarios' fill rate, as
#                       for make -C tests/e2e check (checked in the guest)
# Logs under tests/soak/build/soak/ (a part's old logs go when it runs
# again; e2e: e2e/<kernel>/boot-<b>/{umm,nomod}/ with run-<i>.tap.log and
# .judge.log per run); the summary also in summary.txt there, and the e2e
# figures per kernel as JSON lines in summary.json.
# Exit status 0 when every part passed (a sweep passes when it ran).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/lib.sh"

case "${1:-}" in -h|--help) usage "$0"; exit 0 ;; '') ;; *) die "no arguments (see --help)" ;; esac

parts=${SOAK_PARTS:-e2e stress sweep}
runs=${SOAK_RUNS:-20}
per_boot=${SOAK_RUNS_PER_BOOT:-5}
kernels=${SOAK_KERNELS:-6.1 6.12}
parallel=${SOAK_PARALLEL:-0}
secs=${SOAK_SECONDS:-60}
threads=${SOAK_THREADS:-8}
sweep_kernel=${SOAK_SWEEP_KERNEL:-6.1}
export SOAK_SWEEP_RUNS=${SOAK_SWEEP_RUNS:-2}
export SOAK_SWEEP_RATES=${SOAK_SWEEP_RATES:-16 32 64 128 256 512}
for p in $parts; do
	case "$p" in e2e|stress|sweep) ;; *) die "SOAK_PARTS: unknown part '$p' (e2e stress sweep)" ;; esac
done
want_count SOAK_RUNS "$runs"
want_count SOAK_RUNS_PER_BOOT "$per_boot"
case "$parallel" in 0|1) ;; *) die "SOAK_PARALLEL wants 0 or 1, not '$parallel'" ;; esac
want_count SOAK_SECONDS "$secs"
want_count SOAK_THREADS "$threads"
want_count SOAK_SWEEP_RUNS "$SOAK_SWEEP_RUNS"
for k in $kernels $sweep_kernel; do
	"$top/tests/vm/kernels.sh" "$k" >/dev/null 2>&1 ||
		die "kernel series '$k' has no kernel with headers (scripts/deps.sh fetches it)"
done

out=$here/build/soak
mkdir -p "$out"
summary=()
failed=0
say() { echo "$*"; summary+=("$*"); }

# The hang guard of a boot, per run in it: a whole e2e run takes 2-7 min
# on a loaded 2-CPU machine under software emulation.
RUN_GUARD_S=900

# The two command lists, as tests/e2e's Makefile runs them in make check.
read_lists() {
	local kind progs
	while read -r kind progs; do
		case "$kind" in
		umm:) umm_list=$progs ;;
		nomod:) nomod_list=$progs ;;
		esac
	done < <(make -s --no-print-directory -C "$top/tests/e2e" print-lists)
	[ -n "${umm_list:-}" ] && [ -n "${nomod_list:-}" ] ||
		die "make -C tests/e2e print-lists named no scenarios"
}

# A fresh ext4 spill disk for every boot: nothing left from an earlier one.
make_disk() {
	rm -f "$1"
	truncate -s 512M "$1" && mkfs.ext4 -q -F "$1"
}

# e2e_boot VER KIND DIR COUNT PROGRAM...: one boot (KIND umm: with umm.ko,
# built for VER by the first such boot and reused after, and a spill disk;
# nomod: without the module) running COUNT runs of the programs, then its
# log cut into runs: DIR/run-<i>.tap.log and the run's commands .cmds.
e2e_boot() {
	local ver=$1 kind=$2 d=$3 count=$4 i p ko args=()
	shift 4
	mkdir -p "$d"
	for i in $(seq 1 "$count"); do run_cmds "$i" "$@"; done >"$d/cmds"
	for p in "$@"; do args+=(--bin "$top/tests/e2e/build/$p"); done
	if [ "$kind" = umm ]; then
		make_disk "$kdir/spill.img" || die "cannot make $kdir/spill.img"
		[ -f "$kdir/umm.ko" ] && args+=(--ko "$kdir/umm.ko")
		args+=(--disk "$kdir/spill.img")
	else
		args+=(--no-module)
	fi
	[ -n "${E2E_FILL_RATE:-}" ] && args+=(--env "E2E_FILL_RATE=$E2E_FILL_RATE")
	nice "$top/tests/vm/run-vm.sh" --kernel "$ver" --tag "soak-$kind" \
		--mem 512 --timeout $((count * RUN_GUARD_S + 300)) --out "$d" \
		--file "$UMP:/t/umpressure" \
		--file "$here/soak-clean.sh:/t/soak-clean" \
		"${args[@]}" --cmds "$d/cmds" >"$d/judge.log" 2>&1
	if [ "$kind" = umm ] && [ ! -f "$kdir/umm.ko" ]; then
		ko=$(find "$top/tests/vm/build/$ver/soak-umm/src/kmod" -name umm.ko 2>/dev/null | head -n 1)
		[ -n "$ko" ] && cp "$ko" "$kdir/umm.ko"
	fi
	split_boot "$d/tap.log" "$d" >/dev/null
	for i in $(seq 1 "$count"); do run_cmds "$i" "$@" >"$d/run-$i.cmds"; done
}

# e2e_kernel SERIES: SOAK_RUNS runs on one kernel, SOAK_RUNS_PER_BOOT a
# boot; each run judged and counted apart. The kernel's summary line in
# e2e/<ver>/summary.txt, its JSON in summary.json, its verdict in rc.
e2e_kernel() {
	local series=$1 ver b first count i rc bd start wall
	ver=$("$top/tests/vm/kernels.sh" "$series")
	kdir=$out/e2e/$ver
	mkdir -p "$kdir"
	e2e_reset
	start=$(date +%s)
	b=0 first=1
	while [ "$first" -le "$runs" ]; do
		b=$((b + 1))
		count=$((runs - first + 1))
		[ "$count" -gt "$per_boot" ] && count=$per_boot
		bd=$kdir/boot-$b
		echo "# e2e $ver: boot $b, runs $first-$((first + count - 1))"
		# shellcheck disable=SC2086 # the lists are words
		e2e_boot "$ver" umm "$bd/umm" "$count" $umm_list
		# shellcheck disable=SC2086
		e2e_boot "$ver" nomod "$bd/nomod" "$count" $nomod_list
		for i in $(seq 1 "$count"); do
			rc=0
			judge_run "$bd/umm/run-$i.tap.log" "$bd/umm/run-$i.cmds" "$ver" 1 || rc=1
			judge_run "$bd/nomod/run-$i.tap.log" "$bd/nomod/run-$i.cmds" "$ver" 0 || rc=1
			e2e_account "$rc" "$bd/umm/run-$i.tap.log" "$bd/nomod/run-$i.tap.log"
			printf '#   %s run %d (boot %d): %s (%s)\n' "$ver" \
				$((first + i - 1)) "$b" "$e_line" "$bd/*/run-$i.judge.log"
		done
		first=$((first + count))
	done
	wall=$(($(date +%s) - start))
	printf '%s; %d boot(s) with umm.ko and %d without, up to %d run(s) each; %d min %d s wall, %d s per run (load %s)\n' \
		"$(e2e_summary "$series")" "$b" "$b" \
		$((runs < per_boot ? runs : per_boot)) $((wall / 60)) \
		$((wall % 60)) $((wall / runs)) "$(cut -d' ' -f1-3 /proc/loadavg)" \
		>"$kdir/summary.txt"
	e2e_json "$series" >"$kdir/summary.json"
	e2e_verdict
	echo $? >"$kdir/rc"
}

part_e2e() {
	local series ver kdir
	rm -rf "$out/e2e" "$out/summary.json"
	# The scenarios' static programs: built once, for every kernel.
	nice make -s -C "$top/tests/e2e" all >"$out/e2e-build.log" 2>&1 ||
		die "tests/e2e does not build (see $out/e2e-build.log)"
	need_e2e_built
	read_lists
	for series in $kernels; do
		if [ "$parallel" = 1 ]; then
			e2e_kernel "$series" &
		else
			e2e_kernel "$series"
		fi
	done
	wait
	for series in $kernels; do
		ver=$("$top/tests/vm/kernels.sh" "$series")
		kdir=$out/e2e/$ver
		if [ -s "$kdir/summary.txt" ]; then
			say "$(cat "$kdir/summary.txt")"
			cat "$kdir/summary.json" >>"$out/summary.json"
		else
			say "e2e $series: no summary (see the log above)"
		fi
		[ "$(cat "$kdir/rc" 2>/dev/null)" = 0 ] || failed=1
	done
}

# A number of the stress run's JSON line (the last line of $log).
jnum() { tail -n 1 "$log" | grep -o "\"$1\":[0-9.]*" | cut -d: -f2; }

part_stress() {
	local build log rc l
	rm -rf "$out"/stress-* "$out"/spill-*
	for build in asan tsan; do
		log=$out/stress-$build.log
		rm -rf "$out/spill-$build"
		echo "# stress: $build, $secs s, $threads threads"
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		TSAN_OPTIONS=halt_on_error=1:report_signal_unsafe=0 \
			nice "$here/build/stress-$build" --seconds "$secs" \
			--threads "$threads" --spill-dir "$out/spill-$build" \
			--strict --json >"$log" 2>&1
		rc=$?
		if tail -n 1 "$log" | grep -q '^{'; then
			say "stress $build: $([ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc)"); $(jnum seconds) s, $(jnum threads) threads, $(jnum ops) ops, $(($(jnum verified_bytes) / 1048576)) MiB verified by checksum, bytes lost $(jnum lost_bytes), unexpected errors $(jnum unexpected_errors), known libum defects $(jnum known_defects), regions leaked $(jnum leaked_regions)"
			while IFS= read -r l; do
				say "  ${l#\# stress: }"
			done < <(grep -h '^# stress: known' "$log")
		else
			say "stress $build: FAIL (exit $rc), no figures: a crash or a sanitizer report (see $log)"
		fi
		[ $rc = 0 ] || failed=1
	done
}

part_sweep() {
	local log=$out/sweep.log
	rm -rf "$out"/sweep*
	"$here/fill-sweep.sh" --kernel "$sweep_kernel" --out "$out/sweep" \
		--json "$out/sweep.json" | tee "$log"
	[ "${PIPESTATUS[0]}" = 0 ] || failed=1
	say "sweep $sweep_kernel ($SOAK_SWEEP_RUNS run(s) per rate): $(grep '^# fastest' "$log" | sed 's/^# //')"
	while IFS= read -r l; do summary+=("  ${l#\# }"); done < <(sed -n '/^# MiB\/s/,/^# fastest/p' "$log" | sed '$d')
}

for p in $parts; do
	"part_$p"
done
{
	echo "== soak summary ($(date -u '+%F %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
	printf '%s\n' "${summary[@]}"
	[ $failed = 0 ] && echo "SOAK PASS" || echo "SOAK FAIL"
} | tee "$out/summary.txt"
exit $failed
