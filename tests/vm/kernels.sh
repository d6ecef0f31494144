#!/bin/sh
# kernels.sh - list the kernels the VM rig can boot.
#
# Usage: kernels.sh [--paths] [SERIES...]
#   With no SERIES, print every kernel of `scripts/deps.sh --kernels`: those
#   of um's kernel cache (/var/cache/um-kernels, or $UM_KERNEL_CACHE) and the
#   installed ones that have headers. With SERIES (e.g. "6.1" "6.12"), print
#   the newest such kernel of each series, one per line; exit 1 (after
#   printing what was found) when a series has none. A full version string
#   is accepted as its own series.
#   --paths prints deps.sh's whole line for each kernel instead of only its
#   version: "<version> <vmlinuz> <headers build dir> <modules dir>".
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)

paths=0
[ "${1:-}" = --paths ] && { paths=1; shift; }
lines=$("$top/scripts/deps.sh" --kernels 2>/dev/null)

show() {	# the kernels' lines on stdin, as versions or whole lines
	if [ "$paths" = 1 ]; then cat; else cut -d' ' -f1; fi
}

[ $# -eq 0 ] && { [ -z "$lines" ] || echo "$lines" | show; exit 0; }

rc=0
for series in "$@"; do
	# "6.1" must not match "6.12...": require the next char to be . or -
	best=$(echo "$lines" | while read -r v rest; do
		case "$v" in
		"$series"|"$series".*|"$series"-*|"$series"+*)
			echo "$v $rest" ;;
		esac
	done | sort -V | tail -n 1)
	if [ -n "$best" ]; then
		echo "$best" | show
	else
		echo "kernels.sh: no kernel of series $series with headers (scripts/deps.sh fetches it)" >&2
		rc=1
	fi
done
exit $rc
