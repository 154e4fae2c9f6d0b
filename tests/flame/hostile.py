#!/usr/bin/env python3
"""Hostile names (markup, quotes, '&', control characters, newlines,
invalid UTF-8) are escaped everywhere evalprof writes them: the SVG's
text and attributes, the string literals of its embedded script, folded
stacks and terminal tables.

usage: hostile.py   (EVALPROF: the binary; DATA: tests/flame/data)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

EVP = os.environ["EVALPROF"]
DATA = os.environ.get("DATA") or os.path.join(os.path.dirname(__file__), "data")
SVG = "{http://www.w3.org/2000/svg}"
TITLE = 'T </script><script>alert(1)</script> ]]> "q" \'s\' & \\ \u2028 end'
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, ok=True):
    p = subprocess.run([EVP, *args], capture_output=True)
    if ok and p.returncode != 0:
        failures.append(f"evalprof {' '.join(args)}: exit {p.returncode}")
        print(p.stderr.decode(errors="replace"))
    return p


def clean_text(b, what):
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, f"{what}: not valid UTF-8 ({e})")
        return ""
    bad = [c for c in s if (ord(c) < 0x20 and c not in "\n") or ord(c) == 0x7f]
    check(not bad, f"{what}: raw control characters {bad!r}")
    return s


def svg_checks(path, expect_names, title=None):
    raw = open(path, "rb").read()
    clean_text(raw.replace(b"\t", b" "), path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        check(False, f"{path}: not well-formed XML: {e}")
        return
    scripts = root.findall(f".//{SVG}script")
    check(len(scripts) == 1, f"{path}: {len(scripts)} script elements (want 1)")
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    for name in expect_names:
        check(any(t.startswith(name + " (") for t in titles),
              f"{path}: no frame titled {name!r}")
    if title is not None:
        shown = root.find(f".//{SVG}text[@id='title']").text
        check(shown == title, f"{path}: title shown as {shown!r}")
        # The same title inside the script's string literal must evaluate
        # to the same text (run with node when it is installed).
        node = shutil.which("node") or shutil.which("nodejs")
        m = re.search(r"^var evpConfig = .*;$", scripts[0].text, re.M)
        check(m is not None, f"{path}: evpConfig line missing")
        if node and m:
            js = m.group(0) + "\nprocess.stdout.write(JSON.stringify(evpConfig.title));"
            p = subprocess.run([node, "-e", js], capture_output=True)
            check(p.returncode == 0, f"{path}: evpConfig does not parse: {p.stderr!r}")
            if p.returncode == 0:
                import json
                got = json.loads(p.stdout)
                check(got == title, f"{path}: script title {got!r} != {title!r}")


def main():
    tmp = tempfile.mkdtemp()
    try:
        # folded input with hostile frames
        out = os.path.join(tmp, "a.svg")
        run("flamegraph", "--title", TITLE, "-o", out, os.path.join(DATA, "sample.folded"))
        svg_checks(out, ['<script>alert("pwn")</script>', "O'Brien & \"Sons\"",
                         "bad\\xff\\xfeutf8", "\u2028sep", "ctl\\x01\\x1b[31mred"],
                   title=TITLE.replace("\u2028", "\u2028"))
        # a title with a newline stays on one line, as the visible "\x0a"
        out = os.path.join(tmp, "n.svg")
        run("flamegraph", "--title", "two\nlines\x1b", "-o", out, os.path.join(DATA, "sample.folded"))
        svg_checks(out, [], title="two\\x0alines\\x1b")
        # a trace with hostile function names
        out = os.path.join(tmp, "b.svg")
        run("flamegraph", "--ops", "-o", out, os.path.join(DATA, "hostile.trace"))
        svg_checks(out, ['<script>alert("x&y")</script>', "fib\\xff\\x1b[2J:semi\\back"])
        # a differential graph of the two: names from either side escaped
        # in the titles, which carry both values
        out = os.path.join(tmp, "d.svg")
        run("flamegraph", "--diff", "--title", TITLE, "-o", out,
            os.path.join(DATA, "hostile.trace"), os.path.join(DATA, "sample.folded"))
        svg_checks(out, ['<script>alert("pwn")</script>', "O'Brien & \"Sons\"",
                         "ctl\\x01\\x1b[31mred"], title=TITLE)
        titles = [t.text or "" for t in ET.parse(out).getroot().iter(f"{SVG}title")]
        check(all("; base " in t and ", new " in t for t in titles),
              f"{out}: a differential title without both values")
        out = os.path.join(tmp, "dn.svg")
        run("flamegraph", "--diff", "--negate", "--ops", "-o", out,
            os.path.join(DATA, "hostile.trace"), os.path.join(DATA, "sample.folded"))
        svg_checks(out, ['<script>alert("x&y")</script>', "fib\\xff\\x1b[2J:semi\\back"])
        # folded export: one line of valid UTF-8 per stack
        p = run("export", "--format", "folded", "--ops", "--phases",
                os.path.join(DATA, "hostile.trace"))
        s = clean_text(p.stdout, "folded export")
        for line in s.splitlines():
            check(re.search(r" \d+$", line) is not None, f"folded line without count: {line!r}")
        # perf collapse and the hot table (terminal output)
        p = run("perf", "--script", os.path.join(DATA, "edge.script"), "-o",
                os.path.join(tmp, "perf"))
        clean_text(p.stdout, "perf hot table")
        clean_text(open(os.path.join(tmp, "perf", "perf.folded"), "rb").read(),
                   "perf folded")
        check(b"h\\xffst\\x1bile<&>" in p.stdout, "hot table lacks the escaped hostile name")
        svg_checks(os.path.join(tmp, "perf", "flamegraph.svg"), ["h\\xffst\\x1bile<&>"])
    finally:
        shutil.rmtree(tmp)
    if failures:
        print(f"{len(failures)} hostile-name checks failed")
        return 1
    print("ok: hostile names escaped in SVG, script, folded and terminal output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
