#!/bin/sh
# kernels.sh - list the kernels the VM rig can boot.
#
# Usage: kernels.sh [SERIES...]
#   With no argument, print every installed kernel that has both
#   /boot/vmlinuz-<ver> and /lib/modules/<ver>/build (headers to build umm.ko).
#   With SERIES (e.g. "6.1" "6.12"), print the newest such kernel of each
#   series, one per line; exit 1 (after printing what was found) when a
#   series has none.  A full version string is accepted as its own series.
set -u

all_kernels() {
	for img in /boot/vmlinuz-*; do
		[ -e "$img" ] || continue
		ver=${img#/boot/vmlinuz-}
		[ -e "/lib/modules/$ver/build/Makefile" ] || continue
		echo "$ver"
	done | sort -V
}

[ $# -eq 0 ] && { all_kernels; exit 0; }

rc=0
for series in "$@"; do
	# "6.1" must not match "6.12...": require the next char to be . or -
	best=$(all_kernels | while read -r v; do
		case "$v" in
		"$series") echo "$v" ;;
		"$series".*|"$series"-*|"$series"+*) echo "$v" ;;
		esac
	done | sort -V | tail -n 1)
	if [ -n "$best" ]; then
		echo "$best"
	else
		echo "kernels.sh: no kernel of series $series with headers" >&2
		rc=1
	fi
done
exit $rc
