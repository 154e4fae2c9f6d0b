"""async/await: tasks that suspend and resume on the event loop."""
import asyncio


async def leaf(i):
    await asyncio.sleep(0)
    return i * 2


async def worker(name, n):
    total = 0
    for i in range(n):
        total += await leaf(i)
        await asyncio.sleep(0)
    return name, total


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


async def main():
    results = await asyncio.gather(worker("a", 5), worker("b", 3))
    got = [x async for x in agen(4)]
    print(sorted(results), got)


asyncio.run(main())
