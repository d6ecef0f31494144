#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/deb.sh - `make deb`: build the Debian packages (debian/) with
# dpkg-buildpackage -us -uc -b in a copy of the tree, build/deb/um-<version>,
# so that the .deb, .buildinfo and .changes files land in build/deb/ (not
# in the directory above the checkout) and the checkout stays clean. Then
# lintian; any error (not a warning) fails. Prints each package and its size.
#
# Without the CUDA toolkit (HAVE_CUDA=0, as mk/common.mk decides) it builds
# with the profile pkg.um.nocuda: nothing links CUDA, no libum-cuda0.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "deb: error: $*" >&2; exit 1; }

ver=$(cat VERSION)
chg=$(dpkg-parsechangelog -S Version)
[ "$chg" = "$ver" ] || die "debian/changelog's top entry is $chg but VERSION says $ver: add an entry (dch -v $ver)"

out=build/deb
src=$out/um-$ver
rm -rf "$out"
mkdir -p "$src"
# The tree as git sees it (tracked and new files, no build outputs); a tree
# that is not a git checkout is copied whole but for build/ directories.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf - | tar -xf - -C "$src"
else
	tar --exclude=./build --exclude='*/build' --exclude=./.git -cf - . |
		tar -xf - -C "$src"
fi

profiles=${DEB_BUILD_PROFILES:-}
[ "$(make -s --no-print-directory -C libum print-have-cuda)" = 1 ] ||
	profiles="${profiles:+$profiles }pkg.um.nocuda"
echo "deb: dpkg-buildpackage -us -uc -b${profiles:+ (profiles: $profiles)} in $src"
(cd "$src" && DEB_BUILD_PROFILES="$profiles" dpkg-buildpackage -us -uc -b) \
	>"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; die "dpkg-buildpackage failed (log: $out/build.log)"; }

changes=$(ls "$out"/*.changes)
rc=0
lintian --fail-on error "$changes" >"$out/lintian.txt" 2>&1 || rc=$?
echo "deb: lintian $(basename "$changes") (exit $rc):"
if [ -s "$out/lintian.txt" ]; then sed 's/^/  /' "$out/lintian.txt"; else echo "  (nothing)"; fi
echo "deb: packages in $out/:"
for d in "$out"/*.deb; do
	printf '  %-48s %8s bytes, installed %6s KiB\n' "$(basename "$d")" \
		"$(stat -c %s "$d")" "$(dpkg-deb -f "$d" Installed-Size)"
done
[ "$rc" -eq 0 ] || die "lintian reports errors"
