"""Shared pieces of the export tests (suite 'exports'): record prog.py
through the stock-interpreter extension, read `summary --funcs --ns` of
the trace, compare an export's per-function figures with it.

Environment: EVALPROF (the binary), EVP_PYTHON (the interpreter to trace,
python3 when unset).  A test that cannot run here exits 77 after
"SKIP: reason".
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EVALPROF = os.environ.get("EVALPROF", "build/evalprof")
PYTHON = os.environ.get("EVP_PYTHON", "python3")

# The program's own functions and its C calls: each must be in every
# export with the summary's figures.
KNOWN = ["<module>", "main", "middle", "leaf", "fib", "gen", "ping", "pong",
         "sum", "sorted", "len"]

failures = []


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def finish():
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("ok")
    sys.exit(0)


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, **kw)
    if p.returncode != 0:
        print("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd),
                                                p.stderr))
        sys.exit(1)
    return p.stdout


def workdir():
    d = tempfile.mkdtemp(prefix="evp-exports-")
    shutil.copy(os.path.join(HERE, "prog.py"), d)
    return d


def record(d, python=None):
    """Trace prog.py in D; returns the trace's path."""
    out = os.path.join(d, "x.evp")
    run([EVALPROF, "record", "-q", "-o", out, "--", python or PYTHON,
         "prog.py"], cwd=d)
    return out


class Func:
    def __init__(self, name, file, line, calls, incl, self_):
        self.name, self.file, self.line = name, file, line
        self.calls, self.incl, self.self = calls, incl, self_

    def __repr__(self):
        return "%s (%s:%d)" % (self.name, self.file, self.line)


ROW = re.compile(r"^ (.*?)(?: \((.*):(\d+)\))?\s+([\d,]+)\s+([\d,]+) ns\s+"
                 r"([\d,]+) ns\s+[\d,]+ ns$")


def summary_funcs(trace, known=KNOWN):
    """The rows of `summary --funcs --ns --wide` (no name cut): each of
    KNOWN must be there."""
    out = run([EVALPROF, "summary", "--funcs", "--ns", "--wide", trace])
    rows = []
    for line in out.split("functions:", 1)[1].splitlines():
        m = ROW.match(line)
        if m:
            n = lambda s: int(s.replace(",", ""))
            if m.group(1).endswith(".."):
                continue
            rows.append(Func(m.group(1), m.group(2) or "",
                             int(m.group(3) or 0),
                             n(m.group(4)), n(m.group(5)), n(m.group(6))))
    names = set(f.name for f in rows)
    for k in known:
        if k not in names:
            print("summary has no row for %s:\n%s" % (k, out))
            sys.exit(1)
    return rows


def by_name(rows, name):
    return [f for f in rows if f.name == name]
