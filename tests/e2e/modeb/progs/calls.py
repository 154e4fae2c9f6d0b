"""Deterministic mixed Python: the op-count and call-count test program.

Classes, inheritance and super(), properties, __getitem__ through
subscription, closures, lambdas called from C (sorted), comprehensions,
generators (yield, yield from, send, close), exceptions caught and
re-raised, with-statements, builtins and methods of builtin types.
"""


class Shape:
    def __init__(self, name):
        self.name = name

    def area(self):
        return 0

    def describe(self):
        return "%s:%d" % (self.name, self.area())


class Rect(Shape):
    def __init__(self, w, h):
        super().__init__("rect")
        self.w, self.h = w, h

    def area(self):
        return self.w * self.h

    @property
    def perimeter(self):
        return 2 * (self.w + self.h)


class Grid:
    def __init__(self, n):
        self.cells = []
        for r in range(n):
            self.cells.append([(r * n + c) % 7 for c in range(n)])

    def __getitem__(self, rc):
        r, c = rc
        return self.cells[r][c]

    def total(self):
        n = len(self.cells)
        return sum(self[r, c] for r in range(n) for c in range(n))


def make_adder(k):
    def add(x):
        return x + k
    return add


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def chain(*gens):
    for g in gens:
        yield from g


def accumulator():
    total = 0
    while True:
        got = yield total
        if got is None:
            break
        total += got
    return total


class Resource:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def risky(i):
    if i % 3 == 0:
        raise ValueError(i)
    return i


def guarded(n):
    caught = 0
    for i in range(n):
        try:
            risky(i)
        except ValueError:
            caught += 1
        finally:
            caught += 0
    return caught


def reraise():
    try:
        try:
            risky(0)
        except ValueError:
            raise
    except ValueError as e:
        return e.args[0]


def main():
    shapes = [Rect(w, w + 1) for w in range(1, 30)]
    areas = sorted(shapes, key=lambda s: -s.area())
    text = [s.describe() for s in areas[:5]]
    perims = sum(s.perimeter for s in shapes)
    grid = Grid(12).total()
    adders = [make_adder(k) for k in range(10)]
    added = sum(f(3) for f in adders)
    f = fib(16)
    g = sum(chain(countdown(20), countdown(5)))
    acc = accumulator()
    next(acc)
    for v in range(10):
        acc.send(v)
    acc.close()
    unfinished = countdown(100)
    next(unfinished)
    unfinished.close()
    with Resource() as r:
        names = {k: len(k) for k in ("alpha", "beta", "gamma")}
    lst = []
    for i in range(50):
        lst.append(i * i)
    words = " ".join(str(x) for x in lst[:10]).split()
    c = guarded(30)
    rr = reraise()
    print(text, perims, grid, added, f, g, len(names), r is not None,
          len(words), c, rr)


main()
