#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/deps.sh - install the Debian 12 packages um needs to build and test,
# fetch the VM rig's two kernels into um's kernel cache, and make the torch
# 2.x venv umtorch's tests run under beside Debian's torch 1.13.
#
#   scripts/deps.sh            install whatever is missing (root, or sudo);
#                              when nothing is, returns in about a second
#   scripts/deps.sh --dry-run  say what that would install and fetch; change
#                              nothing
#   scripts/deps.sh --check    list what is missing; exit 1 if anything is
#   scripts/deps.sh --fetch [SERIES...]
#                              fetch the newest kernel of each series (6.1,
#                              6.12; default both) into the cache again
#   scripts/deps.sh --venv     make the torch 2.x venv if it is missing or
#                              its pins changed
#   scripts/deps.sh --venv-python
#                              print the venv's python if it is complete
#                              (exit 1 if not); bindings/python's check
#                              runs umtorch's tests with it
#   scripts/deps.sh --packages the apt-get install lines of a fresh machine
#   scripts/deps.sh --kernels  print one line per kernel the VM rig can boot
#                              and build umm.ko for, oldest first:
#                                <version> <vmlinuz> <headers build dir> <modules dir>
#                              e.g. "6.1.0-57-amd64 /var/cache/um-kernels/
#                              6.1.0-57-amd64/boot/vmlinuz-6.1.0-57-amd64 ...";
#                              tests/vm, kmod and tests/packaging take their
#                              kernels from it
#
# The rig's kernels (Debian 12's newest 6.1 and the newest 6.12 of
# bookworm-backports, so that umm.ko is built and tested against both
# shrinker APIs) are not installed: their linux-image, linux-headers (-amd64
# and -common) and linux-kbuild packages are downloaded with a private apt
# configuration (its sources.list, lists and caches inside the cache: the
# system's bookworm URIs and keyring, plus bookworm-backports) and unpacked
# with dpkg-deb into $UM_KERNEL_CACHE (default /var/cache/um-kernels), one
# directory per kernel. Nothing is added to /etc/apt, dpkg knows nothing of
# them, /boot and /lib/modules are not touched: the machine boots what it
# booted before. A kernel installed with its headers (/boot/vmlinuz-<ver>,
# /lib/modules/<ver>/build) counts as one of the rig's kernels too.
# sparse and linux-source-6.1 (a tarball in /usr/src whose scripts/
# checkpatch.pl kmod's checks use) let kmod's checks run sparse and
# checkpatch; debhelper, dh-dkms, dkms and lintian are what `make deb` and
# the packaging suite need; libelf1, libssl3, zlib1g and pahole are what the
# kernels' kbuild programs need.
# The torch 2.x venv: Debian 12 has only torch 1.13, and users run 2.x from
# PyPI. Debian's /usr/bin/python3 (not whatever python3 is first in PATH,
# a pyenv one say) makes a venv at $UM_VENV (default /var/cache/um-venv)
# and pip installs into it, with --no-deps, exactly the pinned wheels of
# scripts/torch2.txt; pip's cache is not used, nothing outside the venv is
# written, and the system's Python and its packages are left alone. The
# venv is complete when its .um-complete is a copy of scripts/torch2.txt:
# a changed pin makes it again. `rm -rf /var/cache/um-venv` removes it.
# The CUDA toolkit is not a Debian package: it is used where it is installed
# (/usr/local/cuda) and skipped otherwise.
set -euo pipefail

PKGS=(
	build-essential pkg-config clang libclang-rt-14-dev valgrind python3
	liburing-dev libnuma-dev numactl libsmartcols-dev libxxhash-dev
	qemu-system-x86 busybox-static cpio xz-utils kmod e2fsprogs
	python3-torch python3-pip python3-venv
	sparse linux-source-6.1 libelf1 libssl3 zlib1g pahole
	debhelper dh-dkms dkms fakeroot lintian
	prometheus prometheus-node-exporter
	man-db groff-base
)
# Installed without their Recommends: dkms recommends linux-headers-amd64
# (the headers of the newest 6.1 ABI), which the rig does not need; its
# other recommends, fakeroot, is in PKGS.
NO_RECOMMENDS=(dkms)
CACHE=$(realpath -m "${UM_KERNEL_CACHE:-/var/cache/um-kernels}")
# The rig's kernels: series, and the kernel versions of that series
# (linux-image-<version>, signed, else -unsigned, and
# linux-headers-<version>); the newest version that has both is fetched.
SERIES=(6.1 6.12)
VENV=$(realpath -m "${UM_VENV:-/var/cache/um-venv}")
VENV_REQ=$(realpath "$(dirname "$0")/torch2.txt")
VENV_BASE=/usr/bin/python3
declare -A SERIES_RE=(
	[6.1]='6\.1\.0-[0-9]+-amd64'
	[6.12]='6\.12\.[0-9]+\+deb12-amd64'
)

say() { echo "deps: $*"; }
die() { echo "deps: error: $*" >&2; exit 1; }

# Prints the packages of "$@" that are not installed (one dpkg-query).
missing_of() {
	local have
	have=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' "$@" \
		2>/dev/null | awk '$1 == "installed" { print $2 }') || true
	printf '%s\n' "$@" | grep -vxF -f <(echo "$have"; echo '#none#') || true
}

# The rig's kernels, one line each (see --kernels): the cache's complete
# entries first, then installed kernels with headers; a version in both is
# taken from the cache.
kernels() {
	local d ver vmlinuz seen=" " out=""
	for d in "$CACHE"/*/.um-complete; do
		[ -e "$d" ] || continue
		d=${d%/.um-complete}
		ver=${d##*/}
		seen+="$ver "
		out+="$ver $d/boot/vmlinuz-$ver $d/usr/src/linux-headers-$ver"
		out+=" $d/lib/modules/$ver"$'\n'
	done
	for vmlinuz in /boot/vmlinuz-*; do
		[ -e "$vmlinuz" ] || continue
		ver=${vmlinuz#/boot/vmlinuz-}
		[[ $seen == *" $ver "* ]] && continue
		[ -e "/lib/modules/$ver/build/Makefile" ] || continue
		out+="$ver $vmlinuz /lib/modules/$ver/build /lib/modules/$ver"$'\n'
	done
	[ -n "$out" ] || return 1
	printf '%s' "$out" | sort -V
}

# The series of SERIES that no kernel of kernels() belongs to ("6.1" is not
# "6.12": the version must go on with ".", "-" or "+").
missing_series() {
	local s k
	k=$(kernels 2>/dev/null | cut -d' ' -f1) || true
	for s in "${SERIES[@]}"; do
		grep -qE "^${s//./\\.}([.+-]|\$)" <<<"$k" || echo "$s"
	done
}

# Prints "URI SUITE KEYRING" for the system's Debian entries of bookworm,
# bookworm-updates, -security and -backports (deb822 and one-line files).
system_debian_entries() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk '
		function flush(  i) {
			if (deb) for (i in s) print u, s[i], k
			deb = 0; u = ""; k = ""; delete s
		}
		/^[[:space:]]*$/ { flush(); next }
		/^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
		/^URIs:/ { u = $2 }
		/^Signed-By:/ { k = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++)
			if ($i ~ /^bookworm(-updates|-security|-backports)?$/)
				s[i] = $i }
		END { flush() }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		awk '$1 == "deb" {
			k = ""; i = 2
			if ($2 ~ /^\[/) {
				for (; i <= NF; i++) {
					if ($i ~ /signed-by=/) {
						k = $i; sub(/.*signed-by=/, "", k)
						sub(/\]$/, "", k)
					}
					if ($i ~ /\]$/) break
				}
				i++
			}
			if ($(i + 1) ~ /^bookworm(-updates|-security|-backports)?$/)
				print $i, $(i + 1), k
		}' "$f"
	done
}

# The private apt configuration's sources.list: the system's bookworm
# suites with their URIs and keyrings, bookworm-backports from the bookworm
# entry when the system has none, Debian's own mirrors where it has none.
write_private_sources() {
	local uri suite key main="" mkey="" have=" "
	local def=/usr/share/keyrings/debian-archive-keyring.gpg
	: >"$1"
	while read -r uri suite key; do
		[[ $have == *" $suite "* ]] && continue
		have+="$suite "
		[ "$suite" = bookworm ] && { main=$uri; mkey=$key; }
		echo "deb [signed-by=${key:-$def}] $uri $suite main" >>"$1"
	done < <(system_debian_entries)
	[ -n "$main" ] || main=http://deb.debian.org/debian
	for suite in bookworm bookworm-updates bookworm-backports; do
		[[ $have == *" $suite "* ]] ||
			echo "deb [signed-by=${mkey:-$def}] $main $suite main" >>"$1"
	done
	[[ $have == *" bookworm-security "* ]] ||
		echo "deb [signed-by=$def] http://security.debian.org/debian-security bookworm-security main" >>"$1"
}

# apt-get / apt-cache with the private configuration under $CACHE/apt: no
# file of /etc/apt or /var/lib/apt is read for sources or written.
apt_private() {
	local tool=$1 a=$CACHE/apt
	shift
	"$tool" -q -o Dir::Etc::SourceList="$a/sources.list" \
		-o Dir::Etc::SourceParts="$a/empty" \
		-o Dir::Etc::Preferences="$a/empty/preferences" \
		-o Dir::Etc::PreferencesParts="$a/empty" \
		-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" \
		-o Acquire::Languages=none "$@"
}

# The newest version of series $1 in the private lists that has an image
# and headers: prints "VERSION IMAGE-PACKAGE".
newest_of_series() {
	apt_private apt-cache search --names-only \
		"^linux-(image|headers)-${SERIES_RE[$1]}(-unsigned)?\$" | awk '
		{ n = $1; v = n; sub(/^linux-(image|headers)-/, "", v)
		  sub(/-unsigned$/, "", v) }
		n ~ /^linux-headers-/ { h[v] = 1; next }
		n ~ /-unsigned$/ { if (!(v in i)) i[v] = n; next }
		{ i[v] = n }
		END { for (v in i) if (v in h) print v, i[v] }' |
		sort -V | tail -n 1
}

# Downloads and unpacks kernel series $1 into $CACHE/<version>.
fetch_series() {
	local ver img hdr pkgs dl new deb l t
	read -r ver img < <(newest_of_series "$1") ||
		die "no linux-image of series $1 with headers in the Debian archive"
	if [ -e "$CACHE/$ver/.um-complete" ]; then
		say "$1: $ver, the newest, is in the cache"
		drop_older "$1" "$ver"
		return 0
	fi
	hdr=linux-headers-$ver
	# the -common headers and the kbuild programs, as the headers name them
	pkgs="$img $hdr $(apt_private apt-cache show --no-all-versions "$hdr" |
		sed -n 's/^Depends: //p' | tr ',|' '\n\n' | sed 's/ *(.*//; s/ //g' |
		grep -E '^linux-(headers-.*-common|kbuild-.*)$' | tr '\n' ' ')"
	say "fetching $1: $pkgs"
	dl=$CACHE/.download-$ver new=$CACHE/.new-$ver
	rm -rf "$dl" "$new"
	mkdir -p "$dl" "$new"
	# apt downloads as _apt where it can: let it write here
	[ "$(id -u)" -ne 0 ] || chown _apt "$dl" 2>/dev/null || true
	# shellcheck disable=SC2086
	(cd "$dl" && apt_private apt-get download $pkgs) ||
		die "apt-get download of $pkgs failed"
	for deb in "$dl"/*.deb; do
		dpkg-deb -x "$deb" "$new"
	done
	# Links to absolute paths (lib/modules/<ver>/build and source) point
	# into the cache instead; the headers' Makefile includes the -common
	# tree by its absolute path.
	while IFS= read -r -d '' l; do
		t=$(readlink "$l")
		ln -sfnr "$new$t" "$l"
	done < <(find "$new" -type l -lname '/*' -print0)
	sed -i "s|^include /usr/src/|include $CACHE/$ver/usr/src/|" \
		"$new/usr/src/linux-headers-$ver/Makefile"
	# modules.dep, which the image leaves to its postinst's depmod
	PATH=$PATH:/usr/sbin:/sbin depmod -b "$new" "$ver"
	chmod a+r "$new/boot/vmlinuz-$ver"
	(cd "$dl" && ls ./*.deb | sed 's|^\./||') >"$new/.um-complete"
	rm -rf "$dl" "${CACHE:?}/$ver"
	mv "$new" "$CACHE/$ver"
	say "  $CACHE/$ver"
	drop_older "$1" "$ver"
}

# One kernel per series in the cache: those of series $1 but $2 go.
drop_older() {
	local d
	for d in "$CACHE"/*/.um-complete; do
		d=${d%/.um-complete}
		[ "$d" != "$CACHE/$2" ] &&
			[[ ${d##*/} =~ ^${SERIES_RE[$1]}$ ]] || continue
		say "  removing $d"
		rm -rf "$d"
	done
}

fetch_kernels() {
	local s
	mkdir -p "$CACHE/apt/lists/partial" "$CACHE/apt/cache/archives/partial" \
		"$CACHE/apt/empty"
	chmod 0755 "$CACHE"
	exec 8>"$CACHE/.lock"
	flock 8
	write_private_sources "$CACHE/apt/sources.list"
	say "apt-get update (private: $CACHE/apt/sources.list)"
	sed 's/^/deps:   /' "$CACHE/apt/sources.list"
	apt_private apt-get update >/dev/null ||
		die "apt-get update of $CACHE/apt/sources.list failed"
	for s in "$@"; do
		fetch_series "$s"
	done
	# the lists are only needed to pick and fetch: a later fetch updates
	rm -rf "$CACHE/apt/lists" "$CACHE/apt/cache"
	flock -u 8
}

# The pinned packages of scripts/torch2.txt, one "name==version" a line.
venv_pins() {
	sed 's/#.*//; /^[[:space:]]*$/d' "$VENV_REQ"
}

venv_complete() {
	[ -x "$VENV/bin/python" ] && cmp -s "$VENV/.um-complete" "$VENV_REQ"
}

# Makes $VENV from nothing: a venv of Debian's python3, the pinned wheels
# (binary only: nothing is built here), then the imports umtorch's tests
# need, checked before the venv counts as complete.
make_venv() {
	local start=$SECONDS
	mkdir -p "$(dirname "$VENV")"
	exec 7>"$VENV.lock"
	flock 7
	if venv_complete; then
		flock -u 7
		return 0
	fi
	say "making $VENV (torch $(venv_pins | sed -n 's/^torch==//p'),"\
		"$(venv_pins | wc -l) packages of $VENV_REQ)"
	rm -rf "$VENV"
	"$VENV_BASE" -m venv "$VENV" || die "$VENV_BASE -m venv $VENV failed"
	"$VENV/bin/python" -m pip install -q --no-cache-dir --no-deps \
		--only-binary :all: --no-input -r "$VENV_REQ" ||
		die "pip install -r $VENV_REQ into $VENV failed"
	# torch warns of the CUDA runtime it did not find: only say what it is
	out=$("$VENV/bin/python" -c '
import torch, torch.optim, torch.distributed
from torch.testing._internal.common_optimizers import optim_db
assert torch.distributed.is_gloo_available()
print("deps:   torch %s, %d optimizers in optim_db"
      % (torch.__version__, len(optim_db)))' 2>&1) || {
		echo "$out" >&2
		die "torch in $VENV does not import"
	}
	grep '^deps:' <<<"$out"
	cp "$VENV_REQ" "$VENV/.um-complete"
	chmod -R a+rX "$VENV"
	say "  $VENV: $(du -sh "$VENV" | cut -f1) in $((SECONDS - start)) s"
	flock -u 7
}

apt_get() {
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -q -y \
		-o DPkg::Lock::Timeout=900 "$@"
}

# "$@" split into the packages installed with and without Recommends.
with_recommends() {
	printf '%s\n' "$@" | grep -vxF -f <(printf '%s\n' "${NO_RECOMMENDS[@]}") || true
}
without_recommends() {
	printf '%s\n' "$@" | grep -xF -f <(printf '%s\n' "${NO_RECOMMENDS[@]}") || true
}

case "${1:-}" in
--kernels)
	kernels
	exit
	;;
--venv)
	make_venv
	exit 0
	;;
--venv-python)
	venv_complete || exit 1
	echo "$VENV/bin/python"
	exit 0
	;;
--packages)
	with_recommends "${PKGS[@]}" | paste -sd' '
	{ echo --no-install-recommends; without_recommends "${PKGS[@]}"; } |
		paste -sd' '
	exit 0
	;;
--fetch)
	shift
	for s in "$@"; do
		[ -n "${SERIES_RE[$s]:-}" ] || die "no kernel series $s (${SERIES[*]})"
	done
	[ $# -gt 0 ] || set -- "${SERIES[@]}"
	fetch_kernels "$@"
	kernels | sed 's/^/deps:   /'
	exit 0
	;;
--check | --dry-run)
	miss=$(missing_of "${PKGS[@]}")
	need=$(missing_series)
	if [ "$1" = --dry-run ]; then
		echo "apt-get install: $(echo "${miss:-(nothing)}" | paste -sd' ')"
		echo "fetch into $CACHE: $(echo "${need:-(nothing)}" | paste -sd' ')"
		if venv_complete; then
			echo "pip install into $VENV: (nothing)"
		else
			echo "pip install into $VENV (a venv of $VENV_BASE, from $VENV_REQ):" \
				"$(venv_pins | paste -sd' ')"
		fi
		exit 0
	fi
	venv_complete || need_venv=1
	if [ -n "$miss$need${need_venv:-}" ]; then
		echo "missing:" $miss $(for s in $need; do
			echo "kernel-$s(in $CACHE)"; done) \
			${need_venv:+"torch2-venv(in $VENV)"}
		exit 1
	fi
	echo "all present"
	exit 0
	;;
"") ;;
*)
	sed -n '3,29s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac

miss=$(missing_of "${PKGS[@]}")
need=$(missing_series)
venv_complete || need_venv=1
if [ -z "$miss$need${need_venv:-}" ]; then
	say "all ${#PKGS[@]} packages are installed, the rig's kernels and the torch 2.x venv are there"
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || die "not root and no sudo: run as root"
	SUDO=sudo
fi
[ -r /etc/debian_version ] || die "not a Debian system"

if [ -n "$miss" ]; then
	say "missing: $(echo $miss)"
	say "apt-get update"
	apt_get update
	say "installing: $(echo $miss)"
	other=$(with_recommends $miss)
	bare=$(without_recommends $miss)
	# shellcheck disable=SC2086
	[ -z "$other" ] || apt_get install $other
	# shellcheck disable=SC2086
	[ -z "$bare" ] || apt_get install --no-install-recommends $bare
	miss=$(missing_of "${PKGS[@]}")
	[ -z "$miss" ] || die "still missing after install: $miss"
fi

if [ -n "$need" ]; then
	say "fetching the rig's kernels:" $need
	if [ -n "$SUDO" ] && ! { mkdir -p "$CACHE" && [ -w "$CACHE" ]; } 2>/dev/null; then
		# the default cache is root's: the fetch runs as root
		$SUDO env UM_KERNEL_CACHE="$CACHE" "$0" --fetch $need
	else
		fetch_kernels $need
	fi
	need=$(missing_series)
	[ -z "$need" ] || die "kernel series still missing after the fetch:" $need
fi
if [ -n "${need_venv:-}" ]; then
	if [ -n "$SUDO" ] && ! { mkdir -p "$(dirname "$VENV")" &&
		[ -w "$(dirname "$VENV")" ]; } 2>/dev/null; then
		# the default cache is root's: the venv is made as root
		$SUDO env UM_VENV="$VENV" "$0" --venv
	else
		make_venv
	fi
	venv_complete || die "the torch 2.x venv $VENV is not complete"
fi
say "done; kernels for the VM rig:"
kernels | sed 's/^/deps:   /'
say "torch 2.x venv: $VENV/bin/python"
