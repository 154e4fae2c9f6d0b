"""`evalprof export --format pprof` read by its real consumer, `go tool
pprof` (Debian golang-go): for every function of `summary --funcs --ns`
on the same trace, -top's flat and cum wall time are the summary's self
and inclusive nanoseconds exactly (tolerance 0: both are sums of the same
integer nanoseconds), -sample_index=calls gives the calls, and the stacks
of -traces add up to the same inclusive times.  --ops and --phases add
leaves without changing any cum; the op leaves' events are the trace's
op events."""
import os
import re
import shutil
import subprocess

from common import (EVALPROF, KNOWN, check, finish, record, run, skip,
                    summary_funcs, workdir)

GO = shutil.which("go")
if not GO:
    skip("go not found (Debian golang-go: tools/bootstrap.sh test)")
if subprocess.run([GO, "tool", "pprof", "-h"], stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL).returncode not in (0, 2):
    skip("go tool pprof does not run here")

d = workdir()
trace = record(d)
rows = summary_funcs(trace)
base = lambda f: os.path.basename(f)
counts = {}
for f in rows:
    counts[(f.name, base(f.file))] = counts.get((f.name, base(f.file)), 0) + 1
unique = [f for f in rows if counts[(f.name, base(f.file))] == 1]


def export(*opts):
    out = os.path.join(d, "x%d.pb.gz" % len(os.listdir(d)))
    run([EVALPROF, "export", "--format", "pprof", "-o", out] + list(opts) +
        [trace])
    with open(out, "rb") as fh:
        check(fh.read(2) == b"\x1f\x8b", "pprof output is gzip")
    return out


def pprof(path, *args):
    return run([GO, "tool", "pprof"] + list(args) + [path])


def top(path, index):
    """(name, file basename) -> (flat, cum) from -top -filefunctions."""
    out = pprof(path, "-top", "-filefunctions", "-unit=ns", "-nodecount=100000",
                "-nodefraction=0", "-edgefraction=0",
                "-sample_index=" + index)
    res = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+)(?:ns)?\s+\S+%\s+\S+%\s+(\d+)(?:ns)?\s+\S+%\s+"
                     r"(\S+)(?: (.*))?$", line)
        if m:
            res[(m.group(3), base(m.group(4) or ""))] = (int(m.group(1)),
                                                        int(m.group(2)))
    return res


def traces(path):
    """The stacks of -traces: [(value ns, [frames, leaf first])]."""
    out = pprof(path, "-traces", "-unit=ns")
    blocks = out.split("-----------+-------------------------------------------"
                       "------------")[1:]
    res = []
    for b in blocks:
        frames, value = [], None
        for line in b.splitlines():
            m = re.match(r"^\s*(\d+)ns\s+(.*)$", line)
            if m:
                value = int(m.group(1))
                frames.append(m.group(2).strip())
            elif line.strip() and ":" not in line and value is not None:
                frames.append(line.strip())
        if value is not None:
            res.append((value, frames))
    return res


plain = export()
wall, calls = top(plain, "wall"), top(plain, "calls")
for f in unique:
    key = (f.name, base(f.file))
    # pprof -top leaves out what has no time at all (a built-in that took
    # under a nanosecond once compensated)
    check(key in wall or f.incl == 0, "pprof -top lists %r" % f)
    if key in wall:
        check(wall[key] == (f.self, f.incl),
              "%r: pprof flat/cum %r, summary self/incl (%d, %d)" %
              (f, wall[key], f.self, f.incl))
        check(calls.get(key, (None,))[0] == f.calls,
              "%r: pprof calls %r, summary %d" % (f, calls.get(key), f.calls))
for k in KNOWN:
    check(any(n == k for n, _ in wall), "pprof -top has %s" % k)

# -traces: each stack once; a function's inclusive time is the stacks it
# is on (once per stack, recursion or not).
st = traces(plain)
total = sum(v for v, _ in st)
check(total == sum(fc[0] for fc in wall.values()),
      "-traces add up to -top's total (%d)" % total)
for f in rows:
    if f.name in KNOWN and len([g for g in rows if g.name == f.name]) == 1:
        cum = sum(v for v, fr in st if f.name in fr)
        check(cum == f.incl, "%s: -traces cum %d, summary incl %d" %
              (f.name, cum, f.incl))
check(any(fr[:3] == ["leaf", "middle", "main"] for _, fr in st),
      "-traces has the stack leaf <- middle <- main")
check(any(fr[:3] == ["fib", "fib", "fib"] for _, fr in st),
      "-traces has fib's recursion")
check(any(fr[:3] == ["leaf", "gen", "sum"] for _, fr in st),
      "-traces has the generator resumed by sum")

# Leaves: cum unchanged; the op leaves' events are the trace's op events.
info = run([EVALPROF, "info", trace])
nops = int(re.search(r"by kind:.*?\bop ([\d,]+)", info).group(1)
           .replace(",", ""))
for opts in (["--ops"], ["--phases"], ["--ops", "--phases"]):
    p = export(*opts)
    w = top(p, "wall")
    for f in unique:
        key = (f.name, base(f.file))
        check(w.get(key, (0, None if f.incl else 0))[1] == f.incl,
              "%s %r: cum %r, summary incl %d" % (opts, f, w.get(key), f.incl))
    leaves = [n for n, _ in w if n.startswith("op:") or n.startswith("[")]
    check(leaves, "%s adds leaves" % opts)
    if "--ops" in opts:
        ev = top(p, "events")
        # (ops outside any frame are in the root's "[op]")
        n = sum(v[0] for (name, _), v in ev.items()
                if name.startswith("op:") or name == "[op]")
        check(n == nops, "%s: op leaves hold %d events, trace %d" %
              (opts, n, nops))

shutil.rmtree(d)
finish()
