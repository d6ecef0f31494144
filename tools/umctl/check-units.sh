#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: the systemd units that run umctl metrics. The service runs
# the installed umctl into node_exporter's textfile directory (no @...@
# left), and systemd-analyze verify has nothing to say about either unit
# (unknown keys, a timer without a trigger, a program that is not there:
# the service is checked with the umctl just built in its place).
# Usage: check-units.sh SERVICE TIMER INSTALLED-UMCTL BUILT-UMCTL
set -u
SERVICE=$1 TIMER=$2 INSTALLED=$3 BUILT=$4
. "$(dirname "$0")/../common/tap.sh"
tap_tmpdir

exec_start() {
	local want="ExecStart=$INSTALLED metrics /var/lib/prometheus/node-exporter/umm.prom"
	grep -qxF "$want" "$SERVICE" && ! grep -q '@[A-Z]*@' "$SERVICE" || {
		echo "want '$want' in:"; cat "$SERVICE"; return 1; }
}

verify() {
	local built
	built=$(realpath "$BUILT") || return 1
	sed "s|^ExecStart=$INSTALLED |ExecStart=$built |" "$SERVICE" \
		>"$TMP/umm-metrics.service"
	cp "$TIMER" "$TMP/umm-metrics.timer"
	(cd "$TMP" && systemd-analyze verify --man=no umm-metrics.service \
		umm-metrics.timer) >"$TMP/out" 2>&1
	local rc=$?
	cat "$TMP/out"
	[ $rc -eq 0 ] && [ ! -s "$TMP/out" ]
}

tap_begin 2
tap_check "units.service_runs_installed_umctl" exec_start
if command -v systemd-analyze >/dev/null; then
	tap_check "units.systemd_analyze_verify" verify
else
	tap_skip "units.systemd_analyze_verify" "no systemd-analyze"
fi
tap_end
