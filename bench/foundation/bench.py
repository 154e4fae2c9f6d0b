#!/usr/bin/env python3
"""evalprof foundation benchmarks: trace size and analyzer speed.

Prints, from one run, with baselines measured in the same run:
  * trace bytes per event on the synthetic workload (the discussion's event
    mix and timings): .evp as recorded, .evp with zstd chunks, and the
    discussion's text format (target: .evp at most 3 bytes an event);
  * `evalprof summary` and `evalprof tree` speed on a ~30 MB text trace and
    on the same events as .evp, beside a straightforward Python analyzer
    (target: summary of the text trace under 0.2 s), and replay speed on a
    30-million-event .evp (target: at least 100 million events a second).
Medians of several runs; never fails on time.

    bench.py BUILD_DIR [--quick]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, **kw)


def timed(cmd, rounds):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run(cmd)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def events_in(evalprof, path):
    out = subprocess.run([evalprof, "info", path], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("events:"):
            return int(line.split()[1].replace(",", ""))
    raise SystemExit(f"bench: cannot count events of {path}")


def main(build, quick):
    evalprof = os.path.join(build, "evalprof")
    synthetic = os.path.join(build, "examples", "synthetic")
    baseline = os.path.join(os.path.dirname(__file__), "analyze_baseline.py")
    rounds = 3 if quick else 7
    with tempfile.TemporaryDirectory(prefix="evp-bench-") as d:
        evp = os.path.join(d, "mix.evp")
        zst = os.path.join(d, "mix-zstd.evp")
        txt = os.path.join(d, "mix.trace")
        n = 300000 if quick else 1400000
        run([synthetic, "-n", str(n), "-o", evp])
        run([evalprof, "export", "--format", "evp", "--zstd", "-o", zst, evp])
        run([evalprof, "export", "--format", "text", "-o", txt, evp])
        ev = events_in(evalprof, evp)
        sizes = {p: os.path.getsize(p) for p in (evp, zst, txt)}
        print(f"trace size per event, synthetic workload ({ev:,} events, "
              "the discussion's mix and timings)")
        print(f"  {'text format (discussion; baseline)':44} {sizes[txt] / ev:6.2f} bytes")
        print(f"  {'.evp as recorded':44} {sizes[evp] / ev:6.2f} bytes"
              f"   {sizes[txt] / sizes[evp]:.1f}x smaller (target <= 3 bytes)")
        print(f"  {'.evp, zstd chunks (evalprof export --zstd)':44} {sizes[zst] / ev:6.2f} bytes"
              f"   {sizes[txt] / sizes[zst]:.1f}x smaller")
        print()

        mb = sizes[txt] / 1e6
        t_py = timed([sys.executable, baseline, txt], 1 if quick else 3)
        t_sum_txt = timed([evalprof, "summary", txt], rounds)
        t_sum_evp = timed([evalprof, "summary", evp], rounds)
        t_tree_txt = timed([evalprof, "tree", txt], max(1, rounds // 2))
        t_tree_evp = timed([evalprof, "tree", evp], max(1, rounds // 2))
        print(f"analyzer speed on a {mb:.1f} MB text trace and the same events as .evp "
              f"(median of {rounds})")
        print(f"  {'python analyzer, summary (baseline)':44} {t_py:8.3f} s "
              f"{ev / t_py / 1e6:8.2f} M events/s {mb / t_py:8.1f} MB/s")
        print(f"  {'evalprof summary, text':44} {t_sum_txt:8.3f} s "
              f"{ev / t_sum_txt / 1e6:8.2f} M events/s {mb / t_sum_txt:8.1f} MB/s"
              f"   {t_py / t_sum_txt:.0f}x baseline (target < 0.2 s)")
        print(f"  {'evalprof summary, .evp':44} {t_sum_evp:8.3f} s "
              f"{ev / t_sum_evp / 1e6:8.2f} M events/s "
              f"{sizes[evp] / 1e6 / t_sum_evp:8.1f} MB/s")
        print(f"  {'evalprof tree, text':44} {t_tree_txt:8.3f} s "
              f"{ev / t_tree_txt / 1e6:8.2f} M events/s")
        print(f"  {'evalprof tree, .evp':44} {t_tree_evp:8.3f} s "
              f"{ev / t_tree_evp / 1e6:8.2f} M events/s")
        print()

        big = os.path.join(d, "big.evp")
        nbig = 3000000 if quick else 30000000
        run([synthetic, "-n", str(nbig), "--work", "0", "-o", big])
        evbig = events_in(evalprof, big)
        t_info = timed([evalprof, "export", "--format", "evp", "-o", "/dev/null", big], 1)
        t_sum = timed([evalprof, "summary", big], rounds)
        print(f"replay speed on a {os.path.getsize(big) / 1e6:.0f} MB .evp of "
              f"{evbig:,} events (median of {rounds})")
        print(f"  {'evalprof summary (open, check, replay)':44} {t_sum:8.3f} s "
              f"{evbig / t_sum / 1e6:8.1f} M events/s (target >= 100)")
        print(f"  {'re-encode to .evp (decode+encode baseline)':44} {t_info:8.3f} s "
              f"{evbig / t_info / 1e6:8.1f} M events/s")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0] if args else "build", "--quick" in sys.argv)
