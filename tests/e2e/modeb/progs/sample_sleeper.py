"""The wall clock's bias on a blocked thread: a sleeper thread that
times each time.sleep(0.02) while the main thread holds the GIL running
sum(range(20000)) 3000 times.  Prints the sleeper's calls and mean call
duration: what it spends beyond 20 ms a call is, untraced, mostly waiting
to take the GIL back from the main thread."""
import threading
import time

N = 3000
done = threading.Event()
stats = [0, 0.0]


def sleeper():
    calls, acc = 0, 0.0
    perf_counter = time.perf_counter
    while not done.is_set():
        t0 = perf_counter()
        time.sleep(0.02)
        acc += perf_counter() - t0
        calls += 1
    stats[0], stats[1] = calls, acc


t = threading.Thread(target=sleeper, name="sleeper")
t.start()
total = 0
for _ in range(N):
    total += sum(range(20000))
done.set()
t.join()
calls, acc = stats
print("sleeper calls %d mean %.3f ms gil-wait %.1f%%"
      % (calls, 1e3 * acc / calls, 100.0 * (acc - 0.02 * calls) / acc))
