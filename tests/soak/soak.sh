#!/bin/bash
# soak.sh - `make soak`: the long runs that `make check` has no time for.
#
#  1. e2e: the end-to-end scenarios (make -C tests/e2e check: one boot with
#     umm.ko and the spill disk, one without the module) SOAK_RUNS times on
#     each kernel of SOAK_KERNELS;
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
#   SOAK_PARTS         which parts, in order ["e2e stress sweep"]
#   SOAK_RUNS          e2e runs per kernel [20]
#   SOAK_KERNELS       kernel series for e2e ["6.1 6.12"]
#   SOAK_SECONDS       each stress run [60]
#   SOAK_THREADS       stress threads [8]
#   SOAK_SWEEP_KERNEL  [6.1]
#   SOAK_SWEEP_RUNS    boots per fill rate [2]
#   SOAK_SWEEP_RATES   MiB/s, ascending ["16 32 64 128 256 512"]
# Logs under tests/soak/build/soak/ (a part's old logs go when it runs
# again); the summary also in summary.txt there.
# Exit status 0 when every part passed (a sweep passes when it ran).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/lib.sh"

case "${1:-}" in -h|--help) usage "$0"; exit 0 ;; '') ;; *) die "no arguments (see --help)" ;; esac

parts=${SOAK_PARTS:-e2e stress sweep}
runs=${SOAK_RUNS:-20}
kernels=${SOAK_KERNELS:-6.1 6.12}
secs=${SOAK_SECONDS:-60}
threads=${SOAK_THREADS:-8}
sweep_kernel=${SOAK_SWEEP_KERNEL:-6.1}
export SOAK_SWEEP_RUNS=${SOAK_SWEEP_RUNS:-2}
export SOAK_SWEEP_RATES=${SOAK_SWEEP_RATES:-16 32 64 128 256 512}
for p in $parts; do
	case "$p" in e2e|stress|sweep) ;; *) die "SOAK_PARTS: unknown part '$p' (e2e stress sweep)" ;; esac
done
want_count SOAK_RUNS "$runs"
want_count SOAK_SECONDS "$secs"
want_count SOAK_THREADS "$threads"
want_count SOAK_SWEEP_RUNS "$SOAK_SWEEP_RUNS"
for k in $kernels $sweep_kernel; do
	"$top/tests/vm/kernels.sh" "$k" >/dev/null 2>&1 ||
		die "kernel series '$k' is not installed with headers (scripts/deps.sh)"
done

out=$here/build/soak
mkdir -p "$out"
summary=()
failed=0
say() { echo "$*"; summary+=("$*"); }

# One e2e run on one kernel: make -C tests/e2e check, its two boots' logs
# kept, their figures added to the kernel's totals (e_* below).
e2e_run() {
	local series=$1 i=$2 ver d rc tag
	ver=$("$top/tests/vm/kernels.sh" "$series")
	d=$out/e2e/$ver/run-$i
	mkdir -p "$d"
	UM_VM_KERNELS=$series nice make -s -C "$top/tests/e2e" check >"$d/make.log" 2>&1
	rc=$?
	for tag in e2e e2e-nomod; do
		cp "$top/tests/vm/build/$ver/$tag/tap.log" "$d/$tag.tap.log" 2>/dev/null
		cp "$top/tests/vm/build/$ver/$tag/console.log" "$d/$tag.console.log" 2>/dev/null
		eval "$(boot_figures "$d/$tag.tap.log")"
		e_kills=$((e_kills + b_oom_kills))
		e_expected=$((e_expected + b_expected_oom_kills))
		e_lost=$((e_lost + b_lost_bytes))
		e_ack=$(fmax "$e_ack" "$b_ack_max_ms")
	done
	[ $rc = 0 ] && e_passed=$((e_passed + 1))
	printf '#   %s run %d: %s (%s)\n' "$ver" "$i" \
		"$([ $rc = 0 ] && echo passed || echo FAILED)" "$d/make.log"
}

part_e2e() {
	local series
	rm -rf "$out/e2e"
	for series in $kernels; do
		e_passed=0 e_kills=0 e_expected=0 e_lost=0 e_ack=-1
		echo "# e2e: $runs run(s) on $series"
		for i in $(seq 1 "$runs"); do
			e2e_run "$series" "$i"
		done
		say "e2e $series: $e_passed/$runs runs passed; OOM kills $e_kills unexpected, $e_expected expected (e2e_oom_off, one per run); bytes lost $e_lost; slowest event-to-ACK $e_ack ms"
		[ "$e_passed" = "$runs" ] && [ "$e_kills" = 0 ] && [ "$e_lost" = 0 ] &&
			[ "$e_expected" -ge "$runs" ] || failed=1
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
