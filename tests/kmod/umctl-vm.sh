#!/bin/sh
# Description: umctl (tools/umctl, static) against the real umm.ko in the
# VM: status --json is valid and agrees with sysfs, set/get of a knob round
# trips and an out-of-range value is refused (exit 2, file unchanged),
# inject holds node 0 at critical and "inject clear" brings it back. Runs
# under busybox sh; restores what it changes.
n=0 pass=0 fail=0
t() {	# t NAME CMD...
	n=$((n + 1))
	name=$1
	shift
	if "$@"; then pass=$((pass + 1)); echo "ok $n umctl.$name"
	else fail=$((fail + 1)); echo "not ok $n umctl.$name"; fi
}
U=/sys/kernel/mm/umm

status_json() {
	umctl status --json >/tmp/s.json &&
	ut-jsoncheck /tmp/s.json module.loaded:bool nodes.1.level:string \
		nodes.*.critical_effective_bytes:number gpus.15.budget_bytes:number &&
	grep -q "\"queue_len\": $(cat $U/queue_len)," /tmp/s.json
}
set_get() {
	old=$(umctl get repeat_interval_ms) &&
	umctl set repeat_interval_ms 2500 &&
	[ "$(cat $U/repeat_interval_ms)" = 2500 ] &&
	[ "$(umctl get repeat_interval_ms)" = 2500 ] &&
	umctl set repeat_interval_ms "$old"
}
refused() {
	umctl set interval_ms 5 2>/dev/null
	[ $? = 2 ] && [ "$(cat $U/interval_ms)" != 5 ]
}
inject() {
	umctl inject node 0 critical &&
	[ "$(cat $U/nodes/node0/level)" = critical ] &&
	umctl inject clear && [ "$(cat $U/nodes/node0/level)" != critical ]
}

echo "TAP version 13"
echo "1..4"
t status_json status_json
t set_get set_get
t out_of_range_refused refused
t inject_and_clear inject
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ $fail = 0 ]
