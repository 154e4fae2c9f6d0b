#!/usr/bin/env python3
"""The shares evalprof prints for a sampled trace are the generator's.

    check_shares.py EVALPROF MKSAMPLED TMPDIR

mksampled writes traces whose shares are known (sampgen.h spells them
out; they are restated here, not read from evalprof).  This checks
summary's state, phase, opcode and function tables (shares, their 95%
Wilson intervals computed here, estimated times), --group-specialized,
--stream, --lines, that a compressed copy reads the same, that tree lists
every sample, the refusal of a mixed diff (one line, exit 1), and diff's
changes and significance marks between variants A and B.
"""
import os
import re

from sampcheck import TMP, check, check_share, finish, make, run, trials
from sampcheck import trials_of
from sampcheck import tables as sampcheck_tables


ROW = re.compile(r"^ (.+?)\s+(\d+\.\d)%\s+(\d+\.\d)-(\d+\.\d)%\s+([\d,]+) ns"
                 r"(?:\s+(\d+\.\d)%\s+(\d+\.\d)-(\d+\.\d)%\s+([\d,]+) ns)?$")


def share_row(m):
    """(share %, lo %, hi %, ns[, incl...]) of a ROW match"""
    v = [float(m[2]), float(m[3]), float(m[4]), int(m[5].replace(",", ""))]
    if m[6]:
        v += [float(m[6]), float(m[7]), float(m[8]),
              int(m[9].replace(",", ""))]
    return v


def tables(out):
    return sampcheck_tables(out, ROW, share_row)


def expect(tab, name, periods, total=1000, period_ns=1000000, col=0,
           n_trials=None):
    """Row NAME: PERIODS of TOTAL, its interval over N_TRIALS samples
    (default: variant A's effective count)."""
    row = tab.get(name)
    check(row is not None, f"row {name!r} present")
    if row is None:
        return
    share, lo, hi, ns = row[col:col + 4]
    check_share(name, share, lo, hi, periods, total,
                trials("a") if n_trials is None else n_trials)
    check(ns == periods * period_ns, f"{name}: est. {ns} ns == "
          f"{periods * period_ns} ns")


a = make("a.evp")
b = make("b.evp", "-b")
az = make("az.evp", "-z", "-n", "17")

out = run("summary", "--funcs", "--ns", a).stdout
t = tables(out)
check("sampled trace" in out and "estimate:" in out and "Wilson" in out,
      "header says sampled, estimate: line names the interval")
check(re.search(r"sampled: +955 samples standing for 1,000 timer periods",
                out) is not None, "sampled: line counts samples and periods")
check("3 periods missed" in out, "missed periods shown")
# 955 samples of 1,000 periods, the weights uneven: an effective 835
check(f"over the samples' effective count, {round(trials('a'))}: their "
      "periods weigh unevenly" in out, "estimate: line gives the samples' "
      "effective count")
where = t.get("where", {})
for name, w in [("in the eval loop", 700), ("C call (GIL held)", 100),
                ("no GIL", 100), ("runtime other (frame)", 50),
                ("no Python frame", 50)]:
    expect(where, name, w)
for name, w in [("op", 700), ("dispatch", 200), ("(none reported)", 100)]:
    expect(t.get("loop phases", {}), name, w)
ops = t.get("ops", {})
for name, w in [("BINARY_OP", 200), ("BINARY_OP_ADD_INT", 200),
                ("LOAD_FAST", 200), ("CALL", 200), ("STORE_FAST", 100),
                ("(no opcode)", 100)]:
    expect(ops, name, w)
funcs = t.get("functions", {})
for name, s, i in [("hot (gen.py:10)", 600, 600),
                   ("cold (gen.py:20)", 300, 300),
                   ("work (gen.py:5)", 50, 950), ("main (gen.py:1)", 0, 950)]:
    expect(funcs, name, s)
    expect(funcs, name, i, col=4)

g = tables(run("summary", "--group-specialized", "--ns", a).stdout)
expect(g.get("ops", {}), "BINARY_OP", 400)
check("BINARY_OP_ADD_INT" not in g.get("ops", {}),
      "--group-specialized folds BINARY_OP_ADD_INT")

# --stream 1: the worker alone, 350 periods
w = tables(run("summary", "--funcs", "--ns", "--stream", "1", a).stdout)
# (the worker's categories: cold's three of 100 periods, no frame's 50)
WORKER = trials_of((100, 100, 100, 50))
expect(w.get("functions", {}), "cold (gen.py:20)", 300, total=350,
       n_trials=WORKER)
expect(w.get("where", {}), "no Python frame", 50, total=350,
       n_trials=WORKER)

lines = run("summary", "--lines", a).stdout
# each line's share is of all the 1,000 periods, as a function's is and
# as the flame graph gives it, its interval over the samples' effective
# count; 900 of the periods are on a line
lrow = re.compile(r"^ (\S+)\s+(\S+)\s+([\d.,]+)\s+(\d+\.\d)%\s+"
                  r"(\d+\.\d)-(\d+\.\d)%\s+([\d,]+)\s+(.*)$")
lgot = {m[1]: m for m in map(lrow.match, lines.splitlines()) if m}
for where_, fn, ms, per in [("gen.py:11", "hot", "300.0", 300),
                            ("gen.py:12", "hot", "200.0", 200),
                            ("gen.py:21", "cold", "200.0", 200),
                            ("gen.py:13", "hot", "100.0", 100),
                            ("gen.py:22", "cold", "100.0", 100)]:
    m = lgot.get(where_)
    check(m is not None, f"--lines row {where_}")
    if not m:
        continue
    check(m[2] == fn and m[3] == ms and int(m[7].replace(",", "")) == per,
          f"--lines {where_}: {fn}, {ms} ms, {per} periods: {m.groups()}")
    check_share(f"--lines {where_}", float(m[4]), float(m[5]), float(m[6]),
                per, 1000, trials("a"))
check("of all the 1,000 periods" in lines and "(900 of them on a line)" in
      lines and f"effective count, {round(trials('a'))}" in lines,
      "--lines: the periods, those on a line and the intervals' count said")

check(run("summary", "--funcs", az).stdout.replace(az, a) ==
      run("summary", "--funcs", a).stdout,
      "compressed, smaller chunks: the same summary")

# exact counts (mode A's EVALPROF_COUNTS=1) beside the samples' estimate:
# the count, the estimated time, and their quotient per execution; with
# --group-specialized a specialized form's count joins its base's
# A stock interpreter that exported no eval function: summary says what
# that does to the states, and only then.
noeval = run("summary", make("ae.evp", "-e")).stdout
check(re.search(r"^note: +the interpreter exported no "
                r"_PyEval_EvalFrameDefault .*runtime other \(frame\)",
                noeval, re.M) is not None,
      "summary of a trace with sample.eval_ranges 0 notes it")
check("_PyEval_EvalFrameDefault" not in run("summary", a).stdout,
      "no such note where the eval function was found")

ac = make("ac.evp", "-c")
crow = re.compile(r"^ (\S+)\s+([\d,]+)\s+([\d.]+) ms\s+([\d.]+) ns$")


def counts(out):
    part = out.split("exact counts")[1].split("total:")[0]
    return {m[1]: (int(m[2].replace(",", "")), float(m[3]), float(m[4]))
            for m in map(crow.match, part.splitlines()) if m}


got = counts(run("summary", ac).stdout)
check(got == {"LOAD_FAST": (2000000, 200.0, 100.0),
              "BINARY_OP_ADD_INT": (200000, 200.0, 1000.0),
              "BINARY_OP": (100000, 200.0, 2000.0),
              "STORE_FAST": (5, 100.0, 20000000.0)},
      f"exact counts beside the estimates: {got}")
got = counts(run("summary", "--group-specialized", ac).stdout)
check(got.get("BINARY_OP") == (300000, 400.0, 1333.3) and
      "BINARY_OP_ADD_INT" not in got,
      f"exact counts grouped into their base: {got}")
check("exact counts" not in run("summary", a).stdout,
      "no counts table without counts")


def streams(info):
    """info's sampled streams: id, name, samples, periods, lost (the
    chunks are the writer's own)."""
    part = info.split("sampled streams:")[1].split("metadata:")[0]
    return [ln.split()[:4] + ln.split()[-1:] for ln in part.splitlines()[2:]
            if ln.strip()]


# export --format evp copies the samples: plain and compressed copies
# give the same summary, folded stacks and stream table
for extra in ([], ["--zstd"]):
    cp = os.path.join(TMP, "copy.evp")
    run("export", "--format", "evp", *extra, "-o", cp, a)
    for view in (["summary", "--funcs"], ["export", "--format", "folded",
                                           "--ops"]):
        check(run(*view, cp).stdout.replace(cp, a) ==
              run(*view, a).stdout,
              f"export --format evp {extra}: {view[0]} of the copy is the "
              f"original's")
    check(streams(run("info", cp).stdout) == streams(run("info", a).stdout),
          f"export --format evp {extra}: the copy's streams have the "
          f"original's samples, periods and losses")

# tree lists the samples (the generator's 955) with their stacks, and
# says in one line that the time between them was not traced
r = run("tree", "--no-pager", "--format", "raw", a)
listed = len(re.findall(r"^\d+\.\d{9} \d+ \d+ sample ", r.stdout, re.M))
check(listed == 955 and "what ran between samples was not traced" in r.stdout,
      f"tree of a sampled trace: {listed} samples listed")

exact = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                     "golden", "funcs-nesting", "nesting.trace")
r = run("diff", a, exact, status=1)
check("sampled" in r.stderr and "\n" not in r.stderr.strip(),
      "diff of a sampled and an exact trace refused in one line")

# cut mid-chunk: one warning line saying what was lost, the rest read,
# the end taken from the last sample
cut = os.path.join(TMP, "cut.evp")
with open(a, "rb") as f, open(cut, "wb") as g:
    g.write(f.read()[:6000])
r = run("summary", cut)
err = r.stderr.strip().splitlines()
check(len(err) == 1 and "truncated" in err[0] and "samples of stream" in
      err[0], f"a cut sampled trace: one warning naming the lost samples: "
      f"{err}")
check(re.search(r"sampled: +512 samples standing for 528 timer periods",
                r.stdout) is not None, "a cut trace reads its whole chunks")
check("elapsed:   528,001.0 µs" in r.stdout,
      "without an end record the end is the last sample's")

d = run("diff", "--funcs", a, b).stdout
row = re.compile(r"^ (.+?)\s+(\d+\.\d)%\s+(\d+\.\d)%\s+([+-]\d+\.\d) pp "
                 r"([* ])\s+([+-]\d+\.\d)\s+([\d,.]+ ms|-)\s+([\d,.]+ ms|-)"
                 r"\s+([+-][\d,.]+ ms)$")
seen = {}
part = None
for line in d.splitlines():
    if line.endswith(":") and not line.startswith(" "):
        part = line.split(" (")[0].rstrip(":") + \
            (" incl" if "inclusive" in line else "")
    m = row.match(line)
    if m:
        seen[(part, m[1])] = (float(m[2]), float(m[3]), float(m[4]),
                              m[5] == "*")
for key, want in [(("ops", "BINARY_OP_ADD_INT"), (20.0, 0.0, -20.0, True)),
                  (("ops", "BINARY_OP"), (20.0, 40.0, 20.0, True)),
                  (("ops", "LOAD_FAST"), (20.0, 20.0, 0.0, False)),
                  (("functions", "hot (gen.py:10)"), (60.0, 40.0, -20.0, True)),
                  (("functions", "cold (gen.py:20)"), (30.0, 50.0, 20.0, True)),
                  (("functions", "work (gen.py:5)"), (5.0, 5.0, 0.0, False)),
                  (("functions incl", "main (gen.py:1)"),
                   (95.0, 95.0, 0.0, False))]:
    check(seen.get(key) == want, f"diff {key}: {seen.get(key)} == {want}")
# each run's estimated time of a row (periods x 1 ms) and its change
times = {(m[1]): (m[7], m[8], m[9]) for m in map(row.match, d.splitlines())
         if m}
check(times.get("hot (gen.py:10)") == ("600.0 ms", "400.0 ms", "-200.0 ms"),
      f"diff hot's times: {times.get('hot (gen.py:10)')}")
check(times.get("BINARY_OP_ADD_INT") == ("200.0 ms", "-", "-200.0 ms"),
      f"diff BINARY_OP_ADD_INT's times: {times.get('BINARY_OP_ADD_INT')}")
check("two-proportion z-test" in d, "diff explains its * mark")
# z over each run's effective count (A 835, B 850), not its 1,000 periods
zs = {m[1]: float(m[6]) for m in map(row.match, d.splitlines()) if m}
n1, n2 = trials("a"), trials("b")
pool = (0.2 * n1 + 0.4 * n2) / (n1 + n2)
want_z = 0.2 / (pool * (1 - pool) * (1 / n1 + 1 / n2)) ** 0.5
check(abs(zs.get("BINARY_OP", 0) - want_z) < 0.051,
      f"diff BINARY_OP: z {zs.get('BINARY_OP')} == {want_z:.2f}")

finish("all shares as generated")
