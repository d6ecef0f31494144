#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/deps.sh - install the Debian 12 packages um needs to build and test.
#
#   scripts/deps.sh            install whatever is missing (root, or sudo);
#                              when nothing is, returns in about a second
#   scripts/deps.sh --check    list what is missing; exit 1 if anything is
#   scripts/deps.sh --kernels  print one line per installed kernel that has
#                              both an image and its headers, oldest first:
#                                <version> <vmlinuz path> <headers build dir>
#                              e.g. "6.1.0-57-amd64 /boot/vmlinuz-6.1.0-57-amd64
#                              /lib/modules/6.1.0-57-amd64/build"; the VM rig
#                              (tests/vm) boots each of these kernels
#
# Besides the packages below it installs the newest 6.12 kernel image and
# headers of bookworm-backports (adding that suite as a deb822 source with
# the URIs and keyring of the system's bookworm entry), so that umm.ko is
# built and tested against both shrinker APIs (6.1 and 6.7+).
# sparse and linux-source-6.1 (whose tarball has scripts/checkpatch.pl) let
# kmod's checks run sparse and checkpatch; debhelper, dh-dkms, dkms and
# lintian are what `make deb` and the packaging suite need.
# The CUDA toolkit is not a Debian package: it is used where it is installed
# (/usr/local/cuda) and skipped otherwise.
set -euo pipefail

PKGS=(
	build-essential pkg-config clang libclang-rt-14-dev valgrind python3
	liburing-dev libnuma-dev numactl libsmartcols-dev libxxhash-dev
	qemu-system-x86 busybox-static cpio xz-utils kmod e2fsprogs
	linux-image-amd64 linux-headers-amd64 python3-torch python3-pip
	sparse linux-source-6.1
	debhelper dh-dkms dkms lintian
	prometheus prometheus-node-exporter
	man-db groff-base
)
BPO_SOURCE=/etc/apt/sources.list.d/bookworm-backports.sources
# Newest 6.12 image (signed, else -unsigned) whose headers are available.
BPO_RE='^linux-(image|headers)-6\.12\.[0-9]+\+deb12-amd64(-unsigned)?$'

say() { echo "deps: $*"; }
die() { echo "deps: error: $*" >&2; exit 1; }

# Prints the packages of "$@" that are not installed (one dpkg-query).
missing_of() {
	local have
	have=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' "$@" \
		2>/dev/null | awk '$1 == "installed" { print $2 }') || true
	printf '%s\n' "$@" | grep -vxF -f <(echo "$have"; echo '#none#') || true
}

# A 6.12 kernel is present when its image and headers are (see kernels).
bpo_present() {
	local k
	k=$(kernels 2>/dev/null)
	grep -q '^6\.12\.' <<<"$k"
}

kernels() {
	local vmlinuz ver out=""
	for vmlinuz in /boot/vmlinuz-*; do
		[ -e "$vmlinuz" ] || continue
		ver=${vmlinuz#/boot/vmlinuz-}
		[ -e "/lib/modules/$ver/build/Makefile" ] || continue
		out+="$ver $vmlinuz /lib/modules/$ver/build"$'\n'
	done
	[ -n "$out" ] || return 1
	printf '%s' "$out" | sort -V
}

# Writes the bookworm-backports source from the system's bookworm entry.
add_bpo_source() {
	local uris="" keyring=""
	if [ -r /etc/apt/sources.list.d/debian.sources ]; then
		# the stanza whose Suites include plain "bookworm"
		read -r uris keyring < <(awk '
			/^[[:space:]]*$/ { if (ok) exit; u = ""; k = ""; ok = 0; next }
			/^URIs:/ { u = $2 }
			/^Signed-By:/ { k = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") ok = 1 }
			END { if (ok) print u, k }
			' /etc/apt/sources.list.d/debian.sources) || true
	fi
	if [ -z "$uris" ] && [ -r /etc/apt/sources.list ]; then
		uris=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
			/etc/apt/sources.list)
	fi
	[ -n "$uris" ] || uris=http://deb.debian.org/debian
	[ -n "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	say "adding $BPO_SOURCE ($uris bookworm-backports)"
	$SUDO tee "$BPO_SOURCE" >/dev/null <<-EOS
		Types: deb
		URIs: $uris
		Suites: bookworm-backports
		Components: main
		Signed-By: $keyring
	EOS
}

apt_get() {
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -q -y \
		-o DPkg::Lock::Timeout=900 "$@"
}

case "${1:-}" in
--kernels)
	kernels
	exit
	;;
--check)
	miss=$(missing_of "${PKGS[@]}")
	bpo_present || miss="$miss linux-image-6.12.*+deb12-amd64(+headers)"
	if [ -n "${miss// /}" ]; then
		echo "missing:" $miss
		exit 1
	fi
	echo "all present"
	exit 0
	;;
"") ;;
*)
	sed -n '3,13s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac

miss=$(missing_of "${PKGS[@]}")
need_bpo=0
bpo_present || need_bpo=1
if [ -z "$miss" ] && [ $need_bpo -eq 0 ]; then
	say "all ${#PKGS[@]} packages and the 6.12 backports kernel are installed"
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || die "not root and no sudo: run as root"
	SUDO=sudo
fi
[ -r /etc/debian_version ] || die "not a Debian system"

if [ $need_bpo -eq 1 ] && ! grep -qs bookworm-backports \
	"$BPO_SOURCE" /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	/etc/apt/sources.list.d/*.sources; then
	add_bpo_source
fi
say "missing: $(echo $miss)${miss:+ }$([ $need_bpo -eq 1 ] && echo '6.12 backports kernel')"
say "apt-get update"
apt_get update

if [ -n "$miss" ]; then
	say "installing: $(echo $miss)"
	# shellcheck disable=SC2086
	apt_get install $miss
fi

if [ $need_bpo -eq 1 ]; then
	img=$(apt-cache search --names-only "$BPO_RE" | awk '
		{ n = $1; v = n; sub(/^linux-(image|headers)-/, "", v)
		  sub(/-unsigned$/, "", v) }
		n ~ /^linux-headers-/ { h[v] = 1; next }
		n ~ /-unsigned$/ { if (!(v in i)) i[v] = n; next }
		{ i[v] = n }
		END { for (v in i) if (v in h) print v, i[v] }' |
		sort -V | tail -n 1 | cut -d" " -f2)
	[ -n "$img" ] || die "no linux-image-6.12.*+deb12-amd64 with headers found"
	hdr=$(echo "$img" | sed 's/^linux-image-/linux-headers-/; s/-unsigned$//')
	say "installing: $img $hdr (bookworm-backports)"
	apt_get install -t bookworm-backports "$img" "$hdr"
fi

miss=$(missing_of "${PKGS[@]}")
[ -z "$miss" ] || die "still missing after install: $miss"
bpo_present || die "6.12 backports kernel still missing after install"
say "done; kernels for the VM rig:"
kernels | sed 's/^/deps:   /'
