#!/bin/bash
# mkinitramfs.sh - build the busybox initramfs the VM rig boots.
#
# Usage:
#   mkinitramfs.sh -o OUT.cpio.gz --kernel VER [options]
# Options:
#   --moddir DIR         the modules of VER (default /lib/modules/VER; the
#                        rig's kernels come from its kernel cache)
#   --ko FILE            umm.ko to insmod at boot (copied to /lib/um/umm.ko)
#   --ko-params "P=V .." module parameters for that insmod
#   --modules "a b ..."  kernel modules of VER to load first, in dependency
#                        order (resolved with modules.dep; built-ins skipped;
#                        .ko.xz/.ko.zst decompressed, busybox insmod cannot)
#   --bin FILE           a static program, installed as /t/<basename> (on PATH)
#   --file SRC:DST       any other file, installed at DST
#   --cmds FILE          the test list: one command per line, "program args";
#                        run in order by /init with stdin from /dev/null
#   --env NAME=VALUE     exported to every test command
#
# The /init it writes: mounts proc, sysfs, devtmpfs, debugfs, tmpfs; loads the
# modules and umm.ko; runs each command, framing its output and the kernel
# log it caused with markers that run-vm.sh parses; removes umm; powers off.
# Test output goes to the second serial port (/dev/ttyS1) so kernel console
# messages (first port) never interleave with TAP.
set -euo pipefail

die() { echo "mkinitramfs.sh: $*" >&2; exit 2; }

out= kver= moddir= ko= ko_params= modules= cmds=
bins=() files=() envs=()
while [ $# -gt 0 ]; do
	case "$1" in
	-o) out=$2; shift 2 ;;
	--kernel) kver=$2; shift 2 ;;
	--moddir) moddir=$2; shift 2 ;;
	--ko) ko=$2; shift 2 ;;
	--ko-params) ko_params=$2; shift 2 ;;
	--modules) modules=$2; shift 2 ;;
	--bin) bins+=("$2"); shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--cmds) cmds=$2; shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	-h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
	*) die "unknown argument $1" ;;
	esac
done
[ -n "$out" ] || die "-o OUT is required"
[ -n "$kver" ] || die "--kernel VER is required"
is_static() {	# an ELF without a program interpreter needs no libc
	# Read into a variable: `| grep -q` quits at its match, and under
	# pipefail readelf's SIGPIPE would turn "dynamic" into "static".
	local phdrs
	phdrs=$(readelf -lW "$1" 2>/dev/null)
	[[ $phdrs == *'Requesting program interpreter'* ]] && return 1
	readelf -h "$1" >/dev/null 2>&1
}
busybox=
for b in /bin/busybox /usr/bin/busybox $(command -v busybox || true); do
	[ -x "$b" ] && is_static "$b" && { busybox=$b; break; }
done
[ -n "$busybox" ] || die "no static busybox (apt-get install busybox-static)"

root=$(mktemp -d "${TMPDIR:-/tmp}/um-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,mnt,t,etc/um,lib/um/mods,root}
# mktemp made the root 0700: unprivileged test processes (uid 65534) must
# reach /dev and /sys like on a real system, or every permission test
# would pass for the wrong reason.
chmod 0755 "$root" "$root"/{bin,sbin,dev,proc,sys,mnt,t,etc,etc/um,lib,lib/um,lib/um/mods}
chmod 0700 "$root/root"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"

# --- kernel modules, dependencies first --------------------------------------
moddir=${moddir:-/lib/modules/$kver}
declare -A seen=()
order=()
modpath() {	# name -> path relative to $moddir, from modules.dep
	local n=${1//-/_}
	awk -F: -v n="$n" '{
		p = $1; b = p; sub(/.*\//, "", b); sub(/\.ko(\.[a-z]+)?$/, "", b)
		gsub(/-/, "_", b)
		if (b == n) { print p; exit }
	}' "$moddir/modules.dep"
}
moddeps() {	# relative path -> its direct dependencies
	awk -F: -v p="$1" '$1 == p { print $2; exit }' "$moddir/modules.dep"
}
add_module() {	# relative path; depth-first so dependencies load first
	local p=$1 d
	[ -n "${seen[$p]:-}" ] && return 0
	seen[$p]=1
	for d in $(moddeps "$p"); do add_module "$d"; done
	order+=("$p")
}
for m in $modules; do
	p=$(modpath "$m")
	if [ -z "$p" ]; then
		grep -q "/${m//-/_}.ko\$\|/${m//_/-}.ko\$" "$moddir/modules.builtin" 2>/dev/null &&
			continue
		die "module $m: neither in $moddir/modules.dep nor built in"
	fi
	add_module "$p"
done
: >"$root/etc/um/modules"
for p in "${order[@]}"; do
	b=$(basename "$p"); b=${b%%.ko*}
	case "$p" in
	*.ko.xz) xz -dc "$moddir/$p" >"$root/lib/um/mods/$b.ko" ;;
	*.ko.zst) zstd -qdc "$moddir/$p" >"$root/lib/um/mods/$b.ko" ;;
	*.ko.gz) gzip -dc "$moddir/$p" >"$root/lib/um/mods/$b.ko" ;;
	*) cp "$moddir/$p" "$root/lib/um/mods/$b.ko" ;;
	esac
	echo "$b" >>"$root/etc/um/modules"
done

# --- umm.ko, programs, files, test list --------------------------------------
if [ -n "$ko" ]; then
	[ -f "$ko" ] || die "$ko: no such module"
	cp "$ko" "$root/lib/um/umm.ko"
	printf '%s\n' "$ko_params" >"$root/etc/um/umm-params"
fi
for b in "${bins[@]}"; do
	[ -f "$b" ] || die "$b: no such program"
	is_static "$b" ||
		die "$b is not a static ELF; the initramfs has no libc (link -static)"
	install -m 0755 "$b" "$root/t/$(basename "$b")"
done
for f in "${files[@]}"; do
	src=${f%%:*} dst=${f#*:}
	[ -f "$src" ] || die "$src: no such file"
	mkdir -p "$root/$(dirname "$dst")"
	cp -a "$src" "$root/$dst"
done
if [ -n "$cmds" ]; then
	grep -v '^[[:space:]]*\(#\|$\)' "$cmds" >"$root/etc/um/cmds" || true
else
	: >"$root/etc/um/cmds"
fi
: >"$root/etc/um/env"
for e in "${envs[@]}"; do
	case "$e" in
	*=*) printf 'export %q\n' "$e" >>"$root/etc/um/env" ;;
	*) die "--env $e: want NAME=VALUE" ;;
	esac
done
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "nobody:x:65534:65534:nobody:/:/bin/false" >>"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"

cat >"$root/init" <<'INIT'
#!/bin/busybox sh
# Generated by tests/vm/mkinitramfs.sh. Markers ("### UM-...") are parsed by
# tests/vm/judge.awk: keep them in sync.
/bin/busybox --install -s /bin
export PATH=/t:/bin:/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
out=/dev/ttyS1
[ -c $out ] || out=/dev/console
exec >$out 2>&1
stty -F $out -onlcr 2>/dev/null

section_dmesg() {	# name: print and clear what the kernel logged
	echo "### UM-DMESG-BEGIN $1"
	dmesg -c
	echo "### UM-DMESG-END $1"
}

echo "### UM-BOOTED kernel=$(uname -r) nodes=$(ls -d /sys/devices/system/node/node* | wc -l) cpus=$(nproc)"
for m in $(cat /etc/um/modules); do
	insmod /lib/um/mods/$m.ko || echo "### UM-MODLOAD-FAIL $m"
done
if [ -f /lib/um/umm.ko ]; then
	insmod /lib/um/umm.ko $(cat /etc/um/umm-params)
	echo "### UM-INSMOD rc=$?"
fi
. /etc/um/env
if [ -n "${UM_VM_DISK:-}" ]; then
	if mount -t ext4 "$UM_VM_DISK" /mnt; then
		echo "### UM-MOUNTED $UM_VM_DISK /mnt"
	else
		echo "### UM-MOUNT-FAIL $UM_VM_DISK"
	fi
fi
section_dmesg boot
n=0
while read -r line; do
	n=$((n + 1))
	echo "### UM-BEGIN $n $line"
	# Diagnosis only: a command still running after UM_VM_HANG_DUMP
	# seconds gets the kernel's blocked tasks and CPU backtraces dumped
	# into its section (which then fails), while it keeps running.
	( sleep "${UM_VM_HANG_DUMP:-300}" && {
		echo "### UM-HANG $n"
		echo w >/proc/sysrq-trigger
		echo l >/proc/sysrq-trigger
		dmesg | tail -n 300 | sed 's/^/# hang: /'
	} ) &
	watchdog=$!
	( cd /tmp && eval "$line" ) </dev/null
	rc=$?
	kill $watchdog 2>/dev/null
	echo "### UM-END $n rc=$rc"
	section_dmesg $n
done </etc/um/cmds
grep -q ' /mnt ' /proc/mounts && umount /mnt
if grep -q '^umm ' /proc/modules; then
	rmmod umm
	echo "### UM-RMMOD rc=$?"
fi
section_dmesg shutdown
echo "### UM-DONE"
sync
poweroff -f
INIT
chmod 0755 "$root/init"

(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
