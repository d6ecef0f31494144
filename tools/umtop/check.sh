#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: umtop against a fake umm.ko tree (--sysfs-root, and
# --sysroot giving the same): batch text and newline-delimited JSON, rates
# computed from a tree that changes between samples (counters per second,
# free memory declining), -n, bad options, the module absent, the client
# table missing (not fatal), and the watched cgroups (least room first; no
# section without a readable, non-empty table).
# Usage: check.sh UMTOP UT-JSONCHECK
set -u
UMTOP=$1
JC=$2
here=$(dirname "$0")
. "$here/../common/tap.sh"
. "$here/../common/fakeumm.sh"

tap_tmpdir
R=$TMP/sys
fake_umm "$R"
t() { "$UMTOP" --sysfs-root "$R" "$@"; }

# Changes the tree 0.5 s after umtop's first sample (of two, 1 s apart):
# 100 more events, node 0 loses 200 MiB.
change_later() {
	sleep 0.5
	fake_set "$R" events_sent 140
	fake_set "$R" nodes/node0/free_bytes $((400 << 20))
	fake_set "$R" nodes/node0/level low
}

batch() {
	t -b -n 2 -d 1 >"$TMP/b.txt" &
	change_later
	wait $! || return 1
	[ "$(grep -c '^umtop - ' "$TMP/b.txt")" -eq 2 ] &&
	! grep -q $'\033' "$TMP/b.txt" &&
	grep -q 'events - sent' "$TMP/b.txt" &&
	[ "$(grep -c '^rings 32.1 KiB (ring_bytes_max 64 MiB)$' "$TMP/b.txt")" \
		-eq 2 ] &&
	grep -Eq 'events (9[0-9]|10[0-9])\.[0-9]/s sent' "$TMP/b.txt" &&
	grep -Eq '^node0 +low +400 MiB .* (1[5-9][0-9]|2[0-9][0-9])(\.[0-9])? MiB/s$' \
		"$TMP/b.txt" &&
	grep -q 'my trainer 2' "$TMP/b.txt" || { cat "$TMP/b.txt"; return 1; }
}

json_lines() {
	fake_umm "$R"
	t --json -n 2 -d 1 >"$TMP/j.ndjson" &
	change_later
	wait $! || return 1
	[ "$(wc -l <"$TMP/j.ndjson")" -eq 2 ] || { cat "$TMP/j.ndjson"; return 1; }
	sed -n 1p "$TMP/j.ndjson" >"$TMP/j1.json"
	sed -n 2p "$TMP/j.ndjson" >"$TMP/j2.json"
	"$JC" "$TMP/j1.json" time_ms:number interval_s:null \
		module.events_sent:number rates_per_s.acks:null \
		module.ring_bytes:number module.ring_bytes_max:number \
		nodes.0.free_decline_bytes_per_s:null gpus.15.level:string \
		clients.1.books:array || return 1
	"$JC" "$TMP/j2.json" interval_s:number rates_per_s.events_sent:number \
		nodes.0.free_decline_bytes_per_s:number \
		nodes.1.free_decline_bytes_per_s:number || return 1
	# about 100 events/s and 200 MiB/s over about one second
	awk -F'"events_sent":' '{ split($3, a, /[,}]/);
		exit !(a[1] > 80 && a[1] < 110) }' "$TMP/j2.json" || {
		echo "events_sent rate:"; cat "$TMP/j2.json"; return 1; }
	grep -q '"free_decline_bytes_per_s":0[,}]' "$TMP/j2.json"
}

no_clients() {
	rm -rf "$R/kernel/debug/umm"
	t -b -n 1 >"$TMP/nc.txt" && grep -q '^clients: debugfs not mounted' \
		"$TMP/nc.txt" && ! grep -q '^cgroups' "$TMP/nc.txt" &&
	t -J -n 1 >"$TMP/nc.json" &&
	"$JC" "$TMP/nc.json" clients:null cgroups:null
}

# The watched cgroups below the other tables, least room first (job42
# before the one without a limit, 70 fake ones from cg70 down), in JSON
# as umctl cgroups --json has them; no section for an empty or a
# malformed table, the rest as before.
cgroups_section() {
	local C=$TMP/cg
	mkdir -p "$C"
	fake_umm "$C"
	"$UMTOP" -r "$C" -b -n 1 >"$TMP/cg.txt" &&
	grep -qx 'cgroups: 2 watched, least room first' "$TMP/cg.txt" &&
	grep -Eq '^PATH +USAGE +LIMIT +USED% +ROOM +LEVEL +CLIENTS +ETA +EVENTS$' \
		"$TMP/cg.txt" &&
	[ "$(grep -A2 '^PATH ' "$TMP/cg.txt" | awk 'NR > 1 { print $1 }' |
		tr '\n' ' ')" = '/slurm/job42 /system.slice/my ' ] &&
	grep -Eq '^/slurm/job42 +3.5 GiB +4 GiB +87.5% +512 MiB +low +1 +1m30s +2$' \
		"$TMP/cg.txt" &&
	[ "$(grep . "$TMP/cg.txt" | tail -n 1 | awk '{ print $1 }')" = \
		/system.slice/my ] || { cat "$TMP/cg.txt"; return 1; }
	"$UMTOP" -r "$C" -J -n 1 >"$TMP/cg.json" &&
	"$JC" "$TMP/cg.json" cgroups:array cgroups.0.path:string \
		cgroups.*.limit_bytes:number cgroups.*.fill_bps:number \
		cgroups.1.eta_ms:number nodes.0.level:string || return 1
	grep -q '"cgroups":\[{"id":4097,"path":"/slurm/job42","usage_bytes":3758096384,"limit_bytes":4294967296,"room_bytes":536870912,' \
		"$TMP/cg.json" &&
	grep -q '"limit_bytes":18446744073709551615' "$TMP/cg.json" || {
		cat "$TMP/cg.json"; return 1; }
	fake_cgroups "$C" 70 &&
	"$UMTOP" -r "$C" -b -n 1 >"$TMP/cg.txt" &&
	[ "$(grep -A1 '^PATH ' "$TMP/cg.txt" | awk 'NR == 2 { print $1 }')" = \
		/fake/cg70 ] && [ "$(grep -c '^/fake/cg' "$TMP/cg.txt")" = 70 ] || {
		cat "$TMP/cg.txt"; return 1; }
	fake_cgroups "$C" 0 &&
	"$UMTOP" -r "$C" -b -n 1 >"$TMP/cg.txt" &&
	! grep -q '^cgroups\|^PATH ' "$TMP/cg.txt" &&
	grep -q 'my trainer 2' "$TMP/cg.txt" &&
	"$UMTOP" -r "$C" -J -n 1 >"$TMP/cg.json" &&
	"$JC" "$TMP/cg.json" cgroups:array || return 1
	echo 'id path' >"$C/kernel/debug/umm/cgroups"
	"$UMTOP" -r "$C" -b -n 1 >"$TMP/cg.txt" &&
	! grep -q '^cgroups\|^PATH ' "$TMP/cg.txt" &&
	grep -q 'my trainer 2' "$TMP/cg.txt" &&
	"$UMTOP" -r "$C" -J -n 1 >"$TMP/cg.json" &&
	"$JC" "$TMP/cg.json" cgroups:null clients.1.name:string
}

usage_errors() {
	local bad=0 a
	for a in "-d 0" "-d x" "-n 0" "-n -3" "--bogus" "extra"; do
		# shellcheck disable=SC2086
		expect 2 . t $a || bad=1
	done
	t --help | grep -q -- '--iterations' || bad=1
	t -V | grep -q '^umtop (um) [0-9]' || bad=1
	# --sysroot (DIR stands for /) and the older --sysfs-root agree
	"$UMTOP" --sysroot "$TMP" -n 1 -J >"$TMP/a.json" &&
	"$UMTOP" -n 1 -J >"$TMP/b.json" --sysfs-root="$R" &&
	cmp -s <(sed 's/"time_ms":[0-9]*//' "$TMP/a.json") \
		<(sed 's/"time_ms":[0-9]*//' "$TMP/b.json") || bad=1
	return $bad
}

no_module() {
	expect 1 'umm.ko is not loaded' "$UMTOP" -r "$TMP/none" -n 1 &&
	UMM_SYSFS_ROOT=$TMP/none expect 1 'not loaded' "$UMTOP" -b -n 1
}

# rmmod and insmod under a running umtop: it waits, says so once, and goes
# on with the module back (it used to exit at the first missing sample).
survives_reload() {
	local M=$TMP/reload
	fake_umm "$M"
	"$UMTOP" --sysfs-root "$M" -b -n 6 -d 0.5 >"$TMP/r.txt" 2>"$TMP/r.err" &
	local pid=$!
	sleep 0.25
	mv "$M/kernel/mm/umm" "$M/umm.away"
	sleep 1.2
	mv "$M/umm.away" "$M/kernel/mm/umm"
	wait $pid || { echo "exit $?"; cat "$TMP/r.err"; return 1; }
	[ "$(grep -c '^umtop - ' "$TMP/r.txt")" -ge 2 ] &&
	[ "$(grep -c 'waiting for it' "$TMP/r.err")" -eq 1 ] ||
		{ cat "$TMP/r.txt" "$TMP/r.err"; return 1; }
}

# The full screen on an 80x24 terminal (a pty from script(1)): no line
# wider than 80 columns or more lines than the screen, and q ends it.
screen_80x24_and_q() {
	fake_umm "$R"
	fake_set "$R" nodes/node0/eta_ms 2636400400
	(sleep 1.5; printf q) | timeout 20 script -qefc \
		"stty cols 80 rows 24; $UMTOP --sysfs-root $R -d 1" \
		/dev/null >"$TMP/s.raw"
	local rc=$?
	[ $rc -eq 0 ] || { echo "exit $rc (124: q did not end it)"; return 1; }
	# the last frame, escapes and carriage returns taken out
	sed 's/\x1b\[[?0-9;]*[A-Za-z]/\n/g; s/\r//g' "$TMP/s.raw" >"$TMP/s.txt"
	awk 'length > 80 { print "too wide (" length "): " $0; bad = 1 }
	     END { exit bad }' "$TMP/s.txt" || return 1
	grep -q '^umtop - ' "$TMP/s.txt" && grep -q '30d12h' "$TMP/s.txt" ||
		{ cat "$TMP/s.txt"; return 1; }
}

# The full screen at COLS x ROWS on a pty (ptyscreen.py: the last frame as
# a terminal shows it): on the alternate screen and back; no line wider
# than the screen, no word cut (every word is one of the batch output's,
# taken at any width), the memory cgroups' rows there, and a header line
# that says which columns were left out.
screen_fits() {
	local cols=$1 rows=$2 f=$TMP/fit-$1x$2
	fake_umm "$R"
	t -b -n 1 | tr ' ' '\n' | sort -u >"$f.words"
	"$here/ptyscreen.py" "$cols" "$rows" "$UMTOP" --sysfs-root "$R" -n 1 \
		>"$f.txt" || { cat "$f.txt"; return 1; }
	grep -qx '# exit 0' "$f.txt" && grep -qx '# left-alt-screen yes' "$f.txt" ||
		{ echo "not on the alternate screen, or failed:"; cat "$f.txt"; return 1; }
	grep -v '^# ' "$f.txt" >"$f.screen"
	[ "$(wc -l <"$f.screen")" -le "$rows" ] &&
	awk -v c="$cols" 'length > c { print "too wide: " $0; bad = 1 }
	     END { exit bad }' "$f.screen" || { cat "$f.txt"; return 1; }
	grep -q '^/slurm/job42 ' "$f.screen" &&
	grep -q '^/system.slice/my trainer.service ' "$f.screen" &&
	grep -q "^$cols columns, hidden: " "$f.screen" ||
		{ echo "cgroup rows or the hidden columns' line missing:"; cat "$f.txt"; return 1; }
	# the words of every line but the title (its clock) and the one
	# about hidden columns
	grep -v "^umtop - \|^$cols columns, hidden: " "$f.screen" |
		tr ' ' '\n' | grep . | sort -u | comm -23 - "$f.words" >"$f.cut"
	[ ! -s "$f.cut" ] || { echo "cut words:"; cat "$f.cut" "$f.txt"; return 1; }
}

# BOOKS in units, as every other byte count ("node0:67108864/33554432").
books_in_units() {
	fake_umm "$R"
	t -b -n 1 >"$TMP/books.txt"
	grep -q ' node0:64 MiB/32 MiB,gpu1:1 MiB/0 B$' "$TMP/books.txt" ||
		{ cat "$TMP/books.txt"; return 1; }
}

tap_begin 11
tap_check "umtop.batch_rates" batch
tap_check "umtop.json_lines" json_lines
tap_check "umtop.clients_missing_not_fatal" no_clients
tap_check "umtop.cgroups_section" cgroups_section
tap_check "umtop.usage_errors" usage_errors
tap_check "umtop.module_absent" no_module
tap_check "umtop.survives_reload" survives_reload
tap_check "umtop.screen_80x24_and_q" screen_80x24_and_q
tap_check "umtop.screen_fits_80x24" screen_fits 80 24
tap_check "umtop.screen_fits_60x12" screen_fits 60 12
tap_check "umtop.books_in_units" books_in_units
tap_end
