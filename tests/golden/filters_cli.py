#!/usr/bin/env python3
"""The tree's pager and the size warning of tree and the timelines.

    filters_cli.py EVALPROF GOLDEN_DIR

  pager     under a pseudo-terminal, `evalprof tree` writes through
            $EVALPROF_PAGER (a script that marks what it was given), then
            $PAGER; not with --no-pager, EVALPROF_PAGER="" or -o FILE, and
            never when standard output is a pipe;
  warning   with EVALPROF_WARN_BYTES below the output's estimate, one
            line on stderr saying its size and the filters that narrow it
            (tree, chrome, speedscope); none with a filter or under it;
  options   a --to not after --from and an unknown --thread: one line,
            exit 2; so is an option export's format does not take (its
            table's declaration), before the trace is read, and nothing
            is written.

Prints one line per failed check and exits 1 when any fails.
"""
import os
import pty
import subprocess
import sys
import tempfile

failures = 0


def check(ok, msg):
    global failures
    if not ok:
        failures += 1
        print("FAIL: " + msg)


def run_pty(argv, env):
    """Run ARGV with stdout (and stdin, stderr) on a pty; its output."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    out = b""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out


def main():
    evalprof, golden = os.path.abspath(sys.argv[1]), sys.argv[2]
    trace = os.path.join(golden, "funcs-nesting", "nesting.trace")
    tmp = tempfile.mkdtemp(prefix="evp-filters-")
    pager = os.path.join(tmp, "pager.sh")
    with open(pager, "w") as f:
        f.write("#!/bin/sh\necho PAGER-MARK; cat; echo PAGER-END\n")
    os.chmod(pager, 0o755)
    base = {k: v for k, v in os.environ.items()
            if k not in ("PAGER", "EVALPROF_PAGER", "EVALPROF_WARN_BYTES")}

    # the pager under a terminal
    for name, extra, args, paged in (
            ("EVALPROF_PAGER", {"EVALPROF_PAGER": pager}, [], True),
            ("PAGER", {"PAGER": pager}, [], True),
            ("--no-pager", {"EVALPROF_PAGER": pager}, ["--no-pager"], False),
            ("EVALPROF_PAGER=''", {"EVALPROF_PAGER": "", "PAGER": pager}, [],
             False)):
        rc, out = run_pty([evalprof, "tree"] + args + [trace],
                          dict(base, **extra))
        check(rc == 0, "pty %s: exit %d" % (name, rc))
        check((b"PAGER-MARK" in out) == paged,
              "pty %s: pager %s" % (name, "not used" if paged else "used"))
        check(b"BEGIN TRACE" in out, "pty %s: no tree" % name)
        if paged and b"PAGER-MARK" in out:
            check(out.index(b"PAGER-MARK") < out.index(b"BEGIN TRACE") <
                  out.index(b"PAGER-END"),
                  "pty %s: the tree did not go through the pager" % name)
    out_file = os.path.join(tmp, "tree.txt")
    rc, out = run_pty([evalprof, "tree", "-o", out_file, trace],
                      dict(base, EVALPROF_PAGER=pager))
    check(rc == 0 and b"PAGER-MARK" not in out, "pty -o FILE: pager used")
    with open(out_file, "rb") as f:
        check(b"BEGIN TRACE" in f.read(), "pty -o FILE: no tree in FILE")
    # a pipe: never
    p = subprocess.run([evalprof, "tree", trace], capture_output=True,
                       env=dict(base, EVALPROF_PAGER=pager, PAGER=pager))
    check(p.returncode == 0 and b"PAGER-MARK" not in p.stdout and
          b"BEGIN TRACE" in p.stdout, "pipe: pager used")

    # the size warning: the nesting trace has 40 events
    for cmd in (["tree"], ["export", "--format", "chrome"],
                ["export", "--format", "speedscope"]):
        name = " ".join(cmd)
        p = subprocess.run([evalprof] + cmd + [trace], capture_output=True,
                           env=dict(base, EVALPROF_WARN_BYTES="100"))
        err = p.stderr.decode()
        check(p.returncode == 0, "%s: exit %d" % (name, p.returncode))
        check(err.count("\n") == 1 and "warning: this output will be about"
              in err and "--from/--to" in err and "--func" in err,
              "%s: no size warning: %r" % (name, err))
        p = subprocess.run([evalprof] + cmd + [trace], capture_output=True,
                           env=base)
        check(p.stderr == b"", "%s: warned under 1 GB: %r" % (name, p.stderr))
        p = subprocess.run([evalprof] + cmd + ["--func", "walk", trace],
                           capture_output=True,
                           env=dict(base, EVALPROF_WARN_BYTES="100"))
        check(p.returncode == 0 and p.stderr == b"",
              "%s --func: warned: %r" % (name, p.stderr))

    # bad filter values
    for args, what in ((["--from", "0.5", "--to", "0.1"], "--to"),
                       (["--to", "x"], "--to"),
                       (["--thread", "99"], "--thread 99")):
        for cmd in (["tree"], ["export", "--format", "chrome"]):
            p = subprocess.run([evalprof] + cmd + args + [trace],
                               capture_output=True, env=base)
            err = p.stderr.decode()
            check(p.returncode == 2 and err.count("\n") == 1 and what in err
                  and p.stdout == b"",
                  "%s %s: exit %d, %r" % (" ".join(cmd), " ".join(args),
                                          p.returncode, err))
    # options a format does not declare: one line naming them, exit 2
    out = os.path.join(tmp, "refused")
    for fmt, args, what in (
            ("pstats", ["--ops"], "--ops has no meaning for pstats"),
            ("callgrind", ["--phases"], "--phases has no meaning for callgrind"),
            ("pprof", ["--lines"], "--lines has no meaning for pprof"),
            ("text", ["--zstd"], "--zstd has no meaning for text"),
            ("pstats", ["--max-depth", "3"],
             "--max-depth has no meaning for pstats"),
            ("chrome", ["--no-compensate"],
             "--no-compensate is for folded, not chrome"),
            ("pprof", ["--thread", "1"], "--func and --thread are for chrome "
             "and speedscope, not pprof")):
        p = subprocess.run([evalprof, "export", "--format", fmt, "-o", out] +
                           args + ["no-such-trace"], capture_output=True,
                           env=base)
        err = p.stderr.decode()
        check(p.returncode == 2 and err.count("\n") == 1 and what in err and
              not os.path.exists(out),
              "export --format %s %s: exit %d, %r" % (fmt, " ".join(args),
                                                      p.returncode, err))
    subprocess.run(["rm", "-rf", tmp])
    if not failures:
        print("all filter, pager and size-warning checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
