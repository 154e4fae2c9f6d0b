"""A program whose output, exit status and timing a test compares with
and without evalprof looking at it: it ticks TICKS times (default 15) in
SECONDS (argv[2]), sleeping between ticks and computing a checksum, then
prints a JSON report and exits 7.  Writes DIR/ready when it starts."""
import json
import os
import sys
import time

out = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
ticks = int(sys.argv[3]) if len(sys.argv) > 3 else 15


def work(k):
    s = 0
    for i in range(20000):
        s = (s * 31 + i * k) % 1000003
    return s


with open(os.path.join(out, "ready"), "w") as f:
    f.write(str(os.getpid()))
start = time.monotonic()
slept = 0.0
checksum = 0
for k in range(ticks):
    checksum = (checksum + work(k)) % 1000003
    t0 = time.monotonic()
    time.sleep(seconds / ticks)
    slept += time.monotonic() - t0
expected = 0
for k in range(ticks):
    expected = (expected + work(k)) % 1000003
print(json.dumps({"ticks": ticks, "slept": round(slept, 4),
                  "checksum": checksum, "expected": expected,
                  "elapsed": round(time.monotonic() - start, 4)}))
sys.exit(7)
