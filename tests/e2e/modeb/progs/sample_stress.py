"""Sampled mode under stress (run at 20 kHz): allocation, exceptions
raised and caught, os.fork() (the child exits cleanly, the parent waits),
threads created and ended, and a recursion 1000 frames deep.  Prints a
checksum of what it did."""
import os
import sys
import threading

sys.setrecursionlimit(5000)


def alloc(n):
    keep = []
    for i in range(n):
        keep.append([i] * 8)
        if len(keep) > 100:
            keep = keep[50:]
    return len(keep)


def raises(n):
    caught = 0
    for i in range(n):
        try:
            if i % 2:
                raise ValueError(i)
            {}[i]
        except (ValueError, KeyError):
            caught += 1
    return caught


def deep(n):
    if n == 0:
        x = 1
        for i in range(100000):
            x = x * 3 % 1000003
            if i % 500 == 0:
                # an allocation from libc: ThreadSanitizer delivers a
                # signal only at a call it intercepts, and the loop
                # makes none of its own
                x += len(bytearray(4096)) - 4096
        return x
    return deep(n - 1)


def forks(n):
    ok = 0
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            alloc(2000)
            os._exit(7)
        _, status = os.waitpid(pid, 0)
        ok += os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7
    return ok


def threads(n):
    out = []
    for _ in range(n):
        ts = [threading.Thread(target=lambda: out.append(raises(300)))
              for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return len(out)


total = 0
for _ in range(3):
    total += alloc(20000)
    total += raises(20000)
    total += deep(1000) > 0
    total += forks(3)
    total += threads(5)
print(total)
