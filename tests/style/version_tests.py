#!/usr/bin/env python3
"""The stock-interpreter extension's version differences stay behind one
adapter: python/_tracer/version.h is the only file of python/_tracer that
may test the interpreter's version (PY_VERSION_HEX, PY_MAJOR_VERSION,
PY_MINOR_VERSION, PY_MICRO_VERSION, or the adapter's own EVP_PY3xx
names).  The other files use its helpers and its EVP_HAVE_ names.

    version_tests.py ROOT

Fails, naming file and line, on each version test outside the adapter;
also fails if the adapter itself has none (the check would then be
looking at the wrong thing), and checks on a sample that it sees each
form of the test.
"""
import os
import re
import sys

ADAPTER = "version.h"
TEST = re.compile(r"\b(PY_VERSION_HEX|PY_(MAJOR|MINOR|MICRO)_VERSION|"
                  r"EVP_PY3\d+)\b")


def strip_comments(text):
    """TEXT with C comments and string literals blanked (line breaks
    kept), so that a comment naming PY_VERSION_HEX is not a test."""
    out = re.sub(r"/\*.*?\*/|//[^\n]*|\"(\\.|[^\"\\\n])*\"",
                 lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                 flags=re.S)
    return out


def tests_in(text):
    """(line number, line) of each version test in C source TEXT."""
    found = []
    for n, line in enumerate(strip_comments(text).split("\n"), 1):
        if TEST.search(line):
            found.append((n, line.strip()))
    return found


def selftest():
    sample = ("#if PY_VERSION_HEX >= 0x030e0000\n"
              "/* PY_VERSION_HEX in a comment is fine */\n"
              "#elif EVP_PY313\n"
              "x = \"PY_MINOR_VERSION in a string\";\n"
              "#endif\n"
              "#if PY_MINOR_VERSION == 14\n")
    got = [n for n, _ in tests_in(sample)]
    if got != [1, 3, 6]:
        print("version_tests: the check itself is broken: found tests on "
              "lines %s of the sample, expected [1, 3, 6]" % got)
        return False
    return True


def main(root):
    if not selftest():
        return 1
    d = os.path.join(root, "python", "_tracer")
    bad = []
    adapter_tests = 0
    for name in sorted(os.listdir(d)):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(d, name), encoding="utf-8") as f:
            found = tests_in(f.read())
        if name == ADAPTER:
            adapter_tests = len(found)
            continue
        for n, line in found:
            bad.append("python/_tracer/%s:%d: %s" % (name, n, line))
    for b in bad:
        print(b)
    if bad:
        print("version_tests: %d version test(s) outside python/_tracer/%s: "
              "move the difference into the adapter (docs/HACKING.md, "
              "\"Supporting another CPython version\")" % (len(bad), ADAPTER))
        return 1
    if adapter_tests == 0:
        print("version_tests: python/_tracer/%s has no version test: is it "
              "still the adapter?" % ADAPTER)
        return 1
    print("version_tests: %d version tests, all in python/_tracer/%s"
          % (adapter_tests, ADAPTER))
    return 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1])))
