#!/bin/sh
# Description: the VM rig's verdict (judge.awk) on captured test-port logs,
# without booting anything: a clean run passes; a WARN, an unexpected OOM, a
# crash, a hang or a missing required line fails; expected OOM reports pass.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'prog_a\nprog_b --x\n' >"$tmp/cmds"
n=0 pass=0 fail=0

head_ok='### UM-BOOTED kernel=test nodes=2 cpus=2
### UM-INSMOD rc=0
### UM-DMESG-BEGIN boot
[    0.100000] umm: loaded
### UM-DMESG-END boot'
prog() {	# n name body-lines dmesg-lines rc
	printf '### UM-BEGIN %s %s\n%s\n### UM-END %s rc=%s\n### UM-DMESG-BEGIN %s\n%s\n### UM-DMESG-END %s\n' \
		"$1" "$2" "$3" "$1" "$5" "$1" "$4" "$1"
}
tap_ok='TAP version 13
1..1
ok 1 t
# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0'
tail_ok='### UM-RMMOD rc=0
### UM-DMESG-BEGIN shutdown
### UM-DMESG-END shutdown
### UM-DONE'
oom='[    3.1] a.out invoked oom-killer: gfp_mask=0x140dca
[    3.2] Call Trace:
[    3.3]  <TASK>
[    3.35] RIP: 0033:0x405fab
[    3.4] Mem-Info:
[    3.5] Out of memory: Killed process 77 (a.out)'

check() {	# name want-rc log-file [grep-pattern-in-output]
	n=$((n + 1))
	awk -v kernel=test -v cmds="$tmp/cmds" -v expect_umm=1 \
		-f "$here/judge.awk" "$3" >"$tmp/out" 2>&1
	rc=$?
	ok=1
	[ "$rc" = "$2" ] || ok=0
	if [ -n "${4:-}" ] && ! grep -q -- "$4" "$tmp/out"; then ok=0; fi
	if [ $ok = 1 ]; then
		echo "ok $n judge.$1"; pass=$((pass + 1))
	else
		echo "not ok $n judge.$1 # exit $rc, wanted $2${4:+ and \"$4\"}"
		sed 's/^/#   /' "$tmp/out"; fail=$((fail + 1))
	fi
}

echo "TAP version 13"
echo "1..11"
{ echo "$head_ok"; prog 1 prog_a "$tap_ok" "" 0; prog 2 "prog_b --x" "$tap_ok" "" 0; echo "$tail_ok"; } >"$tmp/l"
check clean_run 0 "$tmp/l" '^ok .*dmesg.2'

{ echo "$head_ok"; prog 1 prog_a "$tap_ok" "[ 1.0] WARNING: CPU: 0 PID: 1 at kmod/umm.c:10 f+0x1/0x2
[ 1.1] Call Trace:" 0; prog 2 "prog_b --x" "$tap_ok" "" 0; echo "$tail_ok"; } >"$tmp/l"
check warn_fails 1 "$tmp/l" 'dmesg violation: .*WARNING'

{ echo "$head_ok"; prog 1 prog_a "$tap_ok
# expect-dmesg: Out of memory" "$oom" 0; prog 2 "prog_b --x" "$tap_ok" "" 0; echo "$tail_ok"; } >"$tmp/l"
check expected_oom_passes 0 "$tmp/l"

{ echo "$head_ok"; prog 1 prog_a "$tap_ok" "" 0; prog 2 "prog_b --x" "$tap_ok
# expect-dmesg: Out of memory" "" 0; echo "$tail_ok"; } >"$tmp/l"
sed -i "s/^\\(### UM-DMESG-BEGIN 1\\)\$/\\1\\n$(echo "$oom" | head -1)/" "$tmp/l"
check oom_expected_elsewhere_fails 1 "$tmp/l" 'not ok .*dmesg.1'

{ echo "$head_ok"; prog 1 prog_a "$tap_ok
# expect-dmesg: Out of memory" "$oom
[    4.0] WARNING: CPU: 1 PID: 9 at mm/page_alloc.c:1 x
[    4.1] Call Trace:" 0; prog 2 "prog_b --x" "$tap_ok" "" 0; echo "$tail_ok"; } >"$tmp/l"
check warn_after_expected_oom_fails 1 "$tmp/l" 'violation: .*Call Trace'

{ echo "$head_ok"; prog 1 prog_a "$tap_ok" "" 0; echo "### UM-BEGIN 2 prog_b --x"; echo "TAP version 13"; } >"$tmp/l"
check hang_fails 1 "$tmp/l" 'not ok 1 prog_b --x # did not complete'

{ echo "$head_ok"; prog 1 prog_a "TAP version 13
1..2
ok 1 x" "" 139; prog 2 "prog_b --x" "$tap_ok" "" 0; echo "$tail_ok"; } >"$tmp/l"
check crash_without_totals_fails 1 "$tmp/l" '^# Totals: pass:0 fail:1'

{ echo "$head_ok"; prog 1 prog_a "$tap_ok" "" 0; prog 2 "prog_b --x" "true" "" 0; echo "$tail_ok"; } >"$tmp/l"
check plain_command_gets_totals 0 "$tmp/l" '^ok 1 prog_b --x'

{ echo "$head_ok"; prog 1 prog_a "$tap_ok
# require-dmesg: umm: shrink" "" 0; prog 2 "prog_b --x" "$tap_ok" "" 0; echo "$tail_ok"; } >"$tmp/l"
check missing_required_line_fails 1 "$tmp/l" 'required, not seen'

{ echo "$head_ok"; prog 1 prog_a "$tap_ok" "" 0; prog 2 "prog_b --x" "$tap_ok" "" 0
  printf '### UM-RMMOD rc=1\n### UM-DMESG-BEGIN shutdown\n### UM-DMESG-END shutdown\n### UM-DONE\n'; } >"$tmp/l"
check rmmod_failure_fails 1 "$tmp/l" 'not ok .*rmmod_at_end'

{ echo "$head_ok" | sed 's/umm: loaded/BUG: kernel NULL pointer dereference, address: 0/'
  prog 1 prog_a "$tap_ok" "" 0; prog 2 "prog_b --x" "$tap_ok" "" 0; echo "$tail_ok"; } >"$tmp/l"
check boot_oops_fails 1 "$tmp/l" 'not ok .*dmesg.boot'

echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ $fail = 0 ]
