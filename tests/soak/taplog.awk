# taplog.awk - the figures of one VM boot, from the rig's tap.log (the
# guest's test port: "### UM-..." markers around each command's output and
# the kernel log it caused; see tests/vm/mkinitramfs.sh).
#
# Usage: awk -v expect_oom=REGEX -f taplog.awk tap.log
#
# Prints one line of key=value pairs:
#   commands=N ended=N        listed commands started, and finished
#   oom_kills=N               "Killed process" lines in the kernel log
#   expected_oom_kills=N      of those, in the section of a command whose
#                             line matches expect_oom (e2e_oom_off's)
#   ack_max_ms=X              the slowest event-to-ACK any line reports
#                             (libum's and the module's side), -1 if none
# then each "# E2E-RESULT ..." line of the scenarios as it is.

BEGIN {
	ncmd = 0; ended = 0; kills = 0; expected = 0; ack_max = -1
	insec = ""
}

{ sub(/\r$/, "") }

/^### UM-BEGIN [0-9]+ / {
	ncmd++
	line = $0
	sub(/^### UM-BEGIN [0-9]+ /, "", line)
	cmd[$3] = line
	next
}
/^### UM-END [0-9]+ / { ended++; next }
/^### UM-DMESG-BEGIN / { insec = $3; next }
/^### UM-DMESG-END / { insec = ""; next }

insec != "" && /Killed process [0-9]+/ {
	kills++
	if (expect_oom != "" && (insec in cmd) && cmd[insec] ~ expect_oom)
		expected++
	next
}

/^# E2E-RESULT / { results[++nres] = $0 }

/event-to-ACK .*max [0-9.]+ ms/ {
	s = $0
	sub(/.*event-to-ACK .*max /, "", s)
	sub(/ ms.*/, "", s)
	if (s + 0 > ack_max)
		ack_max = s + 0
}

END {
	printf "commands=%d ended=%d oom_kills=%d expected_oom_kills=%d ack_max_ms=%s\n",
	       ncmd, ended, kills, expected, ack_max
	for (i = 1; i <= nres; i++)
		print results[i]
}
