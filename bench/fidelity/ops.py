"""Opcode-dominated loops whose per-iteration cost is known.

    python ops.py --rounds N            the workload (untraced or traced)
    python ops.py --calibrate OUT.json  the ground truth, untraced

The workload runs three loops: `mul` (seven small-integer multiplications
per iteration: BINARY_OP), `subs` (dict look-ups: BINARY_SUBSCR) and
`calls` (calls of a small Python function, timed for the round's total
only: a call's time is mostly its callee's frame).  --calibrate times each loop
and a variant of it without its marker instructions (`x = a` in place of
the multiplications, and so on), interleaved and repeated, and writes
per loop the time of its marker instructions as the difference: the
ground truth of the marker opcode's share, measured untraced.  The
differential holds the marker's operand loads too (one LOAD_FAST per
marker, a few percent of it): bench/fidelity/run.py
says so beside the figure.
"""
import json
import statistics
import sys
import time

N_MUL, N_SUB, N_CALL = 300000, 300000, 200000


def mul(n, a, b):
    for _ in range(n):
        x = a * b * a * b * a * b * a * b
    return x


def mul_base(n, a, b):
    for _ in range(n):
        x = a
    return x


D = {"key": 1, "other": 2}


def subs(n, d, k):
    for _ in range(n):
        x = d[k]
        x = d[k]
        x = d[k]
        x = d[k]
    return x


def subs_base(n, d, k):
    for _ in range(n):
        x = d
        x = d
        x = d
        x = d
    return x


def f(v):
    return v


def calls(n):
    for i in range(n):
        x = f(i)
    return x


def calls_base(n):
    for i in range(n):
        x = i
    return x


def run_round():
    mul(N_MUL, 3, 5)
    subs(N_SUB, D, "key")
    calls(N_CALL)


def timed(fn, *a):
    t0 = time.perf_counter_ns()
    fn(*a)
    return time.perf_counter_ns() - t0


def calibrate(out, reps=15):
    pairs = {
        "BINARY_OP": (lambda: timed(mul, N_MUL, 3, 5),
                      lambda: timed(mul_base, N_MUL, 3, 5), 7 * N_MUL),
        "BINARY_SUBSCR": (lambda: timed(subs, N_SUB, D, "key"),
                          lambda: timed(subs_base, N_SUB, D, "key"),
                          4 * N_SUB),
    }
    res = {}
    loops = {}
    for name, (full, base, count) in pairs.items():
        fs, bs = [], []
        for _ in range(reps):
            fs.append(full())
            bs.append(base())
        loops[name] = statistics.median(fs)
        res[name] = {"marker_ns": statistics.median(fs) - statistics.median(bs),
                     "loop_ns": statistics.median(fs), "count": count}
    # The calls loop has no opcode truth (a call's time is mostly its
    # callee's frame, which the profilers give to f, not to CALL); it is
    # timed for the round's total.
    cs = [timed(calls, N_CALL) for _ in range(reps)]
    json.dump({"per_round": res,
               "round_ns": sum(loops.values()) + statistics.median(cs)},
              open(out, "w"))


def main():
    a = sys.argv[1:]
    if a and a[0] == "--calibrate":
        calibrate(a[1])
        return
    rounds = int(a[a.index("--rounds") + 1]) if "--rounds" in a else 5
    for _ in range(rounds):
        run_round()


if __name__ == "__main__":
    main()
