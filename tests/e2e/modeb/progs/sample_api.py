"""evalprof.start(sample=True) from the program itself, with a thread
already running (it is sampled from its next call) and one started
later."""
import sys
import threading

import evalprof

stop = threading.Event()


def busy_early():
    x = 1
    while not stop.is_set():
        for _ in range(2000):
            x = x * 3 % 1000003
        step(x)
    return x


def step(x):
    return x


def busy_late(n):
    x = 1
    for _ in range(n):
        x = x * 5 % 1000003
    return x


early = threading.Thread(target=busy_early, name="early")
early.start()
evalprof.start(sys.argv[1], sample=True, rate=4000, clock="wall")
late = threading.Thread(target=busy_late, args=(600000,), name="late")
late.start()
busy_late(600000)
late.join()
stop.set()
early.join()
stats = evalprof.stop()
print("samples", stats["sampling"]["samples"] > 0)
