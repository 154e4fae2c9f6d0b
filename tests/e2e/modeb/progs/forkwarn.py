"""os.fork() in a program with one thread: no "multi-threaded"
DeprecationWarning (3.12+), traced or not."""
import os

pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("forked twice")
