"""Calls of generators, coroutines and async generators, for the calls
test: each function's call count in the trace must be cProfile's ncalls
(the call that only creates a generator is not one; every start and
resumption of its frame is)."""
import asyncio


def g(n):
    for i in range(n):
        yield i


def relay():
    yield from g(3)


def closed():
    while True:
        yield 1


def plain(x):
    return x + 1


async def leaf(i):
    await asyncio.sleep(0)
    return plain(i)


async def chain(n):
    total = 0
    for i in range(n):
        total += await leaf(i)
    return total


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


async def amain():
    a = await chain(3)
    b = [x async for x in agen(3)]
    c = await asyncio.gather(chain(2), leaf(5))
    return a, b, c


def main():
    total = 0
    for _ in range(3):
        total += sum(g(2))
    total += sum(relay())
    c = closed()
    next(c)
    c.close()
    print(total, list(map(plain, range(3))), asyncio.run(amain()))


main()
