#!/usr/bin/env python3
"""Synthetic folded stacks for tests and benchmarks: N lines drawn from a
random call tree of CPython-like function names (depth 3-40), sorted as a
collapser writes them.  Deterministic for a given seed.

usage: gen-folded.py LINES [SEED]
"""
import random
import sys


def main(n, seed):
    rnd = random.Random(seed)
    mods = ["ceval", "object", "dict", "unicode", "import", "gc", "list",
            "type", "code", "frame", "pylifecycle", "main", "abstract"]
    verbs = ["lookup", "new", "call", "eval", "get", "set", "init", "clear",
             "resize", "hash", "compare", "vectorcall", "dealloc", "traverse"]
    names = [f"_Py{m.capitalize()}_{v.capitalize()}{i}" for m in mods
             for v in verbs for i in range(3)]
    names += [f"py::func_{i}:module_{i % 17}.py" for i in range(200)]
    lines = {}
    roots = ["python3;_start;__libc_start_main;main;Py_BytesMain;pymain_main",
             "python3;_start;__libc_start_main;main;Py_BytesMain;pymain_init"]
    while len(lines) < n:
        depth = rnd.randint(3, 40)
        # Skewed choices make a realistic tree: hot paths repeat.
        stack = [rnd.choice(roots)]
        for d in range(depth):
            k = int(rnd.paretovariate(1.2)) % len(names)
            stack.append(names[(k * 7919 + d * 31) % len(names)])
        key = ";".join(stack)
        lines[key] = lines.get(key, 0) + rnd.randint(1, 5000)
    out = sys.stdout
    for k in sorted(lines):
        out.write(f"{k} {lines[k]}\n")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1)
