#!/bin/bash
# SPDX-License-Identifier: MIT
#
# umbench_modeled.sh BIN OUT [NAME] - umbench --gpu on the virtual GPU
# (vgpu/), its results named NAME.* (default umbench_gpu_vgpu), as
# TAP: it runs to the end, says its times are modeled, its JSON parses,
# every result is intact and bitwise identical (p, m and v of every Adam
# row), no step failed, and the modeled targets hold: TIERED evict and
# restore >= 0.9 of the modeled link, both ways at once >= 0.85, the
# pipelined Adam step <= 1.1 of the overlapped floor (exit status 0 means
# every target passed).
set -u
bin=$1
out=$2
n=${3:-umbench_gpu_vgpu}
. "$(dirname "$0")/tap.sh"
echo "TAP version 13"
echo "1..5"
"$bin" --gpu --gpu-bytes 256M --adam-params 16M --reps 1 --pieces 16 -q \
	--json-file "$out.json" >"$out.txt" 2>&1
rc=$?
sed 's/^/# /' "$out.txt"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]
t "$n.runs_to_the_end (exit $rc)" $?
grep -q '^MODELED: ' "$out.txt" && grep -q '"modeled":true' "$out.json"
t $n.says_modeled $?
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out.json" 2>&1
t $n.json_parses $?
! grep -qE '"(intact|identical)":false|"error":"|"libum_error":"' "$out.json" &&
	grep -qE '"repinned_reps":[0-9]+' "$out.json"
t $n.all_intact_identical_no_error $?
python3 - "$out.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
want = {"tiered_evict_vs_d2h", "tiered_restore_vs_h2d",
        "tiered_overlap_vs_both", "adam_pipelined_vs_overlapped_floor"}
seen = {t["name"]: t for t in j["targets"]}
bad = [n for n in sorted(want) if n not in seen or seen[n]["pass"] is not True]
for n in bad:
    print("# target missed:", n, seen.get(n))
sys.exit(1 if bad or not j["pass"] else 0)
PY
t $n.modeled_targets_met $?
tap_end
