#!/usr/bin/env python3
"""Summarise Meson testlog.json files for humans and for CI.

    test-summary.py TESTLOG.json...

Each file is one `meson test` run (the main build, the sanitizer builds);
tests of any run but the first are named with their build directory
("build-asan: evalprof:damage / binary").  Lists skipped tests with the
reason each printed (a line starting with "SKIP:" in its output, else its
last line) and failed tests, then ends with the line CI reads, counted
over every run: "N passed, N failed" (skipped tests are neither).  A log
that is missing (its build failed before any test ran) counts as one
failure.
"""
import json
import os
import sys


def reason(entry):
    out = (entry.get("stdout") or "") + (entry.get("stderr") or "")
    for line in out.splitlines():
        if line.startswith("SKIP:"):
            return line[5:].strip()
    lines = [l for l in out.splitlines() if l.strip()]
    return lines[-1].strip() if lines else "no reason given"


def main(paths):
    passed = failed = 0
    skipped, failures = [], []
    for n, path in enumerate(paths):
        # "build-asan/meson-logs/testlog.json" -> "build-asan: "
        prefix = ""
        if n:
            prefix = os.path.basename(os.path.dirname(os.path.dirname(
                os.path.abspath(path)))) + ": "
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                entries = [json.loads(l) for l in f if l.strip()]
        except (OSError, ValueError) as e:
            print(f"test-summary: {path}: {getattr(e, 'strerror', None) or e}")
            failed += 1
            failures.append({"name": f"{prefix}(no test log: {path})",
                             "result": "missing"})
            continue
        for e in entries:
            e = dict(e, name=prefix + e.get("name", "?"))
            res = e.get("result", "")
            if res in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif res == "SKIP":
                skipped.append(e)
            else:
                failed += 1
                failures.append(e)
    if skipped:
        print(f"skipped ({len(skipped)}):")
        for e in skipped:
            print(f"  {e['name']}: {reason(e)}")
    if failures:
        print(f"failed ({len(failures)}):")
        for e in failures:
            print(f"  {e['name']} ({e.get('result')})")
    print(f"{len(skipped)} skipped")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: test-summary.py TESTLOG.json...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
