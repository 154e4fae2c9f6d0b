"""Sampled mode's states: a thread that sleeps (without the GIL) until
the main thread is done, and a main thread that spends its time in a C
call (sum over a range) from one Python loop."""
import threading
import time


done = threading.Event()


def sleeper():
    while not done.is_set():
        time.sleep(0.02)


def in_c(n):
    total = 0
    for _ in range(n):
        total += sum(range(20000))
    return total


t = threading.Thread(target=sleeper, name="sleeper")
t.start()
print(in_c(600))
done.set()
t.join()
