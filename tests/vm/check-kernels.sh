#!/bin/sh
# check-kernels.sh - run the same VM test run on every kernel we support.
#
# Usage: check-kernels.sh [run-vm.sh options] [-- 'program args' ...]
# Runs tests/vm/run-vm.sh --kernel K ... for K in $UM_VM_KERNELS (default
# "6.1 6.12": the newest kernel of each series that tests/vm/kernels.sh
# lists, Debian 12's and bookworm-backports'). A series that has none is a
# failure (scripts/deps.sh fetches both into um's kernel cache), reported
# as TAP. UM_SKIP_VM=1 prints one SKIP instead of
# booting anything. Exit status 0 when every kernel passed.
here=$(cd "$(dirname "$0")" && pwd)
name=${UM_VM_NAME:-vm}

if [ "${UM_SKIP_VM:-0}" = 1 ]; then
	echo "TAP version 13"
	echo "1..1"
	echo "ok 1 $name # SKIP UM_SKIP_VM=1"
	echo "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0"
	exit 0
fi

rc=0
for series in ${UM_VM_KERNELS:-6.1 6.12}; do
	if ! ver=$("$here/kernels.sh" "$series" 2>/dev/null); then
		echo "# kernel series $series"
		echo "TAP version 13"
		echo "1..1"
		echo "not ok 1 $name.kernel-$series # no kernel with headers; run scripts/deps.sh"
		echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
		rc=1
		continue
	fi
	"$here/run-vm.sh" --kernel "$ver" "$@" || rc=1
done
exit $rc
