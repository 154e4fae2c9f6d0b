"""Loops whose time in each phase of the interpreter is known.

    python phases.py --rounds N            the workload (untraced or traced)
    --truth-out OUT.json                   the truth of the rounds run:
                                           each loop timed as it ran
                                           (loops.py)

Three pairs of loops, each a loop and its variant, both run in every
round, so that a profiler's figure can be taken as the same difference
the truth is:

  raising / raising_base   a loop that raises ValueError and catches it,
              and the same loop whose try block does not raise: the
              difference is the exception's whole cost, its raise (the
              instance made in RAISE_VARARGS), the error path (the
              traceback entry), the unwinding (the handler's look-up in
              the exception table) and the handler's instructions
  ccall / ccall_base       a loop calling bytes.count on 16 KiB of zeros,
              and the same call on an empty bytes object: same call, same
              result (0), same instructions; the difference is bytes.count's
              scan alone, time in C code outside the eval function, under
              the call instruction

and a loop of eval-loop work alone (spin: small-integer arithmetic, no
allocation, no call).  The rest of the round, everything but the two
differences, is the eval loop's own: instructions and dispatch.

Every loop iterates over itertools.repeat(None, n), whose items are
never allocated: range's would be an integer allocated per iteration
past 256 and freed by the next STORE_FAST, and the exception's own frees
change what that allocation costs, so that the skeleton (FOR_ITER,
STORE_FAST) would differ between the loop and its variant.  On
instrumented 3.11 the sampler put raising's FOR_ITER at 4.7% of the
round against raising_base's 1.8% with range; with repeat, the two
skeletons at 1.7% and 2.1%.

Each loop is timed as it runs, in the thread's CPU time (the clock the
sampler counts by default, so that a loaded machine's preemption stays
out of the truth), and --truth-out writes per pair the difference of the
loop's time and its variant's (the pair's marker time) and the round's
time: untraced, the true shares.
"""
from itertools import repeat
import sys

import loops

N_RAISE, N_CCALL, N_SPIN = 100000, 1500, 150000

BIG = bytes(16384)
EMPTY = b""
NEEDLE = b"\x01"


def raising(n):
    for _ in repeat(None, n):
        try:
            raise ValueError
        except ValueError:
            pass


def raising_base(n):
    for _ in repeat(None, n):
        try:
            pass
        except ValueError:
            pass


def ccall(n, data, needle):
    for _ in repeat(None, n):
        x = data.count(needle)
    return x


def ccall_base(n, data, needle):
    for _ in repeat(None, n):
        x = data.count(needle)
    return x


def spin(n, a, b):
    for _ in repeat(None, n):
        x = a * b + a - b + a * b - a
    return x


# (pair name, loop, variant, arguments of the loop, of the variant)
PAIRS = [
    ("exception", raising, raising_base, (N_RAISE,), (N_RAISE,)),
    ("C call", ccall, ccall_base, (N_CCALL, BIG, NEEDLE),
     (N_CCALL, EMPTY, NEEDLE)),
]
ALONE = [(spin, (N_SPIN, 1, 2))]


def run_round():
    for _, full, base, fa, ba in PAIRS:
        loops.run(full, *fa)
        loops.run(base, *ba)
    for fn, a in ALONE:
        loops.run(fn, *a)



def main():
    a = sys.argv[1:]
    loops.main(a, run_round,
               [(n, f.__name__, b.__name__) for n, f, b, _, _ in PAIRS])


if __name__ == "__main__":
    main()
