#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check-layers-test.sh - proves that scripts/check-layers.sh finds upward
# calls, upward includes, cycles within a layer and unlisted objects, and
# passes a clean graph and a cycle within files joined into one unit.
# Compiles a few one-function fixtures into a temporary directory. Prints
# TAP with a Totals line.
set -u
CHECK=$(cd "$(dirname "$0")/../.." && pwd)/scripts/check-layers.sh
CC=${CC:-cc}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT

. "$(dirname "$0")/tap.sh"

# unit NAME BODY: NAME.c holding BODY, compiled to NAME.o
unit() {
	printf '%s\n' "$2" >"$dir/$1.c"
	"$CC" -c -o "$dir/$1.o" "$dir/$1.c" || exit 1
}

# layers SPEC_TEXT OBJ...: runs the checker, output in $out, status in $rc
layers() {
	printf '%s\n' "$1" >"$dir/spec"
	shift
	out=$("$CHECK" "$dir/spec" "${@/#/$dir/}" 2>&1)
	rc=$?
}

has() { grep -qxF -- "$1" <<<"$out"; }
lines() { [ "$(grep -c . <<<"$out")" -eq "$1" ]; }

printf '%s\n' 'int top(void);' >"$dir/top.h"
printf '%s\n' 'int low(void);' >"$dir/low.h"
unit top 'int mid(void); int top(void) { return mid(); }'
unit mid 'int low(void); int helper(void); int mid(void) { return low() + helper(); }'
unit helper 'int low(void); int helper(void) { return low(); }'
unit low '#include "low.h"
int low(void) { return 1; }'
unit lowup 'int top(void); int low(void) { return top(); }'
unit ping 'int pong(void); int ping(void) { return pong(); }'
unit pong 'int ping(void); int pong(void) { return ping(); }'

echo "TAP version 13"
echo "1..10"

good='# a comment
top.c top.h   # trailing comment

mid.c helper.c
low.c low.h'
layers "$good" top.o mid.o helper.o low.o
ok "layers.clean_graph_passes" test "$rc" -eq 0 -a -z "$out"

layers "${good/low.c/lowup.c}" top.o mid.o helper.o lowup.o
ok "layers.upward_call_fails" eval '[ "$rc" -eq 1 ] &&
	has "upward: lowup.o -> top.o (top)" && lines 1'

layers "top.c
ping.c pong.c" top.o ping.o pong.o
ok "layers.cycle_in_layer_fails" eval '[ "$rc" -eq 1 ] && lines 1 &&
	grep -qE "^cycle: (ping.o -> pong.o -> ping.o \(pong ping\)|pong.o -> ping.o -> pong.o \(ping pong\))$" <<<"$out"'

layers "top.c
ping.c+pong.c" top.o ping.o pong.o
ok "layers.joined_unit_may_cycle" test "$rc" -eq 0 -a -z "$out"

layers "top.c top.h
mid.c helper.c
low.c low.h" mid.o low.o
ok "layers.missing_objects_ignored" test "$rc" -eq 0 -a -z "$out"

layers "top.c
low.c" top.o mid.o low.o
ok "layers.unlisted_object_fails" eval '[ "$rc" -eq 1 ] && has "unlisted: mid.o"'

layers "top.c
mid.c helper.c
low.c" top.o mid.o helper.o low.o
ok "layers.unlisted_header_fails" eval '[ "$rc" -eq 1 ] &&
	has "unlisted: low.h (included by low.c)" && lines 1'

printf '%s\n' '#include "top.h"' 'int low(void);' >"$dir/low.h"
printf '%s\n' '#include "top.h"' 'int low(void) { return 1; }' >"$dir/low.c"
layers "$good" low.o
ok "layers.upward_include_fails" eval '[ "$rc" -eq 1 ] &&
	has "upward include: low.c -> top.h" &&
	has "upward include: low.h -> top.h" && lines 2'

layers "top.c
top.c" top.o
ok "layers.listed_twice_fails" eval '[ "$rc" -eq 1 ] && has "listed twice: top.c"'

out=$("$CHECK" "$dir/spec" 2>&1)
rc=$?
ok "layers.usage_error_is_2" test "$rc" -eq 2

totals
