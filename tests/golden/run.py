#!/usr/bin/env python3
"""Golden-test runner: run evalprof on one case and diff its output.

    run.py EVALPROF CASE_DIR          run one case (one Meson test)
    run.py --check-list DIR NAME...   the case directories under DIR are
                                      exactly NAME... (meson.build lists
                                      every case)

A case is a directory under tests/golden/ (README.md there describes the
cases):

    cmd              evalprof's arguments, one invocation per line ('#'
                     starts a comment, quoting as in the shell); run from
                     inside the case, so paths are relative to it
    prepare          optional: a script of tests/golden/ and its arguments,
                     run first from inside the case (it writes inputs too
                     large to keep in the repository)
    same             optional: lines "A B": after the commands, files A and
                     B of the case must be identical (round trips)
    expected.stdout  evalprof's standard output (of all commands, in order)
    expected.stderr  its standard error; absent means none at all
    expected.status  the last command's exit status; absent means 0 (the
                     commands before it must exit 0)
    anything else    the inputs

The case runs in a scratch copy of its directory, so outputs written by
the commands never land in the source tree.  A mismatch prints a unified
diff and fails.  With EVALPROF_BLESS=1 the expected files are rewritten
from what evalprof printed instead; review the result with `git diff`
before committing it.
"""
import difflib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = ("expected.stdout", "expected.stderr", "expected.status")


def lines_of(path):
    """Non-blank, non-comment lines of a case file, split as the shell would."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = shlex.split(line, comments=True)
            if words:
                out.append(words)
    return out


def read(path, default=b""):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return default


def diff(name, expected, actual):
    a = expected.decode("utf-8", "backslashreplace").splitlines(keepends=True)
    b = actual.decode("utf-8", "backslashreplace").splitlines(keepends=True)
    out = "".join(difflib.unified_diff(a, b, "expected/" + name, "actual/" + name))
    if not out.endswith("\n"):
        out += "\n\\ No newline at end of file\n"
    return out


def run_case(evalprof, case):
    name = os.path.basename(os.path.normpath(case))
    cmds = lines_of(os.path.join(case, "cmd"))
    if not cmds:
        print("%s: cmd names no command" % name)
        return 1
    env = dict(os.environ, LC_ALL="C", TZ="UTC")
    with tempfile.TemporaryDirectory(prefix="evalprof-golden-") as tmp:
        work = os.path.join(tmp, name)
        shutil.copytree(case, work,
                        ignore=lambda d, names: [n for n in names if n in EXPECTED])
        prep = os.path.join(case, "prepare")
        if os.path.exists(prep):
            for words in lines_of(prep):
                script = os.path.join(HERE, words[0])
                r = subprocess.run([sys.executable, script] + words[1:],
                                   cwd=work, env=env)
                if r.returncode != 0:
                    print("%s: prepare: %s exited %d" % (name, words[0], r.returncode))
                    return 1
        out, err, status = b"", b"", 0
        for i, words in enumerate(cmds):
            r = subprocess.run([evalprof] + words, cwd=work, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=300)
            out += r.stdout
            err += r.stderr
            status = r.returncode
            if status < 0:
                print("%s: evalprof %s: killed by signal %d"
                      % (name, " ".join(shlex.quote(w) for w in words), -status))
                sys.stdout.write(err.decode("utf-8", "backslashreplace"))
                return 1
            if status != 0 and i < len(cmds) - 1:
                print("%s: evalprof %s exited %d before the last command"
                      % (name, " ".join(shlex.quote(w) for w in words), status))
                sys.stdout.write(err.decode("utf-8", "backslashreplace"))
                return 1
        failed = 0
        same = os.path.join(case, "same")
        if os.path.exists(same):
            for words in lines_of(same):
                a, b = (os.path.join(work, w) for w in words)
                if read(a, None) is None or read(a) != read(b, None):
                    print("%s: %s and %s differ" % (name, words[0], words[1]))
                    print(diff(words[0], read(a), read(b)), end="")
                    failed = 1

    actual = {"expected.stdout": out, "expected.stderr": err,
              "expected.status": b"%d\n" % status if status else b""}
    if os.environ.get("EVALPROF_BLESS") == "1":
        for fn, data in actual.items():
            path = os.path.join(case, fn)
            if data or fn == "expected.stdout":
                if read(path, None) != data:
                    with open(path, "wb") as f:
                        f.write(data)
                    print("%s: blessed %s" % (name, fn))
            elif os.path.exists(path):
                os.remove(path)
                print("%s: removed %s" % (name, fn))
        return failed

    for fn, data in actual.items():
        want = read(os.path.join(case, fn))
        if fn == "expected.status" and want.strip() == b"0":
            want = b""
        if want != data:
            print("%s: %s differs" % (name, fn))
            print(diff(fn, want, data), end="")
            failed = 1
    if not failed:
        print("%s: ok (%d command%s, %d bytes of output compared)"
              % (name, len(cmds), "s" if len(cmds) > 1 else "", len(out) + len(err)))
    return failed


def check_list(top, names):
    found = sorted(d for d in os.listdir(top)
                   if os.path.isfile(os.path.join(top, d, "cmd")))
    listed = sorted(names)
    if found != listed:
        for d in sorted(set(found) - set(listed)):
            print("case %s is not listed in meson.build" % d)
        for d in sorted(set(listed) - set(found)):
            print("case %s is listed but has no cmd file" % d)
        return 1
    print("%d cases, all listed" % len(found))
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "--check-list":
        return check_list(argv[1], argv[2:])
    if len(argv) != 2:
        sys.stderr.write("usage: run.py EVALPROF CASE_DIR\n"
                         "       run.py --check-list DIR NAME...\n")
        return 2
    return run_case(os.path.abspath(argv[0]), argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
