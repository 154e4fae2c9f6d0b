"""Sampled mode's overhead measured in one process, where this VM's speed
from one process to the next cannot move it.

    python paired.py WORKLOAD SCALE PAIRS OUT.evp     (PYTHONPATH: evalprof)

WORKLOAD is "demo" (examples/workload's three parts) or "call-heavy"
(callheavy.py).  After one chunk to warm up, it runs PAIRS pairs of
chunks of the workload at SCALE, one untraced and one inside an
evalprof.start(sample=True) ... stop() session at the default rate, in
alternating order, and times each chunk in the CPU time of all the
process's threads (the writer thread's included), from inside the
session: the session's start and its last flush are left out, as they
are a fixed cost per run that bench/modeb/run.py measures apart
(start-up and exit).  The signals' cost lands in the sampled chunk's
CPU time, the kernel's delivery included.  Prints one line of JSON: the
chunks' CPU ns, untraced and sampled, in pair order.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                "examples", "workload"))
sys.path.insert(0, HERE)

import evalprof  # noqa: E402


def chunk_of(name, scale):
    if name == "call-heavy":
        import callheavy
        return lambda: callheavy.work(scale)
    import main as demo
    return lambda: [mod.workload(scale) for _, mod in demo.PARTS]


def main():
    name, scale, pairs, out = (sys.argv[1], float(sys.argv[2]),
                               int(sys.argv[3]), sys.argv[4])
    chunk = chunk_of(name, scale)
    chunk()
    plain, sampled = [], []
    for i in range(pairs):
        for s in ((False, True) if i % 2 == 0 else (True, False)):
            if s:
                evalprof.start(out, sample=True)
            t0 = time.process_time_ns()
            chunk()
            t = time.process_time_ns() - t0
            if s:
                evalprof.stop()
            (sampled if s else plain).append(t)
    print(json.dumps({"untraced": plain, "sampled": sampled}))


if __name__ == "__main__":
    main()
