"""A deterministic workload for sample mode: a hot loop whose top
instruction is BINARY_OP, run by the main thread and by THREADS more.

    sampled.py N [THREADS]
"""
import sys
import threading


def hot(n):
    x = 1
    for i in range(n):
        x = x * 3 % 1000003
    return x


def main():
    n = int(sys.argv[1])
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    workers = [threading.Thread(target=hot, args=(n,), name="worker%d" % i)
               for i in range(nthreads)]
    for w in workers:
        w.start()
    result = hot(n)
    for w in workers:
        w.join()
    print("checksum", result)


main()
