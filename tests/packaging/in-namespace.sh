#!/bin/bash
# SPDX-License-Identifier: MIT
#
# in-namespace.sh TOP OUT RESULTS VERSION=KDIR... - the installed-package checks
# of check.sh; run it under `unshare -m --propagation private` (as root).
# /usr, /etc and /var become overlays whose upper layers are on a tmpfs
# that lives only in this mount namespace, so dpkg -i, dkms and the group
# change the machine for this script only; /usr/local/cuda is hidden. Each
# check writes "=== NAME" and its output to stdout and "PASS NAME" or
# "FAIL NAME" to RESULTS; "CANNOT WHY" there means none could run.
# Each VERSION=KDIR is a kernel to build the DKMS module for, with its
# headers' build directory (which need not be /lib/modules/VERSION/build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$1 out=$2 res=$3
shift 3
ver=$(cat "$top/VERSION")
ma=$(cc -print-multiarch)
deb=$top/build/deb
pkgs=$(cd "$deb" && ls ./*.deb 2>/dev/null | grep -v -- -dbgsym_)
names=$(for p in $pkgs; do p=${p#./}; echo "${p%%_*}"; done)

check() {	# check NAME COMMAND...
	local name=$1
	shift
	echo "=== $name"
	if "$@"; then echo "PASS $name" >>"$res"; else echo "FAIL $name" >>"$res"; fi
}
say() { echo "$*"; }
fails() { echo "$*"; return 1; }

# A machine that cannot give us the overlays (no overlayfs, a container
# without the right to mount) skips the checks: RESULTS says why.
cannot() { echo "CANNOT $*" >>"$res"; exit 0; }
root=$out/ns-root
mkdir -p "$root"
mount -t tmpfs -o size=4g,mode=0755 um-packaging "$root" ||
	cannot "mount a tmpfs in a mount namespace"
for d in usr etc var; do
	mkdir -p "$root/$d/up" "$root/$d/work"
	mount -t overlay -o "lowerdir=/$d,upperdir=$root/$d/up,workdir=$root/$d/work" \
		overlay "/$d" || cannot "mount an overlay on /$d"
done
if [ -d /usr/local/cuda ]; then
	mount -t tmpfs -o size=1m,mode=0755 no-cuda /usr/local/cuda ||
		cannot "hide /usr/local/cuda"
fi
# The module is built by the checks below, for every kernel, not by the
# postinst for some; the man-db trigger would only cost time.
mkdir -p /etc/dkms && touch /etc/dkms/no-autoinstall
rm -f /var/lib/man-db/auto-update

install_all() {
	[ -n "$pkgs" ] || fails "no packages in $deb"
	(cd "$deb" && dpkg -i $pkgs)
}
check dpkg_install install_all

group_udev() {
	local rule=/usr/lib/udev/rules.d/60-umm.rules
	getent group umm || fails "no group umm"
	grep -H 'KERNEL=="umm"' "$rule" || fails "no rule for umm in $rule"
	grep -q 'GROUP="umm"' "$rule" && grep -q 'MODE="0660"' "$rule" ||
		fails "$rule does not give /dev/umm to root:umm 0660"
	grep -H umm /usr/lib/modprobe.d/umm.conf /usr/lib/modules-load.d/umm.conf
}
check umm_group_udev group_udev

so_no_cuda() {
	local so=/usr/lib/$ma/libum.so.0 pc=/usr/lib/$ma/pkgconfig/libum.pc
	readelf -d "$so" | grep -E 'NEEDED|RUNPATH|RPATH'
	! readelf -d "$so" | grep -iE 'cuda|RUNPATH|RPATH' ||
		fails "$so needs CUDA or has a search path"
	cat "$pc"
	! grep -iE 'cuda|/usr/local|'"$top" "$pc" ||
		fails "$pc names CUDA or a path of the build host"
}
check libum_so_no_cuda so_no_cuda

# hardening=+all asks for bind-now: every dynamic ELF file the packages
# ship must have it (the Makefiles once dropped dpkg's LDFLAGS).
bind_now() {
	local f bad=0
	for f in $(dpkg -L libum0 um-tools python3-umtorch libum-cuda0 \
			um-tools-cuda 2>/dev/null); do
		[ -f "$f" ] && head -c 4 "$f" | grep -q ELF || continue
		readelf -d "$f" 2>/dev/null | grep -q NEEDED || continue
		readelf -d "$f" | grep -qE 'BIND_NOW|FLAGS_1.*NOW' ||
			{ echo "$f: no BIND_NOW"; bad=1; }
	done
	return $bad
}
check bind_now bind_now

# The Prometheus rules and the Grafana dashboard, as the admin guide names
# them, uncompressed.
monitoring_examples() {
	local d=/usr/share/doc/um-tools/examples f
	for f in umm.rules.yml umm.rules.test.yml umm-dashboard.json; do
		[ -f "$d/$f" ] || { fails "no $d/$f"; return 1; }
	done
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' \
		"$d/umm-dashboard.json"
}
check monitoring_examples monitoring_examples

a_public() {
	local a=/usr/lib/$ma/libum.a other
	other=$(nm -g --defined-only "$a" | awk 'NF == 3 && $3 !~ /^um_/')
	[ -z "$other" ] || fails "$a defines: $other"
	nm -g --defined-only "$a" | grep -q ' T um_context_create$' ||
		fails "$a lacks um_context_create"
}
check libum_a_public a_public

"$top/tests/docs/extract-example.sh" "$top/README.md" >"$out/trainer.c"
shared_prog() {
	[ -z "$(ls -A /usr/local/cuda 2>/dev/null)" ] || fails "/usr/local/cuda not hidden"
	cc -Wall -Wextra -Werror -o "$out/trainer" "$out/trainer.c" \
		$(pkg-config --cflags --libs libum) -lm || return 1
	ldd "$out/trainer" | grep libum
	ldd "$out/trainer" | grep -q "/usr/lib/$ma/libum.so.0" ||
		fails "not linked with the packaged libum.so.0"
	env -u LD_LIBRARY_PATH -u LIBUM_BACKEND "$out/trainer"
}
check pkg_config_shared shared_prog

static_prog() {
	local libs
	libs=$(pkg-config --static --libs libum | tr ' ' '\n' | grep -vx -- '-lum')
	cc -Wall -Wextra -Werror -o "$out/trainer-static" "$out/trainer.c" \
		$(pkg-config --cflags libum) "$(pkg-config --variable=libdir libum)/libum.a" \
		$libs -lm || return 1
	! ldd "$out/trainer-static" | grep libum || fails "linked libum.so"
	env -u LIBUM_BACKEND "$out/trainer-static"
}
check pkg_config_static static_prog

# umbench --gpu with um-tools-cuda but the CUDA runtime hidden, then with
# um-tools-cuda removed: exit 2 naming what is missing (the runtime, then
# the plugin and its package).
umbench_gpu() {
	local err rc
	if dpkg -s um-tools-cuda >/dev/null 2>&1; then
		err=$(umbench --gpu -q 2>&1 >/dev/null)
		rc=$?
		echo "$err"
		[ $rc -eq 2 ] && echo "$err" | grep -q 'umbench-gpu.so: libcudart.so.13' ||
			fails "exit $rc, not 2 naming libcudart.so.13"
		dpkg -r um-tools-cuda || return 1
	fi
	err=$(umbench --gpu -q 2>&1 >/dev/null)
	rc=$?
	echo "$err"
	[ $rc -eq 2 ] && echo "$err" | grep -q 'packaged as um-tools-cuda' ||
		fails "exit $rc, not 2 naming um-tools-cuda"
}
check umbench_gpu umbench_gpu

# The plugin there but its CUDA runtime hidden, then the plugin removed:
# cuda fails naming what is missing, auto takes sim.
backend_choice() {
	cc -Wall -Wextra -Werror -o "$out/backend_choice" \
		"$here/backend_choice.c" $(pkg-config --cflags --libs libum) || return 1
	if dpkg -s libum-cuda0 >/dev/null 2>&1; then
		env -u LIBUM_BACKEND "$out/backend_choice" \
			libcudart.so || return 1
		dpkg -r libum-cuda0 || return 1
	fi
	env -u LIBUM_BACKEND "$out/backend_choice" \
		"libum-cuda.so.0: cannot open"
}
check backend_choice backend_choice

dkms status -m umm -v "$ver" | grep -q . || dkms add -m umm -v "$ver"
for kk in "$@"; do
	k=${kk%%=*} kdir=${kk#*=}
	dkms_build() {
		local ko
		dkms build -m umm -v "$ver" -k "$k" --kernelsourcedir "$kdir" ||
			return 1
		ko=$(ls /var/lib/dkms/umm/"$ver"/"$k"/*/module/umm.ko* | head -n 1)
		[ "$(modinfo -F version "$ko")" = "$ver" ] ||
			fails "$ko: version $(modinfo -F version "$ko"), VERSION $ver"
	}
	check "dkms_build.$k" dkms_build
done

import_umtorch() {
	(cd / && env -u PYTHONPATH -u UMTORCH_LIBUM /usr/bin/python3 -c '
import umtorch, umtorch._lib as l
print(umtorch.__file__, l.LIBUM_PATH)
assert umtorch.__file__.startswith("/usr/lib/python3/dist-packages/umtorch/")
l.shim()
print(l.SHIM_PATH)
assert l.SHIM_PATH == "/usr/lib/python3/dist-packages/umtorch/libumtorch.so"
') || return 1
	# a private library: not in the public directory, no run path
	! ls /usr/lib/$ma/libumtorch.so* 2>/dev/null ||
		{ fails "libumtorch.so in /usr/lib/$ma"; return 1; }
	! readelf -d /usr/lib/python3/dist-packages/umtorch/libumtorch.so |
		grep -E 'RUNPATH|RPATH' || fails "libumtorch.so has a run path"
}
check import_umtorch import_umtorch

tools_version() {
	local v
	v=$(umctl --version) && echo "$v" && [ "$v" = "umctl (um) $ver" ] || return 1
	v=$(umtrain --version) && echo "$v" && [ "${v##* }" = "$ver" ]
}
check tools_version tools_version

purge_all() {
	# shellcheck disable=SC2086
	dpkg --purge $names || return 1
	! dpkg -l $names 2>/dev/null | grep '^ii' || fails "still installed"
	[ ! -e "/usr/src/umm-$ver" ] || fails "/usr/src/umm-$ver left behind"
	! dkms status -m umm | grep . || fails "dkms still has umm"
}
check dpkg_purge purge_all
