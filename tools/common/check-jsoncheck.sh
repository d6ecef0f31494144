#!/bin/bash
# SPDX-License-Identifier: MIT
# Description: ut-jsoncheck accepts valid JSON with the asked paths and
# refuses broken documents, missing paths and wrong types (the tools' checks
# rely on it failing when it should).
set -u
JC=$1
. "$(dirname "$0")/tap.sh"

doc='{"a": {"b": [1, 2.5e3, {"c": "x\"y"}], "t": true, "n": null},
 "e": [], "o": {}, "neg": -0.5}'
yes() { printf '%s' "$1" | "$JC" - "${@:2}"; }
no() { ! printf '%s' "$1" | "$JC" - "${@:2}" 2>/dev/null; }

tap_begin 12
tap_check "valid document" yes "$doc"
tap_check "paths and types" yes "$doc" a.b:array a.b.0:number a.b.2.c:string \
	a.t:bool a.n:null e:array o:object neg:number
tap_check "star over array" yes '{"x":[{"k":1},{"k":2}]}' 'x.*.k:number'
tap_check "missing member" no "$doc" a.zz
tap_check "index past end" no "$doc" a.b.3
tap_check "wrong type" no "$doc" a.t:number
tap_check "star on empty array" no "$doc" 'e.*'
tap_check "star needs every element" no '{"x":[{"k":1},{}]}' 'x.*.k'
tap_check "trailing comma" no '{"a": 1,}'
tap_check "text after document" no '{"a": 1} x'
tap_check "unterminated" no '{"a": [1, 2'
tap_check "bad number" no '{"a": 01}'
tap_end
