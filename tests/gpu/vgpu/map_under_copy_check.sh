#!/bin/bash
# SPDX-License-Identifier: MIT
#
# map_under_copy_check.sh BIN - the map-under-copy probe of
# run-on-device.sh, on the virtual GPU, as TAP: it runs and its JSON parses
# with the default model, and with UM_VGPU_MAP_WAITS=1 (mapping waits for
# work in flight) it says so.
set -u
bin=$1
. "$(dirname "$0")/tap.sh"
echo "TAP version 13"
echo "1..2"
out=$("$bin" --bytes 64M --json 2>&1)
rc=$?
echo "# $out"
[ "$rc" -eq 0 ] && python3 -c 'import json,sys; json.loads(sys.argv[1])' "$out"
t map_under_copy.runs_and_reports $?
out=$(UM_VGPU_MAP_WAITS=1 "$bin" --bytes 64M --json 2>&1)
echo "# UM_VGPU_MAP_WAITS=1: $out"
echo "$out" | grep -q '"map_waits_for_copy":true'
t map_under_copy.sees_a_waiting_map $?
tap_end
