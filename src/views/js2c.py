#!/usr/bin/env python3
"""Turn a JavaScript file into a C string literal (one literal per line),
for embedding the flame graph's script in the evalprof binary.

usage: js2c.py IN.js OUT.h

Fails when the script contains "]]>", which would end the SVG's CDATA
section early.
"""
import sys


def main(src, dst):
    with open(src, encoding="utf-8") as f:
        text = f.read()
    if "]]>" in text:
        sys.exit(f"js2c: {src}: contains ']]>', which would end the CDATA section")
    out = ["/* generated from %s by js2c.py: do not edit */" % src.split("/")[-1]]
    for line in text.splitlines():
        esc = line.replace("\\", "\\\\").replace('"', '\\"')
        out.append('"%s\\n"' % esc)
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
