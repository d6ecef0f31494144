#!/bin/sh
# linktree.sh KMOD UAPI DIR - make DIR a Kbuild tree of links to the
# module's sources, the release (DIR/VERSION, from KMOD/../VERSION) and the
# ABI header at DIR/include/uapi/linux/umm.h, so each kernel builds in a
# directory of its own.
set -eu
kmod=$1 uapi=$2 dir=$3
mkdir -p "$dir/include/uapi/linux"
for f in "$kmod"/Kbuild "$kmod"/*.c "$kmod"/*.h; do
	ln -sfn "$f" "$dir/$(basename "$f")"
done
ln -sfn "$uapi" "$dir/include/uapi/linux/umm.h"
ln -sfn "$kmod/../VERSION" "$dir/VERSION"
# drop links to sources that no longer exist
for l in "$dir"/*.c "$dir"/*.h; do
	[ -L "$l" ] && [ ! -e "$l" ] && rm -f "$l"
done
exit 0
