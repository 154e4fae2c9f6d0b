#!/usr/bin/env python3
"""The files evalprof writes, for every command that writes one.

export (text, evp, folded, chrome, speedscope), import, flamegraph (from a
trace and from folded stacks), perf --script and record (a stock
interpreter) against:

  - a full file system (a small tmpfs when this runs as root) and a
    file-size limit (RLIMIT_FSIZE, always, SIGXFSZ at its default): exit
    1, one line on stderr naming the error, the previous file at the
    output intact, no temporary file left;
  - a symbolic link as the output: written through to its target, the
    link left as it was (outfile.h: the one rule for every writer);
  - a symbolic link planted where the temporary file used to go
    (OUT.tmp<pid>): never followed;
  - an output that is an input (the same name, a hard link, a symbolic
    link): refused with exit 2 before anything is written;
  - a FIFO as the output: refused at once (it used to block), and for
    record before the program runs;
  - /dev/null: allowed, written in place, and left the null device;
  - SIGTERM half-way through a write: the temporary file removed, the
    previous file intact.

usage: test_outputs.py EVALPROF SYNTHETIC DATA_DIR [PYTHON]
"""
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

EVALPROF, SYNTHETIC, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
PYTHON = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
failures = []
checks = 0
MAGIC = b"EVPTRACE"


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(args, limit=None, timeout=120, pre=None):
    """Run evalprof ARGS: (exit status, stderr).  LIMIT: RLIMIT_FSIZE."""
    def child():
        if limit is not None:
            # SIGXFSZ left as it is: evalprof must not be killed by it.
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        if pre:
            pre()
    try:
        p = subprocess.run([EVALPROF] + args, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           timeout=timeout, preexec_fn=child)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    return p.returncode, p.stderr.decode("utf-8", "replace")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def expect_one_line(what, rc, err, want_rc, needle):
    global checks
    checks += 1
    lines = err.splitlines()
    if rc != want_rc:
        fail(f"{what}: exit {rc} (want {want_rc}), stderr: {err!r}")
    elif len(lines) != 1 or not lines[0].startswith("evalprof: "):
        fail(f"{what}: want one line on stderr, got {err!r}")
    elif needle not in lines[0]:
        fail(f"{what}: error lacks {needle!r}: {lines[0]}")


def strays(d, keep):
    """Files in D other than KEEP: temporary files left behind."""
    return sorted(set(os.listdir(d)) - set(keep))


class Commands:
    """Each writer as (name, args(out), input files, output name in dir).

    A command writing into a directory (perf) is given the directory; its
    output file is the one named.
    """

    def __init__(self, tmp):
        j = lambda n: os.path.join(tmp, n)
        self.trace = j("in.evp")
        p = subprocess.run([SYNTHETIC, "-n", "20000", "-o", self.trace,
                            "--threads", "2", "--work", "0"],
                           capture_output=True)
        if p.returncode != 0:
            raise SystemExit(f"synthetic: {p.stderr.decode()}")
        self.text = j("in.trace")
        self.folded = j("in.folded")
        for fmt, path in (("text", self.text), ("folded", self.folded)):
            subprocess.run([EVALPROF, "export", "--format", fmt, "-o", path,
                            self.trace], check=True)
        # Copies: a failing check must never change the source tree.
        self.script = j("in.script")
        shutil.copy(os.path.join(DATA, "py312-startup.script"), self.script)
        self.xscript = j("xcheck.script")
        shutil.copy(os.path.join(DATA, "xcheck.script"), self.xscript)

    def all(self):
        t = self.trace
        cmds = [(f"export {f}",
                 lambda o, f=f, t=t: ["export", "--format", f, "-o", o, t],
                 [t], None)
                for f in ("text", "evp", "folded", "chrome", "speedscope")]
        cmds += [
            ("import", lambda o: ["import", "-o", o, self.text], [self.text],
             None),
            ("flamegraph trace", lambda o: ["flamegraph", "-o", o, t], [t],
             None),
            ("flamegraph folded",
             lambda o: ["flamegraph", "-o", o, self.folded], [self.folded],
             None),
            ("perf --script",
             lambda d: ["perf", "--script", self.script, "-o", d],
             [self.script], "perf.folded"),
            # the reports, with -o instead of standard output
            ("tree", lambda o: ["tree", "-o", o, t], [t], None),
            ("summary", lambda o: ["summary", "--funcs", "-o", o, t], [t],
             None),
            ("info", lambda o: ["info", "-o", o, t], [t], None),
            ("diff", lambda o: ["diff", "-o", o, self.text, t], [t], None),
            ("report", lambda o: ["report", "-o", o, t], [t], None),
        ]
        return cmds, self


def place(tmp, name, fname):
    """(the argument to give, the output file) for a command in TMP."""
    if fname is None:
        return os.path.join(tmp, name), os.path.join(tmp, name)
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    return d, os.path.join(d, fname)


def fill(d):
    """Fill the file system of D to the last byte."""
    fd = os.open(os.path.join(d, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)


def full_disks(tmp, cmds):
    mnt = os.path.join(tmp, "tiny")
    os.mkdir(mnt)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k",
                              "tmpfs", mnt], capture_output=True).returncode == 0
    if not mounted:
        print("note: no tmpfs mount here (not root?): the full file system "
              "is left to the file-size limit")
    try:
        for name, args, _, fname in cmds:
            slug = name.replace(" ", "-").replace("--", "")
            cases = [("RLIMIT_FSIZE", tmp, 64, "File too large")]
            if mounted:
                cases.append(("full tmpfs", mnt, None, "No space left"))
            for how, base, limit, needle in cases:
                d = os.path.join(base, slug)
                os.makedirs(d, exist_ok=True)
                arg, out = place(d, "out", fname)
                write(out, b"previous\n")
                keep = set(os.listdir(os.path.dirname(out)))
                if limit is None:
                    fill(base)
                rc, err = run(args(arg), limit=limit)
                what = f"{name} -o on a {how}"
                expect_one_line(what, rc, err, 1, needle)
                if read(out) != b"previous\n":
                    fail(f"{what}: the previous file was changed")
                left = strays(os.path.dirname(out), keep)
                if left:
                    fail(f"{what}: left {left}")
                if limit is None:
                    os.unlink(os.path.join(base, "filler"))
                shutil.rmtree(d)
    finally:
        if mounted:
            subprocess.run(["umount", mnt])


def symlinks(tmp, cmds):
    """A link as -o: its target is written, the link stays."""
    for name, args, _, fname in cmds:
        d = tempfile.mkdtemp(dir=tmp)
        arg, out = place(d, "out", fname)
        target = os.path.join(d, "elsewhere")
        os.mkdir(target)
        real = os.path.join(target, "real")
        write(real, b"old\n")
        os.symlink(real, out)
        rc, err = run(args(arg))
        global checks
        checks += 1
        if rc != 0:
            fail(f"{name} -o LINK: exit {rc}: {err}")
            continue
        if not os.path.islink(out) or os.readlink(out) != real:
            fail(f"{name} -o LINK: the link was replaced")
        data = read(real)
        if data == b"old\n" or not data:
            fail(f"{name} -o LINK: the link's target was not written")
        left = strays(os.path.dirname(out),
                      [os.path.basename(out), "elsewhere"]) + \
            strays(target, ["real"])
        if fname:
            left = [f for f in left if f not in ("flamegraph.svg",)]
        if left:
            fail(f"{name} -o LINK: left {left}")


def planted(tmp, cmds):
    """A link planted at the temporary name of old (OUT.tmp<pid>)."""
    for name, args, _, fname in cmds:
        d = tempfile.mkdtemp(dir=tmp)
        arg, out = place(d, "out", fname)
        victim = os.path.join(tmp, "victim-" + os.path.basename(d))
        write(victim, b"victim\n")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            fd = os.open(os.devnull, os.O_RDWR)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execv(EVALPROF, [EVALPROF] + args(arg))
        os.close(r)
        for planted_name in (f"{out}.tmp{pid}", f"{out}.part"):
            os.symlink(victim, planted_name)
        os.write(w, b"x")
        os.close(w)
        _, ws = os.waitpid(pid, 0)
        global checks
        checks += 1
        if os.waitstatus_to_exitcode(ws) != 0:
            fail(f"{name}: exit {os.waitstatus_to_exitcode(ws)} with links "
                 "planted beside the output")
        if read(victim) != b"victim\n":
            fail(f"{name}: followed a link planted at {out}.tmp{pid}")
        if not os.path.isfile(out) or os.path.islink(out):
            fail(f"{name}: the output is not a file of its own")


def same_files(tmp, cmds, files):
    """An output that is an input, by every name it can have."""
    for name, args, inputs, fname in cmds:
        src = inputs[0]
        before = read(src)
        d = tempfile.mkdtemp(dir=tmp)
        ways = []
        if fname is None:
            ways.append(("the same name", src, src))
        for how in ("a hard link", "a symbolic link"):
            arg, out = place(d, "out-" + how.split()[1], fname)
            (os.link if how == "a hard link" else os.symlink)(src, out)
            ways.append((how, arg, out))
        for how, arg, out in ways:
            rc, err = run(args(arg))
            needle = "refusing to overwrite"
            if name == "import" and how == "the same name":
                needle = "give an output name"
            expect_one_line(f"{name} -o the input ({how})", rc, err, 2,
                            needle)
            if read(src) != before:
                fail(f"{name} -o the input ({how}): the input changed")
                write(src, before)
    # perf: the trace given to --trace as an output.
    d = tempfile.mkdtemp(dir=tmp)
    os.symlink(files.trace, os.path.join(d, "flamegraph.svg"))
    rc, err = run(["perf", "--script", files.xscript, "--trace", files.trace,
                   "-o", d])
    expect_one_line("perf: --trace as flamegraph.svg", rc, err, 2,
                    "refusing to overwrite")


def fifos(tmp, cmds):
    for name, args, _, fname in cmds:
        d = tempfile.mkdtemp(dir=tmp)
        arg, out = place(d, "out", fname)
        os.mkfifo(out)
        rc, err = run(args(arg), timeout=20)
        expect_one_line(f"{name} -o FIFO", rc, err, 2,
                        "not a regular file (a FIFO)")
        if not stat.S_ISFIFO(os.lstat(out).st_mode):
            fail(f"{name} -o FIFO: the FIFO was replaced")


def dev_null(cmds):
    st = os.stat(os.devnull)
    if not stat.S_ISCHR(st.st_mode):
        print("note: /dev/null is not the null device here; left out")
        return
    for name, args, _, fname in cmds:
        if fname:
            continue
        rc, err = run(args(os.devnull))
        global checks
        checks += 1
        if rc != 0 or err not in ("", "evalprof: wrote /dev/null\n"):
            fail(f"{name} -o /dev/null: exit {rc}, stderr {err!r}")
        if not stat.S_ISCHR(os.stat(os.devnull).st_mode):
            fail(f"{name} -o /dev/null: /dev/null was replaced")
            return


def interrupted(tmp):
    """SIGTERM while a command writes: the temporary file goes with it."""
    global checks
    d = tempfile.mkdtemp(dir=tmp)
    big = os.path.join(d, "big.evp")
    subprocess.run([SYNTHETIC, "-n", "3000000", "-o", big, "--work", "0"],
                   check=True, capture_output=True)
    out = os.path.join(d, "out.txt")
    write(out, b"previous\n")
    p = subprocess.Popen([EVALPROF, "export", "--format", "text", "-o", out,
                          big], stderr=subprocess.PIPE)
    seen = False
    deadline = time.time() + 30
    while p.poll() is None and time.time() < deadline and not seen:
        seen = any(f.startswith(".out.txt.") for f in os.listdir(d))
        time.sleep(0.005)
    if not seen:
        p.wait()
        print("note: export finished before it could be interrupted")
        return
    p.send_signal(signal.SIGTERM)
    p.communicate()
    checks += 1
    if p.returncode != -signal.SIGTERM:
        fail(f"export killed by SIGTERM: exit {p.returncode}")
    if read(out) != b"previous\n":
        fail("export killed by SIGTERM: the previous file was changed")
    left = strays(d, ["big.evp", "out.txt"])
    if left:
        fail(f"export killed by SIGTERM: left {left}")


def record(tmp):
    """record: the output through a link, a FIFO, the script itself."""
    if PYTHON is None:
        print("note: no stock interpreter with the extension: record left "
              "out")
        return
    global checks
    d = tempfile.mkdtemp(dir=tmp)
    j = lambda n: os.path.join(d, n)
    script = j("prog.py")
    marker = j("ran")
    write(script, f"open({marker!r}, 'w').close()\n"
          "print(sum(i * i for i in range(1000)))\n".encode())
    code = read(script)

    os.mkfifo(j("fifo"))
    rc, err = run(["record", "-q", "-o", j("fifo"), "--", PYTHON, script],
                  timeout=30)
    expect_one_line("record -o FIFO", rc, err, 2,
                    "not a regular file (a FIFO)")
    if os.path.exists(marker):
        fail("record -o FIFO: the program ran")

    for how, out in (("the same name", script), ("a hard link", j("hard")),
                     ("a symbolic link", j("soft"))):
        if out != script:
            (os.link if how == "a hard link" else os.symlink)(script, out)
        rc, err = run(["record", "-q", "-o", out, "--", PYTHON, script])
        expect_one_line(f"record -o the script ({how})", rc, err, 2,
                        "refusing to overwrite")
        if read(script) != code or os.path.exists(marker):
            fail(f"record -o the script ({how}): the script changed or ran")
            write(script, code)
            if os.path.exists(marker):
                os.unlink(marker)

    os.mkdir(j("runs"))
    real = j("runs/real.evp")
    write(real, b"old\n")
    os.symlink(real, j("link.evp"))
    rc, err = run(["record", "-q", "-o", j("link.evp"), "--", PYTHON, script])
    checks += 1
    if rc != 0:
        fail(f"record -o LINK: exit {rc}: {err}")
    elif not os.path.islink(j("link.evp")) or read(real)[:8] != MAGIC:
        fail("record -o LINK: the link's target does not hold the trace")


def reports_to_files(tmp, files):
    """-o FILE is the output in every command: a report written with it
    holds exactly what standard output gets, and --sort still sorts."""
    t = files.trace
    for args in (["tree"], ["summary", "--funcs", "--sort", "total"],
                 ["info"], ["diff", "--funcs", "--sort", "name", files.text]):
        global checks
        checks += 1
        out = os.path.join(tmp, "report.txt")
        to_stdout = subprocess.run([EVALPROF] + args + [t],
                                   capture_output=True)
        rc, err = run(args[:1] + ["-o", out] + args[1:] + [t])
        if rc != 0 or to_stdout.returncode != 0:
            fail(f"{args[0]} -o: exit {rc} ({err.strip()!r})")
        elif read(out) != to_stdout.stdout:
            fail(f"{args[0]} -o: the file differs from standard output")
        os.unlink(out)


def main():
    tmp = tempfile.mkdtemp(prefix="evp-outputs-")
    try:
        cmds, files = Commands(tmp).all()
        reports_to_files(tmp, files)
        full_disks(tmp, cmds)
        symlinks(tmp, cmds)
        planted(tmp, cmds)
        same_files(tmp, cmds, files)
        fifos(tmp, cmds)
        dev_null(cmds)
        interrupted(tmp)
        record(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checks} runs checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
