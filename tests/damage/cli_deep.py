#!/usr/bin/env python3
"""Deep nesting at the command line: `evalprof tree` on a trace of many
nested calls prints a bounded listing.

A generated text trace of 200,000 nested enters (imported with the
project's own writer) once gave 800 MB of `tree` output, 4 KB of
indentation an event; with the default --max-depth (1024) the events
below the cap are one line, "[N events deeper than 1,024 frames elided,
down to depth D]", and a note on stderr says how deep the calls went.
--max-depth N cuts at N, and 0 shows every event.

usage: cli_deep.py EVALPROF
"""
import os
import subprocess
import sys
import tempfile

EVALPROF = sys.argv[1]
DEPTH = 200000
failures = []
checks = 0


def check(what, cond, detail=""):
    global checks
    checks += 1
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print(detail)


def tree(args, path, out_path):
    with open(out_path, "wb") as out:
        p = subprocess.run([EVALPROF, "tree"] + args + [path], stdout=out,
                           stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stderr.decode("utf-8", "replace"), os.path.getsize(out_path)


def write_trace(path, depth):
    with open(path, "w") as f:
        f.write("# argv: deep.py\n\n100.000000000 0\n")
        for i in range(depth):
            f.write("# func: f\n100.%09d 3\n" % (i + 1))
        f.write("100.%09d 9 100\n100.%09d 1\n" % (depth + 1, depth + 2))


with tempfile.TemporaryDirectory() as d:
    text = os.path.join(d, "deep.trace")
    evp = os.path.join(d, "deep.evp")
    out = os.path.join(d, "tree.out")
    write_trace(text, DEPTH)
    p = subprocess.run([EVALPROF, "import", "--zstd", "-o", evp, text],
                       capture_output=True, timeout=120)
    check("import the deep trace", p.returncode == 0, p.stderr.decode())

    rc, err, size = tree([], evp, out)
    check("tree exits 0", rc == 0, err)
    # 1,025 lines of at most 3.2 KB, the header and the elision line
    check("tree output bounded (%d bytes)" % size, size < 4 << 20)
    want = "[%s events deeper than 1,024 frames elided, down to depth %s]" % (
        format(DEPTH + 2 - 1025, ","), format(DEPTH, ","))
    with open(out, encoding="utf-8") as f:
        lines = f.read().splitlines()
    elided = [l for l in lines if "events deeper than" in l]
    check("one elision line", len(elided) == 1, "\n".join(elided)[:300])
    check("elision line says what it stands for",
          bool(elided) and elided[0].endswith(want), elided[0][-120:] if elided else "")
    check("elision line drawn at the cap",
          bool(elided) and elided[0].count("|  ") == 1025)
    note = [l for l in err.splitlines() if "note: tree:" in l]
    check("a note on stderr says how deep", len(note) == 1 and
          "deeper than 1024 frames (the deepest at depth %d)" % DEPTH in note[0],
          err)

    rc, err, size = tree(["--max-depth", "2"], evp, out)
    with open(out, encoding="utf-8") as f:
        body = [l for l in f.read().splitlines() if "µs" in l and l[0] != "#"]
    check("--max-depth 2: init, three enters and the elision line",
          rc == 0 and len(body) == 5 and "[%s events deeper than 2 frames" %
          format(DEPTH + 2 - 3, ",") in body[-1], "\n".join(body)[:600])

    small = os.path.join(d, "small.trace")
    write_trace(small, 1500)
    rc, err, size = tree(["--max-depth", "0", "--format", "raw"], small, out)
    with open(out, encoding="utf-8") as f:
        n = sum(1 for l in f if l[:1].isdigit())
    check("--max-depth 0 shows every event", rc == 0 and n == 1503 and
          "note" not in err, "%d events, stderr: %s" % (n, err))

print("%d passed, %d failed" % (checks - len(failures), len(failures)))
sys.exit(1 if failures else 0)
