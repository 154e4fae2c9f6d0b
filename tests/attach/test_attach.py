"""End-to-end tests of `evalprof dump` and `evalprof attach` (suite attach).

Run by Meson once per interpreter and test class, by the host's python3;
the interpreter under test runs the target programs (progs/):

    EVP_TARGET=/path/to/python3.12 EVP_BUILD=build \\
        python3 tests/attach/test_attach.py Dump

EVP_TARGET_KIND is "stock" or "instrumented" (an evalprof-instrumented
interpreter, mode A: tests/prepare.d/cpython.sh builds it); a target
interpreter that is not there, or a class that cannot run with it, exits
77 after a "SKIP: reason" line.  Every check holds what evalprof says to
what the target itself knows: the lines its threads stand at, the
function it spends its time in, its own output and exit status.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGS = os.path.join(HERE, "progs")
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e", "modeb"))

from evptrace import Trace  # noqa: E402

TARGET = os.environ.get("EVP_TARGET", "")
KIND = os.environ.get("EVP_TARGET_KIND", "stock")
BUILD = os.path.abspath(os.environ.get("EVP_BUILD", "build"))
EVALPROF = os.path.join(BUILD, "evalprof")


def prog(name):
    return os.path.join(PROGS, name)


def target_version():
    out = subprocess.run([TARGET, "-c", "import sys; print('%d.%d' % "
                          "sys.version_info[:2])"], capture_output=True,
                         text=True, timeout=60)
    return out.stdout.strip()


class Target:
    """A target program started in a scratch directory, which it writes
    its ready file into; killed at the end."""

    def __init__(self, test, script, *args, env=None, ready="lines.json",
                 stdout=subprocess.DEVNULL):
        self.dir = tempfile.mkdtemp(prefix="evalprof-attach-test-")
        test.addCleanup(shutil.rmtree, self.dir, True)
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([TARGET, prog(script), self.dir]
                                     + list(args), stdout=stdout,
                                     stderr=subprocess.PIPE, env=e)
        test.addCleanup(self.kill)
        self.info = {}
        if ready:
            path = os.path.join(self.dir, ready)
            deadline = time.monotonic() + 60
            while not os.path.exists(path):
                if self.proc.poll() is not None:
                    test.fail("the target exited before it was ready: %s"
                              % self.proc.stderr.read().decode(
                                  errors="replace"))
                if time.monotonic() > deadline:
                    test.fail("the target was not ready within 60 s")
                time.sleep(0.05)
            with open(path) as f:
                self.info = json.load(f)

    @property
    def pid(self):
        return self.proc.pid

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for s in (self.proc.stderr, self.proc.stdout):
            if s:
                s.close()


def evalprof(*args, check=True, timeout=120, **kw):
    r = subprocess.run([EVALPROF] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError("evalprof %s: exit %d\n%s%s"
                             % (" ".join(map(str, args)), r.returncode,
                                r.stdout, r.stderr))
    return r


def thread_named(dump, func):
    """The dumped thread (JSON) whose stack holds FUNC."""
    for th in dump["threads"]:
        if any(f["function"] == func for f in th["frames"]):
            return th
    return None


class Dump(unittest.TestCase):
    """dump reads each thread where the target knows it stands."""

    def wait_parked(self, t, stop=True):
        """The dump once the C call has the GIL (the target's last step)."""
        deadline = time.monotonic() + 30
        while True:
            args = ["dump", "--json"] + ([] if stop else ["--no-stop"])
            d = json.loads(evalprof(*(args + [t.pid])).stdout)
            th = thread_named(d, "ccall")
            if th and th["gil"]:
                return d
            if time.monotonic() > deadline:
                self.fail("the C call never held the GIL: %s"
                          % json.dumps(d, indent=1))
            time.sleep(0.1)

    def test_states_and_lines(self):
        t = Target(self, "parked.py")
        d = self.wait_parked(t)
        lines = t.info
        self.assertEqual(d["pid"], t.pid)
        self.assertTrue(d["stopped"])
        self.assertEqual(d["python"][:4], target_version()[:4])
        self.assertEqual(len(d["threads"]), 4, json.dumps(d, indent=1))
        script = prog("parked.py")

        main = [th for th in d["threads"] if th["main"]]
        self.assertEqual(len(main), 1)
        main = main[0]
        self.assertEqual(main["frames"][0]["function"], "<module>")
        self.assertEqual(main["frames"][0]["file"], script)
        self.assertEqual(main["frames"][0]["line"], lines["MAIN_SLEEP"])
        self.assertFalse(main["gil"])
        self.assertEqual(main["syscall"], "clock_nanosleep")
        # (evalprof names a version's opcodes from its built-in tables;
        # one it has no table for is dumped with numbers, and its calls
        # are not told from the runtime)
        names = d["opcode_names"]
        if names:
            self.assertEqual(main["frames"][0]["instruction"][:4], "CALL")

        cc = thread_named(d, "ccall")
        self.assertEqual(cc["frames"][0]["function"], "ccall")
        self.assertEqual(cc["frames"][0]["line"], lines["CCALL_LINE"])
        self.assertTrue(cc["gil"])
        self.assertFalse(cc["in_eval_loop"])
        if names:
            self.assertTrue(cc["in_c_call"], cc)
            self.assertEqual(cc["state"], "in a C call")

        w = thread_named(d, "worker")
        self.assertTrue(w["waiting_for_gil"], w)
        self.assertEqual(w["state"], "waiting for the GIL")
        names = [f["function"] for f in w["frames"]]
        self.assertIn(names[0], ("hot", "worker"))
        self.assertEqual(names[names.index("worker") - 1:][:1],
                         ["hot"] if names[0] == "hot" else ["worker"])
        wf = w["frames"][names.index("worker")]
        self.assertEqual(wf["line"], lines["WORKER_CALL"])

        wt = thread_named(d, "waiter")
        self.assertFalse(wt["gil"])
        self.assertFalse(wt["waiting_for_gil"])
        self.assertEqual(wt["syscall"], "futex")
        wl = [f for f in wt["frames"] if f["function"] == "waiter"][0]
        self.assertEqual(wl["line"], lines["WAITER_LINE"])
        # every frame names its code's first line at or before its line
        for th in d["threads"]:
            for f in th["frames"]:
                if f["line"]:
                    self.assertLessEqual(f["firstline"], f["line"], f)

    def test_text_says_the_same(self):
        t = Target(self, "parked.py")
        self.wait_parked(t)
        names = self.wait_parked(t)["opcode_names"]
        out = evalprof("dump", t.pid).stdout
        self.assertIn("Process %d: " % t.pid, out)
        self.assertIn("4 threads, stopped for", out)
        script = prog("parked.py")
        self.assertRegex(out, r"main thread: blocked in clock_nanosleep\(\), "
                              r"GIL released\n    <module> \(%s:%d\)"
                         % (re.escape(script), t.info["MAIN_SLEEP"]))
        self.assertRegex(out, r": %s\n    ccall \(%s:%d\)"
                         % ("in a C call" if names else "[^\n]*",
                            re.escape(script), t.info["CCALL_LINE"]))
        self.assertIn(": waiting for the GIL\n", out)

    def test_no_stop(self):
        t = Target(self, "parked.py")
        d = self.wait_parked(t, stop=False)
        self.assertFalse(d["stopped"])
        main = [th for th in d["threads"] if th["main"]][0]
        self.assertEqual(main["frames"][0]["line"], t.info["MAIN_SLEEP"])
        cc = thread_named(d, "ccall")
        self.assertNotIn("in_c_call", cc)  # no program counter: not told
        self.assertEqual(cc["frames"][0]["line"], t.info["CCALL_LINE"])

    def test_process_runs_on(self):
        """A dumped process goes on as before: its sleep is not cut short,
        its output and exit status are its own."""
        t = Target(self, "ticker.py", "1.5", ready="ready",
                   stdout=subprocess.PIPE)
        for _ in range(5):
            evalprof("dump", t.pid)
            time.sleep(0.1)
        out, err = t.proc.communicate(timeout=60)
        self.assertEqual(t.proc.returncode, 7, err)
        rep = json.loads(out)
        self.assertEqual(rep["ticks"], 15)
        self.assertGreaterEqual(rep["slept"], 1.5)
        self.assertEqual(rep["checksum"], rep["expected"])


def instrumented_status():
    """None when the instrumented interpreter under test is there, else
    (exit status, line): tests/prepare.d/cpython.sh's outcome."""
    ver = os.path.basename(os.path.dirname(os.path.dirname(TARGET)))
    path = os.path.join(os.path.dirname(os.path.dirname(TARGET)),
                        "evalprof.status")
    try:
        with open(path) as f:
            status = f.read().strip()
    except OSError:
        status = ""
    if status == "ok" and os.path.exists(TARGET):
        return None
    if status.startswith("failed"):
        return 1, "FAIL: the instrumented CPython %s: %s" % (ver, status)
    return 77, ("SKIP: the instrumented CPython %s is not built here (%s)"
                % (ver, status or "run tests/prepare.d/cpython.sh, or make "
                   "cpython"))


def main(argv):
    if KIND == "instrumented":
        st = instrumented_status()
        if st:
            print(st[1])
            return st[0]
    if not TARGET or not os.path.exists(TARGET):
        print("SKIP: no interpreter %s here" % (TARGET or "(EVP_TARGET)"))
        return 77
    names = argv[1:] or ["Dump"]
    suite = unittest.TestSuite()
    for n in names:
        suite.addTests(unittest.defaultTestLoader.loadTestsFromTestCase(
            globals()[n]))
    r = unittest.TextTestRunner(verbosity=2).run(suite)
    if r.testsRun and len(r.skipped) == r.testsRun:
        print("SKIP: %s" % r.skipped[0][1])
        return 77
    return 0 if r.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
