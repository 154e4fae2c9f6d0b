"""Opcode-dominated loops whose per-iteration cost is known.

    python ops.py --rounds N            the workload (untraced or traced)
    --truth-out OUT.json                the truth of the rounds run: each
                                        loop timed as it ran (loops.py)
    --operands A,B                      mul's operands (default 1,2)

The workload runs, each round, `mul` (seven small-integer multiplications
per iteration: BINARY_OP), `subs` (dict look-ups: BINARY_SUBSCR), the
variant of each without its marker instructions (`x = a` in place of the
multiplications, `x = v` in place of the look-ups, v the value they
find), and `calls` (calls of a small Python function, timed for the
round's total only: a call's time is mostly its callee's frame).  Each
loop is timed as it runs, in the thread's CPU time (the clock the
sampler counts by default, so that a loaded machine's preemption stays
out of the truth), and --truth-out writes per loop the time of its
marker instructions as the difference from its variant's: untraced,
the ground truth of the marker opcode's share of the round.

The difference holds the markers and the operand loads the variant does
not make, and nothing else: every operand and result is a small integer
(1 and 2: 1*2*1*2... stays at most 16; the look-ups find 1), cached and
never freed, so the loop's STORE_FAST drops the same object as its
variant's.  A variant storing another object costs its stores another
price: `x = d` in place of `x = d[k]` drops a reference to the dict at
each store, where the loop drops one to the small integer 1 (immortal
on 3.12+): on stock 3.13.0 the sampler saw that variant's skeleton
(STORE_FAST, FOR_ITER, JUMP_BACKWARD) take 14.2% of the round against
the loop's 10.3%, and that difference was missing from the truth (12.0%
of the round; 15.7% with `x = v`, whose skeleton the sampler put within
a point of the loop's).
With larger operands (3 and 5, as this loop had before) the result,
50625, is allocated by the last BINARY_OP and freed by the next
iteration's STORE_FAST: a deallocation in the differential that every
tool rightly puts on STORE_FAST (on stock 3.13.0 the sampler put mul's
STORE_FAST at 7.3% of the round against mul_base's 3.5%; with 1 and 2,
4.8% against 4.8%).  The loops iterate over range, whose integers past
256 are allocated and freed in the skeleton of both the loop and its
variant; iterating over itertools.repeat(None, n) instead (as phases.py
does) was measured once, on a machine loaded to 7, and every sampled
error grew (stock 3.11.7 0.44 to 3.86 points, stock 3.13.0 1.63 to 2.92,
instrumented 3.11 2.83 to 3.48, instrumented 3.13 4.16 to 12.81): with
a skeleton that small, the markers' cost in the differential and their
share in a sampler's view part further.  bench/fidelity/run.py takes each
tool's figure as the same difference: its time in the marker opcode and
the loads in the loop, less its time in them in the variant.
"""
import sys

import loops

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


def subs_base(n, v):
    for _ in range(n):
        x = v
        x = v
        x = v
        x = v
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


A, B = 1, 2


def run_round():
    loops.run(mul, N_MUL, A, B)
    loops.run(mul_base, N_MUL, A, B)
    loops.run(subs, N_SUB, D, "key")
    loops.run(subs_base, N_SUB, D["key"])
    loops.run(calls, N_CALL)


# Each marker, its loop and the variant without it (--truth-out).
PAIRS = [("BINARY_OP", "mul", "mul_base"),
         ("BINARY_SUBSCR", "subs", "subs_base")]



def main():
    global A, B
    a = sys.argv[1:]
    if "--operands" in a:  # --operands 3,5: the large-integer form, for
        i = a.index("--operands")  # the comparison above
        A, B = (int(v) for v in a[i + 1].split(","))
        del a[i:i + 2]
    loops.main(a, run_round, PAIRS)


if __name__ == "__main__":
    main()
