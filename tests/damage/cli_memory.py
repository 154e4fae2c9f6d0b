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

Under AddressSanitizer, every byte of a mapped file the reader touches
costs a shadow byte that stays resident until the file is unmapped: the
bounds are raised by an eighth of the bytes mapped (diff maps its input
twice), which is the sanitizer's, not the reader's; and its quarantine,
which keeps freed blocks from being used again (some 6 MB of diff's peak),
is turned off for these runs.

A trace that names many functions (20,000, of 100-byte names) costs
`diff --funcs` and `summary --funcs` memory in proportion to the names,
not fixed buffers a row: each must peak within FUNCS_LIMIT_KB of the
floor (fixed 1,100- and 4,400-byte buffers a row took 180 MB here).

    cli_memory.py EVALPROF RECORDER_BENCH
"""
import os
import subprocess
import sys
import tempfile

from cliutil import names_trace, sanitized

SIZES = (10_000_000, 40_000_000)
# What reading may cost above the floor, whatever the trace's size (the
# index: some 100 bytes a chunk of 65536 events; a chunk decompressed;
# the views' tables).  Each decompressed chunk kept cost 1 MB every 500K
# events, the pages a chunk shares with the next one 1 MB every 15M, and
# diff's table of 65536 rows 15 MB.
LIMIT_KB = 8 * 1024
GROWTH_KB = 1024
FUNCS = 20000
FUNCS_LIMIT_KB = 60 * 1024

# mappings of the input each command makes (for the shadow, above)
MAPS = {"diff": 2}

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


def many_functions(evalprof, d, floor):
    """The --funcs tables of a trace naming FUNCS functions; failures."""
    text, path = os.path.join(d, "names.trace"), os.path.join(d, "names.evp")
    names_trace(text, FUNCS, 100)
    subprocess.run([evalprof, "import", "-o", path, text], check=True,
                   capture_output=True)
    bad = 0
    for args in (["diff", "--funcs", path, path], ["summary", "--funcs", path]):
        rc, kb = peak_kb([evalprof] + args, d)
        ok = rc == 0 and kb - floor < FUNCS_LIMIT_KB
        print(f"{'ok' if ok else 'FAIL'}: {args[0]} --funcs of {FUNCS} "
              f"functions: exit {rc}, peak {kb} KB ({floor} KB before "
              f"reading, limit {FUNCS_LIMIT_KB} KB more)")
        bad += not ok
    return bad


def main():
    evalprof, bench = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        paths = traces(evalprof, bench, d)
        asan = sanitized(evalprof)
        if asan:
            ENV["ASAN_OPTIONS"] = (ENV.get("ASAN_OPTIONS", "") +
                                   ":quarantine_size_mb=0").lstrip(":")
            print("AddressSanitizer: bounds raised by the shadow of the "
                  "bytes mapped (an eighth); no quarantine")
        # A command that reads nothing gives the floor.
        _, floor = peak_kb([evalprof, "help"], d)
        bad = 0
        for kind in ("plain", "zstd"):
            for cmd, args in COMMANDS.items():
                peaks, shadows = [], []
                for n in SIZES:
                    path = paths[kind, n]
                    size_kb = os.path.getsize(path) // 1024
                    rc, kb = peak_kb([evalprof] + args(path, d), d)
                    shadow = MAPS.get(cmd, 1) * size_kb // 8 if asan \
                        else 0
                    limit = LIMIT_KB + shadow
                    ok = rc == 0 and kb - floor < limit
                    print(f"{'ok' if ok else 'FAIL'}: {cmd}, {kind} trace "
                          f"of {n} events ({size_kb} KB): exit {rc}, peak "
                          f"{kb} KB ({floor} KB before reading, limit "
                          f"{limit} KB more)")
                    bad += not ok
                    peaks.append(kb)
                    shadows.append(shadow)
                grew = peaks[1] - peaks[0]
                # (and a megabyte for what the shadow's estimate misses:
                # 7.3-7.7 MB of growth measured against 7.3 MB estimated)
                limit = GROWTH_KB + shadows[1] - shadows[0] + \
                    (1024 if asan else 0)
                ok = grew < limit
                print(f"{'ok' if ok else 'FAIL'}: {cmd}, {kind}: the peak "
                      f"grew by {grew} KB from {SIZES[0]} to {SIZES[1]} "
                      f"events (limit {limit} KB)")
                bad += not ok
        bad += many_functions(evalprof, d, floor)
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
