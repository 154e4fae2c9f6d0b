"""Threads that start, run and end, a generator's frames, calls pushed
and popped all the time: what the sampler thread reads from outside
(sample.sh at 20 kHz, and stress.sh under the sanitizers)."""
import threading
def work(n):
    def f(k):
        return k + 1 if k % 7 else g(k)
    def g(k):
        return sum(range(k % 50))
    s = 0
    for i in range(n):
        s += f(i)
    return s
def gen(n):
    for i in range(n):
        yield i * 2
ts = [threading.Thread(target=work, args=(60000,)) for _ in range(6)]
for t in ts:
    t.start()
x = sum(gen(400000))
for t in ts:
    t.join()
for r in range(100):
    t = threading.Thread(target=work, args=(500,))
    t.start()
    t.join()
print("done", x)
