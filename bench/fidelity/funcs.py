"""A program made of functions whose true shares are known.

    python funcs.py SECONDS [--truth OUT.json]

Runs five top-level functions of different characters (integer
arithmetic, string building, dict updates, sorting with a key function,
method calls on small objects) in a fixed round-robin until about
SECONDS have passed, the same number of rounds whatever runs it: the
round count is fixed from SECONDS by a calibration run (--rounds N
overrides it).  With --truth, the program times every call of each
function with perf_counter_ns and writes the totals: the ground truth of
an untraced run, against which bench/fidelity/run.py measures every
profiler.  Two clock reads per call of a function that runs for
milliseconds cost under 0.01% of it.
"""
import json
import sys
import time


def arith(n):
    s = 0
    for i in range(n):
        s += (i * i) % 7 + (i >> 3)
    return s


def strings(n):
    parts = []
    for i in range(n):
        parts.append("%d:%s" % (i, "x" * (i % 5)))
    return len(",".join(parts))


def dicts(n):
    d = {}
    for i in range(n):
        k = i % 257
        d[k] = d.get(k, 0) + i
    return len(d)


def sorting(n):
    data = [(i * 7919) % 1009 for i in range(n)]
    return sorted(data, key=lambda v: -v)[0]


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm1(self):
        return abs(self.x) + abs(self.y)


def methods(n):
    t = 0
    for i in range(n):
        t += Point(i, -i).norm1()
    return t


# (function, argument): each call runs for a few milliseconds.
WORK = [(arith, 40000), (strings, 12000), (dicts, 30000), (sorting, 15000),
        (methods, 8000)]


def one_round(acc):
    for f, n in WORK:
        if acc is None:
            f(n)
        else:
            t0 = time.perf_counter_ns()
            f(n)
            acc[f.__name__] += time.perf_counter_ns() - t0


def main():
    args = sys.argv[1:]
    seconds = float(args[0]) if args else 2.0
    truth = None
    rounds = None
    if "--truth" in args:
        truth = args[args.index("--truth") + 1]
    if "--rounds" in args:
        rounds = int(args[args.index("--rounds") + 1])
    if rounds is None:
        t0 = time.perf_counter()
        one_round(None)
        rounds = max(1, int(seconds / (time.perf_counter() - t0)))
    acc = {f.__name__: 0 for f, _ in WORK} if truth else None
    for _ in range(rounds):
        one_round(acc)
    if truth:
        with open(truth, "w") as f:
            json.dump({"functions": acc, "rounds": rounds}, f)


if __name__ == "__main__":
    main()
