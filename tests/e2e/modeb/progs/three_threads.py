"""Three threads: the main thread and two workers it starts, each doing
the same deterministic work (square() called 100 times in each).

    three_threads.py          traced by python -m evalprof / record
    three_threads.py --api P  evalprof.start(P) with the API's defaults
"""
import sys
import threading


def square(x):
    return x * x


def work():
    return sum(square(i) for i in range(100))


def main():
    api = sys.argv[1:2] == ["--api"]
    if api:
        import evalprof
        evalprof.start(sys.argv[2])
    threads = [threading.Thread(target=work, name="worker-%d" % i)
               for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    work()
    if api:
        evalprof.stop()
    print("done")


main()
