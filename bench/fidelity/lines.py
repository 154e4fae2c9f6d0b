"""A function whose lines' true shares are known.

    python lines.py SECONDS [--truth OUT.json] [--rounds N]

run_round() is made of four loops, each written on one line (its
header, body and back edge are that line's), of different characters:
integer arithmetic, string formatting, dict updates, list building.
Each is timed with perf_counter_ns as it runs (two clock reads per loop
of a millisecond or more); with --truth the program writes each line's
total and the rounds' total: the ground truth of an untraced run, against
which bench/fidelity/run.py measures the line shares of every sampling
profiler.  The round count is fixed from SECONDS by a calibration run
(--rounds N overrides it), so that every tool runs the same rounds.
"""
import json
import sys
import time

NAMES = ["arith", "format", "dict", "list"]


def run_round(acc):
    clock = time.perf_counter_ns
    t0 = clock()
    s = 0
    for i in range(60000): s += (i * i) % 7 + (i >> 3)  # noqa: E701 line: arith
    t1 = clock()
    parts = []
    for i in range(15000): parts.append("%d:%s" % (i, "x" * (i % 5)))  # noqa: E701 line: format
    t2 = clock()
    d = {}
    for i in range(40000): d[i % 257] = d.get(i % 257, 0) + i  # noqa: E701 line: dict
    t3 = clock()
    out = []
    for i in range(50000): out.append(i & 255)  # noqa: E701 line: list
    t4 = clock()
    if acc is not None:
        acc["arith"] += t1 - t0
        acc["format"] += t2 - t1
        acc["dict"] += t3 - t2
        acc["list"] += t4 - t3
        acc["round"] += t4 - t0
    return s + len(parts) + len(d) + len(out)


def line_numbers():
    """{name: line} of the loops above, by their "line: NAME" marks."""
    out = {}
    with open(__file__) as f:
        for no, text in enumerate(f, 1):
            if text.startswith("    for i in range(") and \
                    "line: " in text:
                out[text.rsplit("line: ", 1)[1].strip()] = no
    return out


def main():
    args = sys.argv[1:]
    seconds = float(args[0]) if args else 2.0
    truth = args[args.index("--truth") + 1] if "--truth" in args else None
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args \
        else None
    if rounds is None:
        t0 = time.perf_counter()
        run_round(None)
        rounds = max(1, int(seconds / (time.perf_counter() - t0)))
    acc = dict.fromkeys(NAMES + ["round"], 0) if truth else None
    for _ in range(rounds):
        run_round(acc)
    if truth:
        with open(truth, "w") as f:
            json.dump({"lines": {n: acc[n] for n in NAMES},
                       "round_ns": acc["round"], "rounds": rounds,
                       "line_numbers": line_numbers()}, f)


if __name__ == "__main__":
    main()
