"""os.fork and multiprocessing: children do work of their own.

    forks.py fork        os.fork(); the child runs child_work() and leaves
                         through sys.exit (its trace is closed at exit)
    forks.py fork_exit   the same, the child leaving through os._exit
    forks.py mp          multiprocessing with the fork start method
"""
import os
import sys


def child_work():
    return sum(child_square(i) for i in range(100))


def child_square(x):
    return x * x


def parent_work():
    return sum(parent_square(i) for i in range(100))


def parent_square(x):
    return x + x


def mp_target(q):
    q.put(child_work())


def main():
    mode = sys.argv[1]
    if mode in ("fork", "fork_exit"):
        pid = os.fork()
        if pid == 0:
            r = child_work()
            if mode == "fork_exit":
                sys.stdout.flush()
                os._exit(0 if r == 328350 else 1)
            sys.exit(0 if r == 328350 else 1)
        _, status = os.waitpid(pid, 0)
        print("child", pid, os.waitstatus_to_exitcode(status))
    else:
        import multiprocessing as mp
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=mp_target, args=(q,))
        p.start()
        got = q.get()
        p.join()
        print("child", p.pid, p.exitcode, got)
    print("parent", parent_work())


main()
