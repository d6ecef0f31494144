#!/bin/sh
# check.sh [KDIR...] - static checks of umm.ko, as TAP:
#   per kernel tree: a W=1 build and a sparse (C=2) build, each of which
#   must print no warning at all, and the layer check of the W=1 build's
#   objects against kmod/layers (scripts/check-layers.sh: no call or
#   include goes upward);
#   once: kernel-doc over the sources, and checkpatch (from
#   $CHECKPATCH, or extracted once from Debian's linux-source tarball into
#   kmod/build/tools/) over the sources and the ABI header.
# A tool that is not installed gives a SKIP, a warning a failure.
# With no KDIR, the VM rig's kernels are checked (scripts/deps.sh --kernels).
set -u
kmod=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$kmod/.." && pwd)
uapi=$top/include/uapi/linux/umm.h
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046
	set -- $("$top/scripts/deps.sh" --kernels 2>/dev/null | cut -d' ' -f3)
fi

pass=0 fail=0 skip=0 n=0
plan=$(( $# * 3 + 2 ))
echo "TAP version 13"
echo "1..$plan"

result() {	# result ok|fail|skip name [why]
	n=$((n + 1))
	case $1 in
	ok)   pass=$((pass + 1)); echo "ok $n $2" ;;
	skip) skip=$((skip + 1)); echo "ok $n $2 # SKIP $3" ;;
	*)    fail=$((fail + 1)); echo "not ok $n $2" ;;
	esac
}

# show the tool's complaints as TAP diagnostics
diag() { sed 's/^/# /' "$1"; }

# kbuild KDIR NAME [make args]: build; any warning fails it
kbuild() {
	k=$1 name=$2
	shift 2
	v=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' \
		"$k/include/generated/utsrelease.h" 2>/dev/null)
	if [ -z "$v" ]; then
		echo "# $k: not a kernel build tree"
		result fail "kmod.$name"
		return
	fi
	# the sparse pass reuses the W=1 tree: C=2 checks without rebuilding
	d=$kmod/build/check/$v
	if [ "$name" = build_w1 ]; then
		rm -rf "$d"
		"$kmod/scripts/linktree.sh" "$kmod" "$uapi" "$d"
	fi
	log=$d-$name.log
	if make -C "$k" M="$d" W=1 "$@" modules >"$log" 2>&1 &&
	   ! grep -iE 'warning|error' "$log" | grep -v 'Skipping BTF' >"$log.bad"; then
		result ok "kmod.$name.$v"
	else
		grep -iE 'warning|error' "$log" | grep -v 'Skipping BTF' >"$log.bad"
		[ -s "$log.bad" ] || tail -20 "$log" >"$log.bad"
		diag "$log.bad"
		result fail "kmod.$name.$v"
	fi
}

# layers KDIR: the objects of the W=1 build call and include downward only
layers() {
	v=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' \
		"$1/include/generated/utsrelease.h" 2>/dev/null)
	d=$kmod/build/check/$v
	objs=
	for o in "$d"/*.o; do
		case ${o##*/} in
		umm.o | umm.mod.o | *.mod.o) ;;
		*) objs="$objs $o" ;;
		esac
	done
	out=$d-layers.log
	# shellcheck disable=SC2086
	if [ -n "$objs" ] &&
	   "$top/scripts/check-layers.sh" -I "$kmod" "$kmod/layers" $objs \
		>"$out" 2>&1; then
		result ok "kmod.layers.$v"
	else
		diag "$out"
		result fail "kmod.layers.$v"
	fi
}

for k in "$@"; do
	kbuild "$k" build_w1
	layers "$k"
	if command -v sparse >/dev/null; then
		kbuild "$k" sparse C=2
	else
		result skip kmod.sparse "sparse not installed"
	fi
done

srcs="$kmod/*.c $kmod/*.h"
kdoc=
for k in "$@"; do
	if [ -x "$k/scripts/kernel-doc" ] || [ -f "$k/scripts/kernel-doc" ]; then
		kdoc=$k/scripts/kernel-doc
		break
	fi
done
if [ -n "$kdoc" ]; then
	out=$kmod/build/check/kernel-doc.log
	mkdir -p "$kmod/build/check"
	# shellcheck disable=SC2086
	perl "$kdoc" -none $srcs "$uapi" >"$out" 2>&1
	if [ -s "$out" ]; then
		diag "$out"
		result fail kmod.kernel_doc
	else
		result ok kmod.kernel_doc
	fi
else
	result skip kmod.kernel_doc "no scripts/kernel-doc in the kernel trees"
fi

cp=${CHECKPATCH:-$kmod/build/tools/checkpatch.pl}
if [ ! -f "$cp" ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.* 2>/dev/null | head -n 1)
	if [ -n "$tarball" ]; then
		t=$kmod/build/tools
		mkdir -p "$t"
		base=$(basename "$tarball" | sed 's/\.tar\..*//')
		tar -xf "$tarball" -C "$t" "$base/scripts/checkpatch.pl" \
			"$base/scripts/spelling.txt" \
			"$base/scripts/const_structs.checkpatch" 2>/dev/null &&
		for f in checkpatch.pl spelling.txt const_structs.checkpatch; do
			mv "$t/$base/scripts/$f" "$t/$f"
		done
		rm -rf "${t:?}/$base"
	fi
fi
if [ -f "$cp" ]; then
	out=$kmod/build/check/checkpatch.log
	mkdir -p "$kmod/build/check"
	# shellcheck disable=SC2086
	perl "$cp" --no-tree --quiet --terse --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG \
		-f $srcs "$uapi" >"$out" 2>&1
	if grep -qE 'ERROR|WARNING' "$out"; then
		diag "$out"
		result fail kmod.checkpatch
	else
		result ok kmod.checkpatch
	fi
else
	result skip kmod.checkpatch "no checkpatch.pl (set CHECKPATCH, or install linux-source)"
fi

echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
[ "$fail" -eq 0 ]
