"""Reading a trace keeps the resident set bounded, not the size of the file.

Traces of 10M and 40M events (about 20 and 80 MB) are written through the
recorder (recorder_bench, kept with EVALPROF_BENCH_KEEP), and each is
rewritten zstd-compressed (export --format evp --zstd: 15 times smaller,
every events chunk compressed).  summary, info, diff, export --format
folded and flamegraph must each peak, mapped pages included, within
LIMIT_KB of a command that reads nothing, and their peak must grow by
less than GROWTH_KB from the small trace to the large one: the reader
gives back the pages it has passed, in the scan and in the replay, and
decompresses one chunk at a time, never keeping what it decompressed.

    cli_memory.py EVALPROF RECORDER_BENCH
"""
import os
import subprocess
import sys
import tempfile

SIZES = (10_000_000, 40_000_000)
# What reading may cost above the floor, whatever the trace's size (the
# index: some 100 bytes a chunk of 65536 events; a chunk decompressed;
# the views' tables).  Each decompressed chunk kept cost 1 MB every 500K
# events, the pages a chunk shares with the next one 1 MB every 15M, and
# diff's table of 65536 rows 15 MB.
LIMIT_KB = 8 * 1024
GROWTH_KB = 1024

COMMANDS = {
    "summary": lambda p, d: ["summary", p],
    "info": lambda p, d: ["info", p],
    "diff": lambda p, d: ["diff", p, p],
    "folded": lambda p, d: ["export", "--format", "folded", "-o",
                            os.path.join(d, "out.folded"), p],
    "flamegraph": lambda p, d: ["flamegraph", "-o", os.path.join(d, "f.svg"),
                                p],
}


# GNU time forks the command from a process of a megabyte: the peak of a
# child of this one counts this process's pages at the fork (some 14 MB,
# under which a reader's peak would not show).
TIME = "/usr/bin/time"
# The commands run without the test runner's MALLOC_PERTURB_: it fills
# what is freed, so a table allocated and never touched whole (diff's)
# would count whole.
ENV = {k: v for k, v in os.environ.items() if k != "MALLOC_PERTURB_"}


def peak_kb(argv, d):
    """Run ARGV; its exit status and peak resident set in KB."""
    if os.access(TIME, os.X_OK):
        out = os.path.join(d, "time.out")
        rc = subprocess.run([TIME, "-f", "%M", "-o", out] + argv, env=ENV,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
        with open(out) as f:
            return rc, int(f.read().split()[-1])
    p = subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_maxrss


def traces(evalprof, bench, d):
    """{(kind, events): path} for plain and zstd traces of SIZES."""
    out = {}
    env = dict(os.environ, EVALPROF_BENCH_KEEP="1")
    for n in SIZES:
        sub = os.path.join(d, str(n))
        os.mkdir(sub)
        subprocess.run([bench, "-n", str(n), "-r", "1", "-d", sub],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        plain = os.path.join(sub, "bench-rec.evp")
        z = os.path.join(sub, "zstd.evp")
        subprocess.run([evalprof, "export", "--format", "evp", "--zstd",
                        "-o", z, plain], check=True)
        out["plain", n], out["zstd", n] = plain, z
    return out


def main():
    evalprof, bench = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        paths = traces(evalprof, bench, d)
        # A command that reads nothing gives the floor.
        _, floor = peak_kb([evalprof, "help"], d)
        bad = 0
        for kind in ("plain", "zstd"):
            for cmd, args in COMMANDS.items():
                peaks = []
                for n in SIZES:
                    path = paths[kind, n]
                    size_kb = os.path.getsize(path) // 1024
                    rc, kb = peak_kb([evalprof] + args(path, d), d)
                    ok = rc == 0 and kb - floor < LIMIT_KB
                    print(f"{'ok' if ok else 'FAIL'}: {cmd}, {kind} trace "
                          f"of {n} events ({size_kb} KB): exit {rc}, peak "
                          f"{kb} KB ({floor} KB before reading, limit "
                          f"{LIMIT_KB} KB more)")
                    bad += not ok
                    peaks.append(kb)
                grew = peaks[1] - peaks[0]
                ok = grew < GROWTH_KB
                print(f"{'ok' if ok else 'FAIL'}: {cmd}, {kind}: the peak "
                      f"grew by {grew} KB from {SIZES[0]} to {SIZES[1]} "
                      f"events (limit {GROWTH_KB} KB)")
                bad += not ok
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
