"""A program that exercises every boundary of the eval loop.

Run by the e2e-modea tests under an instrumented interpreter with tracing
on: loops, inlined Python-to-Python calls, calls from C, class creation
through __init__, generators driven inline and from C, coroutines, thrown
and closed generators, exceptions raised, handled and escaping frames,
deep recursion hitting RecursionError, a signal handled through the eval
breaker, and threads.  It prints a checksum so that the traced and the
untraced run can be compared.
"""
import os
import signal
import sys
import threading


def add(a, b):
    return a + b


def loop(n):
    total = 0
    for i in range(n):
        total = add(total, i)           # inlined call
    return total


class Point:
    def __init__(self, x, y):          # CALL_ALLOC_AND_ENTER_INIT in 3.13
        self.x = x
        self.y = y

    def norm1(self):
        return abs(self.x) + abs(self.y)


def gen(n):
    for i in range(n):
        yield i * 2


def consume():
    s = 0
    for v in gen(50):                   # FOR_ITER_GEN: inlined generator
        s += v
    s += sum(gen(50))                   # generator driven from C
    s += sum(map(add, range(20), range(20)))   # Python called from C
    return s


async def co_inner(x):
    return x + 1


async def co_outer():
    t = 0
    for i in range(10):
        t += await co_inner(i)
    return t


def run_coroutine(coro):
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value


class Boom(Exception):
    pass


def raiser(depth):
    if depth == 0:
        raise Boom("bottom")
    return raiser(depth - 1)


def handled():
    caught = 0
    for i in range(20):
        try:
            raiser(i % 4)
        except Boom:
            caught += 1
    try:
        {}["missing"]
    except KeyError:
        caught += 1
    return caught


def thrower():
    try:
        yield 1
    except Boom:
        yield 2
    yield 3


def throw_and_close():
    g = thrower()
    next(g)
    r = g.throw(Boom("in"))
    g.close()
    g2 = thrower()
    next(g2)
    try:
        g2.throw(KeyError("escape"))
    except KeyError:
        r += 1
    return r


def recurse(n):
    return recurse(n + 1)


def too_deep():
    try:
        recurse(0)
    except RecursionError:
        return 1
    return 0


got_signal = []


def on_signal(signum, frame):
    got_signal.append(signum)


def signal_self():
    signal.signal(signal.SIGUSR1, on_signal)
    os.kill(os.getpid(), signal.SIGUSR1)
    for i in range(1000):               # the handler runs at a breaker check
        if got_signal:
            break
    return len(got_signal)


def threaded():
    results = []

    def work(k):
        results.append(loop(2000 + k))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(results)


def main():
    total = loop(5000)
    total += sum(Point(i, -i).norm1() for i in range(100))
    total += consume()
    total += run_coroutine(co_outer())
    total += handled()
    total += throw_and_close()
    total += too_deep()
    total += signal_self()
    total += threaded()
    print("checksum", total)


if __name__ == "__main__":
    main()
    try:
        raiser(3)                       # escapes <module>: loop exiting
    except Boom:
        pass
    sys.exit(0)
