"""Sampled mode's threads without the GIL.  First a thread sleeps alone
(in a system call, without the GIL); then two threads running Python
loops take turns with the GIL (each waits for it about half the time).
The main thread waits in join() throughout."""
import threading
import time


def spin(until):
    x = i = 0
    while i % 1000 or time.monotonic() < until:
        x = (x + i) % 1000003
        i += 1
    return x


def sleeper(until):
    while time.monotonic() < until:
        time.sleep(0.01)


t = threading.Thread(target=sleeper, args=(time.monotonic() + 0.5,),
                     name="sleeper")
t.start()
t.join()
until = time.monotonic() + 1.0
threads = [threading.Thread(target=spin, args=(until,), name=name)
           for name in ("spin_a", "spin_b")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("done")
