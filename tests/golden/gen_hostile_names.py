#!/usr/bin/env python3
"""Write a text trace whose names try to break evalprof's reports.

Function names come from the traced program (a code object's name can be
set to anything), opcode names and the header from whoever wrote the
trace, so every report must keep them on their line, out of the
terminal's control and within its columns.  The trace nests one frame
per hostile function name, runs one op named by a hostile "# opcode:"
line, and has a second thread with a hostile name:

  * ANSI escape sequences, a tab, a bell, DEL;
  * a newline (written "\\n", as evalprof's writer escapes it) and a
    backslash (written "\\\\");
  * a 3,014-character name, and 300 two-byte characters (600 bytes):
    too long for a tree line (cut at a character boundary, marked "..")
    and for a summary column (70 columns);
  * valid UTF-8 ("größe_λ", 7 columns in 10 bytes) and bytes that are
    not UTF-8 (0xff 0xfe);
  * an empty name, printf conversions, text that looks like a header.

The script is the readable form of the input: the trace itself holds raw
control bytes.  It starts with a comment block longer than 512 bytes, as
evalprof takes control bytes in a file's first 512 bytes for binary data.

With --long-line it writes instead a trace of one call to a function whose
name and file are 600 control characters each (after a first "a", so that
the escapes do not end evenly at the line buffer's end): every escape
takes 4 bytes, so the tree's raw line, "\x01" x 600 then "\x02" x 600,
runs past its 4,096-byte buffer and must be cut there.

    gen_hostile_names.py [--long-line] OUTPUT
"""
import sys

FUNCS = [
    "\x1b[31mred\x1b[0m",
    "tab\there\x07bell\x7fdel",
    "new\\nline",                      # the reader turns "\n" into a newline
    "back\\\\slash",                   # and "\\" into one backslash
    "very_long_" + "x" * 3000 + "_end",
    "\u03bb" * 300,
    "gr\u00f6\u00dfe_\u03bb",
    "",
    "%s%n%x",
    "# python: fake header",
    b"\xff\xfe".decode("utf-8", "surrogateescape"),
]

COMMENT = """\
# Hostile names for evalprof's tree and summary, written by
# tests/golden/gen_hostile_names.py (read it there: this file holds raw
# control bytes).  One frame per name, nested; one op named by a hostile
# "# opcode:" line; a second thread with a hostile name; an argv with an
# escape sequence.  This comment block is longer than 512 bytes on
# purpose: evalprof takes control bytes near the start of a file for
# binary data.
#
# The names: ANSI escapes, tab, bell, DEL, an escaped newline, an escaped
# backslash, 3,014 and 600-byte names, UTF-8 and invalid UTF-8, an empty
# name, printf conversions, and text that looks like a header line.
"""

HEADER = """\
# python: /usr/bin/python3.12
# argv: python3.12 \x1b[2Jclear_screen.py
# start time: 1700000300 s (since epoch)
# start clock: 300.000000000 s (on clock)
# end clock: 300.000100000 s (on clock)
# opcode: 124 LOAD_FAST 124
# opcode: 5 \x1b]0;title\x07 5
"""


LONG_COMMENT = """\
# A raw tree line longer than the tree view's line buffer, written by
# tests/golden/gen_hostile_names.py --long-line (read it there: this file
# holds raw control bytes).  One call to a function whose name ("a" then
# 600 x 0x01) and file (600 x 0x02) are control characters: each is
# escaped as four bytes, so the line needs about 4,850 bytes and must be
# cut, not written past the buffer.  This comment block is longer than
# 512 bytes on purpose: evalprof takes control bytes near the start of a
# file for binary data, and the function line must come after them.
"""

LONG_LINE = """\
# python: /usr/bin/python3.12
# argv: python3.12 long_line.py
# start time: 1700000400 s (since epoch)
# start clock: 400.000000000 s (on clock)
# end clock: 400.000001000 s (on clock)
# function: 1\t7\t%s\t%s

400.000000000 3 1
400.000000100 4 1
400.000000200 1
""" % ("\x02" * 600, "a" + "\x01" * 600)


def main(argv):
    long_line = "--long-line" in argv
    argv = [a for a in argv if a != "--long-line"]
    if len(argv) != 1:
        sys.stderr.write("usage: gen_hostile_names.py [--long-line] OUTPUT\n")
        return 2
    if long_line:
        with open(argv[0], "w") as f:
            f.write(LONG_COMMENT + LONG_LINE)
        return 0
    out = [COMMENT, HEADER, "\n", "# thread: 0 4001 MainThread\n"]
    ns = [300 * 10**9]

    def ev(kind, arg=None, name=None):
        if name is not None:
            out.append("# func: %s\n" % name)
        t = ns[0]
        out.append("%d.%09d %d%s\n" % (t // 10**9, t % 10**9, kind,
                                       "" if arg is None else " %d" % arg))
        ns[0] += 1000

    ev(0)
    for n in FUNCS:
        ev(3, name=n)
        ev(9, 124)
    ev(9, 5)
    for n in reversed(FUNCS):
        ev(4, name=n)
        ev(2)
    ev(1)
    out.append("# thread: 1 4002 evil\x1b[5mblink\n")
    ev(3, name="worker")
    ev(4, name="worker")
    text = "".join(out)
    with open(argv[0], "wb") as f:
        f.write(text.encode("utf-8", "surrogateescape"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
