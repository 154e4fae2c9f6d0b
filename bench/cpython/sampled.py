#!/usr/bin/env python3
"""Mode A's sampled run against the same instrumented interpreter untraced.

    sampled.py BUILD [--versions 3.13,3.11] [--reps N] [--scale S]
               [--rates 1000,500,250,10] [--workloads demo,callheavy] [--nop]

For each version and workload (demo: examples/workload/main.py --scale
S; callheavy: bench/modeb/callheavy.py S, recursion, methods, closures),
each configuration runs REPS times, interleaved so that machine noise
(a shared machine) hits all alike:

    off          the instrumented build, not tracing (the baseline)
    sample@R     EVALPROF_MODE=sample at R Hz of CPU time (the first rate
                 of --rates is also run with exact counts); the perf
                 event sends SIGTRAP (sample.sampler says so)
    rt@R         the same at the first rate with EVALPROF_SAMPLE_TIMER=rt:
                 the real-time signal through F_SETSIG, re-armed by each
                 handler (the way under a debugger)
    thread@R     the same with EVALPROF_SAMPLE_TIMER=thread: the
                 recorder's sampler thread reads each running thread's
                 frames from outside it, every period of its CPU time,
                 and interrupts no thread (instrumented interpreters)
    counts@R     the same with EVALPROF_COUNTS=1
    counts@10    exact counts at 10 Hz: the stores' cost nearly alone
    nop@R        (--nop) the first rate's signals, each handled by
                 returning at once (EVALPROF_TEST_SAMPLE_NOP=1): no
                 sample, no clock read, no writer work but its rounds.
                 nop@R less sample@10 is what the signals themselves cost
                 the thread (their delivery, and what it evicts from the
                 caches and predictors); sample@R less nop@R is
                 evalprof's work for each (handler, walk, writer)
    irq@R        (--nop) the first rate's perf event overflowing with no
                 signal sent (EVALPROF_TEST_SAMPLE_NOP=2): its timer
                 interrupts alone; nop@R less irq@R is the signal's
                 delivery and return
    peek@R       (--nop) no timer and no signal: the recorder's sampler
                 thread wakes at the first rate and reads each thread's
                 CPU clock (EVALPROF_TEST_SAMPLE_NOP=3), the floor of a
                 sampler that would read threads without interrupting
                 them

Each run's time is the child's CPU time (user + system, from wait4; the
two are also printed apart: a signal's delivery is system time, or
time the VM's host takes, charged to whichever the interrupt hit), and
the medians are printed with their ratios to off, and the median of
each run's ratio to the off run of its own round (paired: a load that
drifts over the rounds cancels), the fastest run's time against the
fastest off run's (this VM slows whole runs at random, by up to 2x,
and never speeds one up: the fastest runs are the least disturbed), and
the samples that a
10 s run would hold at each rate with the 95% interval's half-width of
a share of 50% and of 20% (Wilson, in points).  Targets: sample at the
default rate at most 1.03x, counts at most 1.3x.  Nothing here fails on
time.

    sampled.py BUILD --instructions [--scale S] ...

counts instructions instead, under Valgrind's callgrind (a figure no
load moves): each workload's instructions (a run's less those of
`python -c pass` in the same configuration: start-up and the recorder's
own start and stop left out) off, sampled at 10 Hz and with counts at
10 Hz (the hooks' stores nearly alone; the sampler's signals at 10 Hz
are a few), and within them the eval function's own (the
untraced copy's _PyEval_EvalFrameDefault against the sampled copy's
evp_eval_frame_sampled, or with counts the counted copy's
evp_eval_frame_counted, recursion included); and the misses of a
simulated L1 instruction cache of this machine's geometry (32 KiB,
8-way, 64-byte lines), whole run and eval function.  On call-heavy the
loop's hot code is near that cache's size, so that which of its lines
share a set, a matter of the whole binary's layout that any change to
the hooks draws again, decides the sampled copy's time more than its
instructions do: a copy with 0.7% fewer instructions than another ran
1.07-1.15x against 1.02-1.03x, its runs missing 2.9 million times
against 0.24 million, start-up included (README, "Sampled mode").
These columns show the draw of a build with no noise; time it with
--forked.  (A script's start-up is not quite `-c pass`'s, so that a
column with next to nothing of its own, such as the untraced eval
function's misses, can read a little below 0.)  Under Valgrind the CPU
clock signals through F_SETSIG (SIGTRAP would end Valgrind).  The
default scale there is 0.05 (callgrind runs some 50 times slower).

    sampled.py BUILD --forked [--forks K] [--pairs N] [--scale S] ...

measures in CPU time without the machine's noise between processes:
for each configuration, one process of the instrumented interpreter in
that mode runs bench/cpython/forked.py, which forks an untraced child
and runs chunks of the workload in turn with it (N pairs, the order
swapped in each); both run their chunks on one CPU (the last this
process may use, or EVP_BENCH_CPU), where forked.py pins its main
thread; with EVP_BENCH_APART=1 the recorder's threads (writer, sampler
thread) are kept off that CPU.  The configurations: off (the parent
untraced too: the method's own error, which should be 1.000x), sample
at each rate of --rates (the first is the default's target) and at 10
Hz (the sampled copy of the eval function nearly alone), with exact
counts at the first rate, and thread@R, the sampler thread (--rows
picks rows by name).

Each fork has a speed of its own against its child, which lasts the
whole fork (A/A, both untraced: a fork's median from 0.963x to 1.031x
on stock 3.13.0's callheavy, its pairs within a point of it), so one
fork's pairs, however many, measure that fork.  Each configuration
therefore runs as K forks of N pairs, the configurations in turn (one
fork each a round, the order rotated from round to round), and its row
gives the mean of its forks' medians with the 95% interval of that mean
(Student's t over the K forks), the range of the forks' medians, the
chunks' median CPU times, and the mean against the off row's.  The off
row is not 1.000x: on call-heavy the parent ran some 2% faster than
its child with neither traced (3.13, 8 forks: 0.980x ±0.012; perhaps
its pages, which are those it had before the fork, where the child's
are copies), and a row against off divides that out.  Each row also
gives its main thread's own CPU time against off's ("main thread"): the
program's thread alone, which a signal interrupts, and which the
recorder's writer and, with thread@R, its sampler thread do not (they
run beside it, on another CPU when one is free; the process's figure
counts their CPU too).

--stock PY[,PY] measures stock interpreters alike (no counts), sampled
through evalprof.start().  The default scale there is 0.15 (a chunk of
some 0.2 s).
"""
import re
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEMO = os.path.join(TOP, "examples", "workload", "main.py")
CALLHEAVY = os.path.join(TOP, "bench", "modeb", "callheavy.py")
FORKED = os.path.join(TOP, "bench", "cpython", "forked.py")


def workload_argv(name, scale):
    if name == "demo":
        return [DEMO, "--scale", str(scale), "--no-times"]
    if name == "callheavy":
        return [CALLHEAVY, str(scale)]
    raise SystemExit("unknown workload %r (demo, callheavy)" % name)


def cpu_time(argv, env):
    """The child's (user, system) CPU time in seconds (it must exit 0)."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(argv, env=env, stdout=null, stderr=null)
        _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit("%s exited %d" % (" ".join(argv), p.returncode))
    return ru.ru_utime, ru.ru_stime


def half_width(p, n, z=1.96):
    """The 95% Wilson interval's half-width of share P over N, points."""
    d = 1 + z * z / n
    return 100 * z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d


# --nop's rows at the first rate and their EVALPROF_TEST_SAMPLE_NOP
NOP_ROWS = (("nop", "1"), ("irq", "2"), ("peek", "3"))


def nop_names(rates):
    return tuple("%s@%d" % (n, rates[0]) for n, _ in NOP_ROWS)


def configs_for(tmp, rates, nop=False):
    # one string hash seed for every run: with a random one the demo's
    # dicts collide differently from run to run, and its instruction
    # count under callgrind moved by 3%
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("EVALPROF")}
    base["PYTHONHASHSEED"] = "0"
    out = [("off", dict(base))]
    for r in rates:
        e = dict(base, EVALPROF=os.path.join(tmp, "s.evp"),
                 EVALPROF_MODE="sample", EVALPROF_SAMPLE_RATE=str(r))
        out.append(("sample@%d" % r, e))
    out.append(("rt@%d" % rates[0],
                dict(out[1][1], EVALPROF_SAMPLE_TIMER="rt")))
    out.append(("thread@%d" % rates[0],
                dict(out[1][1], EVALPROF_SAMPLE_TIMER="thread")))
    if nop:
        for n, v in NOP_ROWS:
            out.append(("%s@%d" % (n, rates[0]),
                        dict(out[1][1], EVALPROF_TEST_SAMPLE_NOP=v)))
    for r in sorted({rates[0], 10}, reverse=True):
        e = dict(base, EVALPROF=os.path.join(tmp, "s.evp"),
                 EVALPROF_MODE="sample", EVALPROF_SAMPLE_RATE=str(r),
                 EVALPROF_COUNTS="1")
        out.append(("counts@%d" % r, e))
    return out


def bench_version(build, ver, reps, scale, rates, tmp, workload, nop):
    py = os.path.join(build, "cpython", ver, "evalprof", "python")
    if not os.access(py, os.X_OK):
        print("CPython %s: skipped: %s is missing" % (ver, py))
        return
    configs = configs_for(tmp, rates, nop)
    argv = [py] + workload_argv(workload, scale)
    times = {name: [] for name, _ in configs}
    user = {name: [] for name, _ in configs}
    system = {name: [] for name, _ in configs}
    for _ in range(reps):
        for name, env in configs:
            u, k = cpu_time(argv, env)
            times[name].append(u + k)
            user[name].append(u)
            system[name].append(k)
            path = env.get("EVALPROF")
            if path and os.path.exists(path):
                os.unlink(path)
    off = statistics.median(times["off"])
    print("CPython %s (instrumented), %s at scale %s: CPU time, medians "
          "of %d interleaved runs, ratio to off [min - max], and the "
          "medians of user and system time" % (ver, workload, scale, reps))
    print("  %-11s %8s     %7s  %8s  %7s  %s" % (
        "", "median", "ratio", "paired", "fastest",
        "[min - max] of the paired ratios"))
    fastest = min(times["off"])
    for name, _ in configs:
        med = statistics.median(times[name])
        # each run against the off run of its own round: drift cancels
        pr = [t / o for t, o in zip(times[name], times["off"])]
        lo, hi = min(pr), max(pr)
        # the fastest run against the fastest off run: a shared VM slows
        # runs at random, by up to 2x, and never speeds one up
        print("  %-11s %8.1f ms  %6.3fx  %6.3fx  %6.3fx   [%.3f - %.3f]   "
              "user %7.1f  sys %5.1f ms" % (
                  name, med * 1e3, med / off, statistics.median(pr),
                  min(times[name]) / fastest, lo, hi,
                  statistics.median(user[name]) * 1e3,
                  statistics.median(system[name]) * 1e3))
    print()


# The caches callgrind simulates: this machine's EPYC L1 instruction cache
# (32 KiB, 8-way, 64-byte lines), given whole so that valgrind does not
# guess the others from CPUID (it warns on this VM's).
CACHES = ["--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64",
          "--LL=8388608,16,64"]


def callgrind(argv, env, tmp):
    """Instructions and simulated L1 instruction-cache misses of ARGV under
    callgrind: (instructions, in the eval function, misses, in the eval
    function)."""
    out = os.path.join(tmp, "cg.out")
    # one hash seed: the start-up subtracted runs the same code each time
    env = dict(env, PYTHONHASHSEED="0")
    with open(os.devnull, "wb") as null:
        p = subprocess.run(["valgrind", "--tool=callgrind", "-q"] + CACHES +
                           ["--callgrind-out-file=" + out] + argv, env=env,
                           stdout=null, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise SystemExit("valgrind %s exited %d: %s" % (
            " ".join(argv), p.returncode, p.stderr.decode()[-400:]))
    # self cost by file:function (inlined code apart, by its file)
    ann = subprocess.run(["callgrind_annotate", "--inclusive=no",
                          "--auto=no", "--threshold=100", "--show=Ir,I1mr",
                          out], capture_output=True, text=True,
                         check=True).stdout
    os.unlink(out)
    return annotated(ann)


def annotated(ann):
    """From callgrind_annotate's self costs by file:function in columns Ir
    and I1mr: (instructions, in the eval function, I1 misses, in the eval
    function)."""
    total, in_eval, miss, miss_eval = None, 0, 0, 0
    pct = r"(?:\([^)]*\)\s+)?"
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+)\s+" + pct + r"([\d,]+)\s+" + pct + "(.*)",
                     line)
        if not m or "=>" in line:
            continue
        n = int(m.group(1).replace(",", ""))
        k = int(m.group(2).replace(",", ""))
        what = m.group(3)
        if "PROGRAM TOTALS" in what:
            total, miss = n, k
        elif re.search(r":(_PyEval_EvalFrameDefault|"
                       r"evp_eval_frame_(?:sampled|counted))"
                       r"(\.cold)?('\d+)? ", what + " "):
            in_eval += n
            miss_eval += k
    if total is None:
        raise SystemExit("callgrind_annotate printed no totals")
    return total, in_eval, miss, miss_eval


def instructions_version(build, ver, scale, tmp, workload):
    py = os.path.join(build, "cpython", ver, "evalprof", "python")
    if not os.access(py, os.X_OK):
        print("CPython %s: skipped: %s is missing" % (ver, py))
        return
    configs = [(n, e) for n, e in configs_for(tmp, [10])
               if n in ("off", "sample@10", "counts@10")]
    rows = []
    for name, env in configs:
        run = callgrind([py] + workload_argv(workload, scale), env, tmp)
        empty = callgrind([py, "-c", "pass"], env, tmp)
        rows.append((name,) + tuple(a - b for a, b in zip(run, empty)))
    print("CPython %s (instrumented), %s at scale %s: instructions and "
          "simulated misses of a 32 KiB 8-way L1 instruction cache "
          "(callgrind), less those of python -c pass" % (
              ver, workload, scale))
    print("  %-11s %14s  %7s  %14s  %7s  %11s  %7s  %11s" % (
        "", "workload", "ratio", "eval function", "ratio", "I1 misses",
        "ratio", "in eval fn"))
    off = rows[0]

    def ratio(a, b):
        return a / b if b else 0.0
    for name, t, ev, mi, mev in rows:
        print("  %-11s %14d  %6.3fx  %14d  %6.3fx  %11d  %6.2fx  %11d" % (
            name, t, ratio(t, off[1]), ev, ratio(ev, off[2]), mi,
            ratio(mi, off[3]), mev))
    print()


def bench_cpu():
    """The CPU a forked pair runs on: EVP_BENCH_CPU, else the last this
    process may use."""
    want = os.environ.get("EVP_BENCH_CPU")
    allowed = sorted(os.sched_getaffinity(0))
    if want is None:
        return allowed[-1]
    if not want.isdigit() or int(want) not in allowed:
        raise SystemExit("sampled.py: EVP_BENCH_CPU=%s is not one of this "
                         "process's CPUs (%s)" % (
                             want, ",".join(map(str, allowed))))
    return int(want)


# Student's t at 97.5% for 1..30 degrees of freedom (then 1.96 does)
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
        2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
        2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
        2.048, 2.045, 2.042)


def forks_summary(medians):
    """The mean of the forks' medians and its 95% interval's half-width
    (Student's t over the forks: each fork has an offset of its own, so
    the forks, not the pairs, are the independent draws)."""
    mean = statistics.fmean(medians)
    if len(medians) < 2:
        return mean, float("nan")
    t = T975[len(medians) - 2] if len(medians) - 1 <= len(T975) else 1.96
    return mean, t * statistics.stdev(medians) / math.sqrt(len(medians))


def forked_run(py, env, workload, scale, pairs, cpu):
    """One fork: forked.py's JSON, or the one-line reason it did not run."""
    argv = [py, FORKED, workload, str(scale), str(pairs), str(cpu)]
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    path = env.get("EVALPROF")
    if path and os.path.exists(path):
        os.unlink(path)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or
                      ["exit %d" % p.returncode])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def forked_rows(py, label, configs, forks, pairs, scale, workload, cpu):
    """Run forked.py FORKS times per configuration, the configurations
    in turn (a round each, its order rotated from round to round), and
    print a row per configuration."""
    print("%s, %s at scale %s: the parent's chunks against its untraced "
          "forked child's, %d forks of %d pairs each on CPU %d, the "
          "configurations in turn: the mean of the forks' medians of the "
          "pairs' ratios with its 95%% interval, the forks' medians' range, "
          "the chunks' median CPU time, the mean against off's, and the "
          "same of the main thread's own CPU time (the program's thread: "
          "not the recorder's writer or sampler thread, which run beside "
          "it)" % (
              label, workload, scale, forks, pairs, cpu))
    got = {name: [] for name, _ in configs}
    failed = {}
    for r in range(forks):
        k = r % len(configs)
        for name, env in configs[k:] + configs[:k]:
            if name in failed:
                continue
            d, why = forked_run(py, env, workload, scale, pairs, cpu)
            if d is None:
                failed[name] = why
            else:
                got[name].append(d)
    off = off_thread = None
    for name, _ in configs:
        if name in failed:
            print("  %-11s did not run: %s" % (name, failed[name]))
            continue
        medians = [statistics.median(a / b for a, b in
                                     zip(d["parent"], d["child"]))
                   for d in got[name]]
        mean, hw = forks_summary(medians)
        # the main thread's own CPU (a forked.py of before has none)
        thread = None
        if all("parent_thread" in d for d in got[name]):
            thread = forks_summary([
                statistics.median(a / b for a, b in
                                  zip(d["parent_thread"], d["child_thread"]))
                for d in got[name]])
        child = [t for d in got[name] for t in d["child"]]
        parent = [t for d in got[name] for t in d["parent"]]
        line = "  %-11s %6.3fx ±%s  forks %.3f - %.3f   child %7.1f ms  " \
            "parent %7.1f ms" % (
                name, mean, fmt_hw(hw), min(medians), max(medians),
                statistics.median(child) / 1e6,
                statistics.median(parent) / 1e6)
        if name == "off":
            off = (mean, hw)
            off_thread = thread
        elif off is not None:
            r, rhw = against_off((mean, hw), off)
            line += "   against off %6.3fx ±%s" % (r, fmt_hw(rhw))
            if thread is not None and off_thread is not None:
                r, rhw = against_off(thread, off_thread)
                line += "   main thread %6.3fx ±%s" % (r, fmt_hw(rhw))
        print(line)
    print()


def fmt_hw(hw):
    return "%.3f" % hw if hw == hw else "  -  "


def against_off(row, off):
    """A row's mean over the off row's (the two processes' own
    difference, untraced, measured over as many forks), with the
    interval of that ratio (the two intervals' relative half-widths
    added in quadrature)."""
    r = row[0] / off[0]
    return r, r * math.hypot(row[1] / row[0], off[1] / off[0])


def picked(name, keep, rows):
    """Whether row NAME of a --forked run is run: one of KEEP, and of
    --rows where it names any (off always)."""
    return name in keep and (not rows or name == "off" or name in rows)


def forked_version(build, ver, forks, pairs, scale, rates, tmp, workload,
                   cpu, nop, rows=None):
    py = os.path.join(build, "cpython", ver, "evalprof", "python")
    if not os.access(py, os.X_OK):
        print("CPython %s: skipped: %s is missing" % (ver, py))
        return
    keep = ("off", "counts@%d" % rates[0], "thread@%d" % rates[0]) + \
        nop_names(rates) + tuple("sample@%d" % r for r in rates)
    forked_rows(py, "CPython %s (instrumented)" % ver,
                [(n, e) for n, e in configs_for(tmp, rates, nop)
                 if picked(n, keep, rows)],
                forks, pairs, scale, workload, cpu)


def forked_stock(build, py, forks, pairs, scale, rates, tmp, workload,
                 cpu, nop, rows=None):
    """The same rows for a stock interpreter, sampled through the API
    (no exact counts there)."""
    if not os.access(py, os.X_OK):
        print("%s: skipped: not an executable" % py)
        return
    out = subprocess.run([py, "-c", "import sys; print(sys.version.split()"
                          "[0])"], capture_output=True, text=True)
    keep = ("off",) + nop_names(rates) + tuple(
        "sample@%d" % r for r in rates)
    configs = []
    for n, e in configs_for(tmp, rates, nop):
        if picked(n, keep, rows):
            e = dict(e, PYTHONPATH=os.path.join(build, "python"))
            configs.append((n, e))
    forked_rows(py, "CPython %s (stock, %s)" % (out.stdout.strip() or "?",
                                                 py),
                configs, forks, pairs, scale, workload, cpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--versions", default="3.13,3.11")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--scale", default="0.3")
    ap.add_argument("--rates", default="1000,500,250,10")
    ap.add_argument("--workloads", default="demo,callheavy")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions under callgrind instead")
    ap.add_argument("--forked", action="store_true",
                    help="pair chunks with an untraced forked child instead")
    ap.add_argument("--pairs", type=int, default=11,
                    help="with --forked: pairs of chunks a fork")
    ap.add_argument("--forks", type=int, default=8,
                    help="with --forked: forks a configuration")
    ap.add_argument("--stock", default="",
                    help="with --forked: stock interpreters (comma-"
                    "separated paths) measured alike, through the API")
    ap.add_argument("--nop", action="store_true",
                    help="also the first rate's nop@R, irq@R and peek@R "
                    "rows (EVALPROF_TEST_SAMPLE_NOP=1, 2, 3)")
    ap.add_argument("--rows", default="",
                    help="with --forked: only these rows (comma-separated "
                    "names, such as sample@1000,thread@1000; off always)")
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    build = os.path.abspath(args.build)
    if args.instructions:
        if not shutil.which("valgrind"):
            raise SystemExit("sampled.py: --instructions needs valgrind")
        scale = args.scale if "--scale" in sys.argv else "0.05"
        with tempfile.TemporaryDirectory(prefix="evp-bench-cg-") as tmp:
            for ver in args.versions.split(","):
                for w in args.workloads.split(","):
                    instructions_version(build, ver, scale, tmp, w)
        return 0
    if args.forked:
        scale = args.scale if "--scale" in sys.argv else "0.15"
        cpu = bench_cpu()
        rates += [10] * (10 not in rates)  # the sampled copy nearly alone
        rows = set(filter(None, args.rows.split(",")))
        with tempfile.TemporaryDirectory(prefix="evp-bench-forked-") as tmp:
            for ver in args.versions.split(","):
                for w in args.workloads.split(","):
                    forked_version(build, ver, args.forks, args.pairs,
                                   scale, rates, tmp, w, cpu, args.nop, rows)
            for py in filter(None, args.stock.split(",")):
                for w in args.workloads.split(","):
                    forked_stock(build, py, args.forks, args.pairs, scale,
                                 rates, tmp, w, cpu, args.nop, rows)
        return 0
    with tempfile.TemporaryDirectory(prefix="evp-bench-sampled-") as tmp:
        for ver in args.versions.split(","):
            for w in args.workloads.split(","):
                bench_version(build, ver, args.reps, args.scale, rates, tmp,
                              w, args.nop)
    print("a 10 s run of one thread: samples, and a share's 95% interval "
          "(half-width, points)")
    for r in rates:
        n = 10 * r
        print("  %6d Hz %7d samples   50%%: %4.2f   20%%: %4.2f   5%%: %4.2f"
              % (r, n, half_width(0.5, n), half_width(0.2, n),
                 half_width(0.05, n)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
