#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run-on-device.sh - the whole GPU verification of libum in one command, on a
# machine with an NVIDIA GPU. Builds NOTHING: build on a development machine
# (`make -C libum && make -C tests/gpu && make -C tools/umbench`) and bring
# tests/gpu/build along (and tools/umbench/build with libum/build, to run
# umbench itself). The tests/gpu binaries link the CUDA runtime and the
# Debian libraries statically: they need libc and the driver. umbench links
# libum.so.0 and loads umbench-gpu.so, which needs libcudart.so.13; where
# that is missing the standalone tests/gpu/build/umbench-gpu runs instead.
#
# Steps, each under `timeout` and each run whatever happened before:
#   1. the machine: nvidia-smi, kernel, libc, what the binaries link
#   2. tests/gpu/build/backend_test   (TAP: the cuda backend's operations)
#   3. tests/gpu/build/um_gpu_test    (TAP: libum on the GPU)
#   4. tests/gpu/build/map_under_copy (does mapping 2 GiB wait for a 2 GiB
#      device-to-host copy in flight? JSON into $OUT when set)
#   5. umbench --gpu                  (tables; JSON into $OUT when set)
#   6. nvidia-smi again (memory back to where it was), then a summary that
#      names every step that failed and how
# Output: stdout; with $OUT set, also a log per step and umbench.json there.
# Exit status: 0 when every step passed, 1 otherwise. Whole run: under five
# minutes on an H200 (each step is capped, the total too: UM_GPU_RUN_BUDGET
# seconds, default 290).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${OUT:-}
budget=${UM_GPU_RUN_BUDGET:-290}
start=$(date +%s)
declare -a summary=()
failed=0

[ -n "$out" ] && mkdir -p "$out"

say() { printf '%s\n' "$*"; }

# Seconds a step may take: its own cap, or what is left of the budget.
step_limit() {
	local cap=$1 left
	left=$((budget - ($(date +%s) - start)))
	[ "$left" -lt 10 ] && left=10
	[ "$cap" -lt "$left" ] && left=$cap
	echo "$left"
}

# run_step NAME CAP_SECONDS CMD... : runs CMD under timeout, logs, records.
run_step() {
	local name=$1 cap=$2 lim rc t0 t1 log what
	shift 2
	lim=$(step_limit "$cap")
	if [ -n "$out" ]; then
		log="$out/$name.log"
	else
		log=$(mktemp)
	fi
	say ""
	say "=== $name (limit ${lim}s): $*"
	t0=$(date +%s)
	timeout -k 10 "$lim" "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	t1=$(date +%s)
	case $rc in
	0) what="ok" ;;
	4) what="SKIPPED (exit 4: no usable GPU?)" ;;
	124 | 137) what="TIMED OUT after ${lim}s (rc $rc)" ;;
	1) what="FAILED (exit 1)" ;;
	*)
		if [ "$rc" -gt 128 ]; then
			what="CRASHED (signal $((rc - 128)))"
		else
			what="FAILED (exit $rc)"
		fi
		;;
	esac
	# Name the failing TAP tests, so the summary alone says what broke.
	if [ "$rc" -ne 0 ]; then
		local bad
		bad=$(grep -E '^not ok ' "$log" | sed 's/^not ok [0-9]* //' |
			tr '\n' ',' | sed 's/,$//')
		[ -n "$bad" ] && what="$what: $bad"
	fi
	[ -z "$out" ] && rm -f "$log"
	# A killed harness leaves its forked test (own process group) behind:
	# end those, by pid, so the next step has the GPU to itself.
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		local p
		for p in $(pgrep -x "$(basename "$1" | cut -c1-15)" 2>/dev/null); do
			say "killing leftover $(basename "$1") pid $p"
			kill -9 "$p" 2>/dev/null
		done
	fi
	[ "$rc" -ne 0 ] && failed=1
	summary+=("$(printf '%-14s %4ss  %s' "$name" "$((t1 - t0))" "$what")")
}

missing_libs() {
	ldd "$1" 2>&1 | grep -E 'not found|version .* not found' || true
}

say "### libum GPU verification, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(hostname)"
say "### kernel $(uname -r), $(ldd --version 2>&1 | head -n 1)"
if command -v nvidia-smi >/dev/null 2>&1; then
	timeout 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,memory.free,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
	timeout 20 nvidia-smi 2>&1 | head -n 20
	[ -n "$out" ] && timeout 20 nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1
else
	say "nvidia-smi: not found"
fi
command -v numactl >/dev/null 2>&1 && timeout 10 numactl --hardware 2>&1 | head -n 4

bins=("$here/build/backend_test" "$here/build/um_gpu_test")
for b in "${bins[@]}" "$here/build/map_under_copy" "$here/build/umbench-gpu"; do
	if [ ! -x "$b" ]; then
		say "MISSING: $b (build on the dev machine and carry tests/gpu/build)"
		continue
	fi
	m=$(missing_libs "$b")
	[ -n "$m" ] && say "LIBRARIES MISSING for $b:" && say "$m"
done

for b in "${bins[@]}"; do
	n=$(basename "$b")
	if [ -x "$b" ]; then
		run_step "$n" 150 "$b"
	else
		summary+=("$(printf '%-14s %4ss  %s' "$n" 0 "MISSING binary $b")")
		failed=1
	fi
done

# Does cuMemMap/cuMemSetAccess wait for a copy in flight?
mu="$here/build/map_under_copy"
if [ -x "$mu" ]; then
	run_step map-under-copy 30 "$mu" --bytes 2G
	[ -n "$out" ] && timeout 30 "$mu" --bytes 2G --json \
		>"$out/map_under_copy.json" 2>&1
else
	summary+=("$(printf '%-14s %4ss  %s' map-under-copy 0 "MISSING binary $mu")")
	failed=1
fi

# umbench --gpu: umbench itself when it starts here and loads its GPU part
# (umbench-gpu.so beside it, libum/build/libum.so.0 and the CUDA runtime
# 13 found), else the standalone build of the same code, which needs none.
ub="$top/tools/umbench/build/umbench"
ubargs=(--gpu)
if [ -x "$ub" ] && [ -z "$(missing_libs "$ub")" ] &&
	"$ub" --gpu --help >/dev/null 2>&1; then
	say "umbench: $ub"
else
	say "umbench: $ub unusable here (missing, libraries, or no umbench-gpu.so:" \
		"$("$ub" --gpu --help 2>&1 >/dev/null | head -n 1)); using the standalone build"
	ub="$here/build/umbench-gpu"
fi
[ -n "$out" ] && ubargs+=(--json-file "$out/umbench.json")
ubargs+=(${UM_GPU_BENCH_ARGS:-})
if [ -x "$ub" ]; then
	run_step umbench-gpu 200 "$ub" "${ubargs[@]}"
else
	summary+=("$(printf '%-14s %4ss  %s' umbench-gpu 0 "MISSING binary $ub")")
	failed=1
fi

say ""
if command -v nvidia-smi >/dev/null 2>&1; then
	say "=== GPU memory after the run (compare with the start)"
	timeout 20 nvidia-smi --query-gpu=memory.used,memory.free --format=csv 2>&1
	timeout 20 nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv 2>&1
fi

say ""
say "=== summary ($(($(date +%s) - start)) s)"
for l in "${summary[@]}"; do
	say "$l"
done
if [ -n "$out" ]; then
	printf '%s\n' "${summary[@]}" >"$out/summary.txt"
fi
if [ "$failed" -eq 0 ]; then
	say "RESULT: all steps passed"
else
	say "RESULT: FAILED (see the steps above)"
fi
exit "$failed"
