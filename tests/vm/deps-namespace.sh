#!/bin/bash
# SPDX-License-Identifier: MIT
#
# deps-namespace.sh TOP OUT RESULTS - the namespace checks of test-deps.sh;
# run it under `unshare -m --propagation private` (as root). /etc, /usr and
# /var become overlays whose upper layers are on a tmpfs of this mount
# namespace; /boot, /lib/modules, /usr/src and /usr/lib/linux-kbuild-* are
# hidden under empty tmpfs mounts, so the machine looks like a fresh one
# without kernel headers; um's kernel cache stays the real one, so what
# deps.sh fetches is kept. Each check writes "=== NAME" and its output to
# stdout and "PASS NAME" or "FAIL NAME" to RESULTS; "CANNOT WHY" there means
# none could run.
set -u
top=$1 out=$2 res=$3
cache=$(realpath -m "${UM_KERNEL_CACHE:-/var/cache/um-kernels}")
series="6.1 6.12"

check() {	# check NAME COMMAND...
	local name=$1
	shift
	echo "=== $name"
	if "$@"; then echo "PASS $name" >>"$res"; else echo "FAIL $name" >>"$res"; fi
}
fails() { echo "$*"; return 1; }
cannot() { echo "CANNOT $*" >>"$res"; exit 0; }

root=$out/ns-root
mkdir -p "$root" "$cache"
mount -t tmpfs -o size=1g,mode=0755 um-deps "$root" ||
	cannot "mount a tmpfs in a mount namespace"
mkdir -p "$root/cache"
mount --bind "$cache" "$root/cache" || cannot "bind-mount $cache"
for d in etc usr var; do
	mkdir -p "$root/$d/up" "$root/$d/work"
	mount -t overlay -o "lowerdir=/$d,upperdir=$root/$d/up,workdir=$root/$d/work" \
		overlay "/$d" || cannot "mount an overlay on /$d"
done
mount --bind "$root/cache" "$cache" || cannot "bind-mount the cache back"
hidden=(/boot "$(realpath -m /lib/modules)" /usr/src)
for d in /usr/lib/linux-kbuild-*; do
	[ -d "$d" ] && hidden+=("$d")
done
for d in "${hidden[@]}"; do
	mkdir -p "$d"
	mount -t tmpfs -o size=64m,mode=0755 um-hidden "$d" ||
		cannot "hide $d"
done

kernel_pkgs() {
	dpkg-query -W -f='${Package} ${Version} ${db:Status-Status}\n' \
		'linux-image-*' 'linux-headers-*' 2>/dev/null | sort
}
kernel_pkgs >"$out/kernel-pkgs.before"

runs() {
	"$top/scripts/deps.sh" || { fails "deps.sh failed"; return 1; }
	echo "--- again"
	"$top/scripts/deps.sh" >"$out/deps-again.log" 2>&1 || {
		cat "$out/deps-again.log"
		fails "deps.sh failed the second time"
		return 1
	}
	cat "$out/deps-again.log"
	! grep -q fetching "$out/deps-again.log" ||
		fails "the second run fetched again"
}
check runs runs

# nothing of the system's apt: its sources, lists and caches
no_apt_source() {
	local changed
	changed=$(cd "$root" && find etc/up/apt var/up/lib/apt var/up/cache/apt \
		-mindepth 1 2>/dev/null | head)
	[ -z "$changed" ] || fails "changed: $changed"
}
check no_apt_source no_apt_source

no_boot_kernel() {
	local d bad=0 left
	for d in /boot "$(realpath -m /lib/modules)"; do
		left=$(find "$d" -mindepth 1 | head)
		[ -z "$left" ] || { echo "written to $d: $left"; bad=1; }
	done
	kernel_pkgs >"$out/kernel-pkgs.after"
	diff "$out/kernel-pkgs.before" "$out/kernel-pkgs.after" ||
		{ echo "dpkg's linux-image-*/linux-headers-* changed"; bad=1; }
	return $bad
}
check no_boot_kernel no_boot_kernel

# the line of series $1 in deps.sh --kernels
line_of() {
	"$top/scripts/deps.sh" --kernels | awk -v s="$1" '
		index($1, s) == 1 && substr($1, length(s) + 1, 1) ~ /[.+-]/' |
		sort -V | tail -n 1
}

kernels_in_cache() {
	local s ver p bad=0 abs
	"$top/scripts/deps.sh" --kernels
	for s in $series; do
		read -r ver p <<<"$(line_of "$s")"
		[ -n "$ver" ] || { echo "no $s kernel"; bad=1; continue; }
		for p in $p; do
			case "$p" in
			"$cache/$ver"/*) [ -e "$p" ] || { echo "$p missing"; bad=1; } ;;
			*) echo "$p is not in $cache/$ver"; bad=1 ;;
			esac
		done
		abs=$(find "$cache/$ver" -type l -lname '/*' | head -n 3)
		[ -z "$abs" ] || { echo "absolute links: $abs"; bad=1; }
	done
	return $bad
}
check kernels_in_cache kernels_in_cache

# umm.ko against the cache's headers alone (the installed ones are hidden)
kmod_builds() {
	local ver kdir src=$root/kmod-$1 ko
	read -r ver _ kdir _ <<<"$(line_of "$1")"
	[ -n "$ver" ] || { fails "no $1 kernel"; return 1; }
	rm -rf "$src"
	"$top/kmod/scripts/copytree.sh" "$top" "$src" || return 1
	make -C "$kdir" M="$src/kmod" modules || return 1
	ko=$src/kmod/umm.ko
	modinfo -F vermagic "$ko"
	modinfo -F vermagic "$ko" | grep -q "^$ver " || fails "$ko is not for $ver"
}
for s in $series; do
	check "kmod_builds.$s" kmod_builds "$s"
done
