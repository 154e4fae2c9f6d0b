"""evalprof's bundled workload: real pure-Python work for demos and benchmarks.

Three programs of the kind CPython spends its days on, each checked:

  minilang  a small interpreter (tokenizer generator, Pratt parser, tree-
            walking evaluator with closures and recursion) running a toy
            program: recursive fib, counters, a sieve;
  jsonrt    a JSON round trip in pure Python (encoder, recursive-descent
            decoder) over seeded random documents, checked against json;
  solver    Sudoku by constraint propagation and recursive search, and an
            N-queens counter built from generators.

    python3 examples/workload/main.py [--scale S] [--only NAME[,NAME]]

At --scale 1 (the default) it runs for several seconds uninstrumented.
The output is deterministic apart from the timings; the last line is a
checksum of all results.
"""
import argparse
import os
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jsonrt  # noqa: E402
import minilang  # noqa: E402
import solver  # noqa: E402

PARTS = [("minilang", minilang), ("jsonrt", jsonrt), ("solver", solver)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0,
                    help="amount of work (1.0: several seconds)")
    ap.add_argument("--only", default="",
                    help="comma-separated parts to run (default: all)")
    ap.add_argument("--no-times", action="store_true",
                    help="leave out the timings (output fully deterministic)")
    args = ap.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    checksum = 0
    for name, module in PARTS:
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        result = module.workload(args.scale)
        dt = time.perf_counter() - t0
        checksum = zlib.crc32(repr(result).encode(), checksum)
        line = "%-9s %s" % (name, result)
        if not args.no_times:
            line += "  (%.2f s)" % dt
        print(line)
    print("checksum %d" % checksum)
    return 0


if __name__ == "__main__":
    sys.exit(main())
