#!/bin/bash
# fill-sweep.sh - how fast may node 0 fill before the trainer loses bytes?
#
# Boots the VM rig with e2e_node_fill alone, once per run and fill rate
# (E2E_FILL_RATE, passed into the guest with run-vm.sh --env), and reports
# per rate: runs in which the trainer survived (not killed, every region's
# checksum intact, no OOM kill in the kernel log), OOM kills, bytes lost,
# the lead time (first event -> node 0 critical, or "never" when the node
# never got there; node low -> the kill when the trainer was killed) and
# the slowest event-to-ACK. Then the fastest surviving rate: the highest
# rate at which, and at every slower rate, every run survived.
#
# Usage: fill-sweep.sh [--kernel SERIES] [--runs N] [--rates "16 32 ..."]
#                      [--out DIR] [--json FILE] [--bin PROGRAM] [--tag NAME]
#                      [--ko FILE] [--env NAME=VALUE]...
#   --kernel   6.1 (default) or 6.12
#   --runs     boots per rate (default 2; SOAK_SWEEP_RUNS)
#   --rates    MiB/s, ascending (default "16 32 64 128 256 512";
#              SOAK_SWEEP_RATES)
#   --out      logs: DIR/<kernel>/rate-<R>/run-<i>/ (default build/sweep)
#   --json     also write the figures there
#   --bin      the scenario program (default tests/e2e/build/e2e_node_fill;
#              another build of it, to compare two libums under one load)
#   --ko       this umm.ko (built for the kernel) instead of kmod/ built
#              at each boot: another module build under the same load
#   --tag      the rig's work directory name (default sweep): give two
#              sweeps at once different tags
#   --env      also exported in the guest, as run-vm.sh --env (E2E_DEBUG=1:
#              libum's debug lines, stamped, in each run's tap.log)
# Exit status: 0 when it ran (whatever the rates survived), 2 on bad usage
# or when a boot could not run at all.
# Expects tests/e2e and umpressure built (make -C tests/soak does it).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/lib.sh"

series=6.1 runs=${SOAK_SWEEP_RUNS:-2} rates=${SOAK_SWEEP_RATES:-16 32 64 128 256 512}
out=$here/build/sweep json= bin=$top/tests/e2e/build/e2e_node_fill tag=sweep
envs=() kos=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) series=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--rates) rates=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	--bin) bin=$2; shift 2 ;;
	--ko) [ -f "$2" ] || die "--ko: $2 is not a file"
		kos=(--ko "$2"); shift 2 ;;
	--tag) tag=$2; shift 2 ;;
	--env) envs+=(--env "$2"); shift 2 ;;
	-h|--help) usage "$0"; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done
want_count "--runs" "$runs"
prev=0
for r in $rates; do
	want_count "--rates" "$r"
	[ "$r" -le 4096 ] || die "--rates: $r is above umpressure's 4096 MiB/s"
	[ "$r" -gt "$prev" ] || die "--rates must be ascending"
	prev=$r
done
ver=$("$top/tests/vm/kernels.sh" "$series") || die "no kernel $series with headers (scripts/deps.sh fetches it)"
need_e2e_built
[ -x "$bin" ] || die "$bin is not a program"

printf '# fill-rate sweep: e2e_node_fill on %s, %d run(s) per rate, rates %s MiB/s\n' \
	"$ver" "$runs" "$rates"
rows=()
fastest=0 broken=0
for r in $rates; do
	surv=0 kills=0 lost=0 ack=-1 mod_ack=-1 leads= passed=0
	for i in $(seq 1 "$runs"); do
		d=$out/$ver/rate-$r/run-$i
		mkdir -p "$d"
		nice "$top/tests/vm/run-vm.sh" --kernel "$ver" --tag "$tag" \
			--mem 512 --out "$d" --env "E2E_FILL_RATE=$r" "${envs[@]}" \
			"${kos[@]}" \
			--file "$UMP:/t/umpressure" \
			-- "$bin" >"$d/judge.log" 2>&1
		rc=$?
		[ $rc = 2 ] && die "run-vm.sh could not run (see $d/judge.log)"
		[ $rc = 0 ] && passed=$((passed + 1))
		eval "$(boot_figures "$d/tap.log" node_fill)"
		kills=$((kills + b_oom_kills))
		lost=$((lost + b_lost_bytes))
		ack=$(fmax "$ack" "$b_ack_max_ms")
		mod_ack=$(fmax "$mod_ack" "$b_module_ack_max_ms")
		if [ "$b_survived" = 1 ]; then
			surv=$((surv + 1))
			leads+=" ${b_lead}"
		else
			leads+=" ${b_lead}!"
		fi
		printf '#   rate %4d MiB/s run %d: %s, test %s, %s; lead %s; event-to-ACK max %s ms (module %s ms); OOM kills put off %d\n' \
			"$r" "$i" "$([ "$b_survived" = 1 ] && echo survived || echo LOST)" \
			"$([ $rc = 0 ] && echo passed || echo failed)" \
			"$b_why" "$b_lead" "$b_ack_max_ms" "$b_module_ack_max_ms" \
			"$b_oom_deferred"
	done
	if [ "$surv" = "$runs" ] && [ "$broken" = 0 ]; then
		fastest=$r
	else
		broken=1
	fi
	rows+=("$r $runs $surv $passed $kills $lost $ack $mod_ack${leads}")
done

printf '# %-9s %-9s %-7s %-9s %-10s %-14s %s\n' "MiB/s" survived "tests" "OOM kills" "bytes lost" "event-to-ACK" \
	"lead time per run (first event -> critical; low -> kill if killed: !)"
for row in "${rows[@]}"; do
	read -r r n s p k l a m leads <<<"$row"
	printf '# %-9s %-9s %-7s %-9s %-10s %-14s %s\n' "$r" "$s/$n" "$p/$n" "$k" "$l" "$a ms" "$leads"
done
if [ "$fastest" = 0 ]; then
	echo "# fastest fill rate survived: none (not even ${rates%% *} MiB/s)"
else
	echo "# fastest fill rate survived: $fastest MiB/s (every run at it and below: no OOM kill, no byte lost)"
fi
if [ -n "$json" ]; then
	{
		printf '{"kernel":"%s","runs_per_rate":%d,"fastest_survived_mib_s":%d,"rates":[' \
			"$ver" "$runs" "$fastest"
		sep=
		for row in "${rows[@]}"; do
			read -r r n s p k l a m leads <<<"$row"
			printf '%s{"mib_s":%d,"runs":%d,"survived":%d,"tests_passed":%d,"oom_kills":%d,"lost_bytes":%d,"ack_max_ms":%s,"module_ack_max_ms":%s,"lead":"%s"}' \
				"$sep" "$r" "$n" "$s" "$p" "$k" "$l" "$a" "$m" "$leads"
			sep=,
		done
		printf ']}\n'
	} >"$json"
fi
exit 0
