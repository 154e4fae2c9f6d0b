"""`evalprof export --format callgrind` read by its real consumer,
callgrind_annotate (Debian valgrind): for every function of `summary
--funcs --ns` on the same trace, the self cost is the summary's self
time and --inclusive=yes the inclusive time, recursion included (fib,
ping and pong), exactly (tolerance 0: integer nanoseconds); the calls of
--tree=caller add up to the summary's calls; the program total is the
sum of the self costs and the thread's inclusive cost; with --ops the
ops column adds up to the trace's op events."""
import os
import re
import shutil
import subprocess

from common import (EVALPROF, KNOWN, by_name, check, finish, record, run,
                    skip, summary_funcs, workdir)

CA = shutil.which("callgrind_annotate")
if not CA:
    skip("callgrind_annotate not found (Debian valgrind: tools/bootstrap.sh "
         "test)")

d = workdir()
trace = record(d)
rows = summary_funcs(trace)
keys = {}
for f in rows:
    keys[(f.file, f.name)] = keys.get((f.file, f.name), 0) + 1


def export(*opts):
    out = os.path.join(d, "callgrind.out.%d" % len(os.listdir(d)))
    run([EVALPROF, "export", "--format", "callgrind", "-o", out] + list(opts)
        + [trace])
    return out


PCT = r"(?: \([\s\d.]+%\))?"
LINE = re.compile(r"^\s*([\d,]+)" + PCT + r"(?:\s+([\d,]+)" + PCT + r")?"
                  r"\s+([*<] +|)(\S.*)$")


# callgrind_annotate takes its working directory off the names of fl=
# lines but not of cfl= lines, so that a function in a file under it
# would be two functions, its self cost under the short name and its
# calls and inclusive cost under the whole one: it runs in a directory
# of its own, where every name is the one summary prints.
cadir = os.path.join(d, "annotate")
os.mkdir(cadir)


def annotate(path, *args):
    """file:function -> (wall, ops), the program totals and file:function
    -> {caller: calls}."""
    out = run([CA, "--threshold=100", "--auto=no"] + list(args) + [path],
              cwd=cadir)
    res, total, calls = {}, None, {}
    cur_callers = {}
    for line in out.splitlines():
        if line.strip() == "":
            cur_callers = {}
            continue
        m = LINE.match(line)
        if not m:
            continue
        num = lambda s: int(s.replace(",", "")) if s else None
        wall, ops, mark, name = num(m.group(1)), num(m.group(2)), m.group(3), \
            m.group(4).strip()
        if name == "PROGRAM TOTALS":
            total = (wall, ops)
        elif mark.startswith("<"):
            c = re.match(r"^(.*) \(([\d,]+)x\)", name)
            if c:
                cur_callers[c.group(1)] = num(c.group(2))
        else:
            check(name not in res, "callgrind_annotate shows %s once" % name)
            res[name] = (wall, ops)
            if mark.startswith("*"):
                calls[name] = cur_callers
    return res, total, calls


def fname(f):
    return "%s:%s" % (f.file or "???", f.name)


plain = export()
self_, total, _ = annotate(plain)
incl, itotal, _ = annotate(plain, "--inclusive=yes")
_, _, callers = annotate(plain, "--tree=caller")
calls = dict((n, sum(c.values())) for n, c in callers.items())
for f in rows:
    if keys[(f.file, f.name)] != 1:
        continue
    n = fname(f)
    check(self_.get(n, (None,))[0] == f.self,
          "%s: self %r, summary %d" % (n, self_.get(n), f.self))
    check(incl.get(n, (None,))[0] == f.incl,
          "%s: inclusive %r, summary %d" % (n, incl.get(n), f.incl))
    check(calls.get(n) == f.calls,
          "%s: called %r times, summary %d" % (n, calls.get(n), f.calls))
for k in KNOWN:
    check(any(n.endswith(":" + k) for n in self_), "callgrind has %s" % k)
check(total[0] == sum(v[0] for v in self_.values()),
      "PROGRAM TOTALS %d is the sum of the self costs" % total[0])
# (the threads are "[MainThread]" ...; "[evalprof]" is the recorder's time)
threads = [v[0] for n, v in incl.items()
           if n.startswith("???:[") and n != "???:[evalprof]"]
check(threads == [total[0]], "the thread's inclusive cost %r is the total %d"
      % (threads, total[0]))
# The program runs from C, with no Python frame above <module>: the
# thread calls it.
module = fname(by_name(rows, "<module>")[0])
check(callers.get(module) == {"???:[MainThread]": 1},
      "%s called by %r" % (module, callers.get(module)))

info = run([EVALPROF, "info", trace])
nops = int(re.search(r"by kind:.*?\bop ([\d,]+)", info).group(1)
           .replace(",", ""))
ops = export("--ops")
oself, ototal, _ = annotate(ops)
check(ototal == (total[0], nops), "--ops totals %r: wall %d, ops %d" %
      (ototal, total[0], nops))
for f in rows:
    if keys[(f.file, f.name)] == 1:
        check(oself.get(fname(f), (None,))[0] == f.self,
              "--ops: %s self unchanged" % fname(f))
# Options that mean nothing for a format are refused in one line.
for fmt, opt in (("pstats", "--ops"), ("pstats", "--phases"),
                 ("callgrind", "--phases")):
    p = subprocess.run([EVALPROF, "export", "--format", fmt, opt, "-o",
                        os.path.join(d, "no"), trace],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    check(p.returncode == 2 and len(p.stderr.splitlines()) == 1 and
          opt in p.stderr, "%s %s refused: %d %r" % (fmt, opt, p.returncode,
                                                     p.stderr))

# A text trace of the discussion: its "# log written" time, which the
# replay gives no event but counts in the frames' times, is in the costs.
disc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                    "golden", "discussion-tree", "eval_loop-1617222445.trace")
drows = summary_funcs(disc, ["<module>", "_ModuleLock"])
out = os.path.join(d, "callgrind.out.text")
run([EVALPROF, "export", "--format", "callgrind", "-o", out, disc])
dself, _, _ = annotate(out)
dincl, _, _ = annotate(out, "--inclusive=yes")
for f in drows:
    n = fname(f)
    check((dself.get(n, (None,))[0], dincl.get(n, (None,))[0]) ==
          (f.self, f.incl), "text trace %s: self/inclusive %r %r, summary "
          "%d %d" % (n, dself.get(n), dincl.get(n), f.self, f.incl))
shutil.rmtree(d)
finish()
