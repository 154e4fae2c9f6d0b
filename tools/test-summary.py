#!/usr/bin/env python3
"""Summarise a Meson testlog.json for humans and for CI.

Lists skipped tests with the reason each printed (a line starting with
"SKIP:" in its output, else its last line), then ends with the line CI
reads: "N passed, N failed" (skipped tests are neither).
"""
import json
import sys


def reason(entry):
    out = (entry.get("stdout") or "") + (entry.get("stderr") or "")
    for line in out.splitlines():
        if line.startswith("SKIP:"):
            return line[5:].strip()
    lines = [l for l in out.splitlines() if l.strip()]
    return lines[-1].strip() if lines else "no reason given"


def main(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            entries = [json.loads(l) for l in f if l.strip()]
    except OSError as e:
        print(f"test-summary: {path}: {e.strerror}")
        print("0 passed, 1 failed")
        return 1
    passed = failed = 0
    skipped, failures = [], []
    for e in entries:
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
    sys.exit(main(sys.argv[1]))
