"""What ops.py and phases.py share: a loop timed in the thread's CPU
time, and their command line (--rounds N, --calibrate OUT.json)."""
import sys
import time


def timed(fn, *a):
    t0 = time.thread_time_ns()
    fn(*a)
    return time.thread_time_ns() - t0


def main(argv, calibrate, run_round):
    if argv and argv[0] == "--calibrate":
        calibrate(argv[1])
        return
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv \
        else 5
    for _ in range(rounds):
        run_round()
