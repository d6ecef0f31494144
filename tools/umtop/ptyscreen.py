#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ptyscreen.py - runs a full-screen program on a pseudo-terminal of a
given size and prints what a terminal would show at the end of its last
frame, one line per row, then "# exit N" (its status) and
"# left-alt-screen yes|no" (it entered the alternate screen first and
left it last, so the terminal's own screen is back as it was).

Usage: ptyscreen.py COLS ROWS PROGRAM [ARGS...]

Only the escapes umtop writes are understood: ESC [ H (home), ESC [ 2 J
(clear), ESC [ ? 1049 h/l (alternate screen), ESC [ ? 25 h/l (cursor);
any other escape fails the run, so a new one gets looked at here.
"""
import fcntl
import os
import pty
import re
import struct
import sys
import termios

ESC = re.compile(rb"\x1b\[(\??[0-9;]*)([A-Za-z])")


def run(cols, rows, argv):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    return out, os.waitstatus_to_exitcode(status)


def frames(out):
    """The text after the last home-and-clear, and the modes seen."""
    modes = []
    last = 0
    for m in ESC.finditer(out):
        arg, cmd = m.group(1).decode(), m.group(2).decode()
        if (arg, cmd) in (("?1049", "h"), ("?1049", "l"), ("?25", "h"),
                          ("?25", "l")):
            modes.append(arg + cmd)
        elif (arg, cmd) == ("2", "J"):
            last = m.end()
        elif (arg, cmd) != ("", "H"):
            raise SystemExit("ptyscreen: unknown escape %r" % m.group(0))
    frame = ESC.sub(b"", out[last:]).decode(errors="replace")
    return frame.replace("\r", "").split("\n"), modes


def main():
    cols, rows = int(sys.argv[1]), int(sys.argv[2])
    out, rc = run(cols, rows, sys.argv[3:])
    lines, modes = frames(out)
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        print(line)
    print("# exit %d" % rc)
    print("# left-alt-screen %s" %
          ("yes" if modes[:1] == ["?1049h"] and modes[-1:] == ["?1049l"]
           else "no"))


if __name__ == "__main__":
    main()
