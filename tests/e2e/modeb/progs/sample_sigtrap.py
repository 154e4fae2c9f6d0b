"""Sampled mode beside a program's own SIGTRAP (the signal the CPU
clock's perf event sends each sample in): a forked child that raises
SIGTRAP with its default disposition dies of it, as it would untraced;
then the program installs a handler of its own while sampled, and after
a while (the writer's rounds) the traps it raises itself reach it, and
only those.  Prints what it saw."""
import os
import resource
import signal
import time


def spin(seconds):
    x = 1
    end = time.process_time() + seconds
    while time.process_time() < end:
        for _ in range(1000):
            x = x * 3 % 1000003
    return x


spin(0.1)
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    spin(0.1)
    signal.raise_signal(signal.SIGTRAP)
    os._exit(0)  # not reached: SIGTRAP's default action ends the child
_, status = os.waitpid(pid, 0)
died = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTRAP

count = [0]


def on_trap(signo, frame):
    count[0] += 1


signal.signal(signal.SIGTRAP, on_trap)
# The writer's rounds (every 50 ms) put evalprof's handler back in front
# of this one; a loaded machine may delay them: until a spin of 50 ms
# takes no trap of the samples' (untraced: the first), up to 10 s.
deadline = time.monotonic() + 10.0
while True:
    time.sleep(0.05)
    count[0] = 0
    spin(0.05)
    if count[0] == 0 or time.monotonic() > deadline:
        break
count[0] = 0
for _ in range(3):
    spin(0.1)
    signal.raise_signal(signal.SIGTRAP)
spin(0.2)
print("child died of SIGTRAP", died, "own traps", count[0],
      "handler", signal.getsignal(signal.SIGTRAP) is on_trap)
