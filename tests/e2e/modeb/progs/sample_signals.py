"""Sampled mode beside a program's own signals: its SIGPROF handler on
setitimer(ITIMER_PROF), its SIGALRM on ITIMER_REAL, and a thread that
blocks every signal while it works for 0.3 s of CPU time, then unblocks
them.  Prints what each counted."""
import signal
import threading
import time

prof = [0]
alrm = [0]


def on_prof(signo, frame):
    prof[0] += 1


def on_alrm(signo, frame):
    alrm[0] += 1


def spin(seconds):
    x = 1
    end = time.process_time() + seconds
    while time.process_time() < end:
        for _ in range(1000):
            x = x * 3 % 1000003
    return x


blocked_result = []


def blocked():
    everything = set(signal.valid_signals())
    signal.pthread_sigmask(signal.SIG_BLOCK, everything)
    blocked_result.append(spin(0.3))
    # still blocked (but what cannot be): evalprof unblocked nothing
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    blocked_result.append(
        everything - {signal.SIGKILL, signal.SIGSTOP} <= set(mask))
    # unblocked: the pending timer signal comes, standing for the periods
    # it was held back
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    spin(0.05)


signal.signal(signal.SIGPROF, on_prof)
signal.signal(signal.SIGALRM, on_alrm)
signal.setitimer(signal.ITIMER_PROF, 0.01, 0.01)
signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
t = threading.Thread(target=blocked, name="blocked")
t.start()
spin(0.5)
t.join()
signal.setitimer(signal.ITIMER_PROF, 0)
signal.setitimer(signal.ITIMER_REAL, 0)
# 0.5 s of the main thread's CPU (plus the thread's) at 100 Hz
print("prof", prof[0] >= 20, "alrm", alrm[0] >= 20,
      "blocked", blocked_result[1], "handler", signal.getsignal(
          signal.SIGPROF) is on_prof)
