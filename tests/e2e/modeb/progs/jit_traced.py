"""What tracing does to the tier-2 optimizer and the JIT (3.14+).

    python jit_traced.py TRACE ops|no-ops

Warms a loop until the optimizer compiles it (with PYTHON_JIT=1), starts
evalprof with or without ops, runs the loop again, stops; prints the
executors the loop's code had before start, right after start, after the
traced run and after stop: "executors B S T P" (all 0 where the
interpreter has no optimizer running).
"""
import sys

import evalprof

try:
    import _opcode
except ImportError:
    _opcode = None


def hot(n):
    s = 0
    for i in range(n):
        s += i * 2
    return s


def executors(f):
    get = getattr(_opcode, "get_executor", None)
    if get is None:
        return 0
    code, n = f.__code__, 0
    for off in range(0, len(code.co_code), 2):
        try:
            get(code, off)
            n += 1
        except (ValueError, RuntimeError):
            pass
    return n


hot(200000)
before = executors(hot)
evalprof.start(sys.argv[1], ops=sys.argv[2] == "ops")
started = executors(hot)
hot(200000)
traced = executors(hot)
evalprof.stop()
print("executors", before, started, traced, executors(hot))
