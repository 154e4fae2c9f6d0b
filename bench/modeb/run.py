"""Mode B benchmark: what tracing a stock CPython costs, per interpreter.

    python3 bench/modeb/run.py BUILD

For each interpreter the extension was built for, and each workload (the
bundled demo workload, examples/workload; a call-heavy one,
bench/modeb/callheavy.py; and `python -m json.tool` on a generated JSON
file of BENCH_JSON_MB megabytes, default 20), runs in one session and interleaved:

    untraced      python script
    --no-ops      evalprof: frames, C calls, exceptions
    ops           evalprof: every instruction as well
    sampled       evalprof --sample: no hook at all, a sample of each
                  thread's stack, line and opcode at the default rate
                  (1 kHz of CPU time)
    sampled 10k   (3.15) the same at 10 kHz
    prof.samp 1k, prof.samp 10k
                  (3.15) the interpreter's own sampling profiler,
                  python -m profiling.sampling run -r 1khz (10khz) -a
                  --opcodes --binary: every thread, each sample's line and
                  opcode, as evalprof records them; its sampler is a
                  second process, whose CPU time the cpu column includes
                  (every descendant's)
    cProfile      python -m cProfile -o /dev/null script
    py-settrace   a pure-Python sys.settrace tracer with opcode events
    mon. floor    (3.12+) sys.monitoring INSTRUCTION events to a C
                  function that does nothing: the interpreter's own price
                  for reporting every instruction
    floor+calls   (3.12+, with build/bench/_floor-*.so) the floor plus the
                  other events ops mode asks for (CALL, C_RETURN, C_RAISE,
                  RAISE, RERAISE) to a do-nothing C callable and a
                  do-nothing PEP 523 frame hook: the interpreter's price
                  for everything ops mode asks of it

and prints the median wall time of each (BENCH_REPS runs, default 3), its
ratio to the untraced median of the same session, the same for CPU time
(user + system of all the process's threads: steadier than wall time on
a busy machine, and it counts evalprof's writer thread), and for the
evalprof runs the trace size in bytes per second of traced run and per
event.  The targets are judged on both (wall time is what a user waits;
on a busy machine CPU time is the steadier figure).  The
targets (--no-ops no slower than cProfile; ops at most 4x untraced on
3.12 and 3.13, and within 1.3x of the sys.monitoring floor; sampled at
most 1.05x untraced, its trace at most 1 MB a second; on 3.15 sampled
at most 1.03x at 1 kHz and 1.15x at 10 kHz, beside profiling.sampling's
ratios) are printed
beside the figures; nothing fails on time.  The ops line carries the floor
measured in the same session and the ratio to it, wall and CPU (3.11 has
no sys.monitoring: its floor is shown as n/a).
Then where ops mode's time over the floor goes: the interpreter's price
for the call events (floor+calls less the floor), one TSC read per event
(its cost measured by _floor.tsc_ns), and the rest, evalprof's own.
Last, how honest the compensated times are: the workload's <module> in
the ops trace, with each event's measured cost taken off and without,
against the untraced run (its wall time less `python -c pass`).  After
each interpreter's workloads, evalprof's fixed cost: the CPU time an
empty script takes more under `-m evalprof --sample` and `--no-ops`
than untraced (imports, the recorder's start, the trace's last flush),
which every workload's ratio above includes.  Last, sampled mode's
overhead measured in one process (paired.py): chunks of the demo and
call-heavy workloads run untraced and sampled alternately, BENCH_PAIRS
pairs (default 15), each chunk timed in the CPU time of all the
process's threads from inside its session: this VM's speed moves by
tens of percent from one process to the next (the same untraced run
took 1.48 to 2.74 s of CPU in one session), and within one process it
holds still enough for a few percent to show.

Environment: BENCH_REPS, BENCH_SCALE (workload size, default 0.15),
BENCH_PAIRS (paired.py's pairs, default 15),
BENCH_JSON_MB (json.tool's input, default 20),
BENCH_PYTHONS (comma-separated version tags or paths to restrict to),
BENCH_SKIP (comma-separated configurations to leave out, e.g.
py-settrace; untraced, ops and the floor are needed for the targets).
"""
import functools
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
HERE = os.path.join(TOP, "bench", "modeb")


def interpreters(build):
    out = subprocess.run([sys.executable,
                          os.path.join(TOP, "python", "find_interpreters.py"),
                          "--pythons", os.path.join(build, "pythons")],
                         capture_output=True, text=True, check=True).stdout
    pkg = os.path.join(build, "python", "evalprof")
    want = [w for w in os.environ.get("BENCH_PYTHONS", "").split(",") if w]
    found = []
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] != "build":
            continue
        tag, exe = f[1], f[2]
        if not os.path.exists(os.path.join(pkg, "_tracer-%s.so" % tag)):
            continue
        if want and tag not in want and exe not in want:
            continue
        found.append((tag, exe))
    return found


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, env):
    """Wall time, CPU time (user + system, every thread) and stderr."""
    c0 = cpu_children()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=env)
    dt = time.perf_counter() - t0
    cpu = cpu_children() - c0
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd),
                                                   p.returncode,
                                                   p.stderr[-500:]))
    return dt, cpu, p.stderr


def fmt_bytes(n):
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return "%.1f %s" % (n, unit)
        n /= 1000.0
    return "%.1f GB" % n


def module_ns(build, trace, script, extra):
    """Inclusive ns of SCRIPT's <module> in TRACE's function table."""
    out = subprocess.run([os.path.join(build, "evalprof"), "summary",
                          "--funcs", "--ns"] + extra + [trace],
                         capture_output=True, text=True).stdout
    want = "<module> (%s:1)" % script
    for line in out.splitlines():
        if line.startswith(" " + want):
            m = re.match(r"\s+[\d,]+\s+([\d,]+) ns", line[len(want) + 1:])
            if m:
                return int(m.group(1).replace(",", ""))
    return None


def compensation(exe, build, script, trace, untraced_wall, env):
    """How close the ops trace's compensated times come to the untraced
    run: the script's <module>, compensated and raw, against the untraced
    wall time less the interpreter's start-up and shut-down."""
    if script[0] == "-m":
        print("    compensation (ops): not measured for a module run")
        return
    starts = []
    for _ in range(5):
        dt, _, _ = run([exe, "-c", "pass"], env)
        starts.append(dt)
    bare = untraced_wall - statistics.median(starts)
    comp = module_ns(build, trace, script[0], [])
    raw = module_ns(build, trace, script[0], ["--no-compensate"])
    if comp is None or raw is None or bare <= 0:
        print("    compensation: <module> not found in the trace")
        return
    print("    compensation (ops): <module> %.3fs compensated, %.3fs raw, "
          "untraced %.3fs: %.2fx and %.2fx of untraced"
          % (comp / 1e9, raw / 1e9, bare, comp / 1e9 / bare,
             raw / 1e9 / bare))


def floor_note(times, cpus):
    """The floor of the same session beside the ops figure, and the
    ratio to it (wall, CPU)."""
    if "mon. floor" not in times:
        return "floor n/a (no sys.monitoring); "
    fw = statistics.median(times["mon. floor"])
    fc = statistics.median(cpus["mon. floor"])
    return "floor %.3fs wall, %.3fs cpu: %.2fx, %.2fx the floor; " % (
        fw, fc, statistics.median(times["ops"]) / fw,
        statistics.median(cpus["ops"]) / fc)


def floor_ext(build, tag):
    """build/bench/_floor-TAG.so (bench/modeb/floor_ext.c), or None."""
    path = os.path.join(build, "bench", "_floor-%s.so" % tag)
    return path if os.path.exists(path) else None


@functools.lru_cache(maxsize=None)
def tsc_ns(exe, ext):
    """One TSC read's cost in ns, measured by EXT under EXE (once per
    interpreter), or None."""
    p = subprocess.run([exe, os.path.join(HERE, "floor.py"), "--tsc", ext],
                       capture_output=True, text=True)
    try:
        return float(p.stdout.split()[0])
    except (IndexError, ValueError):
        return None


def where_it_goes(exe, build, tag, med, sizes):
    """Ops mode's wall time over the floor, split: the interpreter's price
    for the call events (floor+calls - floor), one TSC read per event, and
    the rest (evalprof's callbacks, record stores, hand-over)."""
    if "floor+calls" not in med or "ops" not in sizes:
        return
    ext = floor_ext(build, tag)
    tsc = tsc_ns(exe, ext) if ext else None
    over = med["ops"] - med["mon. floor"]
    calls = med["floor+calls"] - med["mon. floor"]
    events = statistics.median(s[1] for s in sizes["ops"])
    clock = events * tsc / 1e9 if tsc else None
    line = ("    where ops' %.3fs over the floor goes: call events in the "
            "interpreter %.3fs (floor+calls - floor)" % (over, calls))
    if clock is not None:
        line += (", TSC reads %.3fs (%s events x %.1f ns), evalprof's "
                 "callbacks, stores and hand-over %.3fs (the rest)"
                 % (clock, format(int(events), ","), tsc,
                    over - calls - clock))
    print(line)
    allowance = 1.3 * med["mon. floor"] - med["floor+calls"]
    print("    the floor with every event ops mode asks for: %.2fx the "
          "floor; 1.3x the floor leaves %.3fs for the clock and evalprof"
          % (med["floor+calls"] / med["mon. floor"], allowance))
    if clock is not None:
        if clock >= allowance:
            print("    one TSC read per event alone (%.3fs) takes more than "
                  "that: within 1.3x of the floor, exact ops cannot read "
                  "the clock at every instruction (sampled mode, --sample, "
                  "is the cheap way to opcode shares)" % clock)
        else:
            print("    one TSC read per event (%.3fs) leaves %.3fs of that "
                  "for evalprof's own work (the rest: %.3fs)"
                  % (clock, allowance - clock, over - calls - clock))


def json_input(tmp, mb):
    """A JSON file of about MB megabytes for json.tool: nested objects,
    lists, strings and numbers."""
    path = os.path.join(tmp, "bench.json")
    n = max(1, int(mb * 1e6 / 162))
    with open(path, "w") as f:
        f.write("[")
        for i in range(n):
            if i:
                f.write(",")
            f.write('{"id": %d, "name": "item-%d", "tags": ["a", "bc", '
                    '"def"], "score": %d.%03d, "ok": %s, "child": {"x": %d, '
                    '"y": [%d, %d, %d], "note": null}}'
                    % (i, i, i % 997, i % 1000,
                       "true" if i % 3 else "false", i * 7, i, i + 1, i + 2))
        f.write("]\n")
    return path


def has_peer(exe, env):
    """EXE ships its own sampling profiler (3.15's profiling.sampling)."""
    return subprocess.run([exe, "-c", "import profiling.sampling"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=env).returncode == 0


def peer_cmd(exe, rate, out, script):
    """profiling.sampling at RATE ("1k", "10k") recording what evalprof's
    sampled mode records: every thread, each sample's line and opcode
    (--opcodes needs a binary, gecko, flame graph or heat map output)."""
    return ([exe, "-m", "profiling.sampling", "run", "-r", rate + "hz",
             "-a", "--opcodes", "--binary", "-o", out]
            + (["-m"] + script[1:] if script[0] == "-m" else script))


def peer_targets(med, cmed, base, cbase, verdict):
    """3.15's targets: evalprof sampled at most 1.03x untraced at 1 kHz
    and 1.15x at 10 kHz, wall and CPU, beside profiling.sampling's."""
    for rate, mine, limit in (("1k", "sampled", 1.03),
                              ("10k", "sampled 10k", 1.15)):
        if mine not in med:
            continue
        peer = "prof.samp " + rate
        print("    target %s <= %.2fx untraced: wall %s (%.3fx), cpu %s "
              "(%.3fx); profiling.sampling at %sHz: wall %.3fx, cpu %.3fx"
              % (mine, limit, verdict(med[mine] <= limit * base),
                 med[mine] / base, verdict(cmed[mine] <= limit * cbase),
                 cmed[mine] / cbase, rate, med[peer] / base,
                 cmed[peer] / cbase))


def bench(tag, exe, build, workloads, reps, tmp):
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("PYTHONPATH", None)
    tenv = dict(env, PYTHONPATH=os.path.join(build, "python"))
    trace = os.path.join(tmp, "bench.evp")
    for wname, script in workloads:
        configs = [
            ("untraced", [exe] + script, env),
            ("--no-ops", [exe, "-m", "evalprof", "--no-ops", "-o", trace]
             + script, tenv),
            ("ops", [exe, "-m", "evalprof", "-o", trace] + script, tenv),
            ("sampled", [exe, "-m", "evalprof", "--sample", "-o",
                         trace + ".sampled"] + script, tenv),
            ("cProfile", [exe, "-m", "cProfile", "-o", os.devnull] + script,
             env),
        ]
        if script[0] != "-m":
            # (minutes on json.tool: left out there)
            configs.append(("py-settrace", [exe, os.path.join(HERE,
                                                              "pytracer.py")]
                            + script, env))
        if not tag.startswith("3.11"):
            # What sys.monitoring alone costs, with a do-nothing callback.
            configs.append(("mon. floor", [exe, os.path.join(HERE,
                                                             "floor.py")]
                            + script, env))
            ext = floor_ext(build, tag)
            if ext:
                # ... and with the call events and frame hook as well
                configs.append(("floor+calls",
                                [exe, os.path.join(HERE, "floor.py"),
                                 "--calls", ext] + script, env))
        if has_peer(exe, env):
            # 3.15: its own sampling profiler beside evalprof's sampled
            # mode, each at 1 and 10 kHz, recording the same things (every
            # thread, the line and the opcode of each sample)
            configs.append(("sampled 10k",
                            [exe, "-m", "evalprof", "--sample", "--rate",
                             "10000", "-o", trace + ".sampled"] + script,
                            tenv))
            for rate in ("1k", "10k"):
                configs.append(("prof.samp " + rate,
                                peer_cmd(exe, rate, trace + ".bin", script),
                                env))
        skip = [w for w in os.environ.get("BENCH_SKIP", "").split(",") if w]
        configs = [c for c in configs if c[0] not in skip]
        times = {name: [] for name, _, _ in configs}
        cpus = {name: [] for name, _, _ in configs}
        sizes = {}
        for _ in range(reps):
            for name, cmd, e in configs:
                dt, cpu, err = run(cmd, e)
                times[name].append(dt)
                cpus[name].append(cpu)
                m = re.search(r"\(([\d,]+) (?:events|samples)", err)
                out = (trace + ".sampled" if name.startswith("sampled")
                       else trace)
                if m and os.path.exists(out):
                    sizes.setdefault(name, []).append(
                        (os.path.getsize(out),
                         int(m.group(1).replace(",", "")), dt))
        base = statistics.median(times["untraced"])
        cbase = statistics.median(cpus["untraced"])
        print("  %s (%s):" % (wname, " ".join(os.path.relpath(a, TOP)
                                               if a.startswith(TOP) else a
                                               for a in script)))
        print("    %-12s %9s %8s %9s %8s   %s" % ("", "wall", "ratio", "cpu",
                                                  "ratio", "trace"))
        med = {}
        for name, _, _ in configs:
            m = statistics.median(times[name])
            c = statistics.median(cpus[name])
            med[name] = m
            extra = ""
            if name in sizes:
                b = statistics.median(s[0] for s in sizes[name])
                ev = statistics.median(s[1] for s in sizes[name])
                wall = statistics.median(s[2] for s in sizes[name])
                what = "samples" if name.startswith("sampled") else "events"
                extra = "%s, %s %s: %s/s of traced run, %.2f B/%s" % (
                    fmt_bytes(b), format(int(ev), ","), what,
                    fmt_bytes(b / wall), b / ev if ev else 0.0, what[:-1])
            if name == "ops":
                extra = floor_note(times, cpus) + extra
            print("    %-12s %8.3fs %7.2fx %8.3fs %7.2fx   %s"
                  % (name, m, m / base, c, c / cbase, extra))
        cmed = {name: statistics.median(cpus[name]) for name in cpus}
        if "ops" in med:
            compensation(exe, build, script, trace, base, env)

        def verdict(ok):
            return "met" if ok else "NOT met"

        if "cProfile" in med and "--no-ops" in med:
            print("    target --no-ops <= cProfile: wall %s (%.2fx vs %.2fx), "
                  "cpu %s (%.2fx vs %.2fx)"
                  % (verdict(med["--no-ops"] <= med["cProfile"]),
                     med["--no-ops"] / base, med["cProfile"] / base,
                     verdict(cmed["--no-ops"] <= cmed["cProfile"]),
                     cmed["--no-ops"] / cbase, cmed["cProfile"] / cbase))
        if "sampled" in med:
            print("    target sampled <= 1.05x untraced: wall %s (%.3fx), "
                  "cpu %s (%.3fx)"
                  % (verdict(med["sampled"] <= 1.05 * base),
                     med["sampled"] / base,
                     verdict(cmed["sampled"] <= 1.05 * cbase),
                     cmed["sampled"] / cbase))
            if "sampled" in sizes:
                b = statistics.median(s[0] / s[2] for s in sizes["sampled"])
                print("    target sampled trace <= 1 MB a second: %s (%s/s)"
                      % (verdict(b <= 1e6), fmt_bytes(b)))
        if "prof.samp 1k" in med:
            peer_targets(med, cmed, base, cbase, verdict)
        if not tag.startswith("3.11") and "ops" in med and \
                "mon. floor" in med:
            print("    target ops <= 4x untraced: wall %s (%.2fx), cpu %s "
                  "(%.2fx); the sys.monitoring floor alone: %.2fx wall, "
                  "%.2fx cpu"
                  % (verdict(med["ops"] <= 4 * base), med["ops"] / base,
                     verdict(cmed["ops"] <= 4 * cbase), cmed["ops"] / cbase,
                     med["mon. floor"] / base,
                     cmed["mon. floor"] / cbase))
            fw = med["ops"] / med["mon. floor"]
            fc = cmed["ops"] / cmed["mon. floor"]
            print("    target ops <= 1.3x the floor: wall %s (%.2fx), cpu %s "
                  "(%.2fx)" % (verdict(fw <= 1.3), fw, verdict(fc <= 1.3),
                               fc))
            where_it_goes(exe, build, tag, med, sizes)


def startup(exe, build, reps, tmp):
    """What evalprof adds to a run before and after the program: an
    empty script untraced, and under python -m evalprof --sample and
    --no-ops (its imports, the recorder's start and the trace's last
    flush; exact mode also calibrates), in CPU time, medians of REPS*3
    interleaved runs.  A fixed cost, in every workload's figure above
    it; the shorter the run, the more of its ratio it is."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("PYTHONPATH", None)
    tenv = dict(env, PYTHONPATH=os.path.join(build, "python"))
    empty = os.path.join(tmp, "empty.py")
    with open(empty, "w") as f:
        f.write("pass\n")
    trace = os.path.join(tmp, "startup.evp")
    configs = [("untraced", [exe, empty], env),
               ("sampled", [exe, "-m", "evalprof", "--sample", "-o", trace,
                            empty], tenv),
               ("--no-ops", [exe, "-m", "evalprof", "--no-ops", "-o", trace,
                             empty], tenv)]
    cpus = {name: [] for name, _, _ in configs}
    for _ in range(reps * 3):
        for name, cmd, e in configs:
            cpus[name].append(run(cmd, e)[1])
    base = statistics.median(cpus["untraced"])
    print("  start-up and exit (an empty script), cpu: untraced %.1f ms; "
          "%s" % (base * 1e3, ", ".join(
              "%s +%.1f ms" % (name, (statistics.median(cpus[name]) - base)
                               * 1e3) for name, _, _ in configs[1:])))


def paired(exe, build, scale, tmp):
    """Sampled mode's overhead in one process (paired.py): BENCH_PAIRS
    pairs of chunks (default 15) of the demo and call-heavy workloads,
    untraced and sampled alternately, in CPU time; start-up and exit are
    not in it (the line above gives them)."""
    env = dict(os.environ, PYTHONHASHSEED="0",
               PYTHONPATH=os.path.join(build, "python"))
    pairs = int(os.environ.get("BENCH_PAIRS", "15"))
    for wname in ("demo", "call-heavy"):
        p = subprocess.run([exe, os.path.join(HERE, "paired.py"), wname,
                            scale, str(pairs),
                            os.path.join(tmp, "paired.evp")],
                           env=env, capture_output=True, text=True)
        if p.returncode != 0:
            print("  sampled in one process, %s: did not run: %s"
                  % (wname, (p.stderr.strip().splitlines() or ["?"])[-1]))
            continue
        c = json.loads(p.stdout.strip().splitlines()[-1])
        ratios = sorted(s / u for u, s in zip(c["untraced"], c["sampled"]))
        med = statistics.median(ratios)
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 \
            else [med, med, med]
        print("  sampled in one process, %s: %.3fx untraced, cpu (median "
              "of %d paired chunks of %.0f ms; quartiles %.3f-%.3f; the "
              "medians' ratio %.3fx); target <= 1.05x: %s"
              % (wname, med, len(ratios),
                 statistics.median(c["untraced"]) / 1e6, q[0], q[2],
                 statistics.median(c["sampled"])
                 / statistics.median(c["untraced"]),
                 "met" if med <= 1.05 else "NOT met"))


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    reps = int(os.environ.get("BENCH_REPS", "3"))
    scale = os.environ.get("BENCH_SCALE", "0.15")
    workloads = [
        ("demo workload", [os.path.join(TOP, "examples", "workload",
                                        "main.py"), "--scale", scale]),
        ("call-heavy", [os.path.join(HERE, "callheavy.py"), scale]),
    ]
    found = interpreters(build)
    if not found:
        print("mode B benchmark: no interpreter with evalprof._tracer built "
              "in %s" % build)
        return 0
    print("mode B: tracing stock CPython (median of %d interleaved runs, "
          "wall time; load average %.1f at start)"
          % (reps, os.getloadavg()[0]))
    with tempfile.TemporaryDirectory(prefix="evp-bench-") as tmp:
        workloads.append(("json.tool", ["-m", "json.tool",
                                        json_input(tmp, float(os.environ.get("BENCH_JSON_MB", "20"))), os.devnull]))
        for tag, exe in found:
            print("CPython %s (%s)" % (tag, exe))
            bench(tag, exe, build, workloads, reps, tmp)
            startup(exe, build, reps, tmp)
            paired(exe, build, scale, tmp)
    print("load average %.1f at the end" % os.getloadavg()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
