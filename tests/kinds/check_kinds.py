#!/usr/bin/env python3
"""The Python package's event vocabulary agrees with the C side's.

    check_kinds.py DUMP_KINDS KINDS_PY

DUMP_KINDS prints what the C code makes of include/evalprof/kinds.def
(enum numbers, the kinds table, replay.h's nesting and phase tests);
KINDS_PY is build/python/evalprof/_kinds.py, generated from the same
file.  Every number, name, argument class, nesting, phase and cost key
must agree, and replay.h's tests must say what the table says.  A
self-test first checks that a disagreeing copy is caught.
"""
import importlib.util
import subprocess
import sys


def c_side(exe):
    out = subprocess.run([exe], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    head = out[0].split("\t")
    rows = [line.split("\t") for line in out[1:]]
    return int(head[1]), int(head[2]), rows


def py_side(path):
    spec = importlib.util.spec_from_file_location("_kinds", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def disagreements(count, classic, rows, py):
    bad = []
    if py.COUNT != count or len(py.KINDS) != count:
        bad.append("count: C %d, Python COUNT %d, %d KINDS"
                   % (count, py.COUNT, len(py.KINDS)))
    if py.CLASSIC_COUNT != classic:
        bad.append("classic count: C %d, Python %d"
                   % (classic, py.CLASSIC_COUNT))
    for r in rows:
        if len(r) != 11:
            bad.append("C: " + "\t".join(r))
            continue
        kid, num, name, arg, nest, phase = r[0], int(r[1]), r[2], r[3], r[4], r[5]
        pushes, pops, is_phase, key, doc = r[6], r[7], r[8], r[9], r[10]
        what = "kind %d (EVP_EV_%s)" % (num, kid)
        if getattr(py, kid, None) != num:
            bad.append("%s: Python %s = %r" % (what, kid, getattr(py, kid, None)))
        if num >= len(py.KINDS):
            bad.append("%s: missing on the Python side" % what)
            continue
        want = (name, arg, nest, phase == "1", doc)
        if tuple(py.KINDS[num]) != want:
            bad.append("%s: C %r, Python %r" % (what, want, tuple(py.KINDS[num])))
        if py.cost_key(num) != key:
            bad.append("%s: cost key C %s, Python %s" % (what, key, py.cost_key(num)))
        if (pushes, pops) != (str(int(nest == "push")), str(int(nest == "pop"))):
            bad.append("%s: nesting %s but evp_kind_pushes %s, evp_kind_pops %s"
                       % (what, nest, pushes, pops))
        if is_phase != phase:
            bad.append("%s: phase %s but evp_kind_is_phase %s" % (what, phase, is_phase))
    return bad


class Mutated:
    """PY with kind 3's name changed: the check must notice."""

    def __init__(self, py):
        self.__dict__.update({k: getattr(py, k) for k in dir(py)
                              if not k.startswith("__")})
        kinds = list(py.KINDS)
        kinds[3] = ("entre",) + tuple(kinds[3][1:])
        self.KINDS = tuple(kinds)


def main(argv):
    count, classic, rows = c_side(argv[1])
    extra = [r for r in rows if r[0].startswith("unknown")]
    rows = [r for r in rows if not r[0].startswith("unknown")]
    py = py_side(argv[2])
    if not disagreements(count, classic, rows, Mutated(py)):
        print("FAIL: self-test: a Python copy naming kind 3 'entre' passed")
        return 1
    bad = disagreements(count, classic, rows, py) + ["C: " + "\t".join(r) for r in extra]
    for b in bad:
        print("FAIL: " + b)
    if bad:
        return 1
    print("%d kinds agree between C (kinds table, enum, replay.h) and "
          "Python (%s)" % (count, argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
