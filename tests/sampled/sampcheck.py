"""What the sampled suite's check scripts share.

    from sampcheck import TMP, check, check_share, finish, make, run, \
        tables, wilson, trials, trials_of

The scripts are run as SCRIPT EVALPROF MKSAMPLED TMPDIR: evalprof to
check, mksampled to write the known-shares traces of sampgen.h, and a
scratch directory.  check() records a failure and goes on; run() stops
the script when evalprof exits otherwise than expected; finish() ends
it, failing when any check did.
"""
import math
import os
import subprocess
import sys

EVP, MK, TMP = sys.argv[1:4]
os.makedirs(TMP, exist_ok=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, status=0):
    r = subprocess.run([EVP, *args], capture_output=True, text=True)
    if r.returncode != status:
        sys.exit(f"FAIL: evalprof {' '.join(args)}: exit {r.returncode}, "
                 f"expected {status}: {r.stderr.strip()}")
    return r


def make(name, *flags):
    """mksampled FLAGS into TMPDIR/NAME; its path."""
    path = os.path.join(TMP, name)
    subprocess.run([MK, *flags, path], check=True)
    return path


def wilson(k, n, trials=None):
    """The 95% Wilson score interval of K of N periods, as fractions, over
    TRIALS samples (default N: every sample one period)."""
    z = 1.959963984540054
    p = k / n
    n = n if trials is None else trials
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0, mid - half), min(1, mid + half)


# The generator's periods by category (sampgen.c's cats[], variants A and
# B) and its weights (stream_samples): a category of 7 periods or more is
# one sample of 5, one of 2 and the rest of 1, so that its squared
# weights sum to its periods + 22.
CATS = {"a": (200, 100, 200, 100, 50, 100, 100, 100, 50),
        "b": (0, 100, 200, 100, 50, 300, 100, 100, 50)}


def trials_of(periods):
    """The effective count, (sum w)^2 / sum w^2, of the samples of
    categories of PERIODS: what the intervals are taken over (fewer than
    the periods, as the weights are uneven)."""
    total = sum(periods)
    w2 = sum(p + 22 * (p >= 7) for p in periods)
    return total * total / w2


def trials(*variants):
    """trials_of() traces of VARIANTS pooled."""
    return trials_of([p for v in variants for p in CATS[v]])


def check_share(name, share, lo, hi, k, n, n_trials=None):
    """A row's share and 95% interval (printed, in %) are K of N's, the
    interval over N_TRIALS samples (default N)."""
    check(abs(share - 100 * k / n) < 0.05,
          f"{name}: share {share}% == {100 * k / n:.2f}%")
    wlo, whi = wilson(k, n, n_trials)
    check(abs(lo - 100 * wlo) < 0.051 and abs(hi - 100 * whi) < 0.051,
          f"{name}: interval {lo}-{hi}% == Wilson "
          f"{100 * wlo:.2f}-{100 * whi:.2f}%")


def tables(out, row, value):
    """{table title: {row name: VALUE(match)}} of summary's share tables,
    each line matching the regular expression ROW (group 1 the name)."""
    got, title = {}, None
    for line in out.splitlines():
        if line and not line.startswith(" ") and line.endswith(":") \
                and not line.startswith("-"):
            title = line[:-1].split(" (")[0]
            got[title] = {}
            continue
        m = row.match(line)
        if m and title:
            got[title][m[1]] = value(m)
    return got


def finish(done):
    if failures:
        sys.exit(f"{len(failures)} checks failed")
    print(done)
