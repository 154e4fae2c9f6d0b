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

Each chunk is timed in its process's CPU time (all its threads).  Both
processes share one binary and one memory layout, and both run their
chunks on CPU CPU: the main thread is pinned there before the fork (the
child, a copy of it, inherits that).  This VM's two CPUs differ in speed
by up to 2x, and a process tends to stay where it starts: pinned so, an
untraced parent and child measured 0.994-1.015x of each other (medians
of 21 pairs, callheavy at 0.15, stock 3.11.7), unpinned 0.71x and 1.62x.
The recorder's threads (the writer, the sampler's), started with the
interpreter, stay free to run on any CPU, as in a run that nothing
pins; pinned with the main thread, they took its CPU from it, and
instrumented 3.13's callheavy measured 1.111x at 1 kHz.

Prints one line of JSON: the chunks' CPU ns, the (untraced) child's and
the (sampled) parent's, in pair order, the child's pid, and what sampled
the parent
("instrumented", "extension", or null).
"""
import functools
import json
import os
import sys
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
    t0 = time.process_time_ns()
    chunk()
    return time.process_time_ns() - t0


def child(chunk, go, done):
    """Run a chunk at each byte read from GO and write its CPU ns to
    DONE, until "q" or the end of GO."""
    chunk()
    os.write(done, b"ready\n")
    while True:
        c = os.read(go, 1)
        if c != b"g":
            os._exit(0)
        os.write(done, b"%d\n" % timed(chunk))


def main():
    name, scale, pairs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
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
    chunk()  # the parent's pages its child's warm-up made copies of

    def untraced():
        os.write(go_w, b"g")
        line = replies.readline()
        if not line:
            raise SystemExit("forked.py: the untraced child ended")
        return int(line)

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
    print(json.dumps({"child": plain, "parent": mine, "child_pid": pid,
                      "producer": producer}))


if __name__ == "__main__":
    main()
