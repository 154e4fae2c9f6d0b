#!/usr/bin/env python3
"""Benchmark evalprof's instrumented CPython against its plain baseline.

    bench.py BUILD [--versions 3.13,3.11] [--reps N] [--scale N]

For each version, every workload (workloads.py) runs REPS times in each of
four configurations, interleaved so that machine noise hits all alike:

    plain    the baseline build of the same source
    off      the instrumented build, not tracing
    op       the instrumented build, EVALPROF_EVENTS=op
    all      the instrumented build, every event
    sample   the instrumented build, EVALPROF_MODE=sample (the default
             rate, 1 kHz of CPU time)
    counts   the same with EVALPROF_COUNTS=1 (exact per-opcode counts)

and the medians are printed with their ratios to plain (targets: off at
most 1.03x, op at most 3.5x, all at most 6x), and sample's and counts'
to off, the same interpreter untraced (targets: sample at most 1.03x,
counts at most 1.3x).  Also: machine instructions
executed with tracing off (callgrind, exact), the code size of the eval
function (plain; the instrumented build's untraced and traced copies),
the cost per event ((all - off) / events), the trace's bytes per event
and MB/s, and the shares of init, runtime other, Python frames and
finalisation in a traced `python -c pass`.  Nothing here fails on time.
"""
import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["fib", "loops", "objects", "strings", "generators"]
CONFIGS = ["plain", "off", "op", "all", "sample", "counts"]
TARGETS = {"off": 1.03, "op": 3.5, "all": 6.0}
SAMPLE_TARGETS = {"sample": 1.03, "counts": 1.3}  # against off


def run(py, workload, scale, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALPROF")}
    env.update(env_extra)
    out = subprocess.run([py, os.path.join(HERE, "workloads.py"), workload,
                          str(scale)], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.split()[-1])


def trace_events(evalprof, path):
    out = subprocess.run([evalprof, "info", path], capture_output=True,
                         text=True)
    m = re.search(r"^events:\s+([\d,]+)", out.stdout, re.M)
    return int(m.group(1).replace(",", "")) if m else 0


def instructions(py, workload, scale):
    """Machine instructions the whole process executes (callgrind: exact
    and repeatable, whatever else the machine does), or None."""
    vg = shutil.which("valgrind")
    if not vg:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALPROF")}
    out = subprocess.run([vg, "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          py, os.path.join(HERE, "workloads.py"), workload,
                          str(scale)], env=env, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", out.stderr)
    return int(m.group(1)) if m else None


def symbol_sizes(py):
    """{symbol: bytes} of the eval function's parts in PY (nm), or {}."""
    nm = shutil.which("nm")
    if not nm:
        return {}
    out = subprocess.run([nm, "-S", py], capture_output=True, text=True)
    sizes = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3].split(".")[0] in (
                "_PyEval_EvalFrameDefault", "evp_eval_frame_traced"):
            sizes[f[3]] = int(f[1], 16)
    return sizes


def code_sizes(plain, evp):
    """The eval function's machine code: plain, the untraced and the
    traced copy (hot part + .cold part), and the whole .text."""
    a, b = symbol_sizes(plain), symbol_sizes(evp)
    if not a or not b:
        return
    def part(sizes, name):
        return sizes.get(name, 0), sizes.get(name + ".cold", 0)
    def text(py):
        out = subprocess.run(["size", "-A", py], capture_output=True,
                             text=True).stdout
        m = re.search(r"^\.text\s+(\d+)", out, re.M)
        return int(m.group(1)) if m else 0
    print("  eval function machine code, bytes (hot + cold parts):")
    for label, (hot, cold) in (
            ("plain", part(a, "_PyEval_EvalFrameDefault")),
            ("untraced copy", part(b, "_PyEval_EvalFrameDefault")),
            ("traced copy", part(b, "evp_eval_frame_traced"))):
        print("  %-14s %8d + %6d" % (label, hot, cold))
    ta, tb = text(plain), text(evp)
    if ta and tb:
        print("  %-14s %8d plain, %d instrumented (+%d)" % (
            ".text", ta, tb, tb - ta))


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0


def startup_shares(py, evalprof, tmp, reps):
    """Shares of a traced `python -c pass`, from its text export."""
    rows = []
    for r in range(reps):
        evp = os.path.join(tmp, "startup.evp")
        txt = os.path.join(tmp, "startup.txt")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("EVALPROF")}
        env["EVALPROF"] = evp
        subprocess.run([py, "-c", "pass"], env=env, check=True)
        subprocess.run([evalprof, "export", "--format", "text", "-o", txt,
                        evp], check=True, capture_output=True)
        events = []
        for line in open(txt, encoding="utf-8", errors="replace"):
            if line[:1].isdigit():
                f = line.split()
                events.append((float(f[0]), int(f[1])))
        total = events[-1][0] - events[0][0]
        init = events[1][0] - events[0][0]
        depth, other, tail, frames = 0, 0.0, 0.0, 0.0
        last_exit = max(i for i, e in enumerate(events) if e[1] == 4)
        for i in range(len(events) - 1):
            t, kind = events[i]
            dt = events[i + 1][0] - t
            if kind == 3:
                depth += 1
            elif kind == 4:
                depth -= 1
            if kind == 2:
                if i > last_exit:
                    tail += dt
                else:
                    other += dt
            elif depth > 0 or kind == 4:
                frames += dt
        rows.append((total, init, frames, other, tail, len(events)))
        os.unlink(evp)
        os.unlink(txt)
    med = [statistics.median(c) for c in zip(*rows)]
    total, init, frames, other, tail, n = med
    print("start-up trace of `python -c pass` (every event; medians of %d "
          "runs; %d events):" % (reps, n))
    print("  %-44s %10.1f ms  %5.1f%%" % ("total, init to fini", total * 1e3,
                                           100.0))
    for name, v in (("init (start-up before the first frame)", init),
                    ("Python frames (enter .. exit)", frames),
                    ("runtime other, between frames", other),
                    ("runtime other after the last frame (finalisation)",
                     tail),
                    ("fini (the end marker itself)", 0.0)):
        print("  %-44s %10.1f ms  %5.1f%%" % (name, v * 1e3,
                                               100 * v / total))


def bench_version(build, ver, reps, scale, tmp):
    plain = os.path.join(build, "cpython", ver, "plain", "python")
    evp = os.path.join(build, "cpython", ver, "evalprof", "python")
    evalprof = os.path.join(build, "evalprof")
    for p in (plain, evp, evalprof):
        if not os.access(p, os.X_OK):
            print("CPython %s: skipped: %s is missing" % (ver, p))
            return
    full = subprocess.run([plain, "-c", "import sys; print(sys.version.split()[0])"],
                          capture_output=True, text=True).stdout.strip()
    configs = {
        "plain": (plain, {}),
        "off": (evp, {}),
        "op": (evp, {"EVALPROF": os.path.join(tmp, "op.evp"),
                     "EVALPROF_EVENTS": "op"}),
        "all": (evp, {"EVALPROF": os.path.join(tmp, "all.evp")}),
        "sample": (evp, {"EVALPROF": os.path.join(tmp, "sample.evp"),
                         "EVALPROF_MODE": "sample"}),
        "counts": (evp, {"EVALPROF": os.path.join(tmp, "counts.evp"),
                         "EVALPROF_MODE": "sample", "EVALPROF_COUNTS": "1"}),
    }
    # events and bytes of start-up alone, to subtract
    base = {}
    for c in ("op", "all"):
        run(configs[c][0], "none", 1, configs[c][1])
        path = configs[c][1]["EVALPROF"]
        base[c] = (trace_events(evalprof, path), os.path.getsize(path))
    times = {(w, c): [] for w in WORKLOADS for c in CONFIGS}
    events = {(w, c): [] for w in WORKLOADS for c in ("op", "all")}
    sizes = {(w, c): [] for w in WORKLOADS for c in ("op", "all")}
    for r in range(reps):
        for w in WORKLOADS:
            for c in CONFIGS:
                py, env = configs[c]
                times[w, c].append(run(py, w, scale, env))
                if c in ("op", "all"):
                    path = env["EVALPROF"]
                    events[w, c].append(trace_events(evalprof, path)
                                        - base[c][0])
                    sizes[w, c].append(os.path.getsize(path) - base[c][1])
                    os.unlink(path)
                elif c in SAMPLE_TARGETS and os.path.exists(env["EVALPROF"]):
                    os.unlink(env["EVALPROF"])
    print("CPython %s: workload time in ms, medians of %d runs, and "
          "ratios to plain" % (full, reps))
    print("  %-11s %9s %9s %9s %9s   %8s %8s %8s" % (
        "workload", "plain", "off", "op", "all", "off", "op", "all"))
    ratios = {c: [] for c in ("off", "op", "all")}
    for w in WORKLOADS:
        med = {c: statistics.median(times[w, c]) for c in CONFIGS}
        rs = {c: med[c] / med["plain"] for c in ("off", "op", "all")}
        for c in rs:
            ratios[c].append(rs[c])
        print("  %-11s %9.1f %9.1f %9.1f %9.1f   %7.3fx %7.2fx %7.2fx" % (
            w, med["plain"] * 1e3, med["off"] * 1e3, med["op"] * 1e3,
            med["all"] * 1e3, rs["off"], rs["op"], rs["all"]))
    g = {c: geomean(ratios[c]) for c in ratios}
    print("  %-11s %9s %9s %9s %9s   %7.3fx %7.2fx %7.2fx" % (
        "geomean", "", "", "", "", g["off"], g["op"], g["all"]))
    print("  %-11s %9s %9s %9s %9s   %7.2fx %7.2fx %7.2fx" % (
        "target", "", "", "", "", TARGETS["off"], TARGETS["op"],
        TARGETS["all"]))
    print()
    print("  sampled mode, against off (the same interpreter untraced):")
    print("  %-11s %9s %9s %9s   %8s %8s" % ("workload", "off", "sample",
                                            "counts", "sample", "counts"))
    sr = {c: [] for c in SAMPLE_TARGETS}
    for w in WORKLOADS:
        med = {c: statistics.median(times[w, c])
               for c in ("off",) + tuple(SAMPLE_TARGETS)}
        rs = {c: med[c] / med["off"] for c in SAMPLE_TARGETS}
        for c in rs:
            sr[c].append(rs[c])
        print("  %-11s %9.1f %9.1f %9.1f   %7.3fx %7.3fx" % (
            w, med["off"] * 1e3, med["sample"] * 1e3, med["counts"] * 1e3,
            rs["sample"], rs["counts"]))
    gs = {c: geomean(sr[c]) for c in sr}
    print("  %-11s %29s   %7.3fx %7.3fx" % ("geomean", "", gs["sample"],
                                             gs["counts"]))
    print("  %-11s %29s   %7.2fx %7.2fx (%s, %s)" % (
        "target", "", SAMPLE_TARGETS["sample"], SAMPLE_TARGETS["counts"],
        "met" if gs["sample"] <= SAMPLE_TARGETS["sample"] else "NOT met",
        "met" if gs["counts"] <= SAMPLE_TARGETS["counts"] else "NOT met"))
    counts = []
    for w in WORKLOADS:
        a = instructions(plain, w, 1)
        b = instructions(evp, w, 1)
        if a and b:
            counts.append((w, a, b))
    if counts:
        print()
        print("  machine instructions executed, not tracing (callgrind, "
              "whole process; exact):")
        for w, a, b in counts:
            print("  %-11s %13d plain %13d off   %7.3fx" % (w, a, b, b / a))
        print("  %-11s %41s %7.3fx" % ("geomean", "",
                                        geomean([b / a for _, a, b in counts])))
    print()
    code_sizes(plain, evp)
    print()
    print("  per event, medians over workloads:")
    for c in ("op", "all"):
        cost, bpe, mbs, evs = [], [], [], []
        for w in WORKLOADS:
            t_c = statistics.median(times[w, c])
            t_off = statistics.median(times[w, "off"])
            n = statistics.median(events[w, c])
            b = statistics.median(sizes[w, c])
            if n > 0:
                cost.append((t_c - t_off) / n * 1e9)
                bpe.append(b / n)
                mbs.append(b / t_c / 1e6)
                evs.append(n / t_c / 1e6)
        print("  %-4s %6.1f ns added per event, %5.2f bytes/event, "
              "%6.1f MB/s of trace, %5.1f M events/s" % (
                  c, statistics.median(cost), statistics.median(bpe),
                  statistics.median(mbs), statistics.median(evs)))
    print()
    startup_shares(evp, evalprof, tmp, reps)
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--versions", default="3.13,3.11")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--scale", type=int, default=1)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix="evp-bench-cpython-")
    try:
        for ver in args.versions.split(","):
            bench_version(build, ver, args.reps, args.scale, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
