#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check-layers.sh [-I DIR]... SPEC OBJ... - calls and includes go downward.
#
# SPEC names the layers, one per line, top layer first: the basenames of
# the .c files of that layer and of the .h files that belong to it,
# separated by blanks. '#' starts a comment; blank lines are ignored.
# Files joined by '+' (a.c+b.c) are one unit: they may call each other.
#
# Reads the symbol tables of the objects (nm) and maps each defined global
# symbol to its object. Fails, with one line per offence, when
#   - an object references a symbol defined in a higher layer
#       upward: engine.o -> policy.o (um__shed_locked)
#   - the references between the objects of one layer form a cycle
#       cycle: a.o -> b.o -> a.o (a_fn b_fn)
#   - a file of the spec found in a DIR (default: the directory of SPEC)
#     has '#include "x.h"' where x.h is listed in a higher layer
#       upward include: engine.c -> policy.h
#   - an object or a file is not in the spec, or is listed twice
#       unlisted: foo.o
# Symbols defined in none of the objects (libc, the kernel) are ignored, and
# so are spec entries with no object (parts not built in this configuration).
# Exit status: 0 clean, 1 offences, 2 usage or nm error.
set -uo pipefail

usage() {
	echo "usage: $0 [-I DIR]... SPEC OBJ..." >&2
	exit 2
}

dirs=()
while getopts I: opt; do
	case $opt in
	I) dirs+=("$OPTARG") ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || usage
spec=$1
shift
[ -r "$spec" ] || { echo "$0: cannot read $spec" >&2; exit 2; }
[ ${#dirs[@]} -gt 0 ] || dirs=("$(dirname "$spec")")

# "path: symbol TYPE ..." for every symbol of every object (POSIX format)
syms=$(nm -A -P "$@") || { echo "$0: nm failed" >&2; exit 2; }

# '#include "x.h"' lines of the spec's files, as "file x.h"
includes=$(
	for f in $(sed 's/#.*//; s/+/ /g' "$spec"); do
		for d in "${dirs[@]}"; do
			[ -f "$d/$f" ] || continue
			sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' \
				"$d/$f" | sed "s|^|$f |"
			break
		done
	done
)

awk -v spec="$spec" '
function base(path) {
	sub(/.*\//, "", path)
	return path
}
# unit name of an object or a .c file: engine.o, engine.c -> engine
function unit(name) {
	name = base(name)
	sub(/\.(o|c)$/, "", name)
	return name
}
function offend(line) {
	print line
	bad = 1
}
# depth-first search over the same-layer edges; a grey node reached again
# closes a cycle, printed from that node along the current path
function visit(u,    i, v, k, next_u, path, why) {
	colour[u] = 1
	stack[++depth] = u
	for (i = 1; i <= nout[u]; i++) {
		v = out[u, i]
		if (colour[v] == 1) {
			path = ""
			why = ""
			for (k = depth; stack[k] != v; k--)
				;
			for (; k <= depth; k++) {
				next_u = k < depth ? stack[k + 1] : v
				path = path stack[k] ".o -> "
				why = why (why == "" ? "" : " ") \
					syms[stack[k], next_u]
			}
			offend("cycle: " path v ".o (" why ")")
		} else if (!colour[v]) {
			visit(v)
		}
	}
	depth--
	colour[u] = 2
}
FILENAME == spec {
	sub(/#.*/, "")
	if (NF == 0)
		next
	layers++
	for (i = 1; i <= NF; i++) {
		nmembers = split($i, member, "+")
		for (j = 1; j <= nmembers; j++) {
			key = member[j] ~ /\.h$/ ? member[j] : unit(member[j])
			if (key in layer)
				offend("listed twice: " member[j])
			layer[key] = layers
			group[key] = layers "." i
		}
	}
	next
}
FILENAME == "-" && section == "syms" {
	# path: symbol TYPE [value size]
	obj = $1
	sub(/:$/, "", obj)
	u = unit(obj)
	objs[u] = 1
	if ($3 == "U" || $3 == "w" || $3 == "v")
		refs[++nrefs] = u SUBSEP $2
	else if ($3 ~ /^[A-Z]$/ || $3 == "u")
		owner[$2] = u
	next
}
END {
	for (u in objs)
		if (!(u in layer))
			offend("unlisted: " u ".o")
	for (i = 1; i <= nrefs; i++) {
		split(refs[i], r, SUBSEP)
		from = r[1]
		sym = r[2]
		if (!(sym in owner) || owner[sym] == from)
			continue
		to = owner[sym]
		if (!(from in layer) || !(to in layer))
			continue
		if (layer[to] < layer[from]) {
			offend("upward: " from ".o -> " to ".o (" sym ")")
		} else if (layer[to] == layer[from] &&
			   group[to] != group[from]) {
			if (!((from, to) in syms))
				out[from, ++nout[from]] = to
			else
				sym = syms[from, to] "," sym
			syms[from, to] = sym
		}
	}
	for (u in nout)
		if (!colour[u]) {
			depth = 0
			visit(u)
		}
	n = split(includes, inc, "\n")
	for (i = 1; i <= n; i++) {
		if (split(inc[i], f, " ") != 2)
			continue
		from = f[1] ~ /\.h$/ ? f[1] : unit(f[1])
		f[2] = base(f[2])
		if (!(f[2] in layer)) {
			offend("unlisted: " f[2] " (included by " f[1] ")")
			continue
		}
		if (layer[f[2]] < layer[from])
			offend("upward include: " f[1] " -> " f[2])
	}
	exit bad
}
' includes="$includes" "$spec" section=syms - <<<"$syms"
