"""`evalprof export --format pstats` read by its real consumer, Python's
pstats module, on the interpreter that runs this file (meson runs it on
every interpreter the extension was built for, which also records the
trace): for every function of `summary --funcs --ns`, pstats' ncalls,
tottime and cumtime are the summary's calls, self and inclusive time
(tolerance 1 ns: seconds as doubles); primitive calls and callers are
counted as cProfile counts them (fib 1973/1 called by fib 1972/2 and
main 1, the mutual recursion of ping and pong, the generator's
resumptions as calls from sum); pstats prints and sorts the file."""
import io
import os
import pstats
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("EVP_PYTHON", sys.executable)
from common import (EVALPROF, KNOWN, check, finish, record, run,  # noqa: E402
                    summary_funcs, workdir)

d = workdir()
trace = record(d)
rows = summary_funcs(trace)
out = os.path.join(d, "x.pstats")
run([EVALPROF, "export", "--format", "pstats", "-o", out, trace])
st = pstats.Stats(out, stream=io.StringIO())
stats = st.stats


def key_of(f):
    if f.line == 0:  # a C function, keyed as cProfile keys built-ins
        return ("~", 0, "<built-in method %s.%s>" % (f.file, f.name))
    return (f.file, f.line, f.name)


def near(sec, ns):
    return abs(sec * 1e9 - ns) <= 1


for f in rows:
    k = key_of(f)
    check(k in stats, "pstats has %r (as %r)" % (f, k))
    if k not in stats:
        continue
    cc, nc, tt, ct, callers = stats[k]
    check(nc == f.calls, "%r: ncalls %d, summary %d" % (f, nc, f.calls))
    check(near(tt, f.self), "%r: tottime %r, summary %d ns" % (f, tt, f.self))
    check(near(ct, f.incl), "%r: cumtime %r, summary %d ns" % (f, ct, f.incl))

by = {k[2]: v for k, v in stats.items() if k[0].endswith("prog.py")}
for k in KNOWN[:8]:
    check(k in by, "pstats has prog.py's %s" % k)
cc, nc, tt, ct, callers = by["fib"]
check((nc, cc) == (1973, 1), "fib: %d/%d calls, cProfile counts 1973/1" %
      (nc, cc))
callers = {k[2]: v for k, v in callers.items()}
check(set(callers) == {"fib", "main"}, "fib's callers: %r" % list(callers))
check(callers["fib"][:2] == (1972, 2), "fib <- fib: %r, cProfile 1972/2" %
      (callers["fib"][:2],))
check(callers["main"][:2] == (1, 1), "fib <- main: %r" %
      (callers["main"][:2],))
check(near(callers["main"][3], by["fib"][3] * 1e9),
      "fib <- main holds fib's cumtime")
for name, calls in (("ping", 16), ("pong", 15)):
    check(by[name][:2] == (1, calls), "%s: %r, cProfile %d/1" %
          (name, by[name][:2], calls))
check(by["gen"][:2] == (51, 51), "gen: every resumption a primitive call")
gcallers = {k[2]: v for k, v in by["gen"][4].items()}
check(list(gcallers) == ["<built-in method builtins.sum>"],
      "gen is resumed by sum: %r" % list(gcallers))
# A function that does not recur: its callers add up to it.
for name in ("leaf", "middle", "gen"):
    cc, nc, tt, ct, callers = by[name]
    check(sum(v[0] for v in callers.values()) == nc and
          abs(sum(v[2] for v in callers.values()) - tt) < 1e-9 and
          abs(sum(v[3] for v in callers.values()) - ct) < 1e-9,
          "%s: callers add up to its calls and times" % name)
# pstats itself reads, sorts and prints it.
buf = io.StringIO()
pstats.Stats(out, stream=buf).sort_stats("cumulative").print_stats(5)
check("function calls (" in buf.getvalue() and "prog.py" in buf.getvalue(),
      "pstats prints the profile")
shutil.rmtree(d)
finish()
