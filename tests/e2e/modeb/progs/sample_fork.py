"""A sampled program that forks: the parent runs parent_hot, the child
child_hot, each for about 0.3 s of CPU time in burn(), which the parent
ran for 0.1 s before the fork: the parent's samples had given burn to the
recorder already, and the child must name it again.  Prints the child's
pid and exit code."""
import os
import time


def burn(seconds):
    t0 = time.process_time()
    x = 1
    while time.process_time() - t0 < seconds:
        for _ in range(2000):
            x = x * 3 % 1000003
    return x


def parent_hot():
    return burn(0.3)


def child_hot():
    return burn(0.3)


burn(0.1)
pid = os.fork()
if pid == 0:
    child_hot()
    os._exit(0)
parent_hot()
_, status = os.waitpid(pid, 0)
print(pid, os.waitstatus_to_exitcode(status))
