#!/bin/sh
# Description: umpressure --cgroup (tools/umpressure, static) against real
# cgroup v2 memory limits in the VM: in a cgroup with memory.max 128M,
# --target 200M stops short of the limit (exit 3, stop "cgroup_floor") with
# memory.events oom_kill and max unchanged, by an absolute or a relative
# PATH; a parent's memory.max and a lower memory.high are the effective
# limit; the root cgroup, a cgroup without the memory controller and one
# that gives it to children (not a leaf) are refused with exit 2 before
# anything is allocated. Runs under busybox sh; mounts cgroup2 if need be
# and removes the cgroups it made.
n=0 pass=0 fail=0
t() {	# t NAME CMD...
	n=$((n + 1))
	name=$1
	shift
	if "$@"; then pass=$((pass + 1)); echo "ok $n umpressure.$name"
	else fail=$((fail + 1)); echo "not ok $n umpressure.$name"; fi
}
CG=/sys/fs/cgroup
MiB=1048576

# the memory controller on for the root's children (a v1 hierarchy just
# unmounted, as umm_memcg's v1 test does, gives it back late)
cg_ready() {
	[ -e $CG/cgroup.controllers ] || mount -t cgroup2 none $CG || return 1
	i=0
	while [ $i -lt 100 ]; do
		echo +memory >$CG/cgroup.subtree_control 2>/dev/null && return 0
		i=$((i + 1))
		sleep 0.02
	done
	return 1
}

# ev CGROUP KEY: a memory.events counter
ev() {
	awk -v k="$2" '$1 == k { print $2 }' "$CG/$1/memory.events"
}

# has FILE KEY VALUE: "KEY": VALUE in umpressure's JSON
has() {
	grep -q "\"$2\": $3,*\$" "$1" || { echo "# want \"$2\": $3 in $1:"
		sed 's/^/#   /' "$1"; return 1; }
}

# num FILE KEY: the number of "KEY" in umpressure's JSON
num() {
	sed -n "s/.*\"$2\": \([0-9]*\),*\$/\1/p" "$1" | head -n 1
}

# fill NAME ARGS...: umpressure --cgroup ARGS --target 200M, JSON in
# /tmp/NAME.json; it must stop at the cgroup's floor (exit 3)
fill() {
	f=/tmp/$1.json
	shift
	umpressure --step 8M --target 200M --json "$@" >"$f" 2>/tmp/ump.err
	rc=$?
	[ $rc = 3 ] || { echo "# exit $rc, want 3:"; sed 's/^/#   /' \
		/tmp/ump.err "$f"; return 1; }
	ut-jsoncheck "$f" cgroup.limit_bytes:number \
		cgroup.memory_current_peak_bytes:number \
		cgroup.oom_kill_delta:number && has "$f" stop_reason '"cgroup_floor"'
}

# below FILE LIMIT: held and the cgroup's peak under the limit
below() {
	peak=$(num "$1" memory_current_peak_bytes)
	held=$(num "$1" peak_bytes)
	echo "# held $((held / MiB)) MiB, memory.current peak $((peak / MiB)) MiB of $(($2 / MiB)) MiB"
	[ "$held" -gt 0 ] && [ "$peak" -lt "$2" ] && [ "$peak" -gt "$held" ]
}

under_max() {
	mkdir -p $CG/ump-max || return 1
	echo 128M >$CG/ump-max/memory.max || return 1
	echo 0 >$CG/ump-max/memory.swap.max 2>/dev/null
	k0=$(ev ump-max oom_kill) m0=$(ev ump-max max)
	fill max --cgroup $CG/ump-max && below /tmp/max.json 134217728 &&
	has /tmp/max.json limit_bytes 134217728 &&
	has /tmp/max.json limit_file '"memory.max"' &&
	has /tmp/max.json oom_kill_delta 0 &&
	[ "$(ev ump-max oom_kill)" = "$k0" ] && [ "$(ev ump-max max)" = "$m0" ] ||
		{ echo "# memory.events:"; sed 's/^/#   /' $CG/ump-max/memory.events
		return 1; }
	# the same by a relative PATH
	fill rel --cgroup ump-max && below /tmp/rel.json 134217728 &&
	[ "$(ev ump-max oom_kill)" = "$k0" ]
}

parent_max() {
	mkdir -p $CG/ump-par/job || return 1
	echo 96M >$CG/ump-par/memory.max &&
	echo +memory >$CG/ump-par/cgroup.subtree_control || return 1
	k0=$(ev ump-par oom_kill)
	fill par --cgroup ump-par/job && below /tmp/par.json 100663296 &&
	has /tmp/par.json limit_path '"/sys/fs/cgroup/ump-par"' &&
	[ "$(ev ump-par oom_kill)" = "$k0" ]
}

high_lower() {
	mkdir -p $CG/ump-high || return 1
	echo 128M >$CG/ump-high/memory.max &&
	echo 64M >$CG/ump-high/memory.high || return 1
	h0=$(ev ump-high high)
	fill high --cgroup ump-high && below /tmp/high.json 67108864 &&
	has /tmp/high.json limit_file '"memory.high"' &&
	[ "$(ev ump-high high)" = "$h0" ]
}

# refused WHAT ARGS...: exit 2, WHAT on stderr
refused() {
	want=$1
	shift
	umpressure --target 200M "$@" >/dev/null 2>/tmp/ump.err
	rc=$?
	[ $rc = 2 ] && grep -q "$want" /tmp/ump.err || {
		echo "# '$*': exit $rc, want 2 and '$want':"
		sed 's/^/#   /' /tmp/ump.err; return 1; }
}

refusals() {
	mkdir -p $CG/ump-nomem/c || return 1
	refused 'root cgroup' --cgroup $CG &&
	refused 'no memory controller' --cgroup ump-nomem/c &&
	refused 'only a leaf' --cgroup ump-par &&
	refused 'No such file' --cgroup ump-none
}

cleanup() {
	for d in ump-max ump-par/job ump-par ump-high ump-nomem/c ump-nomem; do
		i=0
		while [ -d $CG/$d ] && ! rmdir $CG/$d 2>/dev/null &&
		      [ $i -lt 100 ]; do
			i=$((i + 1))
			sleep 0.02
		done
	done
}

echo "TAP version 13"
echo "1..4"
if ! cg_ready; then
	for name in stops_short_of_memory_max parent_limit_is_effective \
		memory_high_below_max refused_before_moving; do
		n=$((n + 1))
		echo "ok $n umpressure.$name # SKIP no cgroup v2 memory controller"
	done
	echo "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:4 error:0"
	exit 4
fi
t stops_short_of_memory_max under_max
t parent_limit_is_effective parent_max
t memory_high_below_max high_lower
t refused_before_moving refusals
cleanup
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ $fail = 0 ]
