# A small program with recursion, a generator and C calls, long enough for
# the recorder to hand several buffers over.
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def squares(n):
    for i in range(n):
        yield i * i


def work():
    total = 0
    for _ in range(6):
        total += fib(18)
        total += sum(squares(2000))
        total += len(sorted(str(i) for i in range(500)))
    return total


print(work())
