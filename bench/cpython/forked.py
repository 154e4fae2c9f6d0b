"""An instrumented interpreter's sampled mode against the same interpreter
untraced, in two processes of one start: where this VM's speed from one
process to the next cannot move the ratio.

    EVALPROF=OUT.evp EVALPROF_MODE=sample \\
        python forked.py WORKLOAD SCALE PAIRS CPU

Run by the instrumented interpreter in sample mode, or by a stock one
(evalprof on PYTHONPATH), which then starts the same session through
evalprof.start(sample=True, follow_fork=False, rate=EVALPROF_SAMPLE_RATE),
so that the two kinds of interpreter are measured alike.  Without
EVALPROF_MODE=sample both run untraced: the ratios then show the
method's own spread.  After one chunk of
WORKLOAD ("demo": examples/workload's three parts; "callheavy":
bench/modeb/callheavy.py) at SCALE to warm up, it forks a child, which
the recorder leaves untraced (EVALPROF_FORK unset: the child's recorder
stops, `_PyEvalprof_Sampling` is 0 and every call of the eval function
from C runs the untraced copy).  The two then run PAIRS pairs of chunks
in turn, the order swapped in each pair, over two pipes, so that only
one of them runs at a time.  The parent's chunks run sampled: the
sampled copy of the eval function, the signals, and the writer thread,
whose CPU time is the process's too.

Each chunk is called from C (through functools.partial), so that it
starts a call of the eval function of its own: the child's in the
untraced copy, although the child's own frames (this script's, forked
from the parent's) run on in the sampled one.

Each chunk is timed in its process's CPU time (all its threads): the
parent's signals, and its writer thread's work while the chunk runs
(what the writer does for the chunk's samples during the child's turn is
in neither chunk: the trace's own writer figure, `overhead:`, has it);
and in its main thread's CPU time alone (`parent_thread`,
`child_thread`): the program's own thread, which the signals interrupt
and the recorder's threads (its writer; with EVALPROF_SAMPLE_TIMER=
thread its sampler thread, which reads the thread from outside it) do
not, as long as another CPU is free for them.  Both processes share one
binary and one memory layout, and both run their chunks on CPU CPU: the
main thread is pinned there before the fork (the child, a copy of it,
inherits that).  This VM's two CPUs differ in speed by up to 2x, and a
process tends to stay where it starts: pinned so, an untraced parent and
child measured 0.994-1.015x of each other (medians of 21 pairs,
callheavy at 0.15, stock 3.11.7), unpinned 0.71x and 1.62x.  The
parent's other threads (the recorder's writer, whichever thread started
them: a thread inherits its creator's CPUs, and a stock interpreter's
session starts its writer after the pin and again after the fork) are
given back every CPU the process had once the child is running, as in a
run that nothing pins; pinned with the main thread, they took its CPU
from it, and instrumented 3.13's callheavy measured 1.111x at 1 kHz.
With EVP_BENCH_APART=1 they are given every CPU but the main thread's
instead (where there is one).

Prints one line of JSON: the chunks' CPU ns, the (untraced) child's and
the (sampled) parent's, in pair order; the child's pid; what sampled the
parent ("instrumented", "extension", or null); and the CPUs each of the
parent's threads may use, by thread id ("main" for the main thread).
"""
import functools
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "examples", "workload"))
sys.path.insert(0, os.path.join(TOP, "bench", "modeb"))


def chunk_of(name, scale):
    if name == "callheavy":
        import callheavy
        return functools.partial(callheavy.work, scale)
    import main as demo

    def demo_chunk():
        for _, mod in demo.PARTS:
            mod.workload(scale)
    return functools.partial(demo_chunk)


def timed(chunk):
    """CHUNK's CPU ns: the process's (all its threads), and the calling
    thread's alone."""
    t0, m0 = time.process_time_ns(), time.thread_time_ns()
    chunk()
    return time.process_time_ns() - t0, time.thread_time_ns() - m0


def child(chunk, go, done):
    """Run a chunk at each byte read from GO and write its CPU ns to
    DONE, until "q" or the end of GO; never returns (exit status 0, or 1
    after a traceback on stderr)."""
    try:
        chunk()
        os.write(done, b"ready\n")
        while os.read(go, 1) == b"g":
            os.write(done, b"%d %d\n" % timed(chunk))
    except BaseException:
        import traceback
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def unpin_others(cpus):
    """Let every thread of this process but the calling one run on CPUS;
    return each thread's CPUs, the caller's as "main"."""
    me = threading.get_native_id()
    out = {}
    for name in os.listdir("/proc/self/task"):
        tid = int(name)
        try:
            if tid != me:
                os.sched_setaffinity(tid, cpus)
            out["main" if tid == me else name] = sorted(
                os.sched_getaffinity(tid))
        except (ProcessLookupError, PermissionError):
            pass  # a thread that ended meanwhile
    return out


def main():
    name, scale, pairs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    every = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(sys.argv[4])})  # this thread only
    info = getattr(sys, "_evalprof", None)
    sample = os.environ.get("EVALPROF_MODE") == "sample" and \
        "EVALPROF" in os.environ
    if info is None and sample:
        # a stock interpreter: the same session through the API, which a
        # forked child leaves (follow_fork=False)
        import evalprof
        rate = os.environ.get("EVALPROF_SAMPLE_RATE")
        evalprof.start(os.environ["EVALPROF"], sample=True,
                       follow_fork=False, rate=int(rate) if rate else None)
        producer = "extension"
    elif sample:
        if not isinstance(info, dict) or info.get("mode") != "sample":
            raise SystemExit("forked.py: the interpreter did not start "
                             "sampling (sys._evalprof: %r)" % (info,))
        producer = "instrumented"
    else:
        producer = None  # both untraced: the method's own spread
    chunk = chunk_of(name, scale)
    chunk()
    go_r, go_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_w)
        os.close(done_r)
        child(chunk, go_r, done_w)
    os.close(go_r)
    os.close(done_w)
    replies = os.fdopen(done_r)
    if replies.readline() != "ready\n":
        raise SystemExit("forked.py: the untraced child did not start")
    # the parent's own copies of the pages both share since the fork
    chunk()
    # EVP_BENCH_APART=1: the recorder's threads kept off the main
    # thread's CPU (where another is left), to tell what they cost it by
    # running there from what they cost it from another CPU
    others = set(every)
    apart = others - {int(sys.argv[4])}
    if os.environ.get("EVP_BENCH_APART") == "1" and apart:
        others = apart
    threads = unpin_others(others)

    def untraced():
        os.write(go_w, b"g")
        line = replies.readline()
        if not line:
            raise SystemExit("forked.py: the untraced child ended")
        return tuple(int(v) for v in line.split())

    plain, mine = [], []
    for i in range(pairs):
        if i % 2 == 0:
            plain.append(untraced())
            mine.append(timed(chunk))
        else:
            mine.append(timed(chunk))
            plain.append(untraced())
    os.write(go_w, b"q")
    os.close(go_w)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("forked.py: the untraced child exited %d"
                         % os.waitstatus_to_exitcode(status))
    print(json.dumps({"child": [p for p, _ in plain],
                      "parent": [p for p, _ in mine],
                      "child_thread": [t for _, t in plain],
                      "parent_thread": [t for _, t in mine],
                      "child_pid": pid, "producer": producer,
                      "threads": threads}))


if __name__ == "__main__":
    main()
