#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check.sh - the Debian packages and `make install`, as a user gets them.
# TAP, one line per check:
#   packaging.make_deb, .lintian_no_errors, .packages_complete
#       `make deb` (scripts/deb.sh) builds every package (libum-cuda0
#       recommending NVIDIA's CUDA 13 runtime); lintian reports no error
#       (warnings are shown as diagnostics);
#   packaging.install_layout, .uninstall_removes_all
#       `make install DESTDIR=...`: userspace only (no .ko, no /usr/src), the
#       multiarch libdir, linux/umm.h, umtrain and its page; `make uninstall`
#       leaves no file behind;
#   then, as root, in a mount namespace of its own where /usr, /etc and /var
#   are overlays on a tmpfs (so the machine is left as it was) and
#   /usr/local/cuda is hidden (in-namespace.sh):
#   packaging.dpkg_install       dpkg -i of every package
#   packaging.umm_group_udev     the group umm exists; /dev/umm root:umm 0660
#   packaging.libum_so_no_cuda   libum.so.0 needs no CUDA library and has no
#                                RUNPATH; libum.pc names no CUDA library and
#                                no path of the build host
#   packaging.bind_now           every dynamic ELF file shipped is BIND_NOW
#   packaging.monitoring_examples  the Prometheus rules and Grafana dashboard
#                                in um-tools' examples, uncompressed
#   packaging.libum_a_public     libum.a defines only the um_* functions
#   packaging.pkg_config_shared  README's trainer.c, built with pkg-config
#                                --cflags --libs libum, runs (sim backend)
#   packaging.pkg_config_static  the same linked with libum.a
#   packaging.backend_choice     asked for cuda, a context fails naming the
#                                CUDA runtime (hidden) and, libum-cuda0
#                                removed, the plugin; auto takes sim
#   packaging.dkms_build.<kver>  dkms add + build of umm-dkms for every kernel
#                                of the VM rig (scripts/deps.sh --kernels:
#                                um's kernel cache, --kernelsourcedir, or
#                                installed with headers); the module's
#                                version is VERSION
#   packaging.import_umtorch     python3 -c 'import umtorch' (the package's),
#                                libumtorch.so private to it, no run path
#   packaging.tools_version      umctl --version prints VERSION
#   packaging.dpkg_purge         every package purges cleanly
# Without root the namespace checks SKIP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$here/build
rm -rf "$out"
mkdir -p "$out"
ver=$(cat "$top/VERSION")
# "<version>=<headers build dir>" per kernel
kernel_dirs=$("$top/scripts/deps.sh" --kernels 2>/dev/null | cut -d' ' -f1,3 | tr ' ' =)
kernels=$(for k in $kernel_dirs; do echo "${k%%=*}"; done)
NS_CHECKS="dpkg_install umm_group_udev libum_so_no_cuda bind_now
	monitoring_examples libum_a_public
	pkg_config_shared pkg_config_static backend_choice $(for k in $kernels; do
	echo "dkms_build.$k"; done) import_umtorch tools_version dpkg_purge"
# shellcheck source=../../tools/common/tap.sh
. "$top/tools/common/tap.sh"
ok() { tap_result "packaging.$1" "$2"; }

tap_begin $((5 + $(echo $NS_CHECKS | wc -w)))

# --- the packages
start=$SECONDS
make -s -C "$top" deb >"$out/deb.log" 2>&1
rc=$?
sed 's/^/# /' "$out/deb.log" | grep -v '^# *$' | tail -30
ok make_deb "$([ $rc -eq 0 ] || [ -s "$top/build/deb/lintian.txt" ] ||
	echo "make deb failed (exit $rc), log $out/deb.log")"
echo "# make deb took $((SECONDS - start)) s"
ok lintian_no_errors "$(grep '^E:' "$top/build/deb/lintian.txt" 2>/dev/null ||
	{ [ -f "$top/build/deb/lintian.txt" ] || echo "lintian did not run"; })"
want="libum0 libum-dev umm-dkms um-tools python3-umtorch"
grep -q 'pkg.um.nocuda' "$out/deb.log" || want="$want libum-cuda0"
miss=""
for p in $want; do
	ls "$top/build/deb/${p}_${ver}_"*.deb >/dev/null 2>&1 || miss+=" $p"
done
# the CUDA plugin says what it needs: NVIDIA's runtime 13
for d in "$top/build/deb/libum-cuda0_${ver}_"*.deb; do
	[ -f "$d" ] || continue
	dpkg-deb -f "$d" Recommends | grep -q 'cuda-cudart-13-0' ||
		miss+=" (libum-cuda0 does not recommend cuda-cudart-13-0)"
done
ok packages_complete "${miss:+missing:$miss}"

# --- make install / uninstall
d=$out/destdir
make -s -C "$top" install DESTDIR="$d" >"$out/install.log" 2>&1
rc=$?
ma=$(cc -print-multiarch)
bad=""
[ $rc -eq 0 ] || bad+="make install failed (exit $rc)"$'\n'
for f in usr/local/lib/$ma/libum.so.$ver usr/local/lib/$ma/libum.a \
	usr/local/lib/$ma/pkgconfig/libum.pc usr/local/include/um.h \
	usr/local/include/linux/umm.h usr/local/bin/umtrain \
	usr/local/share/man/man1/umtrain.1 usr/local/sbin/umctl \
	usr/local/share/man/man7/libum.7; do
	[ -e "$d/$f" ] || bad+="missing $f"$'\n'
done
extra=$(cd "$d" 2>/dev/null && find . -name '*.ko' -o -path './usr/src*' -o -path './lib/*' | head)
[ -z "$extra" ] || bad+="not userspace: $extra"$'\n'
grep -q '"um '"$ver"'"' "$d/usr/local/share/man/man7/libum.7" 2>/dev/null ||
	bad+="libum.7's footer does not say um $ver"$'\n'
ok install_layout "${bad%$'\n'}"
make -s -C "$top" uninstall DESTDIR="$d" >>"$out/install.log" 2>&1
ok uninstall_removes_all "$(cd "$d" && find . ! -type d)"

# --- installed, in a namespace of its own
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	for c in $NS_CHECKS; do
		tap_skip "packaging.$c" "needs root (and unshare)"
	done
else
	res=$out/ns-results
	: >"$res"
	unshare -m --propagation private "$here/in-namespace.sh" "$top" "$out" \
		"$res" $kernel_dirs >"$out/ns.log" 2>&1
	echo "# in-namespace.sh exited $? (log: $out/ns.log)"
	cannot=$(sed -n 's/^CANNOT //p' "$res")
	for c in $NS_CHECKS; do
		if [ -n "$cannot" ]; then
			tap_skip "packaging.$c" "cannot $cannot here"
			continue
		fi
		line=$(grep -m1 "^[A-Z]* $c\$" "$res")
		if [ "${line%% *}" = PASS ]; then
			ok "$c" ""
		else
			ok "$c" "$(sed -n "/^=== $c\$/,/^=== /p" "$out/ns.log" |
				grep -v '^=== ' | tail -15)
${line:-(not run)}"
		fi
	done
fi
tap_end
