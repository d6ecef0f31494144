# lib.sh - helpers of the soak scripts (sourced; sets nothing else).

UMP=$top/tools/umpressure/build/umpressure-static

die() { echo "${0##*/}: $*" >&2; exit 2; }

# The script's head comment, as its --help.
usage() { sed -n '2,/^set -u/p' "$1" | sed 's/^# \{0,1\}//;$d'; }

# A positive decimal count, or die naming the option.
want_count() {
	case "$2" in
	''|*[!0-9]*|0*) die "$1 wants a positive decimal number, not '$2'" ;;
	esac
}

# The larger of two decimal figures (-1 stands for none).
fmax() { awk -v a="$1" -v b="$2" 'BEGIN { print (b + 0 > a + 0) ? b : a }'; }

need_e2e_built() {
	local p
	for p in "$UMP" "$top/tests/e2e/build/e2e_node_fill"; do
		[ -x "$p" ] || die "$p is missing (make -C tests/soak)"
	done
}

# boot_figures TAPLOG [SCENARIO]: shell assignments (for eval) with the
# figures of one boot. With SCENARIO, of that node scenario's result only;
# without, of every node scenario except oom_off (whose kill is the point):
#   b_commands b_ended      commands started / finished
#   b_oom_kills             kernel OOM kills not expected by a scenario
#   b_expected_oom_kills    those in e2e_oom_off's section
#   b_lost_bytes            a killed trainer's bytes, or its bad regions'
#   b_ack_max_ms            slowest event-to-ACK printed (-1 none)
#   b_module_ack_max_ms     the module's figure in the result lines
#   b_oom_deferred          OOM kills umm.ko put off this boot (the most
#                           a result line says; 0 from older lines)
#   b_survived              1: every trainer counted kept every byte, no
#                           unexpected OOM kill, a result line was seen
#   b_why b_lead            words for the report
boot_figures() {
	awk -v expect_oom='e2e_oom_off' -f "$here/taplog.awk" "$1" 2>/dev/null |
	awk -v want="${2:-}" '
	function kv(line, key,    s) {
		s = " " line " "
		if (!match(s, " " key "=[^ ]*"))
			return ""
		s = substr(s, RSTART + length(key) + 2, RLENGTH - length(key) - 2)
		return s
	}
	BEGIN { split("normal low medium critical", lv, " ") }
	NR == 1 {
		cmds = kv($0, "commands"); ended = kv($0, "ended")
		kills = kv($0, "oom_kills") - kv($0, "expected_oom_kills")
		expk = kv($0, "expected_oom_kills"); ack = kv($0, "ack_max_ms")
		next
	}
	{
		sc = kv($0, "scenario")
		if (want != "" ? sc != want : sc == "oom_off")
			next
		nres++
		lost += kv($0, "lost_bytes")
		if (kv($0, "killed") == 1) killed++
		if (kv($0, "error") != 0) errors++
		m = kv($0, "module_ack_max_ms")
		if (m + 0 > mod + 0 || mod == "") mod = m
		if (kv($0, "oom_deferred") + 0 > deferred + 0)
			deferred = kv($0, "oom_deferred")
		if (kv($0, "killed") == 1)
			lead = "killed-" kv($0, "killed_after_low_ms") "ms-after-low"
		else if (kv($0, "lead_ms") != -1)
			lead = kv($0, "lead_ms") "ms"
		else if (kv($0, "first_event_ms") != -1)
			lead = "never-critical(max-" lv[kv($0, "max_level") + 0] ")"
		else
			lead = "no-event"
	}
	END {
		why = ""
		if (nres == 0 && want != "") why = "no result line (crash or hang?)"
		if (killed) why = why (why ? ", " : "") killed " trainer(s) killed"
		if (errors) why = why (why ? ", " : "") errors " trainer error(s)"
		if (lost) why = why (why ? ", " : "") lost " bytes lost"
		if (kills) why = why (why ? ", " : "") kills " OOM kill(s)"
		if (ended < cmds) why = why (why ? ", " : "") (cmds - ended) " command(s) unfinished"
		surv = (why == "")
		if (why == "") why = "no kill, no byte lost"
		printf "b_commands=%d b_ended=%d b_oom_kills=%d b_expected_oom_kills=%d ", cmds, ended, kills, expk
		printf "b_lost_bytes=%d b_ack_max_ms=%s b_module_ack_max_ms=%s ", lost, ack, (mod == "" ? -1 : mod)
		printf "b_oom_deferred=%d ", deferred
		printf "b_survived=%d b_why=\"%s\" b_lead=\"%s\"\n", surv, why, (lead == "" ? "none" : lead)
	}'
}

# --- e2e runs, several per boot (soak.sh's e2e part) -------------------------

# split_boot TAPLOG DIR: one DIR/run-<i>.tap.log per run of a soak boot
# (runsplit.awk); prints how many runs the log holds.
split_boot() {
	mkdir -p "$2"
	awk -v dir="$2" -f "$here/runsplit.awk" "$1" 2>/dev/null || echo 0
}

# run_cmds RUN COMMAND...: the command list of run RUN of a
# boot, as the guest runs it: the record first in the boot's first run, the
# scenarios, soak-clean RUN last.
run_cmds() {
	local i=$1
	shift
	[ "$i" = 1 ] && echo "soak-clean record"
	printf '%s\n' "$@"
	echo "soak-clean $i"
}

# judge_run TAPLOG CMDS KERNEL EXPECT_UMM: 0 when the run passed the rig's
# judge (every command's TAP, a clean kernel log); its verdict is kept in
# the .judge.log beside TAPLOG. A missing log (a run the boot never
# reached) fails.
judge_run() {
	[ -s "$1" ] || { echo "# no log: the boot ended before this run" >"${1%.tap.log}.judge.log"; return 1; }
	awk -v kernel="$3" -v cmds="$2" -v expect_umm="$4" \
		-f "$top/tests/vm/judge.awk" "$1" >"${1%.tap.log}.judge.log" 2>&1
}

# e2e_reset: zero the totals of one kernel that e2e_account adds to.
e2e_reset() { e_runs=0 e_passed=0 e_kills=0 e_expected=0 e_lost=0 e_ack=-1 e_line=; }

# e2e_account RC TAPLOG...: add one run (RC: 0 when all its boots' judges
# passed) and the figures of its logs (one per boot the run had a part in)
# to the totals; e_line says how the run went.
e2e_account() {
	local rc=$1 log kills=0 expected=0 lost=0 ack=-1
	shift
	for log in "$@"; do
		[ -s "$log" ] || continue
		eval "$(boot_figures "$log")"
		kills=$((kills + b_oom_kills))
		expected=$((expected + b_expected_oom_kills))
		lost=$((lost + b_lost_bytes))
		ack=$(fmax "$ack" "$b_ack_max_ms")
	done
	e_runs=$((e_runs + 1))
	[ "$rc" = 0 ] && e_passed=$((e_passed + 1))
	e_kills=$((e_kills + kills))
	e_expected=$((e_expected + expected))
	e_lost=$((e_lost + lost))
	e_ack=$(fmax "$e_ack" "$ack")
	e_line="$([ "$rc" = 0 ] && echo passed || echo FAILED); OOM kills $kills unexpected, $expected expected; bytes lost $lost; slowest event-to-ACK $ack ms"
}

# e2e_verdict: 0 when the totals pass (every run passed, no unexpected OOM
# kill, no byte lost, e2e_oom_off's kill in every run).
e2e_verdict() {
	[ "$e_passed" = "$e_runs" ] && [ "$e_kills" = 0 ] && [ "$e_lost" = 0 ] &&
		[ "$e_expected" -ge "$e_runs" ]
}

# e2e_summary SERIES: the kernel's summary line from the totals.
e2e_summary() {
	echo "e2e $1: $e_passed/$e_runs runs passed; OOM kills $e_kills unexpected, $e_expected expected (e2e_oom_off, one per run); bytes lost $e_lost; slowest event-to-ACK $e_ack ms"
}

# e2e_json SERIES: the same as one JSON object.
e2e_json() {
	printf '{"kernel":"%s","runs":%d,"passed":%d,"unexpected_oom_kills":%d,"expected_oom_kills":%d,"lost_bytes":%d,"ack_max_ms":%s}\n' \
		"$1" "$e_runs" "$e_passed" "$e_kills" "$e_expected" "$e_lost" "$e_ack"
}
