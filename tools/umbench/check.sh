#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: umbench --quick --json runs every section and prints one valid
# JSON document with every expected key and type (speed is not asserted: a
# missed target exits 1, which is allowed here; a failed run is not); bad
# usage exits 2 with a message. umbench holds no CUDA: its GPU part is the
# plugin umbench-gpu.so, and without it --gpu exits 2 naming it.
# Usage: check.sh UMBENCH UT-JSONCHECK
set -u
UMBENCH=$1
JC=$2
. "$(dirname "$0")/../common/tap.sh"

tap_tmpdir

"$UMBENCH" --quick --json >"$TMP/out.json" 2>"$TMP/err"
RC=$?

runs() {
	cat "$TMP/err"
	[ $RC -eq 0 ] || [ $RC -eq 1 ]
}

keys() {
	"$JC" "$TMP/out.json" tool:string quick:bool pass:bool \
		pool:object pool.backend:string pool.raw_method:string \
		pool.rounds:number 'pool.sizes.*.bytes:number' \
		'pool.sizes.*.pool_ns:number' 'pool.sizes.*.malloc_ns:number' \
		'pool.sizes.*.raw_ns:number' 'pool.sizes.*.pool_over_malloc:number' \
		'pool.sizes.*.raw_over_pool:number' 'pool.sizes.*.pass_malloc:bool' \
		'pool.sizes.*.pass_raw' pool.sizes.5.bytes:number pool.pass:bool \
		migrate:object migrate.backend:string migrate.region_bytes:number \
		migrate.evict_gbps:number migrate.restore_gbps:number \
		migrate.migrate_gbps:number migrate.migrate_wall_gbps:number \
		migrate.memcpy_gbps:number migrate.ratio:number \
		migrate.wall_ratio:number migrate.pass:bool \
		suballoc:object 'suballoc.live.*.hit_ns:number' \
		'suballoc.live.*.device_bytes:number' suballoc.live.2.blocks:number \
		suballoc.pass:bool
}

data_intact() {
	grep -q '"data_ok": true' "$TMP/out.json"
}

status_matches_pass() {
	# exit 0 exactly when the document says every target passed
	if grep -q '^  "pass": true' "$TMP/out.json"; then
		[ $RC -eq 0 ]
	else
		[ $RC -eq 1 ]
	fi
}

one_section() {
	"$UMBENCH" pool --quick --json --sizes 4K,1M >"$TMP/pool.json"
	[ $? -le 1 ] && "$JC" "$TMP/pool.json" pool.sizes.1.bytes:number &&
		! "$JC" "$TMP/pool.json" migrate 2>/dev/null &&
		! "$JC" "$TMP/pool.json" pool.sizes.2 2>/dev/null
}

text_table() {
	"$UMBENCH" migrate --quick --region-bytes 1M >"$TMP/text"
	[ $? -le 1 ] && grep -q 'memcpy' "$TMP/text" &&
		grep -q 'GB/s' "$TMP/text"
}

usage_error() {
	local re=$1 rc
	shift
	"$UMBENCH" "$@" >"$TMP/uout" 2>"$TMP/uerr"
	rc=$?
	cat "$TMP/uerr"
	[ $rc -eq 2 ] && grep -Eq "$re" "$TMP/uerr" && [ ! -s "$TMP/uout" ]
}

gpu_flag() {
	local rc
	"$UMBENCH" --gpu --help >"$TMP/gout" 2>"$TMP/gerr"
	rc=$?
	cat "$TMP/gerr"
	# without umbench-gpu.so: exit 2 with a message; with it the GPU
	# part answers --help itself.
	if grep -q 'cannot load the GPU benchmarks' "$TMP/gerr"; then
		[ $rc -eq 2 ]
	else
		[ $rc -eq 0 ] || [ $rc -eq 4 ]
	fi
}

# CUDA only through plugins: no CUDA runtime linked in, none needed.
no_cuda() {
	local b
	b=$(command -v "$UMBENCH")
	readelf -d "$b" | grep NEEDED
	! readelf -d "$b" | grep -qi 'NEEDED.*cuda' &&
		! nm "$b" | grep -qiE 'cudart|[^_]cuda[A-Z]'
}

# A copy alone in a directory: --gpu names the plugin, where it was looked
# for and the package; the pool section with cuda times mmap+mlock instead
# and says so. (Skipped where umbench-gpu.so is installed.)
no_plugin() {
	local so
	so=$(ldd "$UMBENCH" | awk '$1 == "libum.so.0" { print $3 }')
	cp "$UMBENCH" "$TMP/umbench-alone"
	LD_LIBRARY_PATH=$(dirname "$so") "$TMP/umbench-alone" --gpu 		>"$TMP/pout" 2>"$TMP/perr"
	rc=$?
	cat "$TMP/perr"
	[ $rc -eq 2 ] && [ ! -s "$TMP/pout" ] &&
		grep -q "umbench-gpu.so is neither in $TMP nor in" "$TMP/perr" &&
		grep -q 'packaged as um-tools-cuda' "$TMP/perr"
}

# --scale --quick: two counts, every call with calls, a cost and a ratio,
# the first count's ratios exactly 1; not in the default run.
scale_shape() {
	local c
	"$UMBENCH" --scale --quick --json -q >"$TMP/scale.json" || return 1
	"$JC" "$TMP/scale.json" scale.backend:string scale.base_regions:number \
		scale.points.1.regions:number || return 1
	! "$JC" "$TMP/scale.json" scale.points.2 2>/dev/null || return 1
	for c in alloc hit miss lookup free; do
		"$JC" "$TMP/scale.json" "scale.points.*.$c.calls:number" \
			"scale.points.*.$c.ns_per_call:number" \
			"scale.points.*.$c.ratio:number" || return 1
	done
	# base ratios are 1.0, and every call was made at least once
	[ "$(grep -c '"ratio": 1,\?$' "$TMP/scale.json")" -ge 5 ] &&
	! grep -q '"calls": 0' "$TMP/scale.json" &&
	! grep -q '"scale"' "$TMP/out.json"
}

scale_text() {
	"$UMBENCH" scale --quick -q >"$TMP/scale.txt" &&
	grep -Eq '^REGIONS +ALLOC +HIT +MISS +LOOKUP +FREE' "$TMP/scale.txt" &&
	grep -Eq '^512 .*x' "$TMP/scale.txt"
}

# -V as every um tool prints it, and the JSON's version the same
version() {
	local v
	v=$("$UMBENCH" -V) && [[ $v =~ ^umbench\ \(um\)\ ([0-9.]+)$ ]] &&
	grep -q "\"version\": \"${BASH_REMATCH[1]}\"" "$TMP/out.json"
}

# Each section reports each target against its figure: the measured value,
# the limit, the margin (how far inside, a fraction of the limit) and why
# the limit sits there; a section passes when all its targets do.
targets_reported() {
	"$JC" "$TMP/out.json" 'pool.targets.*.target:string' \
		'pool.targets.*.measured:number' 'pool.targets.*.limit:number' \
		'pool.targets.*.margin:number' 'pool.targets.*.pass:bool' \
		'pool.targets.*.reason:string' 'pool.targets.*.limit_is:string' \
		migrate.targets.0.margin:number 'suballoc.targets.*.margin:number' \
		|| return 1
	python3 - "$TMP/out.json" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	bad = []
	for sec in ("pool", "migrate", "suballoc"):
	    ts = d[sec]["targets"]
	    for t in ts:
	        m, l = t["measured"], t["limit"]
	        want = (l - m) / l if t["limit_is"] == "max" else (m - l) / l
	        if abs(t["margin"] - want) > 1e-6 * max(1, abs(want)):
	            bad.append("%s %s: margin %g, want %g" % (sec, t["target"], t["margin"], want))
	        if t["pass"] != (t["margin"] >= 0):
	            bad.append("%s %s: pass %s, margin %g" % (sec, t["target"], t["pass"], t["margin"]))
	        if len(t["reason"]) < 40:
	            bad.append("%s %s: no reason" % (sec, t["target"]))
	    if not all(t["pass"] for t in ts) and d[sec]["pass"]:
	        bad.append("%s passes with a target missed" % sec)
	print("\n".join(bad))
	sys.exit(1 if bad else 0)
	PY
}

tap_begin 21
tap_check "umbench --quick --json runs (exit 0 or 1)" runs
tap_check "JSON valid with every key" keys
tap_check "migrated data intact" data_intact
tap_check "each target's figure, limit, margin and reason" targets_reported
tap_check "exit status matches \"pass\"" status_matches_pass
tap_check "one section, chosen sizes" one_section
tap_check "text output has a table" text_table
tap_check "unknown section" usage_error "unknown section" frob
tap_check "bad --sizes" usage_error "invalid size" --sizes 4K,x
tap_check "bad --rounds" usage_error "invalid --rounds" --rounds 0
tap_check "bad --backend" usage_error "invalid --backend" --backend tpu
tap_check "bad --region-bytes" usage_error "invalid --region-bytes" \
	--region-bytes 12
tap_check "unknown option" usage_error "^umbench: unrecognized option" --frob
tap_check "--gpu answers or refuses clearly" gpu_flag
tap_check "no CUDA runtime in umbench" no_cuda
if ls /usr/lib/*/umbench/umbench-gpu.so /usr/local/lib/*/umbench/umbench-gpu.so \
	>/dev/null 2>&1; then
	tap_skip "--gpu without umbench-gpu.so names it" "umbench-gpu.so installed"
else
	tap_check "--gpu without umbench-gpu.so names it" no_plugin
fi
tap_check "--scale --quick --json has the table's shape" scale_shape
tap_check "scale as a section prints the table" scale_text
tap_check "bad --scale-max" usage_error "invalid --scale-max" --scale-max 8
tap_check "--scale with another section" usage_error "both given" \
	--scale pool
tap_check "--version" version
tap_end
