# judge.awk - turn the VM's test-port log into TAP and a verdict.
#
# Usage: awk -v kernel=VER -v cmds=CMDFILE [-v ran_to_end=1] -f judge.awk tap.log
#
# Input: what tests/vm/mkinitramfs.sh's /init wrote to the second serial port:
# "### UM-..." markers around each test command's output and around the
# kernel log (dmesg -c) that each command caused.
#
# Output, on stdout:
#   - "# kernel VER", then each program's TAP passed through unchanged, with a
#     "# Totals:" line synthesised from its exit status when it printed none
#     (or when it crashed after printing one), and a failing entry for each
#     listed command that never completed (VM crash or hang);
#   - one TAP stream "vm.VER" of the rig's own checks: booted, umm.ko
#     loaded, a clean kernel log before/for/after every command, rmmod at the
#     end, reached the end.
# Exit status 0 when everything passed, 1 otherwise.
#
# Judging the kernel log: any line matching BAD fails its section, unless the
# command printed "# expect-dmesg: ERE" (an extended regular expression) and
# the line matches one of its expectations. An expectation that matches
# "Out of memory" or "oom" admits the whole OOM report family. A "Call Trace"
# or "RIP:" line (the stack and registers of that report) that follows an
# admitted line is admitted too. A
# command may also print "# require-dmesg: ERE": its section then fails unless
# some line matches.

BEGIN {
	BAD = "WARNING:|(^|[^A-Za-z_])BUG[: ]|kernel BUG|Oops|[Oo]ut of memory|" \
	      "oom-kill|invoked oom-killer|oom_reaper|KASAN|UBSAN|" \
	      "general protection|Call Trace|Kernel panic|stack-protector|" \
	      "unable to handle|soft lockup|hard LOCKUP|rcu.*stall|" \
	      "blocked for more than|list_(add|del) corruption|" \
	      "still has objects|Objects remaining|refcount_t:|double free|" \
	      "use-after-free|Bad page|page allocation failure|" \
	      "Unable to handle kernel|RIP: "
	OOMFAM = "[Oo]ut of memory|oom-kill|invoked oom-killer|oom_reaper|" \
	         "Mem-Info|Tasks state"
	ncmd = 0
	if (cmds != "")
		while ((getline l < cmds) > 0)
			if (l !~ /^[ \t]*(#|$)/)
				cmd[++ncmd] = l
	nrig = 0
	state = ""	# "", "test", "dmesg"
	booted = 0; insmod = ""; rmmod = ""; done = 0
	print "# kernel " kernel
}

function rig(ok, name, why) {
	nrig++
	rigtext[nrig] = "vm." kernel "." name (why != "" ? " # " why : "")
	rigok[nrig] = ok
	if (!ok)
		failed = 1
}

function rigprint(i, k) {
	print (rigok[i] ? "ok " : "not ok ") k " " rigtext[i]
}

function synth_totals(n, rc, name,    p, f, s) {
	p = f = s = 0
	if (rc == 0) p = 1; else if (rc == 4) s = 1; else f = 1
	print (f ? "not ok 1 " : "ok 1 ") name \
		(s ? " # SKIP exit status 4" : "") (f ? " # exit status " rc : "")
	print "# Totals: pass:" p " fail:" f " xfail:0 xpass:0 skip:" s " error:0"
	if (f) failed = 1
}

function end_test(n, rc) {
	if (!totals[n]) {
		print "1..1"
		synth_totals(n, rc, cmd[n])
	} else if (rc != 0 && rc != 1 && rc != 4 && !tfail[n]) {
		print "# " cmd[n] ": exit status " rc " after printing its totals"
		synth_totals(n, rc, cmd[n] " (exit)")
	}
	if (rc != 0 && rc != 4)
		failed = 1
	ended[n] = 1
}

function judge_dmesg(sec,    i, l, ok, ctx, nviol, nexp, oomok, j, req, name) {
	nexp = nexpect[sec] + 0
	oomok = 0
	for (j = 1; j <= nexp; j++)
		if (expect[sec, j] ~ /[Oo]ut of memory|oom/)
			oomok = 1
	ctx = 0; nviol = 0
	for (i = 1; i <= ndm; i++) {
		l = dm[i]
		if (l !~ BAD)
			continue
		ok = 0
		for (j = 1; j <= nexp && !ok; j++)
			if (l ~ expect[sec, j])
				ok = 1
		if (!ok && oomok && l ~ OOMFAM)
			ok = 1
		if (!ok && ctx && l ~ /Call Trace|RIP: /)
			ok = 1
		if (ok) {
			ctx = 1
			continue
		}
		ctx = 0
		viol[++nviol] = l
	}
	for (j = 1; j <= nrequire[sec] + 0; j++) {
		req = 0
		for (i = 1; i <= ndm && !req; i++)
			if (dm[i] ~ require[sec, j])
				req = 1
		if (!req)
			viol[++nviol] = "(required, not seen) " require[sec, j]
	}
	name = "dmesg." sec
	if (nviol == 0) {
		rig(1, name, (sec in cmd) ? cmd[sec] : "")
		return
	}
	rig(0, name, ((sec in cmd) ? cmd[sec] ": " : "") nviol " bad line(s)")
	print "# ---- kernel log of section " sec " (judged bad) ----"
	for (i = 1; i <= ndm; i++)
		print "# | " dm[i]
	for (i = 1; i <= nviol; i++)
		print "# dmesg violation: " viol[i]
}

{ sub(/\r$/, "") }

/^### UM-BOOTED / { booted = 1; print "# " substr($0, 5); next }
/^### UM-MODLOAD-FAIL / { rig(0, "modload." $3, "insmod failed"); next }
/^### UM-MOUNT-FAIL / { rig(0, "mount", "mounting " $3 " failed"); next }
/^### UM-MOUNTED / { next }
/^### UM-INSMOD rc=/ { insmod = substr($3, 4) + 0; next }
/^### UM-RMMOD rc=/ { rmmod = substr($3, 4); next }
/^### UM-DONE/ { done = 1; next }
/^### UM-HANG [0-9]+/ {
	rig(0, "hang." $3, "still running after UM_VM_HANG_DUMP s; kernel stacks follow")
	next
}
/^### UM-BEGIN [0-9]+ / {
	cur = $3 + 0; state = "test"
	if (!(cur in cmd)) cmd[cur] = substr($0, index($0, $4))
	print "# [" cur "] " cmd[cur]
	next
}
/^### UM-END [0-9]+ rc=/ {
	end_test($3 + 0, substr($4, 4) + 0)
	state = ""
	next
}
/^### UM-DMESG-BEGIN / { sec = $3; state = "dmesg"; ndm = 0; next }
/^### UM-DMESG-END / {
	judge_dmesg(sec)
	state = ""
	next
}
state == "dmesg" { dm[++ndm] = $0; next }
state == "test" {
	print
	if ($0 ~ /^# Totals: pass:[0-9]+ fail:[0-9]+/) {
		totals[cur]++
		t = $0; sub(/.* fail:/, "", t); sub(/ .*/, "", t)
		if (t + 0 > 0) { tfail[cur] = 1; failed = 1 }
	}
	if ($0 ~ /^#.*expect-dmesg: /) {
		e = $0; sub(/^#.*expect-dmesg: /, "", e)
		expect[cur, ++nexpect[cur]] = e
	}
	if ($0 ~ /^#.*require-dmesg: /) {
		e = $0; sub(/^#.*require-dmesg: /, "", e)
		require[cur, ++nrequire[cur]] = e
	}
	next
}
# Anything else (busybox messages between tests) is shown as a comment.
{ print "# (vm) " $0 }

END {
	# Commands that never completed: the VM crashed, hung or was stopped.
	for (n = 1; n <= ncmd; n++) {
		if (ended[n])
			continue
		print "# [" n "] " cmd[n]
		print "1..1"
		print "not ok 1 " cmd[n] " # did not complete (VM crashed or hung; see console log)"
		print "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
		failed = 1
	}
	# Rig checks in front of the per-section ones.
	n0 = nrig
	rig(booted, "booted", booted ? "" : "no boot marker")
	if (expect_umm)
		rig(insmod == 0 && insmod != "", "insmod",
		    insmod == "" ? "no insmod" : "rc=" insmod)
	if (expect_umm && rmmod != "")
		rig(rmmod == 0, "rmmod_at_end", "rc=" rmmod)
	rig(done, "reached_end", done ? "" : "the VM stopped before the end")
	print "TAP version 13"
	print "1.." nrig
	np = nf = k = 0
	for (i = n0 + 1; i <= nrig; i++) { rigprint(i, ++k); if (rigok[i]) np++; else nf++ }
	for (i = 1; i <= n0; i++) { rigprint(i, ++k); if (rigok[i]) np++; else nf++ }
	print "# Totals: pass:" np " fail:" nf " xfail:0 xpass:0 skip:0 error:0"
	exit failed ? 1 : 0
}
