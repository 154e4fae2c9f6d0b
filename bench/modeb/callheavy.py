"""A call-heavy benchmark: recursion, methods, closures, small helpers.

Nearly every instruction is near a call, so the per-frame costs (the
PEP 523 hook, enter/exit events, profilers' call handling) dominate.

    python callheavy.py [SCALE]
"""
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Vec:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def add(self, o):
        return Vec(self.x + o.x, self.y + o.y)

    def dot(self, o):
        return self.x * o.x + self.y * o.y


def scaler(k):
    def scale(v):
        return Vec(v.x * k, v.y * k)
    return scale


def work(scale):
    total = 0
    for _ in range(max(1, round(20 * scale))):
        total += fib(25)
    double = scaler(2)
    acc = Vec(0, 0)
    for i in range(int(2000000 * scale)):
        v = double(Vec(i, -i))
        acc = acc.add(v)
        total += v.dot(acc) % 7
    return total


if __name__ == "__main__":
    print(work(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0))
