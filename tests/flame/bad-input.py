#!/usr/bin/env python3
"""Numbers and files that are not what they claim (suite 'flame'):

  - an inline chain with an empty part ("b->") as the first frame: no
    sanitizer report (run under build-asan);
  - a count, pid, tid, period or time too large for its field, in folded
    input (`flamegraph`) or a `perf script` header (`perf --script`): one
    line naming the line and the number, exit 1; the largest values
    allowed still draw;
  - `perf --script` on a file that is mostly not `perf script` text (10 MB
    of random bytes, or a few samples followed by prose): one line, exit 1;
  - numeric options given nan, inf, a negative number, trailing junk, an
    empty string or a number past their range: one line, exit 2;
  - `flamegraph --diff` with a bad, missing or empty side: one line naming
    it, nothing written.

usage: bad-input.py   (EVALPROF: the binary; DATA: tests/flame/data)
"""
import os
import random
import subprocess
import sys
import tempfile

EVP = os.environ["EVALPROF"]
DATA = os.environ.get("DATA") or os.path.join(os.path.dirname(__file__), "data")
failures = 0


def check(what, args, status, needle):
    global failures
    p = subprocess.run([EVP, *args], capture_output=True, timeout=120)
    err = p.stderr.decode(errors="replace")
    lines = err.splitlines()
    problem = None
    if p.returncode != status:
        problem = f"exit {p.returncode}, want {status}"
    elif status and (len(lines) != 1 or not lines[0].startswith("evalprof: ")):
        problem = f"want one 'evalprof: ' line on stderr"
    elif needle and needle not in err:
        problem = f"stderr lacks {needle!r}"
    for marker in ("Sanitizer", "runtime error:"):
        if marker in err:
            problem = "sanitizer report"
    if problem:
        failures += 1
        print(f"FAIL: {what}: {problem}\n{err}")
    else:
        print(f"ok: {what}: {lines[0] if lines else 'exit 0'}")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def main():
    global failures
    with tempfile.TemporaryDirectory() as tmp:
        svg = os.path.join(tmp, "o.svg")
        out = os.path.join(tmp, "out")

        # Folded counts.
        big = "99999999999999999999999999"
        f = write(os.path.join(tmp, "big.folded"), f"x;y 5\na;b {big}\n".encode())
        check("folded count 10^26", ["flamegraph", "-o", svg, f], 1,
              f"line 2: count {big} is out of range")
        f = write(os.path.join(tmp, "edge.folded"), b"a;b 9007199254740993\n")
        check("folded count 2^53+1", ["flamegraph", "-o", svg, f], 1,
              "line 1: count 9007199254740993 is out of range")
        f = write(os.path.join(tmp, "long.folded"), b"a;b 1" + b"0" * 400 + b"\n")
        check("folded count of 401 digits", ["flamegraph", "-o", svg, f], 1,
              "line 1: count 1000000000000000000000000000000 is out of range")
        f = write(os.path.join(tmp, "max.folded"),
                  b"a;b 9007199254740992\na;c 1.5\n")
        check("folded count 2^53", ["flamegraph", "-o", svg, f], 0, None)

        # perf script headers.
        stack = "\n\tffffffff81000000 do_work+0x10 (/usr/bin/prog)\n\n"
        for what, header, needle in [
                ("folded line as perf script", f"a;b {big} x",
                 f"line 1: tid {big} is out of range"),
                ("tid 2^31", "prog 12/2147483648 1.5: cpu-clock:",
                 "line 1: tid 2147483648 is out of range"),
                ("pid 10^20", "prog 100000000000000000000/12 1.5: cpu-clock:",
                 "line 1: pid 100000000000000000000 is out of range"),
                ("period 10^20", "prog 12/12 1.5: 100000000000000000000 cpu-clock:",
                 "line 1: period 100000000000000000000 is out of range"),
                ("time 10^20 s", "prog 12/12 100000000000000000000.5: 1 cpu-clock:",
                 "line 1: time 100000000000000000000 is out of range")]:
            f = write(os.path.join(tmp, "h.script"), (header + stack).encode())
            check(what, ["perf", "--script", f, "-o", out], 1, needle)
        # An inline chain with an empty part: a frame of no bytes, first
        # in the file (under UBSan: no offset applied to a null buffer).
        f = write(os.path.join(tmp, "inline.script"),
                  b"prog 1/1 1.5: 1 cpu-clock:\n\tffff b-> (/x)\n\n")
        check("empty inlined frame", ["perf", "--script", f, "-o", out], 0, None)
        f = write(os.path.join(tmp, "max.script"),
                  ("prog 2147483647/2147483647 18446744072.999999999: "
                   "9007199254740992 cpu-clock:" + stack).encode())
        check("largest header values", ["perf", "--script", f, "-o", out], 0, None)

        # Files that are mostly not perf script output.
        rnd = random.Random(7)
        f = write(os.path.join(tmp, "random.bin"), rnd.randbytes(10 << 20))
        check("10 MB of random bytes", ["perf", "--script", f, "-o", out], 1,
              "not `perf script` output (binary data")
        words = " ".join(rnd.choice(["lorem", "ipsum", "dolor", "sit", "amet"])
                         for _ in range(40000))
        edge = open(os.path.join(DATA, "edge.script"), "rb").read()
        prose = "\n".join(words[i:i + 70] for i in range(0, len(words), 70))
        f = write(os.path.join(tmp, "mixed.txt"), edge + prose.encode())
        check("samples then prose", ["perf", "--script", f, "-o", out], 1,
              "lines are not sample headers or stack lines")
        check("committed perf script", ["perf", "--script",
              os.path.join(DATA, "edge.script"), "-o", out], 0, None)

        # Numeric options.
        good = write(os.path.join(tmp, "good.folded"), b"a;b 1\n")
        script = os.path.join(DATA, "edge.script")
        bad = ["nan", "-nan", "inf", "-1", "1x", "", "1e999",
               "99999999999999999999"]
        for opt in ["--minwidth", "--width", "--height", "--max-depth"]:
            for v in bad:
                check(f"flamegraph {opt} {v!r}",
                      ["flamegraph", opt, v, "-o", svg, good], 2, opt)
        for opt in ["-F", "--repeat", "--top", "--threshold"]:
            for v in bad:
                check(f"perf {opt} {v!r}",
                      ["perf", "--script", script, opt, v, "-o", out], 2, opt)
        check("perf -F above 1000000",
              ["perf", "--script", script, "-F", "1000001", "-o", out], 2, "-F")

        # Differential graphs: a count too large, a missing file or an
        # empty side is refused in one line naming it, nothing written;
        # --negate needs --diff.
        zero = write(os.path.join(tmp, "zero.folded"), b"a;b 0\n")
        huge = write(os.path.join(tmp, "huge.folded"), b"a 99999999999999999999\n")
        for what, args, status, needle in [
                ("--diff, NEW too large", [good, huge], 1, "huge.folded: line 1"),
                ("--diff, BASE missing", [os.path.join(tmp, "nope"), good], 1, "nope"),
                ("--diff, BASE not stacks", [write(os.path.join(tmp, "t.txt"), b"hello\n"), good], 1,
                 "t.txt: no folded stacks"),
                ("--diff, NEW all zero", [good, zero], 1, "zero.folded: every count is zero"),
                ("--diff --negate, BASE all zero", ["--negate", zero, good], 1,
                 "zero.folded: every count is zero: no widths to draw (without --negate"),
        ]:
            if os.path.exists(svg):
                os.unlink(svg)
            check(f"flamegraph {what}", ["flamegraph", "--diff", "-o", svg, *args], status, None)
            p = subprocess.run([EVP, "flamegraph", "--diff", "-o", svg, *args], capture_output=True)
            if needle not in p.stderr.decode(errors="replace") or os.path.exists(svg):
                failures += 1
                print(f"FAIL: flamegraph {what}: {p.stderr!r} lacks {needle!r}, or {svg} written")
        check("flamegraph --negate without --diff", ["flamegraph", "--negate", "-o", svg, good], 2,
              "--negate applies to --diff")
    print(f"{'FAIL' if failures else 'ok'}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
