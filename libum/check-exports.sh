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
# shellcheck source=../tools/common/tap.sh
. "$(dirname "$0")/../tools/common/tap.sh"

syms=$(nm -D --defined-only "$so") || exit 1
# a function of two versions (um_config_init) is one name
exported=$(awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' <<<"$syms" | sort -u)
data=$(awk '$2 ~ /^[BDRVW]$/ { print $3 }' <<<"$syms")
declared=$(grep -oE '\bum_[a-z_0-9]+[[:space:]]*\(' "$hdr" |
	sed 's/[[:space:]]*($//' | sort -u)

tap_begin 6
tap_result "libum.exports_match_um_h" "$(comm -3 <(echo "$exported") <(echo "$declared") |
	sed 's/^\t/declared, not exported: /;t;s/^/exported, not declared: /')"
tap_result "libum.no_data_symbols" "$data"
missing=""
for f in $exported; do
	[ -f "$man/$f.3" ] || missing+="no man page $man/$f.3"$'\n'
done
tap_result "libum.man_page_per_function" "${missing%$'\n'}"
archived=$(nm -g --defined-only "$ar" | awk 'NF == 3 { sub(/@.*/, "", $3); print $3 }' | sort -u)
tap_result "libum.archive_exports_match_um_h" "$(comm -3 <(echo "$archived") \
	<(echo "$declared") | sed 's/^\t/declared, not in libum.a: /;t;s/^/global in libum.a, not declared: /')"
tap_result "libum.so_needs_no_cuda" "$(readelf -d "$so" | grep -iE 'cuda|RPATH|RUNPATH')"
if [ -n "$plugin" ]; then
	tap_result "libum.plugin_exports_entry_only" "$(nm -D --defined-only "$plugin" |
		awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | grep -vx um_cuda_plugin_v1)"
else
	tap_skip libum.plugin_exports_entry_only "no CUDA toolkit: no plugin"
fi
tap_end
