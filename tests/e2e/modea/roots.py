#!/usr/bin/env python3
"""diff --funcs of mode A traces across checkouts (suite e2e-modea).

    roots.py VERSION BUILD_DIR [STOCK_PYTHON...]

The program of tests/e2e/modeb/test_diff_roots.py (a script and a module
of its own under lib/) is copied to two directories of different depths
and recorded from each by the instrumented interpreter of VERSION.  Its
traces name the interpreter's stdlib and site-packages and the program's
directory (root.* metadata) as a stock interpreter's do: the stdlib where
the interpreter finds it (sys._stdlib_dir), the others as sysconfig has
them, no site-packages under -S, the working directory for -m.  diff
--funcs then matches every function of the two: none of the program's or
the stdlib's is new or gone.  The trace of a stock interpreter of the same
version (mode B, the first STOCK_PYTHON of VERSION) of the copy in the
second directory matches the program's functions and the stdlib's too.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VER, BUILD = sys.argv[1], os.path.abspath(sys.argv[2])
os.environ["EVP_BUILD"] = BUILD
sys.path.insert(0, os.path.join(HERE, "..", "modeb"))

from test_diff_roots import SCRIPT, UTIL, rows  # noqa: E402
from test_interpreters import EVALPROF, PKG, record_and_diff  # noqa: E402

PY = os.path.join(BUILD, "cpython", VER, "evalprof", "python")
PROBE = ("import sys, sysconfig; print('%d.%d' % sys.version_info[:2]); "
         "print(sys._stdlib_dir); p = sysconfig.get_paths(); "
         "[print(p[k]) for k in ('platstdlib', 'purelib', 'platlib')]")
WANT = sorted(["<module>", "<module>", "<module>", "main", "work", "helper"])


def probe(exe):
    out = subprocess.run([exe, "-c", PROBE], capture_output=True, text=True,
                         timeout=60).stdout.split("\n")
    return out[:5] if len(out) > 4 and out[0] else None


def meta(trace):
    """The trace's metadata, from evalprof info."""
    out = subprocess.run([EVALPROF, "info", trace], capture_output=True,
                         text=True, timeout=60).stdout
    kv = {}
    for ln in out.split("metadata:", 1)[-1].splitlines()[1:]:
        if not ln.startswith("  "):
            break
        k, _, v = ln.strip().partition(" ")
        kv[k] = v.strip()
    return kv


def record(args, cwd, trace, env):
    p = subprocess.run([EVALPROF, "record", "-q", "-o", trace, "--", PY]
                       + args, capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=300)
    return None if p.returncode == 0 else "record %s: exit %d: %s" % (
        " ".join(args), p.returncode, p.stderr)


def check_roots(got, want, what, bad):
    for k, v in want.items():
        if got.get(k) != v:
            bad.append("%s: %s is %r, expected %r" % (what, k, got.get(k),
                                                       v))


def unmatched(report, tmp, bad, what, stdlib_too):
    """The program's six functions (and, if STDLIB_TOO, every other row)
    matched; returns how many stdlib rows matched."""
    got = rows(report)
    mine = [r for r in got if r[1].startswith(tmp + "/")]
    if sorted(r[0] for r in mine) != WANT:
        bad.append("%s: the program's rows are %s, expected %s"
                   % (what, sorted(r[0] for r in mine), WANT))
    for r in got:
        if (r in mine or stdlib_too) and (not r[2] or not r[3]):
            bad.append("%s: not matched: %s (%s)" % ((what,) + r[:2]))
    return sum(1 for r in got if r not in mine and r[2] and r[3])


def main(stock):
    if not os.access(PY, os.X_OK):
        try:
            why = open(os.path.join(BUILD, "cpython", VER,
                                    "evalprof.status")).read().strip()
        except OSError:
            why = ""
        if why.startswith("unavailable:"):
            print("SKIP: CPython %s source not obtainable here (%s)"
                  % (VER, why[len("unavailable:"):].strip()))
            return 77
        print("FAIL: %s missing: %s" % (PY, why or "not built"))
        return 1
    paths = probe(PY)
    if paths is None or paths[0] != VER:
        print("FAIL: %s does not run (%r)" % (PY, paths))
        return 1
    tmp = tempfile.mkdtemp(prefix="evp-modea-roots-")
    bad = []
    try:
        dirs = [os.path.join(tmp, "a", "app"),
                os.path.join(tmp, "checkout", "b", "app")]
        for d in dirs:
            os.makedirs(os.path.join(d, "lib"))
            for name, text in (("prog.py", SCRIPT), ("lib/util.py", UTIL),
                               ("lib/__init__.py", "")):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=PKG)
        for k in ("EVALPROF", "EVALPROF_EVENTS", "EVALPROF_LINES"):
            env.pop(k, None)
        traces = [os.path.join(tmp, "%d.evp" % i) for i in range(2)]
        runs = [(PY, "./prog.py", d, t) for d, t in zip(dirs, traces)]
        out, problem = record_and_diff(runs, env)
        if problem:
            print("FAIL: %s" % problem)
            return 1
        # (1) the roots: the script's directory as its name gives it, the
        # directory its modules import from, the interpreter's paths
        sys_roots = {"root.stdlib": paths[1], "root.platstdlib": paths[2],
                     "root.purelib": paths[3], "root.platlib": paths[4]}
        for d, t in zip(dirs, traces):
            want = dict(sys_roots)
            want.update({"root.script": d + "/.", "root.script.real":
                         os.path.realpath(d)})
            check_roots(meta(t), want, "./prog.py in %s" % d, bad)
        # (2) two checkouts, one interpreter: every row matched
        n = unmatched(out, tmp, bad, "two checkouts", True)
        if not n:
            bad.append("two checkouts: no stdlib function matched")
        # no site: no site-packages; -m: the working directory
        t = os.path.join(tmp, "s.evp")
        problem = record(["-S", os.path.join(dirs[0], "prog.py")], tmp, t,
                         env)
        got = {} if problem else meta(t)
        if problem or "root.purelib" in got or "root.platlib" in got:
            bad.append("-S: %s" % (problem or "site-packages recorded: %r"
                                   % got))
        check_roots(got, {"root.stdlib": paths[1], "root.script": dirs[0]},
                    "-S", bad)
        problem = record(["-m", "prog"], dirs[1], t, env)
        got = {} if problem else meta(t)
        check_roots(got, {"root.script": dirs[1]}, "-m prog", bad)
        if problem or "root.script.real" in got:
            bad.append("-m prog: %s" % (problem or "root.script.real %r"
                                        % got.get("root.script.real")))
        # (3) against a stock interpreter of the same version (mode B)
        note = ""
        exe = next((e for e in stock if (probe(e) or [""])[0] == VER), None)
        if exe is None:
            note = " (no stock %s with evalprof._tracer: mode B left out)" \
                % VER
        else:
            t = os.path.join(tmp, "b.evp")
            out, problem = record_and_diff(
                [runs[0], (exe, "./prog.py", dirs[1], t)], env)
            if problem:
                bad.append("stock %s: %s" % (VER, problem))
            elif not unmatched(out, tmp, bad, "mode A against stock %s" % VER,
                               False):
                bad.append("mode A against stock %s: no stdlib function "
                           "matched" % VER)
        if bad:
            print("FAIL: %s:\n  %s" % (VER, "\n  ".join(bad)))
            return 1
        print("ok: %s: the roots recorded; two checkouts: every function "
              "matched (%d of the stdlib); against a stock %s: the "
              "program's%s" % (VER, n, VER, note))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[3:]))
