#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check.sh LIBUM_BUILD - what the documentation promises, as TAP:
#   docs.example_*     the trainer.c example of README.md and of libum(7)
#                      is there, the same in both, builds with -Werror
#                      against the tree's um.h and libum.so, and runs (it
#                      exits 0 only when libum evicted and the state is
#                      intact);
#   docs.cites_only_the_tree  no file names notes that are not in the tree
#                      (the engineers' FACTS/DESIGN/STYLE notes, issue
#                      numbers of a tracker);
#   docs.every_variable_in_libum_7  the LIBUM_* variables config.c reads
#                      and the ones libum(7) lists are the same set;
#   release.*          VERSION is the one source of the release: um.h and
#                      debian/changelog agree with it, and no source file
#                      writes it as a quoted literal;
#   docs.messages_*    every message libum logs and the tools print as an
#                      error or a warning follows the rule of libum(7),
#                      "Errors" (check-messages.py), and the check finds a
#                      message that does not.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
lib=${1:-$top/libum/build}
out=$here/build
mkdir -p "$out"
# shellcheck source=../../tools/common/tap.sh
. "$top/tools/common/tap.sh"

tap_begin 13
x=$here/extract-example.sh
"$x" "$top/README.md" >"$out/readme.c" 2>&1
tap_result docs.example_in_readme "$([ -s "$out/readme.c" ] || echo "no trainer.c block in README.md")"
"$x" "$top/Documentation/man/libum.7" >"$out/man.c" 2>&1
tap_result docs.example_in_libum_7 "$([ -s "$out/man.c" ] || echo "no EXAMPLES .EX block in libum.7")"
tap_result docs.example_same_in_both "$(diff "$out/readme.c" "$out/man.c")"
cc -std=c11 -Wall -Wextra -Werror -I"$top/libum/include" -o "$out/trainer" \
	"$out/readme.c" -L"$lib" -Wl,-rpath,"$lib" -lum -lm >"$out/cc.log" 2>&1
tap_result docs.example_builds "$(cat "$out/cc.log")"
"$out/trainer" >"$out/run.log" 2>&1
rc=$?
sed 's/^/# /' "$out/run.log"
tap_result docs.example_runs "$([ $rc -eq 0 ] || echo "exit $rc")"

# Everything git tracks (or every file, outside git) but build outputs.
files() {
	if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$top" ls-files --cached --others --exclude-standard
	else
		(cd "$top" && find . -path '*/build' -prune -o -type f -print)
	fi
}
# (the patterns are spelt so that this file does not match them).
cites=$(cd "$top" && files |
	while read -r f; do [ -f "$f" ] && echo "$f"; done |
	xargs -d '\n' grep -nE '(FACTS|DESIGN|STYLE)[.]md|[Ii]ssues? #?[0-9]' 2>/dev/null)
tap_result docs.cites_only_the_tree "$cites"

ver=$(cat "$top/VERSION")
hv=$(awk '/define UM_VERSION_MAJOR/ { M = $3 } /define UM_VERSION_MINOR/ { m = $3 }
	END { print M "." m }' "$top/libum/include/um.h")
tap_result release.um_h_is_VERSION "$([ "$hv" = "$ver" ] || echo "um.h $hv, VERSION $ver")"
cv=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$top/debian/changelog")
tap_result release.debian_changelog_is_VERSION "$([ "$cv" = "$ver" ] ||
	echo "debian/changelog $cv, VERSION $ver")"
lit=$(cd "$top" && files | grep -E '\.(c|h|cu|py|sh|mk|conf)$|Makefile$|Kbuild$' |
	while read -r f; do [ -f "$f" ] && echo "$f"; done |
	xargs -d '\n' grep -nF "\"$ver\"" 2>/dev/null)
tap_result release.no_version_literal "$lit"

# Every page as man shows it on an 80-column terminal: no groff warning
# (a table wider than the line), no line past column 80. Pages that are
# only a .so of another are that other page.
man_wide() {
	local f
	for f in "$top"/Documentation/man/*.[1-8]; do
		grep -q '^\.so ' "$f" && continue
		MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l "$f" \
			2>"$out/man.warn" |
			F="${f##*/}" python3 -c 'import os, sys
for n, l in enumerate(sys.stdin.read().splitlines(), 1):
	if len(l) > 80:
		print("%s:%d: %d columns" % (os.environ["F"], n, len(l)))'
		[ -s "$out/man.warn" ] && echo "${f##*/}: $(cat "$out/man.warn")"
	done
}
# A variable libum reads but libum(7) does not list is one no user finds;
# one listed but not read is a promise nothing keeps.
vars_of() { grep -o 'LIBUM_[A-Z_]*[A-Z]' "$1" | sort -u; }
tap_result docs.every_variable_in_libum_7 "$(diff \
	<(vars_of "$top/libum/src/config.c") \
	<(grep -A1 '^\.TP' "$top/Documentation/man/libum.7" |
	  sed -n 's/^\.B \(LIBUM_[A-Z_]*\)$/\1/p' | sort -u))"

tap_result docs.messages_follow_the_rule "$("$here/check-messages.py" "$top" |
	grep -v '^# ')"
# a made-up tree with one offence of each rule: each is found
fake=$out/msgtree
mkdir -p "$fake/libum/src" "$fake/tools/x"
cat >"$fake/libum/src/a.c" <<'EOF'
void f(void) { um__log(ctx, UM_LOG_ERR, "no call named here"); }
void g(void) { um__log(ctx, UM_LOG_ERR, "pool: %llu bytes", n); }
void h(void) { um__log(ctx, UM_LOG_ERR, "pool: failed (%d)", ret); }
EOF
cat >"$fake/tools/x/x.c" <<'EOF'
void t(void) { ut_warn("two\nlines"); }
EOF
found=$("$here/check-messages.py" "$fake" |
	grep -c ': \(the call\|units\|the cause\|one line\)')
tap_result docs.messages_rule_is_checked "$([ "$found" = 4 ] ||
	echo "found $found of 4 offences in $fake")"

if command -v man >/dev/null; then
	tap_result docs.man_pages_fit_80_columns "$(man_wide)"
else
	tap_result docs.man_pages_fit_80_columns "man is not installed (scripts/deps.sh installs man-db)"
fi

tap_end
