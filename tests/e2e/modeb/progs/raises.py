"""Exceptions of every kind: raised and caught in one frame, propagated
through several frames, raised by builtins, re-raised by finally and with,
chained, and StopIteration from a Python iterator."""


class Oops(Exception):
    pass


def deep(n):
    if n == 0:
        raise Oops("bottom")
    return deep(n - 1)


def through(n):
    try:
        deep(n)
    except Oops:
        return "caught"


def builtin_error():
    try:
        int("not a number")
    except ValueError:
        return 1
    return 0


def with_finally():
    try:
        try:
            raise KeyError("k")
        finally:
            pass
    except KeyError:
        return 2


class Quiet:
    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        return et is ZeroDivisionError


def in_with():
    with Quiet():
        1 / 0
    return 3


def chained():
    try:
        try:
            {}["missing"]
        except KeyError as e:
            raise RuntimeError("wrapped") from e
    except RuntimeError:
        return 4


class Count:
    def __init__(self, n):
        self.i, self.n = 0, n

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i


def main():
    out = [through(5) for _ in range(4)]
    out.append(builtin_error())
    out.append(with_finally())
    out.append(in_with())
    out.append(chained())
    out.append(sum(Count(10)))
    print(out)


main()
