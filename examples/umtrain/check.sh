#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: umtrain learns, is deterministic (same seed, any thread count,
# any budget: same bits), really evicts under a small budget, and refuses bad
# options with exit status 2 and a message.
# Usage: check.sh UMTRAIN UT-JSONCHECK
set -u
UMTRAIN=$1
JC=$2
. "$(dirname "$0")/../../tools/common/tap.sh"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SMALL=(--hidden 256 --layers 4 --batch 16 --shard 64K)
# Optimizer state (56 MiB) well above the budget libum's 2 MiB device
# granule allows (23 MiB): small batch, few steps, so it stays quick.
MID=(--hidden 1024 --layers 8 --batch 4)

# jnum FILE KEY [N]: the Nth (default first) numeric value of "KEY".
jnum() {
	grep -o "\"$2\": [-0-9.e+][-0-9.e+]*" "$1" | sed -n "${3:-1}p" | sed 's/.*: //'
}
jstr() {
	grep -o "\"$2\": \"[^\"]*\"" "$1" | sed -n "${3:-1}p" | sed 's/.*: "//; s/"$//'
}

compare_ok() {
	"$UMTRAIN" "${MID[@]}" --steps 3 --budget auto --compare --json \
		>"$TMP/cmp.json" 2>"$TMP/cmp.err" || { cat "$TMP/cmp.err"; return 1; }
	"$JC" "$TMP/cmp.json" checksums_equal:bool config.hidden:number \
		model.optimizer_state_bytes:number model.working_set_bytes:number \
		'runs.*.loss_first:number' 'runs.*.loss_last:number' \
		'runs.*.device_peak_bytes:number' 'runs.*.host_peak_bytes:number' \
		'runs.*.spill_peak_bytes:number' 'runs.*.migrations:number' \
		'runs.*.migration_gbps' 'runs.*.evictions:number' \
		'runs.*.clean_evictions:number' \
		'runs.*.clean_evicted_bytes:number' \
		'runs.*.threads:number' 'runs.*.steps_migrated_bytes:number' \
		'runs.*.steps_migration_ns:number' \
		'runs.*.weights_checksum:string' 'runs.*.state_checksum:string' &&
	grep -q '"checksums_equal": true' "$TMP/cmp.json"
}

evicts_under_budget() {
	local ev peak budget state
	ev=$(jnum "$TMP/cmp.json" evictions 2)
	peak=$(jnum "$TMP/cmp.json" device_peak_bytes 2)
	budget=$(jnum "$TMP/cmp.json" budget_bytes 1)
	state=$(jnum "$TMP/cmp.json" optimizer_state_bytes)
	echo "evictions=$ev peak=$peak budget=$budget state=$state"
	[ "${ev:-0}" -gt 0 ] && [ "$peak" -le "$budget" ] &&
		[ "$budget" -lt "$state" ]
}

# The forward pass only reads the weights (READ_MOSTLY): some of the budget
# run's evictions copy nothing back, and the bits stay those of the
# unlimited run (compare_ok).
forward_evictions_are_clean() {
	local clean
	clean=$(jnum "$TMP/cmp.json" clean_evictions 2)
	echo "clean evictions=$clean"
	[ "${clean:-0}" -gt 0 ] &&
		[ "$(jnum "$TMP/cmp.json" clean_evicted_bytes 2)" -gt 0 ]
}

unlimited_never_evicts() {
	[ "$(jnum "$TMP/cmp.json" evictions 1)" = 0 ] &&
		[ "$(jnum "$TMP/cmp.json" steps_migrated_bytes 1)" = 0 ]
}

# The steps' own migrations leave out set-up and checksums: fewer bytes
# than the whole run's, yet some.
steps_migrations_counted_apart() {
	local steps all
	steps=$(jnum "$TMP/cmp.json" steps_migrated_bytes 2)
	all=$(jnum "$TMP/cmp.json" migrated_bytes 2)
	echo "steps moved $steps of $all bytes"
	[ "${steps:-0}" -gt 0 ] && [ "$steps" -lt "$all" ] &&
		[ "$(jnum "$TMP/cmp.json" steps_migration_ns 2)" -gt 0 ]
}

# By default the sim's copies get a CPU the math leaves them (train.c's
# train_threads()); --threads overrides it.
default_threads_leave_copies_a_cpu() {
	local cpus want got
	cpus=$(nproc)
	want=$((cpus > 1 ? cpus - 1 : 1))
	[ "$want" -gt 16 ] && want=16
	got=$(jnum "$TMP/cmp.json" threads)
	echo "CPUs $cpus: default math threads $got, want $want"
	[ "$got" = "$want" ] &&
		[ "$(jnum "$TMP/cmp.json" threads 2)" = "$want" ] &&
		[ "$(jnum "$TMP/cmp.json" threads 3)" = "$want" ] || return 1
	"$UMTRAIN" "${SMALL[@]}" --steps 1 --threads 3 --json >"$TMP/t3.json" &&
		[ "$(jnum "$TMP/t3.json" threads)" = 3 ] &&
		[ "$(jnum "$TMP/t3.json" threads 2)" = 3 ] || return 1
	# the CPUs the process may use count, not the machine's
	[ "$cpus" -lt 3 ] ||
		{ taskset -c 0,1 "$UMTRAIN" "${SMALL[@]}" --steps 1 --json \
			>"$TMP/t1.json" &&
		  [ "$(jnum "$TMP/t1.json" threads)" = 1 ]; }
}

learns() {
	"$UMTRAIN" "${SMALL[@]}" --steps 80 --lr 1e-3 --budget unlimited \
		--json >"$TMP/learn.json" || return 1
	awk -v a="$(jnum "$TMP/learn.json" loss_first)" \
	    -v b="$(jnum "$TMP/learn.json" loss_last)" \
	    'BEGIN { print "loss " a " -> " b; exit !(b < a / 2) }'
}

threads_do_not_matter() {
	local a b
	a=$("$UMTRAIN" "${SMALL[@]}" --steps 3 --threads 1 -q --budget unlimited) &&
	b=$("$UMTRAIN" "${SMALL[@]}" --steps 3 --threads 3 -q --budget unlimited) &&
	echo "$a / $b" && [ "$a" = "$b" ]
}

# The stager thread acquires ahead; without it every acquire is made when
# the region is used. Under a budget that makes libum evict, both give the
# same bits, and the stager run stays within its budget.
stager_keeps_bits() {
	local a b peak budget
	a=$("$UMTRAIN" "${MID[@]}" --steps 2 -q) &&
	b=$("$UMTRAIN" "${MID[@]}" --steps 2 -q --no-prefetch) &&
	"$UMTRAIN" "${SMALL[@]}" --steps 3 --compare --json >"$TMP/st.json" &&
	echo "$a / $b" && [ "$a" = "$b" ] &&
	grep -q '"checksums_equal": true' "$TMP/st.json" || return 1
	peak=$(jnum "$TMP/st.json" device_peak_bytes 2)
	budget=$(jnum "$TMP/st.json" budget_bytes 1)
	echo "small model: peak=$peak budget=$budget"
	[ "$peak" -le "$budget" ] && [ "$(jnum "$TMP/st.json" evictions 2)" -gt 0 ]
}

seed_matters() {
	local a b
	a=$("$UMTRAIN" "${SMALL[@]}" --steps 2 --seed 1 -q) &&
	b=$("$UMTRAIN" "${SMALL[@]}" --steps 2 --seed 2 -q) &&
	echo "$a / $b" && [ "$a" != "$b" ]
}

# usage_error MESSAGE-REGEX ARGS...: exit status 2 and the message on stderr.
usage_error() {
	local re=$1 rc
	shift
	"$UMTRAIN" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	cat "$TMP/err"
	[ $rc -eq 2 ] && grep -Eq "$re" "$TMP/err" && [ ! -s "$TMP/out" ]
}

# --bench: both rates and their ratio, from runs whose checksums agree (the
# figures are printed, never compared with a time limit).
bench_reports_rates() {
	"$UMTRAIN" "${SMALL[@]}" --steps 2 --bench 2 --json >"$TMP/bench.json" ||
		return 1
	"$JC" "$TMP/bench.json" step_rate.rounds:number \
		step_rate.unlimited_steps_per_s:number \
		step_rate.budget_steps_per_s:number step_rate.ratio:number \
		step_rate.mean_ratio:number &&
	grep -q '"checksums_equal": true' "$TMP/bench.json" &&
	[ "$(jnum "$TMP/bench.json" rounds)" = 2 ] &&
	[ "$(jnum "$TMP/bench.json" steps_timed)" = 4 ] &&
	"$UMTRAIN" "${SMALL[@]}" --steps 2 --bench 1 --no-prefetch -q
}

help_ok() {
	"$UMTRAIN" --help | grep -q -- '--budget' && "$UMTRAIN" --version
}

tap_begin 24
tap_check "compare run: valid JSON with every key, checksums equal" compare_ok
tap_check "budget run evicts and stays within its budget" evicts_under_budget
tap_check "weights evicted after the update copy nothing back" \
	forward_evictions_are_clean
tap_check "unlimited run never evicts" unlimited_never_evicts
tap_check "the steps' migrations are counted apart from set-up" \
	steps_migrations_counted_apart
tap_check "default math threads leave the sim's copies a CPU" \
	default_threads_leave_copies_a_cpu
tap_check "loss at least halves in 80 steps" learns
tap_check "thread count does not change the bits" threads_do_not_matter
tap_check "the seed changes the result" seed_matters
tap_check "acquiring ahead keeps the bits and the budget" stager_keeps_bits
tap_check "--bench prints both step rates and the ratio" bench_reports_rates
tap_check "--help and --version" help_ok
tap_check "bad --hidden" usage_error "invalid --hidden" --hidden 0
tap_check "bad --layers" usage_error "invalid --layers" --layers 1
tap_check "bad --batch" usage_error "invalid --batch" --batch x
tap_check "bad --threads" usage_error "invalid --threads" --threads 0
tap_check "bad --budget" usage_error "invalid --budget" --budget 12Q
tap_check "budget below the working set" usage_error "below one step" \
	--budget 4K
tap_check "bad --lr" usage_error "invalid --lr" --lr -1
tap_check "bad --backend" usage_error "invalid --backend" --backend gpu
tap_check "unknown option" usage_error "^umtrain: unrecognized option" --bogus
tap_check "stray argument" usage_error "unexpected argument" extra
tap_check "bad --bench" usage_error "invalid --bench" --bench 0
tap_check "--compare needs a budget" usage_error "needs a limited" \
	--compare --budget unlimited
tap_end
