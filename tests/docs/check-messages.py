#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-messages.py - the message rule, held for every format string that
libum logs and the tools print as errors or warnings. The rule (libum(7),
"Errors"; umctl(8) and the other tools' pages follow it):

  one line   no newline inside a message (the tools' helpers and the
             library's log end the line themselves);
  the call   a library line starts with what it is about, "call: "
             ("alloc: ", "spill: ", "pressure: "), or "%s: " for a call
             passed in;
  the cause  an errno as its text (strerror), never a bare "(%d)";
  units      sizes for a person ("16 MiB": um__size_str, ut_size_str),
             never "%llu bytes".

Usage: check-messages.py TOP   Prints each offence as FILE:LINE: RULE:
"message"; exit 1 when there is one.
"""
import glob
import os
import re
import sys

LIB_CALLS = r"um__log|um__log_early|slog|sim_log|be->log|s->be->log"
TOOL_CALLS = r"ut_warn|ut_die_usage"
CALL = re.compile(r"\b(" + LIB_CALLS + "|" + TOOL_CALLS + r")\s*\(")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
# between a call's arguments and its format: the level, the context
ARG_PREFIX = re.compile(r'\s*(?:[^",()]|\([^()]*\))*,\s*')
PRI = re.compile(r'\s*(PRI[diux]\d+|PRI[diux]MAX)\s*')

RULES = [
    ("one line", re.compile(r"\\n(?!$)")),
    ("the cause: an errno as its text, not a number",
     re.compile(r"\(%l*[dz]?d\)")),
    ("units: sizes for a person, not bytes",
     re.compile(r"%(?:ll|l|z)?[ud]\s+bytes|PRI[ud]64\s+bytes|"
                r"%(?:ll|l|z)?[ud] free bytes")),
]
LIB_PREFIX = re.compile(r"^(?:(?:[a-z][a-z0-9_]*|%s)(?: [a-z0-9_%]+)?: |%s$)")


def formats(text):
    """(line, call, format) of each logging call in C source text."""
    for m in CALL.finditer(text):
        pos = m.end()
        call = m.group(1)
        lib = not re.match(TOOL_CALLS, call)
        # the library's calls take the context and the level first
        skip = 2 if call in ("um__log", "slog", "sim_log") or "log" in call \
            and call != "um__log_early" else 0
        for _ in range(skip):
            a = ARG_PREFIX.match(text, pos)
            if not a:
                break
            pos = a.end()
        fmt, p = "", pos
        while True:
            s = STRING.match(text, p)
            if s:
                fmt += s.group(1)
                p = s.end()
                while p < len(text) and text[p] in " \t\n":
                    p += 1
                continue
            q = PRI.match(text, p)
            if q and fmt:
                fmt += "%" + q.group(1)[3:]
                p = q.end()
                continue
            break
        if fmt:
            yield text.count("\n", 0, m.start()) + 1, lib, fmt


def call_of(text, line):
    """The logging call on that line (or the one it continues)."""
    lines = text.split("\n")
    for i in range(line - 1, max(line - 4, -1), -1):
        m = CALL.search(lines[i])
        if m:
            return m.group(1)
    return None


def check(top):
    bad = []
    srcs = sorted(glob.glob(os.path.join(top, "libum/src/*.c")) +
                  glob.glob(os.path.join(top, "libum/src/*/*.c")) +
                  glob.glob(os.path.join(top, "tools/*/*.c")))
    seen = 0
    for path in srcs:
        text = open(path, encoding="utf-8").read()
        rel = os.path.relpath(path, top)
        for line, lib, fmt in formats(text):
            seen += 1
            for name, rx in RULES:
                if rx.search(fmt):
                    bad.append('%s:%d: %s: "%s"' % (rel, line, name, fmt))
            # sim_log puts "sim: " first itself
            if lib and rel.startswith("libum/") and call_of(text, line) \
                    != "sim_log" and not LIB_PREFIX.match(fmt):
                bad.append('%s:%d: the call: no "call: " first: "%s"' %
                           (rel, line, fmt))
    return seen, bad


def main():
    seen, bad = check(sys.argv[1] if len(sys.argv) > 1 else ".")
    for b in bad:
        print(b)
    print("# %d messages, %d offences" % (seen, len(bad)))
    sys.exit(1 if bad or seen < 50 else 0)


if __name__ == "__main__":
    main()
