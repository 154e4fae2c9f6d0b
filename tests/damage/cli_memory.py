"""Reading a trace keeps the resident set bounded, not the size of the file.

A trace of 40M events (about 80 MB) is written through the recorder
(recorder_bench, kept with EVALPROF_BENCH_KEEP); summary and info must
each peak below half the file's size, mapped pages included: the
reader gives back the pages it has passed, in the scan and in the replay.

    cli_memory.py EVALPROF RECORDER_BENCH
"""
import os
import subprocess
import sys
import tempfile


def peak_kb(argv):
    """Run ARGV; its exit status and peak resident set in KB."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_maxrss


def main():
    evalprof, bench = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, EVALPROF_BENCH_KEEP="1")
        subprocess.run([bench, "-n", "40000000", "-r", "1", "-d", d],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        path = os.path.join(d, "bench-rec.evp")
        size_kb = os.path.getsize(path) // 1024
        # The peak of a child counts this process's own pages at the fork:
        # a command that reads nothing gives that floor.
        _, floor = peak_kb([evalprof, "help"])
        bad = 0
        for cmd in ("summary", "info"):
            rc, kb = peak_kb([evalprof, cmd, path])
            ok = rc == 0 and kb - floor < size_kb // 2
            print(f"{'ok' if ok else 'FAIL'}: {cmd}: exit {rc}, "
                  f"peak {kb} KB ({floor} KB before reading) for a "
                  f"{size_kb} KB trace")
            bad += not ok
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
