"""The API: start/stop, the context manager, the decorator, misuse."""
import sys

import evalprof

base = sys.argv[1]


def work(n):
    return sum(i * i for i in range(n))


evalprof.start(base + "-1.evp")
work(10)
try:
    evalprof.start(base + "-x.evp")
except RuntimeError:
    print("double start refused")
stats = evalprof.stop()
print("stopped", stats["events"] > 0, stats["path"] == base + "-1.evp")
try:
    evalprof.stop()
except RuntimeError:
    print("stop without start refused")

with evalprof.profile(base + "-2.evp", ops=False) as p:
    work(20)
print("context", p.stats["events"] > 0)


@evalprof.profile(base + "-3.evp")
def traced():
    return work(30)


print("decorator", traced())
print("active", evalprof.is_active())
