#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: check-knobs.py passes on the tree as it is and fails, naming
# the knob, on a copy of kmod/ (or of the ABI document) changed the ways the
# module and the tools' table can drift apart: a range, a default (global,
# node, cgroup/), a kind, a knob
# added to or dropped from the module, a store function it cannot read.
set -u
KNOBS=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
tap_tmpdir
top=$here/../..
abi=$top/Documentation/ABI/testing/sysfs-kernel-mm-umm

# drifted NAME PATTERN FILE SED...: kmod/ copied, FILE edited by each sed
# expression (each must change it), and the check must fail with PATTERN.
drifted() {
	local pat=$1 file=$2 d=$TMP/k
	shift 2
	rm -rf "$d" && mkdir -p "$d" && cp "$top"/kmod/*.[ch] "$d"/ &&
	cp "$abi" "$TMP/abi" || return 1
	local f=$d/$file e
	[ "$file" = abi ] && f=$TMP/abi
	for e in "$@"; do
		cp "$f" "$TMP/before"
		sed -i "$e" "$f"
		if cmp -s "$f" "$TMP/before"; then
			echo "sed '$e' changed nothing in $file"
			return 1
		fi
	done
	if "$here/check-knobs.py" --kmod "$d" --abi "$TMP/abi" \
		--knobs "$KNOBS" 2>"$TMP/err"; then
		echo "check passed on a drifted $file"
		return 1
	fi
	grep -q -- "$pat" "$TMP/err" || { cat "$TMP/err"; return 1; }
}

agree() {
	"$here/check-knobs.py" --kmod "$top/kmod" --abi "$abi" \
		--knobs "$KNOBS" >/dev/null
}

tap_begin 13
tap_check "the tree agrees" agree
tap_check "u32 knob range" drifted \
	'knob hysteresis_bp: max is 5001 in kmod, 5000' sysfs.c \
	's/hysteresis_bp, 0, 5000)/hysteresis_bp, 0, 5001)/'
tap_check "open-coded range" drifted \
	'knob interval_ms: min is 20 in kmod, 10' sysfs.c \
	's/v < 10 || v > 60000/v < 20 || v > 60000/'
tap_check "range from a header" drifted \
	'knob ring_bytes_max: min is 8192 in kmod, 4096' umm_internal.h \
	's/UMM_RING_BYTES_MIN\t4096ULL/UMM_RING_BYTES_MIN\t8192ULL/'
tap_check "watermark bound" drifted \
	'knob nodes/nodeN/low_bp: max is 9000 in kmod' monitor.c \
	's/low > UMM_BP_MAX/low > 9000/'
tap_check "global default" drifted \
	'knob queue_len: default is 128 in kmod, 256' state.c \
	's/\.queue_len\t= 256/.queue_len\t= 128/'
tap_check "node default" drifted \
	'knob nodes/nodeN/medium_bp: default is 1500 in kmod, 1000' sysfs.c \
	's/UMM_DEF_MEDIUM_BP\t1000/UMM_DEF_MEDIUM_BP\t1500/'
tap_check "cgroup default" drifted \
	'knob cgroup/low_bp: default is 2500 in kmod, 2000' state.c \
	's/\.cg_low_bp\t= 2000/.cg_low_bp\t= 2500/'
tap_check "cgroup knob's store" drifted \
	'knob cgroup/medium_bp: kind is num in kmod, wm' sysfs.c \
	's/return umm_cg_wm_store(&umm.cg_##_name, buf, count);/return umm_store_u32(buf, 0, 9000, \&umm.cg_##_name) ?: count;/'
tap_check "cgroup knob's ABI range" drifted \
	'knob cgroup/critical_bp: .* does not say "Range 0 .. 10000, default 500"' abi \
	's/Range 0 \.\. 10000, default 500;/Range 0 .. 10000, default 400;/'
tap_check "knob only in the module" drifted \
	'knob gpus/gpuN/memcg_bytes: kmod/sysfs.c has it.*no row' sysfs.c \
	's/^\t&gpu_budget_bytes_attr.attr,/&\n\t\&gpu_memcg_bytes_attr.attr,/' \
	's/^static struct kobj_attribute gpu_budget_bytes_attr = UMM_KNOB(budget_bytes);/&\nstatic struct kobj_attribute gpu_memcg_bytes_attr = UMM_KNOB(memcg_bytes);\nstatic ssize_t memcg_bytes_store(struct kobject *k, struct kobj_attribute *a, const char *buf, size_t count)\n{\n\tu64 v;\n\tif (umm_parse_u64(buf, \&v))\n\t\treturn -EINVAL;\n\treturn count;\n}/'
tap_check "knob only in the tools" drifted \
	'knob repeat_interval_ms: a row in tools/common/knobs.h, but' sysfs.c \
	'/^\tUMM_KNOB(repeat_interval_ms),$/d'
tap_check "ABI document's range" drifted \
	'knob queue_len: .* does not say "Range 4 .. 65536, default 256"' abi \
	's/Range 4 \.\. 65536/Range 4 .. 65535/'
tap_end
