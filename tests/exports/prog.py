"""The program the export tests trace: nested calls (main, middle,
leaf), recursion (fib, and ping/pong calling each other), a generator
(gen, resumed by the C function sum) and C calls (sum, sorted, len)."""


def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def middle(n):
    return leaf(n) + leaf(n // 2)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def gen(n):
    for i in range(n):
        yield leaf(i)


def ping(n):
    return 0 if n == 0 else pong(n - 1) + 1


def pong(n):
    return 0 if n == 0 else ping(n - 1) + 1


def main():
    t = 0
    for _ in range(20):
        t += middle(300)
    t += fib(15)
    t += sum(gen(50))
    t += len(sorted([3, 1, 2] * 100))
    t += ping(30)
    return t

main()
