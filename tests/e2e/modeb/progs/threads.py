"""Threads: three named workers doing the same deterministic work.

    threads.py            threads started by the script itself
    threads.py --api      two workers start and wait, then the script calls
                          evalprof.start(threads=True) (trace path in
                          argv[2]) and releases them: threads that were
                          running before tracing began
"""
import sys
import threading


def work(n):
    total = 0
    for i in range(n):
        total += square(i)
    return total


def square(x):
    return x * x


def run(barrier, results, name):
    barrier.wait()
    results[name] = work(200)


def main():
    api = sys.argv[1:2] == ["--api"]
    names = ["worker-1", "worker-2", "worker-3"]
    results = {}
    barrier = threading.Barrier(len(names) + 1 if api else len(names))
    threads = [threading.Thread(target=run, args=(barrier, results, n),
                                name=n) for n in names]
    for t in threads:
        t.start()
    if api:
        import evalprof
        evalprof.start(sys.argv[2], threads=True)
        barrier.wait()
    for t in threads:
        t.join()
    main_total = work(200)
    if api:
        evalprof.stop()
    print(sorted(results.items()), main_total)


main()
