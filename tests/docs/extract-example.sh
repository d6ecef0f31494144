#!/bin/sh
# SPDX-License-Identifier: MIT
#
# extract-example.sh FILE - print the trainer.c example of README.md (the
# ```c block that starts with "/* trainer.c") or of a man page (the .EX
# block of EXAMPLES, roff escapes \e and \- undone). Exit 1 if none.
set -eu
f=$1
case $f in
*.md)
	awk '/^```c$/ { c = 1; n = 0; next }
	     c && /^```$/ { c = 0; if (ok) exit; next }
	     c { if (n++ == 0) ok = ($0 ~ /^\/\* trainer\.c/); if (ok) print }
	     END { exit !ok }' "$f"
	;;
*)
	awk '/^\.SH EXAMPLES/ { s = 1; next } /^\.SH / { s = 0 }
	     s && /^\.EX/ { c = 1; next } s && /^\.EE/ { exit }
	     c { gsub(/\\-/, "-"); gsub(/\\e/, "\\"); print; ok = 1 }
	     END { exit !ok }' "$f"
	;;
esac
