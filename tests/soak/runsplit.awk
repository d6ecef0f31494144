# runsplit.awk - cut the tap.log of one soak boot (several e2e runs in one
# boot, each ended by a "soak-clean RUN" command) into one tap.log per run,
# each shaped like the log of a boot of its own, so that the rig's judge
# (tests/vm/judge.awk) and taplog.awk read a run as they read a boot.
#
# Usage: awk -v dir=DIR -f runsplit.awk tap.log
# Writes DIR/run-<i>.tap.log (i from 1) and prints how many runs it saw.
#
# Per run: the boot's header markers (booted, insmod, mounted) are copied
# into every run; commands are numbered from 1 again; the boot's kernel log
# section goes to run 1, the shutdown (rmmod, its kernel log, the end
# marker) to the last run; every other run gets an end marker of its own
# once the next one starts (it reached its end). A run cut short by a crash
# has no end marker, and the runs after it have no file.

BEGIN {
	run = 1; base = 0; nhdr = 0; boundary = 0; endcmd = -1; seen = 0
}

function file() { return dir "/run-" run ".tap.log" }

function next_run(    i) {
	print "### UM-DONE" > file()
	close(file())
	run++
	base = endcmd
	boundary = 0
	for (i = 1; i <= nhdr; i++)
		print hdr[i] > file()
}

# Renumber field 3 (a command number) for the current run.
function renumbered(    n) {
	n = $3
	$3 = n - base
	return n
}

{ sub(/\r$/, "") }

/^### UM-(BOOTED|INSMOD|MODLOAD-FAIL|MOUNTED|MOUNT-FAIL)/ {
	hdr[++nhdr] = $0
	print > file()
	seen = 1
	next
}
/^### UM-BEGIN [0-9]+ / {
	if (boundary)
		next_run()
	line = $0
	sub(/^### UM-BEGIN [0-9]+ /, "", line)
	if (line ~ /^soak-clean [0-9]+$/)
		endcmd = $3 + 0
	print "### UM-BEGIN " ($3 - base) " " line > file()
	seen = 1
	next
}
/^### UM-(END|HANG|DMESG-BEGIN) [0-9]+/ {
	renumbered()
	print > file()
	next
}
/^### UM-DMESG-END [0-9]+/ {
	if (renumbered() + 0 == endcmd)
		boundary = 1
	print > file()
	next
}
{ print > file(); seen = 1 }

END {
	if (seen)
		close(file())
	print seen ? run : 0
}
