#!/usr/bin/env python3
"""Find the CPython interpreters evalprof._tracer can be built for.

Run by python/meson.build at configure time (and usable by hand):

    find_interpreters.py [--pythons DIR]

Looks at the interpreters on PATH (python3, python3.11 ... python3.15),
under pyenv's versions directory ($PYENV_ROOT or ~/.pyenv), Debian's in
/usr/bin, the launchers of tools/pythons.sh in DIR (BUILD/pythons: 3.14
and 3.15 from a private Debian root), and any listed in $EVALPROF_PYTHONS
(colon-separated paths).  Each candidate is asked for its version,
headers and build flags; the same binary reached by several names counts
once (pyenv's shims are skipped: the versions behind them are scanned
directly).

Prints one line per candidate, tab-separated:

    build   TAG   EXECUTABLE   INCLUDE_DIR   X.Y   EXTRA_INCLUDE
    same    TAG   EXECUTABLE   (an interpreter of a version already built)
    skip    EXECUTABLE   REASON

and, for each version DIR's launchers would have provided but could not,
as DIR/status says:

    missing X.Y   skip|fail   REASON

TAG is the version and ABI flags ("3.12.1"): the extension is built as
_tracer-TAG.so.  EXTRA_INCLUDE is a directory searched after the system's
for Debian's per-architecture pyconfig.h (<TRIPLET/python3.X/pyconfig.h>,
which a root's headers name), or "-".  Exit status 0 even when nothing is
found.
"""
import glob
import json
import os
import subprocess
import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13), (3, 14), (3, 15))
# The versions tools/pythons.sh provides, and their launchers' names.
ROOT_VERSIONS = ("3.14", "3.15")
NAMES = ("python3", "python3.11", "python3.12", "python3.13", "python3.14",
         "python3.15")

PROBE = r"""
import json, os, sys, sysconfig
inc = sysconfig.get_paths().get("include") or ""
arch = sysconfig.get_config_var("MULTIARCH") or ""
top = os.path.dirname(inc)
extra = ""
sub = os.path.join(arch, os.path.basename(inc), "pyconfig.h")
if (arch and os.path.exists(os.path.join(top, sub))
        and not os.path.exists(os.path.join("/usr/include", sub))):
    extra = top
print(json.dumps({
    "version": list(sys.version_info[:3]),
    "impl": sys.implementation.name,
    "abiflags": getattr(sys, "abiflags", ""),
    "include": inc,
    "has_header": os.path.exists(os.path.join(inc, "Python.h")),
    "internal": os.path.exists(os.path.join(inc, "internal", "pycore_frame.h")),
    "gil_disabled": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    "debug": bool(sysconfig.get_config_var("Py_DEBUG")) or
             hasattr(sys, "gettotalrefcount"),
    "executable": os.path.realpath(sys.executable),
    "extra_include": extra,
}))
"""


def candidates(pythons):
    seen = []

    def add(path):
        if path and path not in seen:
            seen.append(path)

    for d in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.basename(os.path.normpath(d or ".")) == "shims":
            continue  # pyenv's wrappers: the versions are scanned below
        for name in NAMES:
            p = os.path.join(d or ".", name)
            if os.access(p, os.X_OK) and not os.path.isdir(p):
                add(p)
    roots = [os.environ.get("PYENV_ROOT"), os.path.expanduser("~/.pyenv")]
    for root in roots:
        if root:
            for p in sorted(glob.glob(os.path.join(root, "versions", "*",
                                                   "bin", "python3"))):
                add(p)
    for name in NAMES:
        p = os.path.join("/usr/bin", name)
        if os.access(p, os.X_OK):
            add(p)
    if pythons:
        for v in ROOT_VERSIONS:
            p = os.path.join(pythons, "python" + v)
            if os.access(p, os.X_OK):
                add(p)
    for p in os.environ.get("EVALPROF_PYTHONS", "").split(os.pathsep):
        if p:
            add(p)
    return seen


def probe(exe):
    try:
        out = subprocess.run([exe, "-I", "-c", PROBE], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "could not run (%s)" % e
    if out.returncode != 0:
        err = (out.stderr.strip().splitlines() or ["exit status %d"
                                                   % out.returncode])[-1]
        return None, "could not run: %s" % err[:200]
    try:
        return json.loads(out.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return None, "unexpected answer from the interpreter"


def root_missing(pythons):
    """The versions DIR's launchers should provide and do not: (X.Y,
    skip|fail, reason) each, from DIR/status (tools/pythons.sh)."""
    if not pythons:
        return []
    try:
        with open(os.path.join(pythons, "status")) as f:
            status = f.readline().strip()
    except OSError:
        status = ("unavailable: no launcher in %s (make pythons makes them)"
                  % pythons)
    if status.startswith("ok"):
        return [(v, "fail", "%s/python%s is missing although %s/status "
                 "says ok (run make pythons)" % (pythons, v, pythons))
                for v in ROOT_VERSIONS
                if not os.access(os.path.join(pythons, "python" + v),
                                 os.X_OK)]
    state, _, reason = status.partition(": ")
    how = "skip" if state == "unavailable" else "fail"
    return [(v, how, "make pythons: " + (reason or status))
            for v in ROOT_VERSIONS]


def main(argv):
    pythons = ""
    if argv[:1] == ["--pythons"] and len(argv) >= 2:
        pythons = argv[1]
    done = {}   # realpath -> tag
    tags = {}   # tag -> executable built with
    lines = []
    for exe in candidates(pythons):
        info, err = probe(exe)
        if info is None:
            lines.append(("skip", exe, err))
            continue
        real = info["executable"]

        if real in done:
            continue
        ver = tuple(info["version"])
        vs = "%d.%d.%d" % ver
        tag = vs + info["abiflags"]
        done[real] = tag
        if info["impl"] != "cpython":
            lines.append(("skip", real, "%s %s is not CPython"
                          % (info["impl"], vs)))
        elif ver[:2] not in SUPPORTED:
            lines.append(("skip", real, "Python %s is not supported "
                          "(evalprof traces %s)" % (vs, supported_text())))
        elif info["gil_disabled"]:
            lines.append(("skip", real, "Python %s is a free-threaded build "
                          "(not supported)" % vs))
        elif info.get("debug"):
            lines.append(("skip", real, "Python %s is a debug build "
                          "(--with-pydebug; not supported)" % vs))
        elif not info["has_header"] or not info["internal"]:
            lines.append(("skip", real, "Python %s has no development headers "
                          "in %s (Debian: apt-get install python%d.%d-dev)"
                          % (vs, info["include"], ver[0], ver[1])))
        elif tag in tags:
            lines.append(("same", tag, real, tags[tag]))
        else:
            tags[tag] = real
            lines.append(("build", tag, real, info["include"],
                          "%d.%d" % ver[:2], info["extra_include"] or "-"))
    for v, how, reason in root_missing(pythons):
        lines.append(("missing", v, how, reason))
    for line in lines:
        print("\t".join(line))
    return 0


def supported_text():
    names = ["%d.%d" % v for v in SUPPORTED]
    return ", ".join(names[:-1]) + " and " + names[-1]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
