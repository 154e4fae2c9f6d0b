#!/usr/bin/env python3
"""Damage tests of the evalprof command line.

Runs `evalprof summary|tree|info|export|import` on every kind of bad file
(files cut short, flipped bytes, junk, wrong magic and version, empty, a
directory, a missing file, /dev/null, random bytes, broken text traces)
and on full disks, and checks what a user and a script see:

  - never a signal, never a sanitizer report;
  - a file with nothing readable: a non-zero exit and exactly one line on
    stderr, "evalprof: PATH: reason";
  - a damaged file with something readable: exit 0, the report on stdout,
    warnings on stderr that name a byte offset or a line number;
  - output to a full disk (/dev/full) as stdout: a non-zero exit and
    exactly one line on stderr naming the failure; /dev/full as -o is
    refused in one line (a full file system as -o: test_outputs.py).

usage: cli_damage.py EVALPROF SYNTHETIC
"""
import os
import random
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile

EVALPROF, SYNTHETIC = sys.argv[1], sys.argv[2]
failures = []
checks = 0


def is_device(path):
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(args, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL):
    p = subprocess.run([EVALPROF] + args, stdout=stdout, stderr=subprocess.PIPE,
                       stdin=stdin, timeout=120)
    return p.returncode, p.stdout or b"", p.stderr.decode("utf-8", "replace")


def sane(what, rc, err):
    """No signal, no sanitizer report."""
    global checks
    checks += 1
    if rc < 0:
        fail(f"{what}: killed by {signal.Signals(-rc).name}\n{err}")
        return False
    for marker in ("Sanitizer", "runtime error:", "LeakSanitizer"):
        if marker in err:
            fail(f"{what}: sanitizer report:\n{err}")
            return False
    return True


def expect_fatal(what, args, needle=None, path=None):
    rc, out, err = run(args)
    if not sane(what, rc, err):
        return
    lines = err.splitlines()
    if rc == 0:
        fail(f"{what}: exit 0 on an unreadable file")
    elif len(lines) != 1:
        fail(f"{what}: {len(lines)} lines on stderr (want 1):\n{err}")
    elif not lines[0].startswith("evalprof: "):
        fail(f"{what}: stderr does not start with 'evalprof: ': {lines[0]}")
    elif path is not None and not lines[0].startswith(f"evalprof: {path}: "):
        fail(f"{what}: error does not name the file: {lines[0]}")
    elif needle and needle not in lines[0]:
        fail(f"{what}: error lacks {needle!r}: {lines[0]}")


def expect_readable(what, args, located=("byte ",), warn=True):
    rc, out, err = run(args)
    if not sane(what, rc, err):
        return
    if rc != 0:
        fail(f"{what}: exit {rc} on a readable file:\n{err}")
        return
    lines = err.splitlines()
    if warn and not lines:
        fail(f"{what}: damage read without a warning")
    for l in lines:
        if not l.startswith("evalprof: "):
            fail(f"{what}: stray stderr line: {l}")
        elif not any(s in l for s in located) and "more warnings" not in l \
                and "malformed line" not in l and "missing" not in l \
                and not l.startswith("evalprof: wrote "):
            fail(f"{what}: warning without a location: {l}")


VIEWS = [["summary"], ["summary", "--funcs", "--sort", "total"], ["tree"],
         ["tree", "--format", "raw"], ["info"]]


def mid_line(data, cut):
    """CUT, or the first offset after it that is not just past a newline
    (the timestamps, and so the line lengths, differ from run to run)."""
    while data[cut - 1:cut] == b"\n":
        cut += 1
    return cut


def views(path, out):
    """Every view plus export, the output going to OUT."""
    return [v + [path] for v in VIEWS] + [
        ["export", "--format", "text", "-o", out, path],
        ["export", "--format", "evp", "--zstd", "-o", out, path]]


def main():
    tmp = tempfile.mkdtemp(prefix="evp-cli-damage-")
    try:
        run_all(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checks} runs checked, {len(failures)} failed")
    return 1 if failures else 0


def run_all(tmp):
    j = lambda name: os.path.join(tmp, name)
    good = j("good.evp")
    p = subprocess.run([SYNTHETIC, "-n", "400", "-o", good, "--threads", "2",
                        "--work", "0"], capture_output=True)
    if p.returncode != 0:
        fail(f"synthetic: {p.stderr.decode()}")
        return
    data = open(good, "rb").read()
    out = j("out")

    # Chunk offsets of the intact file.
    chunks, off = [], 16
    while off + 16 <= len(data):
        length = struct.unpack_from("<I", data, off + 8)[0]
        chunks.append(off)
        off += 16 + length

    # The intact trace: exit 0, nothing on stderr.
    for a in views(good, out):
        rc, _, err = run(a)
        if sane(" ".join(a), rc, err) and (rc != 0 or err):
            fail(f"intact: {' '.join(a)}: exit {rc}, stderr {err!r}")
    text = j("good.trace")
    run(["export", "--format", "text", "-o", text, good])
    tdata = open(text, "rb").read()

    # ---- binary files with something readable.
    damaged = {}
    damaged["cut-mid-chunk"] = data[:chunks[len(chunks) // 2] + 20]
    damaged["cut-at-chunk"] = data[:chunks[-2]]
    d = bytearray(data)
    d[chunks[3] + 20] ^= 0xff
    damaged["flipped"] = bytes(d)
    d = bytearray(data)
    struct.pack_into("<I", d, chunks[2] + 8, 1 << 20)
    damaged["bad-length"] = bytes(d)
    damaged["bad-magic"] = b"EVPTRACX" + data[8:]
    damaged["junk-inside"] = data[:chunks[4]] + b"\0junk" * 50 + data[chunks[4]:]
    for name, content in damaged.items():
        path = j(name + ".evp")
        open(path, "wb").write(content)
        for a in views(path, out):
            expect_readable(f"{name}: {' '.join(a[:-1])}", a)

    # ---- text traces with something readable.
    lines = tdata.split(b"\n")
    texts = {
        "malformed-line": b"\n".join(lines[:60] + [b"what is this"] + lines[60:]),
        "cut-mid-line": tdata[:mid_line(tdata, len(tdata) // 2 + 3)],
        "nul-byte": tdata[:1000] + b"\0" + tdata[1000:],
        "out-of-range": b"\n".join(lines[:60] + [b"1.0 9 70000 1"] + lines[60:]),
        "long-line": b"\n".join(lines[:60] + [b"1" * (1 << 20)] + lines[60:]),
    }
    for name, content in texts.items():
        path = j(name + ".trace")
        open(path, "wb").write(content)
        for a in views(path, out):
            expect_readable(f"{name}: {' '.join(a[:-1])}", a,
                            located=("line ",))
        expect_readable(f"{name}: import", ["import", "-o", j("imp.evp"), path],
                        located=("line ",))
    crlf = j("crlf.trace")
    open(crlf, "wb").write(tdata.replace(b"\n", b"\r\n"))
    for a in views(crlf, out):
        expect_readable(f"crlf: {' '.join(a[:-1])}", a, warn=False)
        rc, _, err = run(a)
        if err:
            fail(f"crlf: {' '.join(a[:-1])}: warnings: {err}")

    # ---- nothing readable: one line, non-zero exit.
    fatal = {
        "empty.evp": (b"", "empty file"),
        "header-only.evp": (data[:16], "no readable chunk"),
        "short-header.evp": (data[:11], "truncated file header"),
        "cut-in-first-chunk.evp": (data[:40], "no readable chunk"),
        "junk-after-header.evp": (data[:16] + b"\x5a" * 300, "no readable chunk"),
        "bad-magic.evp": (b"EVPTRACX" + data[8:56], "bad magic at byte 0"),
        "version-2.evp": (data[:8] + b"\x02" + data[9:], "unsupported format version 2"),
        "random.bin": (random.Random(7).randbytes(5000), "not an evalprof trace"),
        "a5.bin": (b"\xa5" * 5000, "not an evalprof trace"),
        "hello.txt": (b"hello\nworld\n", "not an evalprof trace"),
        "comments.trace": (b"# nothing but\n# comments\n", "not an evalprof trace"),
    }
    for name, (content, needle) in fatal.items():
        path = j(name)
        open(path, "wb").write(content)
        for a in views(path, out):
            expect_fatal(f"{name}: {' '.join(a[:-1])}", a, needle, path)
    specials = [(tmp, "directory"), (j("missing.evp"), "No such file")]
    if is_device("/dev/null"):
        specials.append(("/dev/null", "character device"))
    else:
        print("note: /dev/null is not the null device here; left out")
    for path, needle in specials:
        for a in views(path, out):
            expect_fatal(f"{path}: {' '.join(a[:-1])}", a, needle, path)
    for name in ("hello.txt", "comments.trace", "empty.evp", "random.bin"):
        expect_fatal(f"{name}: import",
                     ["import", "-o", j("imp.evp"), j(name)], None, j(name))
    # A binary trace given to import (which reads text traces).
    expect_fatal("binary to import", ["import", "-o", j("imp.evp"), good],
                 None, good)

    # ---- full disks (a full file system as -o: test_outputs.py).
    if is_device("/dev/full"):
        # A device as -o is refused before anything is written.
        for fmt in ("text", "evp", "folded", "chrome", "speedscope"):
            expect_fatal(f"export {fmt} -o /dev/full",
                         ["export", "--format", fmt, "-o", "/dev/full", good],
                         "not a regular file (a character device)")
        expect_fatal("flamegraph -o /dev/full",
                     ["flamegraph", "-o", "/dev/full", good],
                     "not a regular file (a character device)")
        expect_fatal("import -o /dev/full", ["import", "-o", "/dev/full", text],
                     "not a regular file (a character device)")
        with open("/dev/full", "wb") as full:
            for a in [v + [good] for v in VIEWS] + \
                     [["export", "--format", f, good] for f in
                      ("text", "evp", "folded", "chrome", "speedscope")] + \
                     [["flamegraph", good], ["diff", good, good],
                      ["summary", text], ["tree", text]]:
                rc, _, err = run(a, stdout=full)
                what = f"{' '.join(a[:-1])} > /dev/full"
                if not sane(what, rc, err):
                    continue
                lines = err.splitlines()
                if rc == 0:
                    fail(f"{what}: exit 0")
                elif len(lines) != 1 or not lines[0].startswith("evalprof: ") \
                        or "No space left" not in lines[0]:
                    fail(f"{what}: want one line naming the error, got:\n{err}")
    else:
        print("note: no /dev/full here; full-disk checks left out")

    # ---- usage errors are one line too (plus the usage text).
    rc, _, err = run(["summary", "--sort", "sideways", good])
    if sane("bad option", rc, err) and (rc != 2 or not err.startswith("evalprof: ")):
        fail(f"bad --sort: exit {rc}, {err!r}")


if __name__ == "__main__":
    sys.exit(main())
