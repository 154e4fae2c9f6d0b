"""A process whose threads stand still where the dump test looks.

Started with a directory: writes its lines' numbers there (lines.json),
and its threads are where they stay a moment later, until it is killed:

  main thread  asleep in time.sleep (blocked, the GIL released)
  waiter       blocked on a threading.Event (a futex that is not the GIL)
  ccall        inside one long C call holding the GIL (sum over a range)
  worker       running Python code: it waits for the GIL, which ccall holds
"""
import json
import os
import sys
import threading
import time

out = sys.argv[1]
started = threading.Event()
never = threading.Event()


def hot(n):
    s = 0
    for i in range(n):  # HOT_LOOP
        s += i
    return s


def worker():
    started.set()
    while True:
        hot(1000)  # WORKER_CALL


def waiter():
    never.wait()  # WAITER_LINE


def ccall():
    time.sleep(0.2)
    return sum(range(10 ** 14))  # CCALL_LINE


def line_of(tag):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + tag):
                return n
    raise LookupError(tag)


threading.Thread(target=waiter, name="waiter", daemon=True).start()
threading.Thread(target=worker, name="worker", daemon=True).start()
started.wait()
lines = {t: line_of(t) for t in ("HOT_LOOP", "WORKER_CALL", "WAITER_LINE",
                                 "CCALL_LINE", "MAIN_SLEEP")}
lines["pid"] = os.getpid()
tmp = os.path.join(out, "lines.json.tmp")
with open(tmp, "w") as f:
    json.dump(lines, f)
os.rename(tmp, os.path.join(out, "lines.json"))
# ccall takes the GIL for good after 0.2 s: this thread is asleep by then
threading.Thread(target=ccall, name="ccall", daemon=True).start()
time.sleep(3600)  # MAIN_SLEEP
