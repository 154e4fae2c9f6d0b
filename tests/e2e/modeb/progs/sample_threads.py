"""Sampled mode: 16 threads, each running a function of its own (work_0
... work_15) that spins for a while; every thread gets a stream named
after it (t0 ... t15)."""
import sys
import threading

N = 16
SRC = "".join(
    "def work_%d(n):\n"
    "    x = 1\n"
    "    for _ in range(n):\n"
    "        x = x * 7 %% 1000003\n"
    "    return x\n" % i for i in range(N))
exec(compile(SRC, __file__, "exec"))

results = [None] * N


def run(i, n):
    results[i] = globals()["work_%d" % i](n)


n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
threads = [threading.Thread(target=run, args=(i, n), name="t%d" % i)
           for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(set(results)), results[0])
