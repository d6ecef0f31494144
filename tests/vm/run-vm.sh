#!/bin/bash
# run-vm.sh - boot a Debian kernel under qemu (two NUMA nodes) with umm.ko and
# run test programs in it; print their TAP and judge the kernel log.
#
# Usage:
#   run-vm.sh --kernel VER|SERIES [options] [-- 'program args' ...]
# Options:
#   --kernel K         exact version (6.1.0-57-amd64) or series (6.1, 6.12):
#                      the newest of tests/vm/kernels.sh (um's kernel cache,
#                      or installed with headers)
#   --ko FILE          use this umm.ko instead of building kmod/ for the kernel
#   --no-module        boot without umm.ko
#   --ko-params "..."  parameters for insmod umm.ko
#   --disk IMG         attach IMG as a virtio disk (/dev/vda), load the
#                      virtio/ext4 modules and mount it on /mnt (ext4)
#   --mem MIB          memory per NUMA node (default 512; two nodes)
#   --timeout S        hang guard only: kill qemu after S seconds (default 900)
#   --bin FILE         add a static program to the initramfs (/t, on PATH)
#   --file SRC:DST     add any file
#   --env NAME=VALUE   exported to every command
#   --cmds FILE        commands to run, one "program args" per line
#   --append "..."     extra kernel command line
#   --tag NAME         work directory tests/vm/build/<ver>/NAME (default run):
#                      give concurrent runs different tags
#   --out DIR          keep logs there (default: the work directory)
#   --live             copy the test port to stderr while the VM runs
# Each argument after -- is one command line; when its first word names a file
# on the host, that file is added as with --bin and called by its basename.
#
# Output: "# kernel VER", each program's TAP (with a "# Totals:" line each), then
# the rig's own TAP (boot, insmod, clean kernel log per command, rmmod at end).
# Exit status 0 when all passed. See tests/vm/README.rst.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
die() { echo "run-vm.sh: $*" >&2; exit 2; }

tag=run kernel= ko= nomod=0 ko_params= disk= mem=512 timeout=900 out= live=0 append=
cmdsfile=
bins=() files=() envs=() cmdlines=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--ko) ko=$2; shift 2 ;;
	--no-module) nomod=1; shift ;;
	--ko-params) ko_params=$2; shift 2 ;;
	--disk) disk=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--bin) bins+=("$2"); shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	--cmds) cmdsfile=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--tag) tag=$2; shift 2 ;;
	--live) live=1; shift ;;
	-h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
	--) shift; cmdlines+=("$@"); break ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done
[ -n "$kernel" ] || die "--kernel is required"
case "$mem" in ''|*[!0-9]*) die "--mem wants MiB" ;; esac
case "$timeout" in ''|*[!0-9]*) die "--timeout wants seconds" ;; esac

line=$("$here/kernels.sh" --paths "$kernel") ||
	die "no kernel $kernel with headers (scripts/deps.sh fetches the rig's)"
read -r ver vmlinuz kdir moddir <<EOF
$line
EOF
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (scripts/deps.sh)"
[ -r "$vmlinuz" ] || die "$vmlinuz is not readable (run as root)"

case "$tag" in ''|*/*|.*) die "--tag wants a plain name" ;; esac
b=$here/build/$ver/$tag
out=${out:-$b}
mkdir -p "$b" "$out"
# Two runs with one tag would overwrite each other's files: the second
# waits for the first.
exec 9>"$b.lock"
if ! flock -n 9; then
	echo "# run-vm.sh: $ver/$tag is in use by another run; waiting" >&2
	flock 9
fi
out=$(cd "$out" && pwd)

# --- umm.ko for this kernel --------------------------------------------------
# kmod/ is built in a private copy per kernel: Kbuild writes its objects next
# to the sources, and two kernels (or the kernel engineer) must not collide.
build_ko() {
	local src=$b/src
	[ -f "$top/kmod/Kbuild" ] || die "kmod/ has no Kbuild yet"
	rm -rf "$src"
	"$top/kmod/scripts/copytree.sh" "$top" "$src"
	# Kbuild straight from the kernel's build tree: the same command
	# kmod/Makefile runs, without depending on its extra targets.
	if ! make -C "$kdir" M="$src/kmod" modules \
		>"$b/kmod-build.log" 2>&1; then
		sed 's/^/# kmod build: /' "$b/kmod-build.log" >&2
		die "umm.ko does not build for $ver"
	fi
	ko=$(find "$src/kmod" -name umm.ko | head -n 1)
	[ -n "$ko" ] || die "kmod build for $ver produced no umm.ko"
}
if [ "$nomod" = 0 ] && [ -z "$ko" ]; then
	build_ko
fi

# --- test list and initramfs ---------------------------------------------------
cmds=$b/cmds
: >"$cmds"
if [ -n "$cmdsfile" ]; then
	grep -v '^[[:space:]]*\(#\|$\)' "$cmdsfile" >>"$cmds" || true
fi
for c in "${cmdlines[@]}"; do
	first=${c%% *}
	rest=
	[ "$first" != "$c" ] && rest=" ${c#* }"
	if [ -f "$first" ]; then
		bins+=("$first")
		c=$(basename "$first")$rest
	fi
	printf '%s\n' "$c" >>"$cmds"
done

mk=("$here/mkinitramfs.sh" -o "$b/initrd.gz" --kernel "$ver" --moddir "$moddir"
	--cmds "$cmds")
[ "$nomod" = 0 ] && mk+=(--ko "$ko" --ko-params "$ko_params")
for x in "${bins[@]}"; do mk+=(--bin "$x"); done
for x in "${files[@]}"; do mk+=(--file "$x"); done
for x in "${envs[@]}"; do mk+=(--env "$x"); done
qdisk=()
if [ -n "$disk" ]; then
	[ -f "$disk" ] || die "$disk: no such disk image"
	mk+=(--modules "virtio_pci virtio_blk crc32c_generic ext4" --env UM_VM_DISK=/dev/vda)
	qdisk=(-drive "file=$disk,if=virtio,format=raw")
fi
"${mk[@]}"

# --- boot --------------------------------------------------------------------
rm -f "$out/console.log" "$out/tap.log"
: >"$out/tap.log"
qemu=(qemu-system-x86_64 -m $((2 * mem)) -smp 2,sockets=2,cores=1,threads=1
	-object "memory-backend-ram,id=m0,size=${mem}M"
	-object "memory-backend-ram,id=m1,size=${mem}M"
	-numa node,nodeid=0,cpus=0,memdev=m0
	-numa node,nodeid=1,cpus=1,memdev=m1
	-kernel "$vmlinuz" -initrd "$b/initrd.gz"
	-append "console=ttyS0 quiet psi=1 panic=-1 $append"
	-nographic -no-reboot -monitor none -nic none
	-serial "file:$out/console.log" -serial "file:$out/tap.log"
	"${qdisk[@]}")
printf '%q ' "${qemu[@]}" >"$out/qemu.cmd"; echo >>"$out/qemu.cmd"
if [ "$live" = 1 ]; then
	tail -n +1 -F "$out/tap.log" >&2 2>/dev/null &
	tailpid=$!
fi
start=$(date +%s.%N)
set +e
timeout -k 5 "$timeout" "${qemu[@]}" </dev/null >"$out/qemu.out" 2>&1
qrc=$?
set -e
end=$(date +%s.%N)
[ "$live" = 1 ] && kill "$tailpid" 2>/dev/null
wait 2>/dev/null || true

# --- judge -------------------------------------------------------------------
set +e
awk -v kernel="$ver" -v cmds="$cmds" -v expect_umm=$((1 - nomod)) \
	-f "$here/judge.awk" "$out/tap.log"
rc=$?
set -e
printf '# vm %s: qemu exit %d, %.1f s wall (software emulation), logs in %s\n' \
	"$ver" "$qrc" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$out"
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "# vm $ver: hang guard fired after ${timeout}s; console tail:"
	rc=1
fi
if [ "$rc" != 0 ] || [ "$qrc" != 0 ]; then
	[ -s "$out/qemu.out" ] && sed 's/^/# qemu: /' "$out/qemu.out"
	tail -n 40 "$out/console.log" 2>/dev/null | tr -d '\r' | sed 's/^/# console: /'
	[ "$rc" = 0 ] && rc=1
fi
exit $rc
