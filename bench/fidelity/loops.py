"""What ops.py and phases.py share: a loop timed in the thread's CPU
time, and their command line (--rounds N, --truth-out OUT.json).

--truth-out writes, after the rounds, the truth of the run itself: each
loop of every round was timed as it ran (two reads of the thread's CPU
clock around it), and each pair's marker time is its loop's total less
its variant's, per round.  Untraced, that is the ground truth
(bench/fidelity/run.py); under a sampler it is the truth of the very
rounds the samples were taken in, on the machine as it was then: a
sampler's error against it is its attribution alone.
"""
import json
import sys
import time

TOTALS = {}


def timed(fn, *a):
    t0 = time.thread_time_ns()
    fn(*a)
    return time.thread_time_ns() - t0


def run(fn, *a):
    """Call FN as a round does: its CPU time is added to its name's."""
    TOTALS[fn.__name__] = TOTALS.get(fn.__name__, 0) + timed(fn, *a)


def in_run_truth(pairs, rounds):
    """The truth of the rounds run: PAIRS is [(name, loop's name,
    variant's name)], and every loop timed is in the round."""
    per = {n: {"marker_ns": (TOTALS.get(f, 0) - TOTALS.get(b, 0)) / rounds,
               "loop": f, "base": b}
           for n, f, b in pairs}
    return {"per_round": per, "round_ns": sum(TOTALS.values()) / rounds,
            "rounds": rounds}


def main(argv, run_round, pairs):
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv \
        else 5
    out = argv[argv.index("--truth-out") + 1] if "--truth-out" in argv \
        else None
    for _ in range(rounds):
        run_round()
    if out:
        with open(out, "w") as f:
            json.dump(in_run_truth(pairs, rounds), f)
