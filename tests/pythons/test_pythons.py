"""The interpreters of `make pythons` (tools/pythons.sh), suite 'pythons'.

    EVP_BUILD=build python3 tests/pythons/test_pythons.py Launchers|Errors

Launchers: each launcher in BUILD/pythons behaves like a user's own
python3.X: it is the version it names, sys.executable and /proc/self/exe
are the launcher,
the program sees the host's working directory, files and /proc, nothing
leaks into the environment of the program's children (no PYTHONHOME, no
LD_LIBRARY_PATH), and the children the program starts through
sys.executable (subprocess, multiprocessing's spawn and forkserver, a
virtual environment made with `-m venv --without-pip`) are the same
interpreter again.  Skipped (exit 77, "SKIP: reason") when BUILD/pythons
says the root could not be made here, failed when it says it failed.

Errors: tools/pythons.sh in a cache of its own (EVALPROF_PYTHONS_CACHE)
with an archive that cannot be reached, or a disk without room, says so in
one line, exits 3, leaves no launcher and no partial root, and writes the
status that python/find_interpreters.py turns into skipped tests (and a
failed status into failing ones).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get("EVP_BUILD", "build"))
PYTHONS = os.path.join(BUILD, "pythons")
SCRIPT = os.path.join(TOP, "tools", "pythons.sh")
FIND = os.path.join(TOP, "python", "find_interpreters.py")
VERSIONS = ("3.14", "3.15")


def status():
    try:
        with open(os.path.join(PYTHONS, "status")) as f:
            return f.readline().strip()
    except OSError:
        return "unavailable: no %s/status (make pythons makes it)" % PYTHONS


def run(argv, **kw):
    kw.setdefault("timeout", 120)
    return subprocess.run(argv, capture_output=True, text=True, **kw)


PROBE = r"""
import json, os, sys, sysconfig
print(json.dumps({
    "version": "%d.%d" % sys.version_info[:2],
    "executable": sys.executable,
    "exe": os.path.realpath("/proc/self/exe"),
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "cwd": os.getcwd(),
    "env": {k: os.environ.get(k) for k in ("PYTHONHOME", "PYTHONPATH",
                                           "LD_LIBRARY_PATH", "LD_PRELOAD")},
    "maps": open("/proc/self/maps").read().count("libpython") +
            open("/proc/self/maps").read().count("/python3."),
    "include": sysconfig.get_paths()["include"],
    "stdlib_os": os.__file__,
}))
"""

CHILDREN = r"""
import json, multiprocessing, subprocess, sys

def version(_):
    return "%d.%d" % sys.version_info[:2], sys.executable

if __name__ == "__main__":
    out = {"subprocess": subprocess.run(
        [sys.executable, "-c",
         "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, check=True).stdout.strip()}
    for method in ("spawn", "forkserver", "fork"):
        with multiprocessing.get_context(method).Pool(1) as pool:
            out[method] = pool.map(version, [0])[0]
    print(json.dumps(out))
"""


class Launchers(unittest.TestCase):
    def setUp(self):
        st = status()
        if st.startswith("unavailable"):
            self.skipTest("make pythons: " + st.partition(": ")[2])
        self.assertTrue(st.startswith("ok "), "make pythons: " + st)

    def launcher(self, v):
        p = os.path.join(PYTHONS, "python" + v)
        self.assertTrue(os.access(p, os.X_OK), p + " is missing")
        return p

    def test_interpreter_and_prefix(self):
        for v in VERSIONS:
            exe = self.launcher(v)
            with tempfile.TemporaryDirectory() as d:
                env = {k: x for k, x in os.environ.items()
                       if not k.startswith("PYTHON")}
                r = run([exe, "-c", PROBE], cwd=d, env=env)
                self.assertEqual(r.returncode, 0, r.stderr)
                info = json.loads(r.stdout)
                self.assertEqual(info["version"], v)
                self.assertEqual(info["executable"], exe)
                # the program itself, not a loader or a shell before it
                # (a debugger, Valgrind, perf see the interpreter)
                self.assertEqual(info["exe"], exe)
                self.assertEqual(info["prefix"], PYTHONS)
                self.assertEqual(info["cwd"], os.path.realpath(d))
                self.assertEqual(info["env"], {"PYTHONHOME": None,
                                               "PYTHONPATH": None,
                                               "LD_LIBRARY_PATH": None,
                                               "LD_PRELOAD": None})
                self.assertGreater(info["maps"], 0)
                self.assertTrue(os.path.exists(
                    os.path.join(info["include"], "Python.h")))
                self.assertTrue(info["stdlib_os"].startswith(PYTHONS))

    def test_exit_status_and_stdin(self):
        for v in VERSIONS:
            r = run([self.launcher(v), "-c",
                     "import sys; sys.stdout.write(sys.stdin.read()); "
                     "sys.exit(7)"], input="through\n")
            self.assertEqual((r.returncode, r.stdout), (7, "through\n"))

    def test_children_are_the_same_interpreter(self):
        for v in VERSIONS:
            exe = self.launcher(v)
            with tempfile.TemporaryDirectory() as d:
                prog = os.path.join(d, "children.py")
                with open(prog, "w") as f:
                    f.write(CHILDREN)
                r = run([exe, prog], cwd=d)
                self.assertEqual(r.returncode, 0, r.stderr)
                out = json.loads(r.stdout)
                self.assertEqual(out["subprocess"], v)
                for method in ("spawn", "forkserver", "fork"):
                    self.assertEqual(out[method], [v, exe], method)

    def test_venv(self):
        for v in VERSIONS:
            exe = self.launcher(v)
            with tempfile.TemporaryDirectory() as d:
                env_dir = os.path.join(d, "env")
                r = run([exe, "-m", "venv", "--without-pip", env_dir])
                self.assertEqual(r.returncode, 0, r.stderr)
                vpy = os.path.join(env_dir, "bin", "python")
                r = run([vpy, "-c", PROBE])
                self.assertEqual(r.returncode, 0, r.stderr)
                info = json.loads(r.stdout)
                self.assertEqual(info["version"], v)
                self.assertEqual(info["executable"], vpy)
                self.assertEqual(info["prefix"], env_dir)
                self.assertEqual(info["base_prefix"], PYTHONS)

    def test_found_by_find_interpreters(self):
        r = run([sys.executable, FIND, "--pythons", PYTHONS])
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l.split("\t") for l in r.stdout.splitlines()]
        for v in VERSIONS:
            exe = self.launcher(v)
            mine = [l for l in lines if exe in l]
            self.assertEqual(len(mine), 1, r.stdout)
            self.assertIn(mine[0][0], ("build", "skip"), mine[0])
            if mine[0][0] == "build":
                self.assertEqual(mine[0][4], v)
                # the root's per-architecture pyconfig.h is found after
                # the system's headers
                arch = [e for e in os.listdir(mine[0][5])
                        if os.path.exists(os.path.join(
                            mine[0][5], e, "python" + v, "pyconfig.h"))]
                self.assertEqual(len(arch), 1, mine[0])
        self.assertFalse([l for l in lines if l[0] == "missing"], r.stdout)


class Errors(unittest.TestCase):
    def setUp(self):
        if shutil.which("mmdebstrap") is None:
            r = run(["sh", os.path.join(TOP, "tools", "bootstrap.sh"),
                     "pythons"])
            if r.returncode != 0:
                self.skipTest("mmdebstrap cannot be installed here")
        self.tmp = tempfile.mkdtemp(prefix="evp-pythons-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.cache = os.path.join(self.tmp, "cache")
        self.build = os.path.join(self.tmp, "b")

    def pythons(self, env=None):
        e = dict(os.environ, EVALPROF_PYTHONS_CACHE=self.cache)
        e.update(env or {})
        return run(["sh", SCRIPT, self.build], env=e, timeout=600)

    def check_unavailable(self, r, words):
        lines = r.stdout.splitlines() + r.stderr.splitlines()
        self.assertEqual(r.returncode, 3, lines)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("not available: ", lines[0])
        self.assertIn(words, lines[0])
        self.assertTrue(lines[0].endswith("(their tests will skip)"))
        out = os.path.join(self.build, "pythons")
        with open(os.path.join(out, "status")) as f:
            st = f.read()
        self.assertTrue(st.startswith("unavailable: "), st)
        self.assertIn(words, st)
        for v in VERSIONS:
            self.assertFalse(os.path.exists(os.path.join(out, "python" + v)))
        # nothing half made is left in the cache
        left = [n for n in os.listdir(self.cache)
                if not n.endswith(".lock")] if os.path.isdir(self.cache) \
            else []
        self.assertEqual(left, [])
        # ... and find_interpreters reports each version as skipped
        r = run([sys.executable, FIND, "--pythons", out])
        missing = [l.split("\t") for l in r.stdout.splitlines()
                   if l.startswith("missing\t")]
        self.assertEqual([m[1] for m in missing], list(VERSIONS))
        for m in missing:
            self.assertEqual(m[2], "skip")
            self.assertIn(words, m[3])

    def test_archive_unreachable(self):
        src = os.path.join(self.tmp, "debian.sources")
        with open(src, "w") as f:
            # a port nothing listens on: refused at once
            f.write("Types: deb\nURIs: http://127.0.0.1:9/debian\n"
                    "Suites: bookworm\nComponents: main\n")
        r = self.pythons({"EVALPROF_DEBIAN_SOURCES": src})
        self.check_unavailable(r, "cannot reach the Debian archive")

    def test_no_archive_entry(self):
        src = os.path.join(self.tmp, "other.sources")
        with open(src, "w") as f:
            f.write("Types: deb\nURIs: http://127.0.0.1:9/ubuntu\n"
                    "Suites: noble\nComponents: main\n")
        r = self.pythons({"EVALPROF_DEBIAN_SOURCES": src})
        self.check_unavailable(r, "no Debian archive entry")

    def test_disk_full(self):
        # df, as the script reads it, reports 50 MB free
        bin_dir = os.path.join(self.tmp, "bin")
        os.mkdir(bin_dir)
        with open(os.path.join(bin_dir, "df"), "w") as f:
            f.write("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available "
                    "Capacity Mounted on'\necho 'fake 1000000 950000 51200 "
                    "95% /'\n")
        os.chmod(os.path.join(bin_dir, "df"), 0o755)
        r = self.pythons({"PATH": bin_dir + os.pathsep + os.environ["PATH"]})
        self.check_unavailable(r, "not enough disk space")

    def test_failed_status_fails_tests(self):
        out = os.path.join(self.tmp, "p")
        os.mkdir(out)
        with open(os.path.join(out, "status"), "w") as f:
            f.write("failed: the root's interpreter does not start\n")
        r = run([sys.executable, FIND, "--pythons", out])
        missing = [l.split("\t") for l in r.stdout.splitlines()
                   if l.startswith("missing\t")]
        self.assertEqual([(m[1], m[2]) for m in missing],
                         [(v, "fail") for v in VERSIONS])
        self.assertIn("does not start", missing[0][3])


def main():
    names = sys.argv[1:] or ["Launchers", "Errors"]
    suite = unittest.TestSuite(
        unittest.defaultTestLoader.loadTestsFromTestCase(globals()[n])
        for n in names)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    if result.testsRun and len(result.skipped) == result.testsRun:
        print("SKIP: " + result.skipped[0][1])
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
