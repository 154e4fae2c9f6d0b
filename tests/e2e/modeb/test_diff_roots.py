#!/usr/bin/env python3
"""diff --funcs across two checkouts and two interpreters (suite e2e-modeb).

One program (a script and a module of its own under lib/) is copied to two
directories of different depths and recorded from each, by CPython 3.12
and 3.13 where the extension was built for both (else by two other
versions, else by one interpreter twice, saying so).  The traces name the
program's directory and the interpreter's stdlib and site-packages
(root.* metadata), and diff --funcs must match every function by the path
relative to them: none of the program's functions is new or gone, and no
stdlib function is both (one under each prefix, the same name and
module-relative file); with one interpreter, no row at all is.  Rows show
the new trace's absolute paths.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from test_interpreters import PKG, record_and_diff

SCRIPT = """\
import json
from lib import util


def main():
    for i in range(20):
        util.work(json.dumps([[i, 2], [3, [4, 5]]], indent=1))


main()
"""

UTIL = """\
def work(text):
    return helper(text) + 1


def helper(text):
    return len(text)
"""

PROBE = ("import sys, sysconfig; print('%d.%d' % sys.version_info[:2]); "
         "print(sysconfig.get_paths()['stdlib'])")


def probe(exe):
    out = subprocess.run([exe, "-c", PROBE], capture_output=True, text=True,
                         timeout=60).stdout.split("\n")
    return (out[0], out[1]) if len(out) > 1 and out[0] else (None, None)


def pick(exes):
    """Two (version, exe, stdlib) to record with, and a note on what was
    left out."""
    seen = {}
    for exe in exes:
        v, lib = probe(exe)
        if v and v not in seen:
            seen[v] = (v, exe, lib)
    if not seen:
        return None, "no interpreter with evalprof._tracer built"
    if "3.12" in seen and "3.13" in seen:
        return [seen["3.12"], seen["3.13"]], ""
    if len(seen) >= 2:
        two = [seen[v] for v in sorted(seen)[-2:]]
        return two, " (3.12 and 3.13 not both built: %s and %s)" % (
            two[0][0], two[1][0])
    one = next(iter(seen.values()))
    return [one, one], " (one interpreter, %s, twice: no second version)" \
        % one[0]


def rows(report):
    """(name, file, base calls, new calls) of each function row."""
    out = []
    body = report.split("functions (inclusive time):", 1)[1]
    for ln in body.splitlines()[3:]:
        if not ln.strip() or " (" not in ln:
            continue
        head, tail = ln.rsplit(")", 1)
        name, where = head.strip().rsplit(" (", 1)
        words = tail.split()
        out.append((name, where.rsplit(":", 1)[0], int(words[0].replace(
            ",", "")), int(words[1].replace(",", ""))))
    return out


def rel(path, roots):
    for label, root in roots:
        if path.startswith(root + "/"):
            return label + path[len(root):]
    return path


def main(exes):
    two, note = pick(exes)
    if two is None:
        print("SKIP: %s" % note)
        return 77
    tmp = tempfile.mkdtemp(prefix="evp-roots-")
    try:
        dirs = [os.path.join(tmp, "a", "app"),
                os.path.join(tmp, "checkout", "b", "app")]
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=PKG)
        env.pop("EVALPROF", None)
        runs = []
        for d, (v, exe, lib) in zip(dirs, two):
            os.makedirs(os.path.join(d, "lib"))
            for name, text in (("prog.py", SCRIPT), ("lib/util.py", UTIL),
                               ("lib/__init__.py", "")):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            # a relative script path: the trace names its directory
            runs.append((exe, "./prog.py", d,
                         os.path.join(tmp, "%d.evp" % len(runs))))
        out, problem = record_and_diff(runs, env)
        if problem:
            print("FAIL: %s" % problem)
            return 1
        got = rows(out)
        bad = []
        mine = [r for r in got if r[1].startswith(tmp + "/")]
        names = sorted(r[0] for r in mine)
        want = sorted(["<module>", "<module>", "<module>", "main", "work",
                       "helper"])
        if names != want:
            bad.append("the program's rows are %s, expected %s" % (names,
                                                                   want))
        for r in mine:
            if not r[2] or not r[3]:
                bad.append("not matched: %s (%s)" % r[:2])
            if not r[1].startswith(dirs[1] + "/"):
                bad.append("not the new trace's path: %s (%s)" % r[:2])
        roots = [[("<stdlib>", two[0][2])], [("<stdlib>", two[1][2])]]
        side = {}
        for r in got:
            if r[1].startswith(tmp + "/"):
                continue
            if two[0] == two[1] and (not r[2] or not r[3]):
                bad.append("one interpreter, yet not matched: %s (%s)"
                           % r[:2])
            if not r[2] or not r[3]:
                new = 1 if r[3] else 0
                k = (r[0], rel(r[1], roots[new]))
                side.setdefault(k, set()).add(new)
        for k, sides in sorted(side.items()):
            if len(sides) == 2 and k[1].startswith("<stdlib>/"):
                bad.append("gone and new: %s (%s)" % k)
        stdlib = [r for r in got if r[2] and r[3]
                  and r[1].startswith(two[1][2] + "/")]
        if not stdlib:
            bad.append("no stdlib function matched")
        if bad:
            print("FAIL: %s vs %s:\n  %s\n%s" % (two[0][0], two[1][0],
                                                 "\n  ".join(bad), out))
            return 1
        print("ok: %s vs %s%s: %d functions of the program and %d of the "
              "stdlib matched" % (two[0][0], two[1][0], note, len(mine),
                                  len(stdlib)))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
