#!/bin/sh
# SPDX-License-Identifier: MIT
# Description: the tools' knob table (umctl knobs, from tools/common/knobs.h)
# against the real umm.ko: every knob the table names exists with its
# default, and for each the values min-1, min, max and max+1 are accepted or
# refused by a plain write to the file exactly as umctl set --force accepts
# or refuses them (watermarks as they stand, so their order is checked
# too); the grammar both share (ABI "Values": hex, leading zeros, boolean
# words, 0 and 1 as numbers: 0x1 is 1 for both, 0x2 and "yellow" refused), and
# the floor of a byte knob (refused without --force, taken by the module).
# Runs under busybox sh after umctl-vm.sh; restores every knob.
n=0 pass=0 fail=0
t() {	# t NAME CMD...
	n=$((n + 1))
	tname=$1
	shift
	if "$@"; then pass=$((pass + 1)); echo "ok $n knobs.$tname"
	else fail=$((fail + 1)); echo "not ok $n knobs.$tname"; fi
}
U=/sys/kernel/mm/umm
U64_MAX=18446744073709551615

umctl knobs | grep -v '^#' >/tmp/knobs.tab || exit 1

# The file of a table name for node 0 / GPU 0.
file_of() {
	case $1 in
	nodes/nodeN/*) echo "nodes/node0/${1#nodes/nodeN/}" ;;
	gpus/gpuN/*) echo "gpus/gpu0/${1#gpus/gpuN/}" ;;
	*) echo "$1" ;;
	esac
}

# A plain write of $2 to knob file $1: 0 when the module took it.
kwrite() {
	echo "$2" >"$U/$1" 2>/dev/null
}

# The write method itself must see a refusal, or every comparison is moot.
self_check() {
	old=$(cat $U/interval_ms)
	! kwrite interval_ms 5 && [ "$(cat $U/interval_ms)" = "$old" ] &&
	kwrite interval_ms 250 && [ "$(cat $U/interval_ms)" = 250 ] &&
	kwrite interval_ms "$old"
}

defaults() {
	bad=0
	while read -r name _ _ _ def _; do
		f=$(file_of "$name")
		got=$(cat "$U/$f") || { echo "# $f: missing"; bad=1; continue; }
		[ "$got" = "$def" ] ||
			{ echo "# $f: $got at load, the table says $def"; bad=1; }
	done </tmp/knobs.tab
	return $bad
}

# One value v for knob file f: the module's answer and umctl's must agree.
# The knob is put back after each accepted write.
compare() {
	f=$1 v=$2 old=$(cat "$U/$1")
	if kwrite "$f" "$v"; then mod=yes; else mod=no; fi
	kwrite "$f" "$old"
	if umctl set --force "$f" "$v" >/dev/null 2>&1; then tool=yes
	else tool=no; fi
	kwrite "$f" "$old"
	[ "$(cat "$U/$f")" = "$old" ] || { echo "# $f not restored"; return 1; }
	[ $mod = $tool ] && return 0
	echo "# $f $v: module accepts: $mod, umctl set accepts: $tool"
	return 1
}

ranges() {
	bad=0 seen=0
	while read -r name _ min max _ _; do
		f=$(file_of "$name")
		seen=$((seen + 1))
		if [ "$max" = $U64_MAX ]; then above=18446744073709551616
		else above=$((max + 1)); fi
		for v in $([ "$min" = 0 ] && echo -1 || echo $((min - 1))) \
			"$min" "$max" "$above"; do
			compare "$f" "$v" || bad=1
		done
	done </tmp/knobs.tab
	[ $seen -gt 0 ] && return $bad
}

# The ABI's grammar: what umctl takes, the module takes with the same value.
same_value() {	# same_value FILE VALUE: both take VALUE and store the same
	f=$1 old=$(cat "$U/$1")
	kwrite "$f" "$2" && a=$(cat "$U/$f") && kwrite "$f" "$old" &&
	umctl set "$f" "$2" && b=$(cat "$U/$f") && kwrite "$f" "$old" &&
	[ "$a" = "$b" ] || { echo "# $f '$2': module $a, umctl $b"; return 1; }
}
grammar() {
	bad=0
	for v in 0x64 0X64 0250 1 y Y yes YES on On true TRUE 0 n N no off \
		OFF false False; do
		case $v in
		0x*|0X*|0250) f=interval_ms ;;
		*) f=enabled ;;
		esac
		same_value $f $v || bad=1
	done
	same_value gpus/gpu0/budget_bytes 0x40000000 || bad=1
	same_value ring_bytes_max 0x100000 || bad=1
	# a boolean may be a number of the same grammar, 0 or 1 only
	kwrite enabled 0 && kwrite enabled 0x1 &&
		[ "$(cat $U/enabled)" = 1 ] || bad=1
	same_value enabled 0x0 || bad=1
	same_value enabled 0x1 || bad=1
	kwrite enabled 0x2 && { echo "# the module takes 0x2"; bad=1; }
	umctl set enabled 0x2 2>/dev/null; [ $? = 2 ] || bad=1
	[ "$(cat $U/enabled)" = 1 ] || bad=1
	# no octal, for both; a sign, which kstrtoull lets pass, umctl refuses
	compare interval_ms 0o100 || bad=1
	umctl set interval_ms +100 2>/dev/null; [ $? = 2 ] || bad=1
	# words kstrtobool would take by their first letter: both refuse
	for v in t f yellow 0n; do
		old=$(cat $U/enabled)
		kwrite enabled $v && { echo "# the module takes '$v'"; bad=1; }
		kwrite enabled "$old"
		umctl set enabled $v 2>/dev/null; [ $? = 2 ] || bad=1
	done
	return $bad
}

# budget_bytes 20: the module takes it, umctl wants a unit or --force.
floor() {
	old=$(cat $U/gpus/gpu0/budget_bytes)
	umctl set gpus/gpu0/budget_bytes 20 2>/tmp/floor.err
	rc=$?
	[ $rc = 2 ] && grep -q 'under 1 MiB' /tmp/floor.err &&
	[ "$(cat $U/gpus/gpu0/budget_bytes)" = "$old" ] &&
	umctl set --force gpus/gpu0/budget_bytes 20 &&
	[ "$(cat $U/gpus/gpu0/budget_bytes)" = 20 ] &&
	umctl set gpus/gpu0/budget_bytes 20G &&
	[ "$(cat $U/gpus/gpu0/budget_bytes)" = 21474836480 ] &&
	kwrite gpus/gpu0/budget_bytes "$old"
}

echo "TAP version 13"
echo "1..5"
t write_method_sees_refusals self_check
t defaults_as_the_table defaults
t ranges_as_the_table ranges
t grammar_as_the_module grammar
t byte_floor floor
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ $fail = 0 ]
