"""Fidelity: evalprof's shares and times against ground truth, beside
the other ways of measuring them.

    python3 bench/fidelity/run.py BUILD

Two workloads whose true figures are measured untraced, independently
of any profiler:

  functions   bench/fidelity/funcs.py: five top-level functions; the truth
              is each one's total time in an untraced run, timed call by
              call with perf_counter_ns (median of BENCH_REPS runs)
  opcodes     bench/fidelity/ops.py: loops dominated by BINARY_OP and
              BINARY_SUBSCR, and their variants without the markers, all
              run each round; the truth is each loop's time less its
              variant's, as a share of the round, in untraced runs of
              the same rounds (below), and each tool's figure the same
              difference of its time in the marker opcode and the
              operand loads
  lines       bench/fidelity/lines.py: four loops each written on one
              line, each timed untraced as it runs; the truth is each
              line's share of the round, a sampling tool's figure its
              samples whose leaf is on that line (stock interpreters;
              the exact mode is not run here)
  phases      bench/fidelity/phases.py: a loop raising and catching an
              exception and its variant that does not raise, a loop calling
              bytes.count on 16 KiB and the same call on b'', and a loop of
              eval-loop work; the truth is each difference (the exception's
              whole cost: raise, error path, unwinding, handler; the C
              function's scan) and the rest of the round (the eval loop),
              and each tool's figure the same difference of its buckets:
              for the exception every bucket of the raising loop but its
              skeleton, phases included; for the C call the [C call]
              state sampled on a stock interpreter, the C callee's frame
              exact, the call instruction on an instrumented one

The differential workloads (opcodes, phases) time every loop of every
round as it runs (loops.py --truth-out).  Their truth is BENCH_REPS
untraced runs of the very rounds the tools run, half before the traced
runs and half after: the median of each share, and the heading says
how far apart the runs were.  Each sampled run (the sampler thread's
too) times its own rounds, and the row "in-run truth" under it gives
that run's error against them:
the sampler's attribution alone, on the machine as it was during the
samples and in the code they were taken in, and the same error of the
whole loops (every sample of a loop less every sample of its variant),
which leaves out what the loop's other instructions do differently from
the variant's.  Separate processes differ here by more than the 2-point
target (the exception's share of phases.py's round read 38.5%, 44.6%
and 43.8% in three runs in a row), and loops timed apart from the round
(each loop and its variant alternately, as this truth once was) read
BINARY_OP at 25.4% of stock 3.13.0's round where the round itself,
untraced, gave it 18.9%.

For each interpreter evalprof's mode B extension was built for (and the
instrumented 3.13/3.11 under BUILD/cpython when built), each way of
measuring is run on the same workload and its error printed against the
truth: in points of share (|share - true share| x 100) and in percent of
absolute time (|time - true time| / true time), the largest over the
rows and their mean:

  evalprof sampled     record --sample at the default rate (1 kHz)
  evalprof sampled 10k the same at 10 kHz (3.15, beside its peer)
  prof.samp 1k, 10k    (3.15) python -m profiling.sampling run -r 1khz
                       (10khz) -a --opcodes --binary, the interpreter's own
                       sampling profiler, its file read back as folded
                       stacks by bench/fidelity/peer.py: functions, lines
                       and opcodes from the same samples
  evalprof thread      (instrumented interpreters) the same with the
                       sampler thread (EVALPROF_SAMPLE_TIMER=thread),
                       which interrupts no thread
  evalprof exact       every event, compensated (the views' default)
  evalprof exact raw   the same trace, --no-compensate (summary's, and
                       export --format folded's for opcodes and phases)
  cProfile             python -m cProfile (its tottime/cumtime)
  perf --ops           evalprof perf --ops: opcode shares of the eval
                       function's samples (opcodes only; its denominator
                       is the eval function's time, the truth's is the
                       loops' whole time: see the note it prints)
  VizTracer            python -m viztracer (functions only, stock
                       interpreters), when its source is given: Debian
                       has no package of it and PyPI is not reachable
                       here, so BENCH_VIZTRACER_SRC names a VizTracer
                       source tree and BENCH_OBJPRINT_SRC one of objprint,
                       its one dependency; its C extensions are compiled
                       for each interpreter with gcc into a scratch
                       directory.  It traces every Python call into a
                       ring of --tracer_entries (default 1,000,000), so
                       its run is as many rounds as that ring holds
                       (counted in a one-round run), and the truth it is
                       measured against is scaled to those rounds

Environment: BENCH_REPS (default 3), BENCH_FIDELITY_SECONDS (each
workload's length, default 4; the targets are stated for runs of at
least 10 s), BENCH_PYTHONS (version tags to restrict to; with it, an
instrumented interpreter runs only when named "instrumented" or
"instrumented-3.13", "instrumented-3.11"), BENCH_WORKLOADS
(functions,lines,opcodes,phases: the workloads to run, default all).
Nothing fails on the figures: the targets are printed beside them.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "bench", "modeb"))
from run import interpreters  # noqa: E402  (bench/modeb/run.py)

FUNCS = ["arith", "strings", "dicts", "sorting", "methods"]
OPS = ["BINARY_OP", "BINARY_SUBSCR"]


def sh(cmd, env=None, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                p.stderr[-400:]))
    return p


def frame_name(frame):
    """'arith (/x/funcs.py:21)' -> 'arith'."""
    return frame.split(" (", 1)[0]


def folded(build, trace, extra=()):
    """[(frames, ns)] of `evalprof export --format folded`."""
    out = sh([os.path.join(build, "evalprof"), "export", "--format",
              "folded"] + list(extra) + [trace]).stdout
    rows = []
    for line in out.splitlines():
        stack, _, v = line.rpartition(" ")
        if stack and v.isdigit():
            rows.append((stack.split(";"), int(v)))
    return rows


def func_times(rows, names):
    """Inclusive ns of each of NAMES, evalprof's own [evalprof] time left
    out (it is the tracer's, not the program's)."""
    t = {n: 0 for n in names}
    for frames, v in rows:
        if frames[-1] == "[evalprof]":
            continue
        seen = set(frame_name(f) for f in frames)
        for n in names:
            if n in seen:
                t[n] += v
    return t


def buckets(rows, under):
    """{func: {tags: ns}} of the stacks under function UNDER: for each
    stack, its innermost function frame and the tags after it (a phase
    "[loop error]", a sampled state "[C call]", "op:NAME", or a callee's
    frame: exact mode's C functions), evalprof's own [evalprof] time left
    out; and the total ns under UNDER."""
    out = {}
    total = 0
    for frames, v in rows:
        if frames[-1] == "[evalprof]":
            continue
        names = [frame_name(f) for f in frames]
        if under not in names:
            continue
        total += v
        i = len(frames) - 1
        while i >= 0 and (frames[i].startswith("[")
                          or frames[i].startswith("op:")
                          or " (" not in frames[i]
                          or frames[i].endswith(":0)")):  # a C function
            i -= 1
        if i < 0:
            continue
        d = out.setdefault(names[i], {})
        tags = tuple(frames[i + 1:])
        d[tags] = d.get(tags, 0) + v
    return out, total


def op_of(tags):
    """The opcode tag's name in TAGS, or None."""
    for t in tags:
        if t.startswith("op:"):
            return t[3:]
    return None


def is_op(name, base):
    """NAME is BASE or one of its specialized forms (LOAD_FAST_CHECK,
    FOR_ITER_RANGE, ...).  From 3.14 on a subscript is a BINARY_OP, its
    specialized forms BINARY_OP_SUBSCR_*: those are BINARY_SUBSCR's here,
    not BINARY_OP's."""
    if name is not None and name.startswith("BINARY_OP_SUBSCR"):
        name = "BINARY_SUBSCR" + name[len("BINARY_OP_SUBSCR"):]
    return name is not None and (name == base or name.startswith(base + "_"))


def differential_of(b, loop, variant, pick):
    """A tool's figure for the difference the truth measures: its ns in
    the buckets PICK selects in LOOP, less the same in VARIANT."""
    f = sum(v for k, v in b.get(loop, {}).items() if pick(k))
    g = sum(v for k, v in b.get(variant, {}).items() if pick(k))
    return f - g


def loads(name):
    return is_op(name, "LOAD_FAST") or is_op(name, "LOAD_CONST")


def op_times(b, pairs):
    """Each marker's figure: PAIRS names, for each, the loop that holds it
    and its variant (ops.py's PAIRS, as its --truth-out gives them).  The
    truth is the loop's time less its variant's, the markers and the
    operand loads the variant does not make; a tool's figure is the same
    difference of its marker and load buckets."""
    return {o: differential_of(b, loop, variant,
                               lambda k, o=o: is_op(op_of(k), o)
                               or loads(op_of(k)))
            for o, (loop, variant) in pairs.items()}


def summary_funcs(build, trace, names, extra=()):
    """Inclusive ns of NAMES from `summary --funcs --ns` (raw figures with
    --no-compensate)."""
    out = sh([os.path.join(build, "evalprof"), "summary", "--funcs", "--ns",
              "--wide"] + list(extra) + [trace]).stdout
    t = {}
    for line in out.splitlines():
        m = re.match(r"\s(\S+) \(.*?\)\s+[\d,]+\s+([\d,]+) ns", line)
        if m and m.group(1) in names:
            t[m.group(1)] = t.get(m.group(1), 0) + int(
                m.group(2).replace(",", ""))
    return t


def cprofile_funcs(exe, script, args, names, tmp):
    prof = os.path.join(tmp, "c.prof")
    sh([exe, "-m", "cProfile", "-o", prof, script] + args)
    code = ("import pstats,sys,json; s=pstats.Stats(sys.argv[1]).stats; "
            "print(json.dumps({k[2]: v[3] for k, v in s.items() "
            "if k[0].endswith(sys.argv[2])}))")
    got = json.loads(sh([exe, "-c", code, prof,
                         os.path.basename(script)]).stdout)
    return {n: int(got.get(n, 0) * 1e9) for n in names}


VIZ_ENTRIES = 1000000  # VizTracer's default ring


def viztracer_path(exe, tmp):
    """PYTHONPATH under which EXE runs VizTracer built from
    BENCH_VIZTRACER_SRC and BENCH_OBJPRINT_SRC, or (None, why not)."""
    vsrc = os.environ.get("BENCH_VIZTRACER_SRC")
    osrc = os.environ.get("BENCH_OBJPRINT_SRC")
    if not vsrc or not osrc:
        return None, ("not measured: no Debian package, no PyPI here "
                      "(BENCH_VIZTRACER_SRC and BENCH_OBJPRINT_SRC name "
                      "source trees to build it from)")
    pkg = os.path.join(vsrc, "src", "viztracer")
    opkg = os.path.join(osrc, "src")
    if not os.path.isdir(os.path.join(pkg, "modules")) or \
            not os.path.isdir(os.path.join(opkg, "objprint")):
        return None, ("not measured: %s has no src/viztracer/modules or %s "
                      "no src/objprint" % (vsrc, osrc))
    out = os.path.join(tmp, "viztracer")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(pkg, os.path.join(out, "viztracer"))
    cfg = sh([exe, "-c", "import sysconfig; print(sysconfig.get_paths()"
              "['include']); print(sysconfig.get_config_var('EXT_SUFFIX'))"]
             ).stdout.split()
    mods = os.path.join(out, "viztracer", "modules")
    for ext, srcs in (("snaptrace", ["util.c", "eventnode.c", "quicktime.c",
                                     "snaptrace.c", "snaptrace_member.c"]),
                      ("vcompressor", ["vcompressor/vcompressor.c",
                                       "vcompressor/vc_dump.c"])):
        p = sh(["gcc", "-O2", "-shared", "-fPIC", "-std=c99", "-I" + cfg[0]]
               + [os.path.join(mods, f) for f in srcs]
               + ["-o", os.path.join(out, "viztracer", ext + cfg[1]),
                  "-lpthread"], check=False)
        if p.returncode != 0:
            return None, "not measured: its %s did not build: %s" % (
                ext, p.stderr.strip().splitlines()[-1:])
    return out + os.pathsep + opkg, None


def viztracer_funcs(exe, path, env, script, rounds, names, tmp):
    """(inclusive ns of NAMES, rounds run) under VizTracer: as many
    rounds as its ring holds, counted from a one-round run."""
    out = os.path.join(tmp, "viz.json")
    venv = dict(env, PYTHONPATH=path)

    def run(n):
        sh([exe, "-m", "viztracer", "--quiet", "-o", out,
            "--tracer_entries", str(VIZ_ENTRIES), script, "1",
            "--rounds", str(n)], env=venv)
        with open(out) as f:
            ev = json.load(f)["traceEvents"]
        os.unlink(out)
        return ev

    per_round = max(1, len(run(1)))
    n = max(1, min(rounds, VIZ_ENTRIES * 9 // 10 // per_round))
    t = {k: 0 for k in names}
    for e in run(n):
        name = e.get("name", "")
        fn = name.split(" (", 1)[0]
        if e.get("ph") == "X" and fn in t and \
                os.path.basename(script) in name:
            t[fn] += int(e["dur"] * 1000)
    return t, n


def errors(truth, got):
    """(max points, mean points, max %, mean %) of GOT against TRUTH
    (dicts of ns over the same rows; shares are of the rows' sum)."""
    ts, gs = sum(truth.values()), sum(got.get(k, 0) for k in truth)
    if not ts or not gs:
        return None
    pts = [abs(got.get(k, 0) / gs - truth[k] / ts) * 100 for k in truth]
    pct = [abs(got.get(k, 0) - truth[k]) / truth[k] * 100
           for k in truth if truth[k]]
    return max(pts), statistics.mean(pts), max(pct), statistics.mean(pct)


def line(name, e, extra=""):
    if e is None:
        print("    %-20s %s" % (name, extra or "no figures"))
        return
    print("    %-20s %6.2f %6.2f   %7.1f%% %7.1f%%  %s"
          % ((name,) + tuple(e) + (extra,)))


def sampled_cmd(exe, trace, script, args, modea):
    if modea:
        return [exe, script] + args, {"EVALPROF": trace,
                                      "EVALPROF_MODE": "sample"}
    return [exe, "-m", "evalprof", "--sample", "-o", trace, script] + args, {}


def thread_cmd(exe, trace, script, args, modea):
    cmd, extra = sampled_cmd(exe, trace, script, args, modea)
    return cmd, dict(extra, EVALPROF_SAMPLE_TIMER="thread")


def sampled_10k_cmd(exe, trace, script, args, modea):
    cmd, extra = sampled_cmd(exe, trace, script, args, modea)
    return cmd[:3] + ["--rate", "10000"] + cmd[3:], extra


def evalprof_ways(modea, peer=False):
    """(kind, command maker) of each evalprof way run on a workload; with
    PEER (an interpreter that ships profiling.sampling), evalprof sampled
    at 10 kHz as well, to stand beside it at both rates."""
    ways = [("evalprof sampled", sampled_cmd)]
    if peer and not modea:
        ways.append(("evalprof sampled 10k", sampled_10k_cmd))
    if modea:
        ways.append(("evalprof thread", thread_cmd))
    return ways + [("evalprof exact", exact_cmd)]


PEER_RATES = (("1k", 1000000), ("10k", 100000))  # (rate, period in ns)


def has_peer(exe, env, modea):
    """EXE ships its own sampling profiler (3.15's profiling.sampling),
    run beside evalprof's sampled mode (stock interpreters only)."""
    return not modea and sh([exe, "-c", "import profiling.sampling"],
                            env=env, check=False).returncode == 0


def peer_runs(exe, env, tmp, script, args):
    """(kind, folded rows) of profiling.sampling at 1 and 10 kHz on
    SCRIPT ARGS: every thread, each sample's line and opcode, read back
    by bench/fidelity/peer.py into evalprof's folded form."""
    out = os.path.join(tmp, "peer.bin")
    # its `run` does not put the script's directory first on sys.path as
    # `python script.py` does (the workloads import loops.py beside them),
    # and exits 0 when the script raised
    penv = dict(env, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(script)] + [p for p in [env.get("PYTHONPATH")]
                                     if p]))
    for rate, period in PEER_RATES:
        kind = "prof.samp " + rate
        p = sh([exe, "-m", "profiling.sampling", "run", "-r", rate + "hz",
                "-a", "--opcodes", "--binary", "-o", out, script] + args,
               env=penv, check=False)
        if "Traceback (most recent call last)" in p.stderr:
            p.returncode = 1
        if p.returncode != 0 or not os.path.exists(out):
            yield kind, "did not run: " + p.stderr.strip()[-200:]
            continue
        text = sh([exe, os.path.join(HERE, "peer.py"), out,
                   str(period)], env=env).stdout
        os.unlink(out)
        rows = []
        for line in text.splitlines():
            stack, _, v = line.rpartition(" ")
            if stack and v.isdigit():
                rows.append((stack.split(";"), int(v)))
        yield kind, rows


def exact_cmd(exe, trace, script, args, modea):
    if modea:
        return [exe, script] + args, {"EVALPROF": trace}
    return [exe, "-m", "evalprof", "-o", trace, script] + args, {}


def functions(tag, exe, build, env, tmp, reps, seconds, modea):
    script = os.path.join(HERE, "funcs.py")
    truths = []
    rounds = None
    for _ in range(reps):
        out = os.path.join(tmp, "truth.json")
        a = [str(seconds), "--truth", out]
        if rounds is not None:
            a += ["--rounds", str(rounds)]
        sh([exe, script] + a, env=env)
        d = json.load(open(out))
        rounds = d["rounds"]
        truths.append(d["functions"])
    truth = {n: statistics.median(t[n] for t in truths) for n in FUNCS}
    args = [str(seconds), "--rounds", str(rounds)]
    print("  functions (%d rounds, %.1f s of functions untraced):"
          % (rounds, sum(truth.values()) / 1e9))
    print("    %-20s %6s %6s   %8s %8s" % ("", "max pt", "mean", "max %",
                                           "mean %"))
    trace = os.path.join(tmp, "f.evp")
    res = {}
    peer = has_peer(exe, env, modea)
    for kind, mk in evalprof_ways(modea, peer):
        cmd, extra = mk(exe, trace, script, args, modea)
        p = sh(cmd, env=dict(env, **extra), check=False)
        if p.returncode != 0 or not os.path.exists(trace):
            line(kind, None, "did not run: " + p.stderr.strip()[-200:])
            continue
        res[kind] = errors(truth, func_times(folded(build, trace), FUNCS))
        line(kind, res[kind])
        if kind == "evalprof exact":
            raw = summary_funcs(build, trace, FUNCS, ["--no-compensate"])
            res["raw"] = errors(truth, raw)
            line("evalprof exact raw", res["raw"])
        os.unlink(trace)
    if peer:
        for kind, rows in peer_runs(exe, env, tmp, script, args):
            if isinstance(rows, str):
                line(kind, None, rows)
                continue
            res[kind] = errors(truth, func_times(rows, FUNCS))
            line(kind, res[kind])
    if not modea:
        res["cProfile"] = errors(truth, cprofile_funcs(exe, script, args,
                                                       FUNCS, tmp))
        line("cProfile", res["cProfile"])
    if modea:
        line("VizTracer", None, "not run on an instrumented interpreter")
    else:
        path, why = viztracer_path(exe, tmp)
        if path is None:
            line("VizTracer", None, why)
        else:
            got, n = viztracer_funcs(exe, path, env, script, rounds, FUNCS,
                                     tmp)
            scaled = {k: v * n / rounds for k, v in truth.items()}
            res["VizTracer"] = errors(scaled, got)
            line("VizTracer", res["VizTracer"],
                 "%d of the %d rounds (its ring)" % (n, rounds))
    target_line({k: e[0] for k, e in res.items()}, seconds)


def rounds_for(round_ns, seconds):
    return max(3, int(seconds * 1e9 / round_ns))


def tool_shares(got, total, names):
    """A tool's share of each of NAMES (its ns in GOT of TOTAL), and the
    rest."""
    shares = {n: got[n] / total for n in names}
    shares["rest"] = 1 - sum(shares.values())
    return shares


def shares_rows(kind, got, total, truth, marker, rounds, note=""):
    """One tool's row of a differential workload: GOT (ns of each marker
    over the run) against TRUTH (shares of the round) and MARKER (ns per
    round); the rest of the round is a row too."""
    if not total:
        print("    %-20s no stacks under run_round" % kind)
        return None
    shares = tool_shares(got, total, truth)
    t = dict(truth, rest=1 - sum(truth.values()))
    pts = [abs(shares[n] - t[n]) * 100 for n in t]
    pct = [abs(got[n] / rounds - marker[n]) / marker[n] * 100
           for n in marker if marker[n] > 0]
    print("    %-20s %6.2f %6.2f   %7.1f%% %7.1f%%  %s%s"
          % (kind, max(pts), statistics.mean(pts), max(pct),
             statistics.mean(pct),
             ", ".join("%s %.1f%%" % (n, shares[n] * 100) for n in t),
             note))
    return max(pts)


def traced_runs(exe, build, env, tmp, script, args, modea, extra_folded,
                sampled_args=None):
    """(kind, folded rows) of each evalprof way: sampled (and, on an
    instrumented interpreter, the sampler thread's), exact compensated
    and the same trace raw.  SAMPLED_ARGS(kind) are a sampled run's own
    arguments (the differential workloads' --truth-out)."""
    trace = os.path.join(tmp, "w.evp")
    peer = has_peer(exe, env, modea)
    for kind, mk in evalprof_ways(modea, peer):
        own = sampled_args(kind) if sampled_args and \
            kind != "evalprof exact" else []
        cmd, extra = mk(exe, trace, script, args + list(own), modea)
        p = sh(cmd, env=dict(env, **extra), check=False)
        if p.returncode != 0 or not os.path.exists(trace):
            yield kind, "did not run: " + p.stderr.strip()[-200:]
            continue
        yield kind, folded(build, trace, extra_folded)
        if kind == "evalprof exact":
            yield "evalprof exact raw", folded(build, trace, extra_folded +
                                               ["--no-compensate"])
        os.unlink(trace)
    if peer:
        for kind, rows in peer_runs(exe, env, tmp, script, args):
            yield kind, rows


def peer_target(res):
    """3.15: evalprof sampled's largest error no larger than
    profiling.sampling's at the same rate."""
    for mine, peer in (("evalprof sampled", "prof.samp 1k"),
                       ("evalprof sampled 10k", "prof.samp 10k")):
        a, b = res.get(mine), res.get(peer)
        if a is not None and b is not None:
            print("    target: %s no further from the truth than %s: %s "
                  "(%.2f vs %.2f points)"
                  % (mine, peer, "met" if a <= b else "NOT met", a, b))


def target_line(res, seconds):
    peer_target(res)
    c = res.get("evalprof exact")
    for kind, label, own in (("evalprof sampled", "sampled", "in-run"),
                             ("evalprof thread", "the sampler thread",
                              "in-run thread")):
        s = res.get(kind)
        if s is not None and c is not None:
            print("    target: %s within 2 points of the truth (%s: %.2f) "
                  "and closer than exact compensated (%s: %.2f vs %.2f)%s"
                  % (label, "met" if s <= 2 else "NOT met", s,
                     "met" if s < c else "NOT met", s, c,
                     "" if seconds >= 10 else
                     "; a %.0f s run (the target is for 10 s or more)"
                     % seconds))
        r = res.get(own)
        if s is not None and r is not None:
            print("    of which: %s's attribution, against its run's own "
                  "rounds, %.2f points (%s); those rounds against the truth "
                  "%.2f points (what running sampled changed in the "
                  "program, and the machine: the truth's own runs are up "
                  "to %.2f apart)"
                  % (label, r[0], "within 2" if r[0] <= 2 else
                     "NOT within 2", r[1], res["spread"]))


def differential(exe, build, env, tmp, reps, seconds, modea, script, names,
                 heading, folded_opts, figure, what):
    """Run a workload of loops and variants (ops.py, phases.py): its
    truth, each evalprof way's row, FIGURE(kind, buckets, pairs) ->
    ({name: ns}, note) giving a tool's figures, where PAIRS maps each row
    NAME to its (loop, variant) as the workload's --truth-out names them;
    returns the --rounds arguments.

    The truth is REPS untraced runs of the very rounds the tools run,
    each loop timed as it ran (--truth-out): the median of each share
    and of each marker's ns per round.  Half of them run before the
    traced runs and half after, so that their spread holds what the
    machine did meanwhile."""
    probe = rounds_truth(exe, env, script, ["--rounds", "3"], tmp, "probe")
    # each row's loop and variant, as the workload names them
    pairs = {n: (probe["per_round"][n]["loop"], probe["per_round"][n]["base"])
             for n in names}
    rounds = rounds_for(probe["round_ns"], seconds)
    args = ["--rounds", str(rounds)]
    plain = [rounds_truth(exe, env, script, args, tmp, "before")
             for _ in range((reps + 1) // 2)]
    # each sampled run's own rounds, timed as it ran
    in_runs = {k: os.path.join(tmp, "in-run-%d.json" % i) for i, k in
               enumerate(("evalprof sampled", "evalprof thread"))}
    for path in in_runs.values():
        if os.path.exists(path):
            os.unlink(path)
    runs = list(traced_runs(exe, build, env, tmp, script, args, modea,
                            folded_opts,
                            lambda kind: ["--truth-out", in_runs[kind]]
                            if kind in in_runs else []))
    plain += [rounds_truth(exe, env, script, args, tmp, "after")
              for _ in range(max(1, reps // 2))]
    shares = [truth_shares(c, names) for c in plain]
    truth = {n: statistics.median(sh[n] for sh in shares) for n in names}
    marker = {n: statistics.median(c["per_round"][n]["marker_ns"]
                                   for c in plain) for n in names}
    spread = max(apart(x, y) for x in shares for y in shares)
    print(heading % (rounds, ", ".join("%s %.1f%%" % (n, truth[n] * 100)
                                       for n in names), len(plain), spread))
    print("    %-20s %6s %6s   %8s %8s  shares" % ("", "max pt", "mean",
                                                   "max %", "mean %"))
    res = {}
    for kind, rows in runs:
        if isinstance(rows, str):
            print("    %-20s %s" % (kind, rows))
            continue
        b, total = buckets(rows, "run_round")
        got, note = figure(kind, b, pairs)
        res[kind] = shares_rows(kind, got, total, truth, marker, rounds,
                                note)
        if kind in in_runs and res[kind] is not None:
            res["in-run" if kind == "evalprof sampled" else "in-run thread"] \
                = in_run_rows(in_runs[kind], got, total, truth, names, b)
    res["spread"] = spread
    print("    %-20s not measured: it times functions, not %s"
          % ("cProfile", what))
    target_line(res, seconds)
    return args


def truth_shares(c, names):
    """{name: share} and the rest, of a --truth-out file's contents."""
    own = {n: c["per_round"][n]["marker_ns"] / c["round_ns"] for n in names}
    own["rest"] = 1 - sum(own[n] for n in names)
    return own


def rounds_truth(exe, env, script, args, tmp, tag):
    """The --truth-out of an untraced run of SCRIPT ARGS."""
    out = os.path.join(tmp, "truth-%s.json" % tag)
    sh([exe, script] + args + ["--truth-out", out], env=env)
    return json.load(open(out))


def apart(a, b):
    """The largest difference of two rows of shares, in points."""
    return max(abs(a[n] - b[n]) * 100 for n in a)


def in_run_rows(path, got, total, truth, names, b):
    """The sampled run's own truth (its loops timed as it ran: loops.py
    --truth-out) and the sampler's error against it; returns that error
    and that truth's distance from TRUTH, in points, or None.  B is the
    sampled run's buckets: the error is given also for the whole loops
    (every sample of the loop less every sample of its variant), the
    sampling alone, where the row's figure also holds what the loop's
    other instructions do differently from the variant's."""
    if not os.path.exists(path):
        print("    %-20s not measured: the sampled run wrote no timings"
              % "in-run truth")
        return None
    c = json.load(open(path))
    own = truth_shares(c, names)
    shares = tool_shares(got, total, names)
    whole = {n: differential_of(b, c["per_round"][n]["loop"],
                                c["per_round"][n]["base"],
                                lambda k: True) / total for n in names}
    whole["rest"] = 1 - sum(whole.values())
    err = apart(shares, own)
    pts = [abs(shares[n] - own[n]) * 100 for n in own]
    mk = {n: c["per_round"][n]["marker_ns"] for n in names}
    pct = [abs(got[n] / c["rounds"] - mk[n]) / mk[n] * 100
           for n in names if mk[n] > 0] or [0.0]
    print("    %-20s %6.2f %6.2f   %7.1f%% %7.1f%%  %s  (the sampled run's "
          "own rounds, each loop timed as it ran; the figures are the row "
          "above's error against them; of whole loops %.2f: %s)"
          % ("in-run truth", err, statistics.mean(pts), max(pct),
             statistics.mean(pct),
             ", ".join("%s %.1f%%" % (n, own[n] * 100) for n in own),
             apart(whole, own),
             ", ".join("%s %.1f%%" % (n, whole[n] * 100) for n in whole)))
    t = dict(truth, rest=1 - sum(truth.values()))
    return err, apart(own, t)


def opcodes(tag, exe, build, env, tmp, reps, seconds, modea):
    script = os.path.join(HERE, "ops.py")
    args = differential(
        exe, build, env, tmp, reps, seconds, modea, script, OPS,
        "  opcodes (%d rounds; the truth: each marker loop's time less "
        "its variant's, the markers and the loads the variant does not "
        "make, as a share of the round: %s (the median of %d untraced "
        "runs of these rounds, up to %.2f points apart); each tool's "
        "figure is the same difference of its marker and load time):",
        ["--ops"],
        lambda kind, b, pairs: (op_times(b, pairs), ""), "opcodes")
    pdir = os.path.join(tmp, "perf")
    p = sh([os.path.join(build, "evalprof"), "perf", "--ops", "-o", pdir,
            "--", exe, script] + args, env=env, check=False)
    shares = {}
    for o in OPS:
        m = re.search(r"^\s*%s\S*\s+.*?([\d.]+)%%" % o, p.stdout, re.M)
        if m:
            shares[o] = float(m.group(1)) / 100
    if p.returncode != 0 or not shares:
        out = p.stderr + p.stdout
        m = re.search(r"no DWARF line tables[^\n]*", out)
        if "opcodes need the interpreter's source tree" in out:
            why = ("no source tree of this interpreter (its eval-loop "
                   "lines are sampled, but the TARGET blocks that name "
                   "their opcodes are in its ceval.c or "
                   "generated_cases.c.h)")
        elif m:
            why = m.group(0)
        else:
            why = ((p.stderr.strip() or p.stdout.strip()).splitlines()
                   or ["no output"])[-1]
        print("    %-20s not measured: %s" % ("perf --ops", why))
    else:
        print("    %-20s %s (shares of the eval function's samples, not of "
              "the loops' whole time: not comparable point for point)"
              % ("perf --ops", ", ".join("%s %.1f%%" % (o, shares[o] * 100)
                                         for o in shares)))


# The loop skeleton the raising loop and its variant share (phases.py's
# raising and raising_base), one of each per iteration in both:
# everything else in the raising loop is the exception's.
SKELETON = ("FOR_ITER", "STORE_FAST", "NOP", "JUMP_BACKWARD", "END_FOR")
PHASE_ROWS = ["exception", "C call"]


def skeleton(name):
    return (name is not None and name != "JUMP_BACKWARD_NO_INTERRUPT"
            and any(is_op(name, o) for o in SKELETON))


def c_call_pick(kind, modea):
    """The buckets that hold time in C code under a call instruction:
    the sampled state [C call] of a stock interpreter's samples, the
    callee's own frame in a stock interpreter's exact trace (its c call
    events), the call instruction itself on the instrumented one (neither
    its exact events nor its sampled folded stacks tell a C callee from
    the instruction that calls it)."""
    if modea:
        return lambda k: is_op(op_of(k), "CALL")
    if kind == "evalprof sampled":
        return lambda k: "[C call]" in k
    return lambda k: any(not (t.startswith("[") or t.startswith("op:"))
                         for t in k)


def phases(tag, exe, build, env, tmp, reps, seconds, modea):
    def figure(kind, b, pairs):
        got = {"exception": differential_of(b, *pairs["exception"],
                                            lambda k: not skeleton(op_of(k))),
               "C call": differential_of(b, *pairs["C call"],
                                         c_call_pick(kind, modea))}
        note = ""
        if kind in ("evalprof sampled", "evalprof thread") and modea and \
                got["exception"] > 0:
            ph = differential_of(b, *pairs["exception"],
                                 lambda k: "[loop error]" in k
                                 or "[loop exception]" in k)
            note = ("; of the exception, %.0f%% in the phases loop error "
                    "and loop exception" % (ph / got["exception"] * 100))
        return got, note

    differential(
        exe, build, env, tmp, reps, seconds, modea,
        os.path.join(HERE, "phases.py"), PHASE_ROWS,
        "  phases (%%d rounds; the truth: the loop that raises and catches "
        "less the same loop not raising, bytes.count on 16 KiB less the "
        "same call on b'', as shares of the round: %%s (the median of "
        "%%d untraced runs of these rounds, up to %%.2f points apart); "
        "the rest is the "
        "eval loop's; each tool's figure is the same difference: "
        "exception = every bucket of the raising loop but its skeleton "
        "(%s), C call = %s):"
        % (" ".join(SKELETON),
           "the call instruction (instrumented: no C-call state in its "
           "stacks)" if modea else
           "the [C call] state sampled, the C callee's frame exact"),
        ["--ops", "--phases"], figure, "phases")


def line_shares(rows, numbers):
    """{name: ns} of the samples whose innermost line tag (file:LINE, of
    lines.py) is each loop's, and the ns of every stack under run_round
    (the round)."""
    by_line = {no: name for name, no in numbers.items()}
    got = dict.fromkeys(numbers, 0)
    total = 0
    for frames, v in rows:
        if frames[-1] == "[evalprof]" or \
                "run_round" not in (frame_name(f) for f in frames):
            continue
        total += v
        for f in reversed(frames):
            m = re.match(r".*lines\.py:(\d+)$", f)
            if m and " (" not in f:
                name = by_line.get(int(m.group(1)))
                if name:
                    got[name] += v
                break
    return got, total


def lines(tag, exe, build, env, tmp, reps, seconds, modea):
    """Line shares (bench/fidelity/lines.py): the sampling tools' share of
    each one-line loop against its untraced share of the round."""
    if modea:
        return
    script = os.path.join(HERE, "lines.py")
    truths, rounds = [], None
    for _ in range(reps):
        out = os.path.join(tmp, "lines-truth.json")
        a = [str(seconds), "--truth", out]
        if rounds is not None:
            a += ["--rounds", str(rounds)]
        sh([exe, script] + a, env=env)
        truths.append(json.load(open(out)))
        rounds = truths[-1]["rounds"]
    numbers = truths[0]["line_numbers"]
    truth = {n: statistics.median(t["lines"][n] / t["round_ns"]
                                  for t in truths) for n in numbers}
    print("  lines (%d rounds; true shares of the round: %s):"
          % (rounds, ", ".join("%s %.1f%%" % (n, truth[n] * 100)
                               for n in numbers)))
    print("    %-20s %6s %6s   shares" % ("", "max pt", "mean"))
    args = [str(seconds), "--rounds", str(rounds)]
    trace = os.path.join(tmp, "l.evp")
    runs = []
    peer = has_peer(exe, env, modea)
    for kind, mk in evalprof_ways(modea, peer):
        if kind == "evalprof exact":
            continue  # exact lines need --lines events: not its question
        cmd, extra = mk(exe, trace, script, args, modea)
        p = sh(cmd, env=dict(env, **extra), check=False)
        if p.returncode != 0 or not os.path.exists(trace):
            runs.append((kind, "did not run: " + p.stderr.strip()[-200:]))
            continue
        runs.append((kind, folded(build, trace, ["--lines"])))
        os.unlink(trace)
    if peer:
        runs += list(peer_runs(exe, env, tmp, script, args))
    res = {}
    for kind, rows in runs:
        if isinstance(rows, str):
            print("    %-20s %s" % (kind, rows))
            continue
        got, total = line_shares(rows, numbers)
        if not total:
            print("    %-20s no stacks under run_round" % kind)
            continue
        pts = [abs(got[n] / total - truth[n]) * 100 for n in numbers]
        res[kind] = max(pts)
        print("    %-20s %6.2f %6.2f   %s" % (
            kind, max(pts), statistics.mean(pts),
            ", ".join("%s %.1f%%" % (n, got[n] / total * 100)
                      for n in numbers)))
    peer_target(res)


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    reps = int(os.environ.get("BENCH_REPS", "3"))
    seconds = float(os.environ.get("BENCH_FIDELITY_SECONDS", "4"))
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("PYTHONPATH", None)
    tenv = dict(env, PYTHONPATH=os.path.join(build, "python"))
    targets = [(tag, exe, tenv, False) for tag, exe in interpreters(build)]
    want = [w for w in os.environ.get("BENCH_PYTHONS", "").split(",") if w]
    for v in ("3.13", "3.11"):
        exe = os.path.join(build, "cpython", v, "evalprof", "python")
        if want and "instrumented" not in want and \
                "instrumented-" + v not in want:
            continue
        if os.path.exists(exe):
            targets.append(("instrumented " + v, exe, env, True))
    print("fidelity: errors against untraced ground truth (median of %d "
          "truth runs; load average %.1f at start)"
          % (reps, os.getloadavg()[0]))
    workloads = [w for w in os.environ.get("BENCH_WORKLOADS", "").split(",")
                 if w]
    with tempfile.TemporaryDirectory(prefix="evp-fidelity-") as tmp:
        for tag, exe, e, modea in targets:
            print("CPython %s (%s)" % (tag, exe))
            for name, fn in (("functions", functions), ("lines", lines),
                             ("opcodes", opcodes), ("phases", phases)):
                if not workloads or name in workloads:
                    fn(tag, exe, build, e, tmp, reps, seconds, modea)
    print("load average %.1f at the end" % os.getloadavg()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
