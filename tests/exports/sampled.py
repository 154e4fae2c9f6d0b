"""The profile exports of a sampled trace read by their real consumers:
`go tool pprof`, Python's pstats and callgrind_annotate, on mksampled's
trace (tests/sampled/sampgen.h: timer periods of 1 ms).

    sampled.py MKSAMPLED

For every function of `summary --funcs --ns` on the trace, each export's
self and inclusive figures are the summary's estimated times exactly
(tolerance 0: integer nanoseconds, periods x 1,000,000), and its counts
are the periods: pprof's "samples" (-sample_index=samples), pstats' nc
and callgrind's "samples" column.  pprof's default sample type is the
estimated time of the trace's clock ("cpu") and its period the timer's.
A consumer that is not installed skips its part, saying so; with none
the test skips.
"""
import os
import re
import shutil
import subprocess
import sys

from common import EVALPROF, check, finish, run, skip

MK = sys.argv[1]
PERIOD = 1000000
d = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                 "evp-exports-sampled-%d" % os.getpid())
os.makedirs(d, exist_ok=True)
trace = os.path.join(d, "a.evp")
run([MK, trace])

ROW = re.compile(r"^ (\S+) \((\S+):(\d+)\)\s+\d+\.\d%\s+\S+\s+([\d,]+) ns\s+"
                 r"\d+\.\d%\s+\S+\s+([\d,]+) ns$")
funcs = {}
for line in run([EVALPROF, "summary", "--funcs", "--ns", trace]).splitlines():
    m = ROW.match(line)
    if m:
        n = lambda s: int(s.replace(",", ""))
        funcs[(m.group(1), m.group(2))] = (n(m.group(4)), n(m.group(5)))
if len(funcs) != 4:
    print("FAIL: summary's functions: %r" % funcs)
    sys.exit(1)
ran = 0

# ---- pprof ---------------------------------------------------------------
GO = shutil.which("go")
if GO and subprocess.run([GO, "tool", "pprof", "-h"],
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode in (0, 2):
    ran += 1
    pb = os.path.join(d, "a.pb.gz")
    run([EVALPROF, "export", "--format", "pprof", "-o", pb, trace])

    def top(index):
        out = run([GO, "tool", "pprof", "-top", "-filefunctions", "-unit=ns",
                   "-nodecount=100000", "-nodefraction=0", "-edgefraction=0",
                   "-sample_index=" + index, pb])
        res = {}
        for line in out.splitlines():
            m = re.match(r"^\s*(\d+)(?:ns)?\s+\S+%\s+\S+%\s+(\d+)(?:ns)?\s+"
                         r"\S+%\s+(\S+)(?: (\S+))?$", line)
            if m:
                res[(m.group(3), os.path.basename(m.group(4) or ""))] = \
                    (int(m.group(1)), int(m.group(2)))
        return res, out
    ns, out = top("cpu")
    check("Type: cpu" in out, "pprof's default sample type: %s" %
          out.splitlines()[:8])
    periods, _ = top("samples")
    for f, (self_, incl) in funcs.items():
        check(ns.get(f) == (self_, incl),
              "pprof %s: flat, cum %r ns, summary %r" % (f, ns.get(f),
                                                         (self_, incl)))
        check(periods.get(f) == (self_ // PERIOD, incl // PERIOD),
              "pprof %s: %r samples, summary %r ns" % (f, periods.get(f),
                                                       (self_, incl)))
else:
    print("SKIP (part): go tool pprof not found (Debian golang-go)")

# ---- pstats ----------------------------------------------------------------
ps = os.path.join(d, "a.pstats")
run([EVALPROF, "export", "--format", "pstats", "-o", ps, trace])
code = ("import pstats, sys\n"
        "for (f, l, n), (cc, nc, tt, ct, cl) in pstats.Stats(sys.argv[1])"
        ".stats.items():\n"
        "    print(n, f, cc, nc, round(tt * 1e9), round(ct * 1e9))\n")
ran += 1
got = {}
for line in run([sys.executable, "-c", code, ps]).splitlines():
    n, f, cc, nc, tt, ct = line.split()
    got[(n, f)] = tuple(int(x) for x in (cc, nc, tt, ct))
for f, (self_, incl) in funcs.items():
    want = (incl // PERIOD, incl // PERIOD, self_, incl)
    check(got.get(f) == want, "pstats %s: cc, nc, tt, ct %r, summary %r" %
          (f, got.get(f), want))

# ---- callgrind ---------------------------------------------------------------
CA = shutil.which("callgrind_annotate")
if CA:
    ran += 1
    cg = os.path.join(d, "callgrind.out.a")
    run([EVALPROF, "export", "--format", "callgrind", "-o", cg, trace])
    cadir = os.path.join(d, "annotate")
    os.makedirs(cadir, exist_ok=True)

    def annotate(*args):
        out = run([CA, "--threshold=100", "--auto=no"] + list(args) + [cg],
                  cwd=cadir)
        res = {}
        for line in out.splitlines():
            m = re.match(r"^\s*([\d,]+) \([\s\d.]+%\)\s+([\d,]+) "
                         r"\([\s\d.]+%\)\s+(\S+):(\S+)$", line)
            if m:
                n = lambda s: int(s.replace(",", ""))
                res[(m.group(4), m.group(3))] = (n(m.group(1)), n(m.group(2)))
        return res, out
    self_cost, out = annotate()
    check("Events recorded:  cpu samples" in out,
          "callgrind's events: %s" % out.splitlines()[:10])
    incl_cost, _ = annotate("--inclusive=yes")
    for f, (self_, incl) in funcs.items():
        check(self_cost.get(f, (0, 0)) == (self_, self_ // PERIOD),
              "callgrind %s: self %r, summary %d ns" % (f, self_cost.get(f),
                                                       self_))
        check(incl_cost.get(f) == (incl, incl // PERIOD),
              "callgrind %s: inclusive %r, summary %d ns" %
              (f, incl_cost.get(f), incl))
else:
    print("SKIP (part): callgrind_annotate not found (Debian valgrind)")

# options a sampled trace has no use for are refused in one line
p = subprocess.run([EVALPROF, "export", "--format", "callgrind", "--ops",
                    "-o", os.path.join(d, "no"), trace],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   universal_newlines=True)
check(p.returncode == 2 and len(p.stderr.splitlines()) == 1 and
      "--ops has no meaning for a sampled trace" in p.stderr,
      "callgrind --ops of a sampled trace: %d %r" % (p.returncode, p.stderr))
shutil.rmtree(d, ignore_errors=True)
if not ran:
    skip("no consumer of the profiles found")
finish()
