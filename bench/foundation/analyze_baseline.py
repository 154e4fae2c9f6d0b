#!/usr/bin/env python3
"""A straightforward pure-Python analyzer of discussion-format text traces.

The baseline that `evalprof summary` is measured against: it reads the
text trace line by line, computes each event's elapsed time (until the next
event) and sums counts and times per event kind and per opcode, the way a
first analysis script would.  It prints a short table so its work cannot
be optimised away.
"""
import sys


def main(path):
    counts, totals = {}, {}
    opcounts, optotals = {}, {}
    prev_kind = prev_op = prev_ts = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line or line[0] in "#\n":
                continue
            parts = line.split()
            ts = float(parts[0])
            kind = int(parts[1])
            if prev_kind is not None:
                el = ts - prev_ts
                totals[prev_kind] = totals.get(prev_kind, 0.0) + el
                if prev_op is not None:
                    optotals[prev_op] = optotals.get(prev_op, 0.0) + el
            counts[kind] = counts.get(kind, 0) + 1
            op = int(parts[2]) if kind == 9 and len(parts) > 2 else None
            if op is not None:
                opcounts[op] = opcounts.get(op, 0) + 1
            prev_kind, prev_op, prev_ts = kind, op, ts
    for k in sorted(counts, key=counts.get, reverse=True):
        print(f"{k:4} {counts[k]:12,} {totals.get(k, 0.0) / counts[k] * 1e6:10.1f} us")
    print(f"ops: {len(opcounts)}")


if __name__ == "__main__":
    main(sys.argv[1])
