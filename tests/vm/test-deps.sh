#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test-deps.sh - what scripts/deps.sh changes on the machine, as TAP:
#   vm.deps.packages_pull_no_kernel
#       the apt-get install lines of a fresh machine (deps.sh --packages),
#       simulated against an empty dpkg status (every package and all it
#       pulls in), install no linux-image and no linux-headers package
#       (SKIP where apt has no package lists);
#   then, as root, in a mount namespace of its own (deps-namespace.sh) where
#   /etc, /usr and /var are overlays on a tmpfs, the installed kernels are
#   hidden (/boot, /lib/modules, /usr/src, /usr/lib/linux-kbuild-* empty),
#   as on a fresh machine, and only um's kernel cache is the real one:
#   vm.deps.runs               deps.sh succeeds (fetching into the cache what
#                              it lacks), and a second run fetches nothing
#   vm.deps.no_apt_source      nothing of /etc/apt, /var/lib/apt and
#                              /var/cache/apt changed (no apt source added)
#   vm.deps.no_boot_kernel     /boot and /lib/modules stay empty, dpkg's
#                              linux-image-* and linux-headers-* are as before
#   vm.deps.kernels_in_cache   deps.sh --kernels lists a 6.1 and a 6.12
#                              kernel, each path inside the cache, no link
#                              there to an absolute path
#   vm.deps.kmod_builds.<ver>  umm.ko builds against each of them
# Without root (or where the namespace cannot be made) those SKIP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=../../tools/common/tap.sh
. "$top/tools/common/tap.sh"
out=$here/build/deps
rm -rf "$out"
mkdir -p "$out"
NS_CHECKS="runs no_apt_source no_boot_kernel kernels_in_cache
	kmod_builds.6.1 kmod_builds.6.12"

tap_begin $((1 + $(echo $NS_CHECKS | wc -w)))

# --- the packages, resolved from nothing
why=""
if ! apt-cache policy build-essential 2>/dev/null | grep -q 'Candidate: [0-9]'; then
	why=skip
elif ! "$top/scripts/deps.sh" --packages >"$out/packages" 2>&1; then
	why="deps.sh --packages failed: $(head -c 300 "$out/packages")"
else
	while read -r line; do
		# shellcheck disable=SC2086
		if ! apt-get -s -o Dir::State::status=/dev/null install $line \
			>"$out/simulate.log" 2>&1; then
			why+="apt-get -s install $line failed: $(tail -n 3 "$out/simulate.log")"$'\n'
			continue
		fi
		why+=$(grep -E '^Inst linux-(image|headers)-' "$out/simulate.log")
	done <"$out/packages"
fi
if [ "$why" = skip ]; then
	tap_skip vm.deps.packages_pull_no_kernel "apt has no package lists (apt-get update)"
else
	tap_result vm.deps.packages_pull_no_kernel "$why"
fi

# --- deps.sh on a machine without kernels, in a namespace
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	for c in $NS_CHECKS; do
		tap_skip "vm.deps.$c" "needs root (and unshare)"
	done
	tap_end
	exit
fi
res=$out/ns-results
: >"$res"
unshare -m --propagation private "$here/deps-namespace.sh" "$top" "$out" \
	"$res" >"$out/ns.log" 2>&1
echo "# deps-namespace.sh exited $? (log: $out/ns.log)"
# shellcheck disable=SC2086 # one check a word
tap_ns_results vm.deps. "$res" "$out/ns.log" $NS_CHECKS
tap_end
