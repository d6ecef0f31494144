#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check.sh - the Debian packages and `make install`, as a user gets them.
# TAP, one line per check:
#   packaging.make_deb, .lintian_no_errors, .packages_complete
#       `make deb` (scripts/deb.sh) builds every package (libum-cuda0 and
#       um-tools-cuda recommending NVIDIA's CUDA 13 runtime); lintian reports no error
#       (warnings are shown as diagnostics);
#   packaging.no_cuda_runtime, .um_tools_no_cuda
#       no package (dbgsym ones too) holds a libcudart file or an ELF file
#       with NVIDIA's runtime linked in (its error strings); no ELF file of
#       um-tools needs a CUDA library or has a CUDA symbol, and um-tools
#       depends on libum0: the tools reach CUDA only through the plugins
#       (libum-cuda0, um-tools-cuda);
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
#   packaging.umbench_gpu        umbench --gpu exits 2 naming the CUDA runtime
#                                (hidden) and, um-tools-cuda removed, the
#                                plugin and its package
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
	pkg_config_shared pkg_config_static umbench_gpu backend_choice $(for k in $kernels; do
	echo "dkms_build.$k"; done) import_umtorch tools_version dpkg_purge"
# shellcheck source=../../tools/common/tap.sh
. "$top/tools/common/tap.sh"
ok() { tap_result "packaging.$1" "$2"; }

tap_begin $((7 + $(echo $NS_CHECKS | wc -w)))

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
grep -q 'pkg.um.nocuda' "$out/deb.log" || want="$want libum-cuda0 um-tools-cuda"
miss=""
for p in $want; do
	ls "$top/build/deb/${p}_${ver}_"*.deb >/dev/null 2>&1 || miss+=" $p"
done
# the CUDA plugins say what they need: NVIDIA's runtime 13
for d in "$top/build/deb/libum-cuda0_${ver}_"*.deb \
	"$top/build/deb/um-tools-cuda_${ver}_"*.deb; do
	[ -f "$d" ] || continue
	dpkg-deb -f "$d" Recommends | grep -q 'cuda-cudart-13-0' ||
		miss+=" ($(dpkg-deb -f "$d" Package) does not recommend cuda-cudart-13-0)"
done
ok packages_complete "${miss:+missing:$miss}"

# --- CUDA only through the plugins
is_elf() { [ -f "$1" ] && [ "$(head -c 4 "$1" | tr -d '\0')" = $'\x7fELF' ]; }
# One of cudaGetErrorString's messages: in the runtime's code, so in any
# file that has the runtime linked in, and in no file that only links it.
CUDART_MARK='CUDA driver version is insufficient for CUDA runtime version'
no_cuda_runtime() {
	local d x f
	for d in "$top"/build/deb/*.deb; do
		[ -f "$d" ] || continue
		dpkg-deb -c "$d" | grep -i 'libcudart' |
			sed "s|^|$(basename "$d") ships |"
		x=$out/contents/$(basename "$d" .deb)
		mkdir -p "$x" && dpkg-deb -x "$d" "$x" || echo "$d: cannot unpack"
		while IFS= read -r -d '' f; do
			is_elf "$f" && grep -qaF "$CUDART_MARK" "$f" &&
				echo "${f#"$x"}: NVIDIA's CUDA runtime linked in ($(basename "$d"))"
		done < <(find "$x" -type f -print0)
	done
}
ok no_cuda_runtime "$(no_cuda_runtime)"

um_tools_no_cuda() {
	local d x f n=0
	d=$(ls "$top/build/deb/um-tools_${ver}_"*.deb 2>/dev/null | head -n 1)
	[ -n "$d" ] || { echo "no um-tools package"; return; }
	x=$out/contents/$(basename "$d" .deb)
	[ -d "$x" ] || { mkdir -p "$x" && dpkg-deb -x "$d" "$x"; } ||
		echo "$d: cannot unpack"
	while IFS= read -r -d '' f; do
		is_elf "$f" || continue
		n=$((n + 1))
		readelf -d "$f" | grep -i 'NEEDED.*cuda' | sed "s|^|${f#"$x"}: |"
		readelf -W --dyn-syms "$f" | awk '$8 ~ /cuda/ { print $8 }' |
			head -n 3 | sed "s|^|${f#"$x"}: CUDA symbol |"
		grep -qaF "$CUDART_MARK" "$f" && echo "${f#"$x"}: CUDA runtime inside"
	done < <(find "$x" -type f -print0)
	[ "$n" -ge 5 ] || echo "only $n ELF files in $(basename "$d")"
	dpkg-deb -f "$d" Depends | grep -qE '(^|, )libum0( |,|$)' ||
		echo "um-tools does not depend on libum0: $(dpkg-deb -f "$d" Depends)"
}
ok um_tools_no_cuda "$(um_tools_no_cuda)"

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
	# shellcheck disable=SC2086 # one check a word
	tap_ns_results packaging. "$res" "$out/ns.log" $NS_CHECKS
fi
tap_end
