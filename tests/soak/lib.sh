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
		printf "b_survived=%d b_why=\"%s\" b_lead=\"%s\"\n", surv, why, (lead == "" ? "none" : lead)
	}'
}
