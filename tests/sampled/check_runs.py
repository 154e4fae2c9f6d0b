#!/usr/bin/env python3
"""summary of several sampled runs pools them as the generator says.

    check_runs.py EVALPROF MKSAMPLED TMPDIR

mksampled writes runs whose periods are known (sampgen.h; they are
restated here, not read from evalprof).  This checks, for `summary` of
several sampled traces: one trace given twice has the shares of one and
twice its periods and samples, its est. times unchanged with an empty
range; variants A and B pool to the summed periods, the shares of all
2,000 periods with their Wilson intervals computed here, est. times as
median [min - max] of each run's; functions under two checkouts (their
root.script) match as one row; runs at different rates or clocks get
their note and are pooled by periods; exact counts are summed over the
runs that counted; --lines and --stream pool too; and the refusals: a
mix of sampled and exact traces and a cut trace among the runs, one
line naming the file, exit 1, nothing printed.
"""
import os
import re

from sampcheck import TMP, check, check_share, finish, make, run, wilson
from sampcheck import trials, trials_of
from sampcheck import tables as sampcheck_tables

MS = 1000000  # variant A's and B's period, ns


def num(s):
    return int(s.replace(",", ""))


GROUP = (r"\s+([\d,]+)\s+(\d+\.\d)%\s+(\d+\.\d)-(\d+\.\d)%\s+([\d,]+) ns"
         r"\s+\[([\d,]+) - ([\d,]+)\]")
ROW = re.compile(rf"^ (.+?){GROUP}(?:{GROUP})?$")


def runs_row(m):
    """[(periods, share, lo, hi, median, min, max)] of a ROW match, and
    the inclusive group's after it"""
    cols = [m.groups()[1 + 7 * g:8 + 7 * g] for g in (0, 1)]
    return [(num(c[0]), float(c[1]), float(c[2]), float(c[3]), num(c[4]),
             num(c[5]), num(c[6])) for c in cols if c[0] is not None]


def tables(out):
    return sampcheck_tables(out, ROW, runs_row)


def expect(tab, name, per_run, total, period_ns=(MS, MS), col=0,
           n_trials=None):
    """Row NAME: its periods in each run PER_RUN, of TOTAL pooled, its
    interval over N_TRIALS samples (default TOTAL)."""
    row = tab.get(name)
    check(row is not None and len(row) > col, f"row {name!r} present")
    if row is None or len(row) <= col:
        return
    periods, share, lo, hi, med, mn, mx = row[col]
    k = sum(per_run)
    check(periods == k, f"{name}: periods {periods} == {k}")
    check_share(name, share, lo, hi, k, total, n_trials)
    ns = sorted(w * p for w, p in zip(per_run, period_ns))
    n = len(ns)
    want = ns[n // 2] if n % 2 else (ns[n // 2 - 1] + ns[n // 2]) // 2
    check((med, mn, mx) == (want, ns[0], ns[-1]),
          f"{name}: est. {med} [{mn} - {mx}] == {want} [{ns[0]} - {ns[-1]}]")


# The generator's periods (sampgen.h), variant A and variant B.
WHERE = {"in the eval loop": (700, 700), "C call (GIL held)": (100, 100),
         "no GIL": (100, 100), "runtime other (frame)": (50, 50),
         "no Python frame": (50, 50)}
PHASES = {"op": (700, 700), "dispatch": (200, 200),
          "(none reported)": (100, 100)}
OPS = {"BINARY_OP": (100 + 100, 100 + 300), "BINARY_OP_ADD_INT": (200, 0),
       "LOAD_FAST": (200, 200), "CALL": (200, 200),
       "STORE_FAST": (100, 100), "(no opcode)": (100, 100)}
SELF = {"hot": (600, 400), "cold": (300, 500), "work": (50, 50),
        "main": (0, 0)}
INCL = {"hot": (600, 400), "cold": (300, 500), "work": (950, 950),
        "main": (950, 950)}
LINE = {"hot": 10, "cold": 20, "work": 5, "main": 1}

a = make("a.evp")
b = make("b.evp", "-b")
w = make("w.evp", "-w")
ac = make("ac.evp", "-c")
r1 = make("r1.evp", "-r", "/srv/one/app")
r2 = make("r2.evp", "-b", "-r", "/srv/two/app")


def pooled(paths, variants, period_ns, func_file="gen.py"):
    out = run("summary", "--funcs", "--ns", *paths).stdout
    t = tables(out)
    total = 1000 * len(paths)
    n_trials = trials(*("ab"[v] for v in variants))

    def per(by):
        return tuple(by[v] for v in variants)

    for part, rows in (("where", WHERE), ("loop phases", PHASES),
                       ("ops", OPS)):
        for name, by in rows.items():
            expect(t.get(part, {}), name, per(by), total,
                   period_ns, n_trials=n_trials)
    funcs = t.get("functions", {})
    check(len(funcs) == 4, f"{paths}: four function rows: {sorted(funcs)}")
    for f in SELF:
        name = f"{f} ({func_file}:{LINE[f]})"
        expect(funcs, name, per(SELF[f]), total, period_ns,
               n_trials=n_trials)
        expect(funcs, name, per(INCL[f]), total, period_ns,
               col=1, n_trials=n_trials)
    return out


# one trace twice: the shares of one, twice the periods and samples, the
# est. times of one with an empty range
once = run("summary", "--funcs", "--ns", a).stdout
twice = pooled([a, a], (0, 0), (MS, MS))
share_of = re.compile(r"^ (.+?)\s+(?:[\d,]+\s+)?(\d+\.\d%)\s", re.M)
check(share_of.findall(twice) == share_of.findall(once),
      "a trace given twice: the same shares in the same order as once")
check("1,910 samples standing for 2,000 timer periods in 2 runs" in twice,
      "a trace given twice: samples and periods doubled")
check("6 periods missed" in twice, "missed periods summed")
check("pooled over the 2 runs' 2,000 timer periods (1,910 samples)" in twice
      and "sampling error only" in twice,
      "the estimate: line says what is pooled and what the interval covers")
check("note:" not in twice, "one rate: no note")
check("2 sampled runs: periods summed, shares pooled" in twice,
      "the mode line says how runs are combined")

# variants A and B pooled
pooled([a, b], (0, 1), (MS, MS))
# three runs: the median is the middle run's
pooled([a, b, b], (0, 1, 1), (MS, MS, MS))

# two checkouts of one program: functions matched by their module-
# relative key, named as the first run names them
pooled([r1, r2], (0, 1), (MS, MS), func_file="/srv/one/app/gen.py")

# different rates and clocks: a note, periods pooled, each run's est.
# time its own periods x its period
out = pooled([a, w], (0, 0), (MS, 250000))
note = [ln for ln in out.splitlines() if ln.startswith("note:")]
check(len(note) == 1 and "1000 Hz of CPU time" in note[0] and
      "4000 Hz of wall clock" in note[0] and
      "weight each run by its timer periods" in note[0] and
      "wall-clock" in note[0],
      f"different rates and clocks: one note naming them: {note}")
check("est. time: 625,000,000 ns [250,000,000 - 1,000,000,000] per run"
      in out, "est. time per run: median and range of 1 s and 250 ms")

# exact counts summed over the runs that counted
crow = re.compile(r"^ (\S+)\s+([\d,]+)\s+([\d.]+) ms\s+([\d.]+) ns$")


def counts(out):
    part = out.split("exact counts")[1].split("total:")[0]
    return {m[1]: (num(m[2]), float(m[3]), float(m[4]))
            for m in map(crow.match, part.splitlines()) if m}


ONE = {"LOAD_FAST": (2000000, 200.0), "BINARY_OP_ADD_INT": (200000, 200.0),
       "BINARY_OP": (100000, 200.0), "STORE_FAST": (5, 100.0)}
for runs, counted in [((ac, ac), 2), ((ac, b), 1)]:
    out = run("summary", *runs).stdout
    want = {k: (c * counted, ms * counted, round(ms * 1e6 / c, 1))
            for k, (c, ms) in ONE.items()}
    check(counts(out) == want,
          f"counts of {counted} run(s) of 2 summed, and the estimates of "
          f"those runs: {counts(out)} == {want}")
    check(f"the {counted} of 2 runs that counted" in out,
          f"{counted} counted run(s) of 2 said")
check("exact counts" not in run("summary", a, b).stdout,
      "no counts table when no run counted")

# --stream 1 (the worker) of each run: 350 periods of A, 550 of B
t = tables(run("summary", "--funcs", "--ns", "--stream", "1", a, b).stdout)
# (the worker's categories: cold's of 100, 100 and 100 periods in A, 300,
# 100 and 100 in B, and no frame's 50 in each)
WORKER = trials_of((100, 100, 100, 50, 300, 100, 100, 50))
expect(t.get("functions", {}), "cold (gen.py:20)", (300, 500), 900,
       n_trials=WORKER)
expect(t.get("where", {}), "no Python frame", (50, 50), 900,
       n_trials=WORKER)

# --lines: lines matched by function and line, their periods shares of
# all the runs' periods pooled (1,000 a run, 900 of them on a line)
lrow = re.compile(r"^ (\S+)\s+(\S+)\s+([\d,]+)\s+(\d+\.\d)%\s+"
                  r"(\d+\.\d)-(\d+\.\d)%\s+([\d.,]+)\s+\[([\d.,]+) - "
                  r"([\d.,]+)\]\s+(.*)$")
out = run("summary", "--lines", a, b).stdout
got = {m[1]: m for m in map(lrow.match, out.splitlines()) if m}
for where_, fn, per, top in [
        ("gen.py:11", "hot", (300, 100), "BINARY_OP_ADD_INT 50%"),
        ("gen.py:12", "hot", (200, 200), "LOAD_FAST 100%"),
        ("gen.py:13", "hot", (100, 100), "CALL 100%"),
        ("gen.py:21", "cold", (200, 400), "BINARY_OP 67%"),
        ("gen.py:22", "cold", (100, 100), "CALL 100%")]:
    m = got.get(where_)
    check(m is not None, f"--lines row {where_}")
    if not m:
        continue
    k = sum(per)
    lo, hi = wilson(k, 2000, trials("a", "b"))
    check(m[2] == fn and num(m[3]) == k and
          abs(float(m[4]) - 100 * k / 2000) < 0.05 and
          abs(float(m[5]) - 100 * lo) < 0.051 and
          abs(float(m[6]) - 100 * hi) < 0.051,
          f"--lines {where_}: {m.groups()[:6]} == {fn}, {k} periods, "
          f"{100 * k / 2000:.1f}% of 2,000")
    check(float(m[7]) == sum(per) / 2 and float(m[8]) == min(per) and
          float(m[9]) == max(per) and top in m[10],
          f"--lines {where_}: est. {m[7]} [{m[8]} - {m[9]}] ms, {m[10]}")
check("total: 5 lines" in out and "2 runs' 2,000 timer periods," in out and
      "(1,800 of them on a line)" in out,
      "--lines: five lines, the pooled periods and those on a line said")

# the refusals: one line naming the odd file, exit 1, nothing printed
exact = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                     "golden", "funcs-nesting", "nesting.trace")
for args, odd in [([a, b, exact], exact), ([exact, a], a)]:
    r = run("summary", *args, status=1)
    err = r.stderr.strip()
    check("\n" not in err and err.startswith(f"evalprof: summary: {odd} ")
          and "all sampled or all exact" in err and r.stdout == "",
          f"a mix of sampled and exact refused naming {odd}: {err!r}")
r = run("summary", "--lines", exact, exact, status=1)
check("\n" not in r.stderr.strip() and "sampled" in r.stderr,
      f"--lines of several exact runs refused in one line: {r.stderr!r}")

cut = os.path.join(TMP, "cut.evp")
with open(a, "rb") as f, open(cut, "wb") as g:
    g.write(f.read()[:6000])
bad = os.path.join(TMP, "bad.evp")
with open(a, "rb") as f:
    data = bytearray(f.read())
data[3000] ^= 0xff  # a byte inside a samples chunk: its checksum fails
with open(bad, "wb") as g:
    g.write(data)
for damaged in (cut, bad):
    r = run("summary", "--funcs", a, damaged, b, status=1)
    err = r.stderr.strip()
    check("\n" not in err and err.startswith(f"evalprof: {damaged}: ") and
          "read whole" in err and r.stdout == "",
          f"a damaged run among several refused in one line: {err!r}")
    # alone it is read around the damage, with warnings
    r = run("summary", damaged)
    check(r.stderr.startswith(f"evalprof: {damaged}: ") and
          "sampled:" in r.stdout,
          f"the damaged run alone is summarised with warnings: {r.stderr!r}")

finish("several sampled runs pooled as generated")
