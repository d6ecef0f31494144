#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check-runpaths.sh - every ELF file under the given paths whose run path
# (RUNPATH or RPATH) names a directory that does not exist, $ORIGIN taken
# as the file's own directory: such a program fails to start (exit 127)
# wherever LD_LIBRARY_PATH does not stand in, as a copy of umbench in
# tests/gpu/build/vgpu/shared/ did with its ../../../libum/build.
# Usage: check-runpaths.sh PATH...   Exit: 0 none, 1 some (each listed).
set -u
bad=0
while IFS= read -r -d '' f; do
	[ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] ||
		continue
	rp=$(readelf -d "$f" 2>/dev/null |
		sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p')
	[ -n "$rp" ] || continue
	origin=$(cd "$(dirname "$f")" && pwd)
	IFS=: read -r -a dirs <<<"$rp"
	for d in "${dirs[@]}"; do
		d=${d//\$ORIGIN/$origin}
		d=${d//\$\{ORIGIN\}/$origin}
		if [ ! -d "$d" ]; then
			echo "$f: run path $rp: no directory $d"
			bad=1
		fi
	done
done < <(find "$@" -type f -print0 2>/dev/null)
exit $bad
