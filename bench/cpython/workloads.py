"""Pure-Python workloads for bench/bench-cpython.sh.

    workloads.py NAME SCALE     run workload NAME and print its time (s)

Each workload is timed inside the process, after start-up and imports, so
the figures compare the eval loop and not interpreter start-up.  SCALE
multiplies the work (1 is about 0.3 s on the plain build of a 2-core
machine).  "none" does nothing: its trace measures start-up alone.
"""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def w_fib(scale):
    for _ in range(scale):
        fib(28)


def w_loops(scale):
    total = 0
    for _ in range(scale):
        for i in range(1_000_000):
            if i % 3:
                total += i
            else:
                total -= i >> 1
    return total


class Vec:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def add(self, other):
        return Vec(self.x + other.x, self.y + other.y)

    def dot(self, other):
        return self.x * other.x + self.y * other.y


def w_objects(scale):
    acc = 0.0
    for _ in range(scale):
        v = Vec(0.0, 0.0)
        step = Vec(0.5, 0.25)
        for _ in range(200_000):
            v = v.add(step)
            acc += v.dot(step)
    return acc


def w_strings(scale):
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    count = 0
    for _ in range(scale):
        seen = {}
        for i in range(200_000):
            w = words[i % 5] + str(i % 97)
            seen[w] = seen.get(w, 0) + 1
            if w.startswith("g"):
                count += len(w)
    return count


def gen_squares(n):
    for i in range(n):
        yield i * i


def w_generators(scale):
    total = 0
    for _ in range(scale):
        total += sum(x for x in gen_squares(600_000) if x & 1)
    return total


WORKLOADS = {
    "fib": w_fib,
    "loops": w_loops,
    "objects": w_objects,
    "strings": w_strings,
    "generators": w_generators,
    "none": lambda scale: None,
}

if __name__ == "__main__":
    name, scale = sys.argv[1], int(sys.argv[2])
    t0 = time.perf_counter()
    WORKLOADS[name](scale)
    print("%.6f" % (time.perf_counter() - t0))
