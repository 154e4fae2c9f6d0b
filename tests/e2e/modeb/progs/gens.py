"""Generators with known event counts (see test_modeb.Generators).

produce(5) consumed fully      enter 1, suspend 5, resume 5, exit 1
relay() (yield from produce(3)) enter 1, suspend 3, resume 3, exit 1
    (its produce(3): enter 1, suspend 3, resume 3, exit 1)
stopper() closed after 2 values enter 1, suspend 2, resume 2, exit 1
    (3.13 closes it without resuming the frame: no last resume, no exit)
thrower() thrown into once      enter 1, suspend 1, resume 1, exit 1
never() created, never started  no events (3.11 evaluates it once when it
                                is freed, to throw GeneratorExit in)
"""


def produce(n):
    for i in range(n):
        yield i


def relay():
    yield from produce(3)


def stopper():
    i = 0
    while True:
        yield i
        i += 1


def thrower():
    try:
        yield 1
    except KeyError:
        return "thrown"


def never():
    yield 1


def main():
    a = list(produce(5))
    b = list(relay())
    s = stopper()
    next(s)
    next(s)
    s.close()
    t = thrower()
    next(t)
    try:
        t.throw(KeyError("k"))
    except StopIteration as e:
        r = e.value
    n = never()
    print(a, b, r, n is not None)


main()
