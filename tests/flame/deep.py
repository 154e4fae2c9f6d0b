#!/usr/bin/env python3
"""Deep stacks in the folded view and the flame graph (suite 'flame').

A recursion 100,000 calls deep has 5 * 10^9 frames in its folded lines, so
the folded view must never hold its lines: it writes them while walking
its tree, and cuts stacks at --max-depth (1024 by default) into one
"[N deeper frames]" leaf.  Checked here, on text traces made by this
script:

  1. 100,000 nested calls: `export --format folded` and `flamegraph` under
     a 1 GB address-space limit, in seconds; the lines are sorted, add up
     to the traced time, the frames below 1024 are one
     "[98976 deeper frames]" leaf, and stderr has one note saying so;
  2. --max-depth 0 on 30,000 nested calls: all 30,000 lines (900 MB) are
     streamed through a pipe under a 256 MB limit and checked one by one;
  3. --max-depth 3 on a small tree: the exact lines, time kept.

The limits apply when the binary runs under them at all (a sanitizer build
reserves terabytes of address space; then only the output is checked).

  EVALPROF=build/evalprof python3 tests/flame/deep.py
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

EVALPROF = os.environ.get("EVALPROF", "build/evalprof")
GB = 1 << 30
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def stamp(ns):
    return "%d.%09d" % divmod(ns, 10**9)


def nested_trace(path, depth, step=1000):
    """DEPTH nested calls of f, then the returns, STEP ns apart.  Returns
    the traced time in ns."""
    t = 100 * 10**9
    with open(path, "w") as f:
        f.write("# start clock: %s s (on clock)\n" % stamp(t))
        f.write(stamp(t) + " 0\n")
        for _ in range(depth):
            t += step
            f.write("# func: f\n%s 3\n" % stamp(t))
        for _ in range(depth):
            t += step
            f.write(stamp(t) + " 4\n")
        t += step
        f.write(stamp(t) + " 1\n")
    return (2 * depth + 1) * step


def limit_works(limit):
    try:
        p = subprocess.run([EVALPROF, "--version"], capture_output=True,
                           preexec_fn=lambda: resource.setrlimit(
                               resource.RLIMIT_AS, (limit, limit)))
        return p.returncode == 0
    except OSError:
        return False


def run(args, limit):
    """Run evalprof under an address-space limit of LIMIT bytes (0: none,
    or when the binary cannot run under one); returns (status, stdout
    bytes, stderr text, seconds)."""
    pre = None
    if limit and limit_works(limit):
        pre = lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    t0 = time.monotonic()
    p = subprocess.run([EVALPROF] + args, capture_output=True,
                       preexec_fn=pre)
    return (p.returncode, p.stdout, p.stderr.decode(errors="replace"),
            time.monotonic() - t0)


def folded_lines(text):
    lines = []
    for ln in text.splitlines():
        stack, _, value = ln.rpartition(b" ")
        lines.append((stack, int(value)))
    return lines


def deep_capped(tmp):
    depth = 100000
    trace = os.path.join(tmp, "deep.trace")
    total = nested_trace(trace, depth)
    for args in (["export", "--format", "folded"], []):
        if args:
            st, out, err, secs = run(args + [trace], GB)
            what = "export --format folded"
        else:
            svg = os.path.join(tmp, "deep.svg")
            st, _, err, secs = run(["flamegraph", "-o", svg, trace], GB)
            what = "flamegraph"
        print("%s, 100,000 deep, 1 GB limit: status %d, %.2f s"
              % (what, st, secs))
        check(st == 0, "%s: exit status %d (%s)" % (what, st, err.strip()))
        if st:
            continue
        notes = [ln for ln in err.splitlines() if "deeper frames" in ln]
        check(len(notes) == 1 and len(err.splitlines()) == 1,
              "%s: expected one note on stderr, got %r" % (what, err))
        check("1024" in err and "100000" in err,
              "%s: the note names the cap and the depth: %r" % (what, err))
        check(secs < 30, "%s took %.1f s" % (what, secs))
        if what == "flamegraph":
            with open(svg, encoding="utf-8") as f:
                drawing = f.read()
            check("[98976 deeper frames]" in drawing,
                  "flamegraph: no '[98976 deeper frames]' frame")
            continue
        lines = folded_lines(out)
        stacks = [s for s, _ in lines]
        check(stacks == sorted(stacks), "export: lines not sorted")
        check(sum(v for _, v in lines) == total,
              "export: lines add up to %d, traced %d"
              % (sum(v for _, v in lines), total))
        leaf = b";".join([b"f"] * 1024 + [b"[98976 deeper frames]"])
        deep = [v for s, v in lines if s == leaf]
        check(deep == [(2 * (depth - 1024) - 1) * 1000],
              "export: deep leaf %r" % deep)
        check(max(len(s.split(b";")) for s in stacks) == 1025,
              "export: a line deeper than the cap")


def deep_streamed(tmp):
    depth = 30000
    trace = os.path.join(tmp, "streamed.trace")
    total = nested_trace(trace, depth)
    limit = 256 << 20
    pre = None
    if limit_works(limit):
        pre = lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    t0 = time.monotonic()
    p = subprocess.Popen([EVALPROF, "export", "--format", "folded",
                          "--max-depth", "0", trace],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=pre)
    expect = [b"[exit]", b"[init]"] + [b";".join([b"f"] * k)
                                       for k in (1, 2)]
    n = size = added = 0
    bad = None
    for ln in p.stdout:
        size += len(ln)
        stack, _, value = ln.rstrip(b"\n").rpartition(b" ")
        added += int(value)
        if n < 2:
            want = expect[n]
        else:
            k = n - 1  # frames
            want = None if len(stack) != 2 * k - 1 else stack
            if want is not None and stack != b"f;" * (k - 1) + b"f":
                want = None
        if want != stack and bad is None:
            bad = "line %d: %r..." % (n + 1, stack[:40])
        n += 1
    err = p.stderr.read().decode(errors="replace")
    st = p.wait()
    secs = time.monotonic() - t0
    print("export --max-depth 0, 30,000 deep, %s: status %d, %d lines, "
          "%d MB streamed, %.2f s" % ("256 MB limit" if pre else "no limit",
                                      st, n, size >> 20, secs))
    check(st == 0, "--max-depth 0: exit status %d (%s)" % (st, err.strip()))
    check(err == "", "--max-depth 0: stderr %r" % err)
    check(bad is None, "--max-depth 0: %s" % bad)
    check(n == depth + 2, "--max-depth 0: %d lines, expected %d"
          % (n, depth + 2))
    check(added == total, "--max-depth 0: lines add up to %d, traced %d"
          % (added, total))


def small_cap(tmp):
    # main calls a (which calls b, which calls c, which calls d) and x.
    trace = os.path.join(tmp, "small.trace")
    ev = [(0, "0", None), (10, "3", "main"), (20, "3", "a"), (30, "3", "b"),
          (40, "3", "c"), (50, "3", "d"), (60, "4", None), (70, "4", None),
          (80, "3", "c"), (85, "4", None), (90, "4", None), (95, "4", None),
          (100, "3", "x"), (110, "4", None), (120, "4", None),
          (130, "1", None)]
    with open(trace, "w") as f:
        f.write("# start clock: 100.000000000 s (on clock)\n")
        for t, kind, func in ev:
            if func:
                f.write("# func: %s\n" % func)
            f.write("%s %s\n" % (stamp(100 * 10**9 + t), kind))
    st, out, err, _ = run(["export", "--format", "folded", "--max-depth",
                           "3", trace], 0)
    want = (b"[exit] 10\n[init] 10\nmain 25\nmain;a 15\nmain;a;b 25\n"
            b"main;a;b;[2 deeper frames] 35\nmain;x 10\n")
    check(st == 0 and out == want,
          "--max-depth 3: got %r (status %d, %s)" % (out, st, err.strip()))
    check(len(err.splitlines()) == 1 and "deeper than 3 frames" in err,
          "--max-depth 3: stderr %r" % err)
    st, out, err, _ = run(["export", "--format", "folded", trace], 0)
    check(st == 0 and err == "" and b"deeper" not in out,
          "default depth cut a 5-frame stack: %r %r" % (out, err))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        small_cap(tmp)
        deep_capped(tmp)
        deep_streamed(tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("ok: deep stacks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
