#!/bin/bash
# SPDX-License-Identifier: MIT
#
# umbench_smoke.sh BIN OUT - umbench --gpu, small, on the mock runtime
# (cudart_mock.c), as TAP: it runs to the end, its JSON parses, and every
# result is intact, bit-identical and free of errors. The mock's timings mean
# nothing, so targets (PASS/FAIL) are not judged here.
set -u
bin=$1
out=$2
pass=0
fail=0
t() {
	if [ "$2" -eq 0 ]; then
		echo "ok $1"
		pass=$((pass + 1))
	else
		echo "not ok $1"
		fail=$((fail + 1))
	fi
}
echo "TAP version 13"
echo "1..3"
"$bin" --gpu --gpu-bytes 64M --adam-params 1M --reps 1 --pieces 4 \
	--json-file "$out.json" >"$out.txt" 2>&1
rc=$?
sed 's/^/# /' "$out.txt"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]
t "umbench_gpu_mock.runs_to_the_end (exit $rc)" $?
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out.json" 2>&1
t umbench_gpu_mock.json_parses $?
! grep -qE '"(intact|identical)":false|"error":"|"libum_error":"' "$out.json"
t umbench_gpu_mock.all_intact_identical_no_error $?
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" -eq 0 ]
