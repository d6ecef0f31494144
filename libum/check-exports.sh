#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check-exports.sh SOLIB HEADER MANDIR ARCHIVE [PLUGIN] - libum's ABI is
# what um.h declares.
#
# TAP: the shared library exports exactly the functions declared in the
# public header (no um__* internal, no backend table, nothing missing), no
# data symbols, each exported function has its man page, and the installed
# static archive defines no other global symbol either. The shared library
# needs no CUDA library and has no search path; the CUDA backend plugin,
# where there is one, exports its entry point only.
set -u
so=$1 hdr=$2 man=$3 ar=$4 plugin=${5:-}
n=0 fail=0

ok() {	# ok DESCRIPTION DETAILS: DETAILS empty means passed
	n=$((n + 1))
	if [ -z "$2" ]; then
		echo "ok $n $1"
	else
		fail=$((fail + 1))
		echo "not ok $n $1"
		printf '%s\n' "$2" | sed 's/^/# /'
	fi
}

syms=$(nm -D --defined-only "$so") || exit 1
exported=$(awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' <<<"$syms" | sort)
data=$(awk '$2 ~ /^[BDRVW]$/ { print $3 }' <<<"$syms")
declared=$(grep -oE '\bum_[a-z_0-9]+[[:space:]]*\(' "$hdr" |
	sed 's/[[:space:]]*($//' | sort -u)

echo "TAP version 13"
echo "1..6"
ok "libum.exports_match_um_h" "$(comm -3 <(echo "$exported") <(echo "$declared") |
	sed 's/^\t/declared, not exported: /;t;s/^/exported, not declared: /')"
ok "libum.no_data_symbols" "$data"
missing=""
for f in $exported; do
	[ -f "$man/$f.3" ] || missing+="no man page $man/$f.3"$'\n'
done
ok "libum.man_page_per_function" "${missing%$'\n'}"
archived=$(nm -g --defined-only "$ar" | awk 'NF == 3 { print $3 }' | sort)
ok "libum.archive_exports_match_um_h" "$(comm -3 <(echo "$archived") \
	<(echo "$declared") | sed 's/^\t/declared, not in libum.a: /;t;s/^/global in libum.a, not declared: /')"
ok "libum.so_needs_no_cuda" "$(readelf -d "$so" | grep -iE 'cuda|RPATH|RUNPATH')"
if [ -n "$plugin" ]; then
	ok "libum.plugin_exports_entry_only" "$(nm -D --defined-only "$plugin" |
		awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | grep -vx um_cuda_plugin_v1)"
else
	n=$((n + 1))
	echo "ok $n libum.plugin_exports_entry_only # SKIP no CUDA toolkit: no plugin"
	skipped=1
fi
echo "# Totals: pass:$((n - fail - ${skipped:-0})) fail:$fail xfail:0 xpass:0 skip:${skipped:-0} error:0"
[ "$fail" -eq 0 ]
