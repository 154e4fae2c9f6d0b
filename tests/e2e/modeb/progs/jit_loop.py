"""A loop the tier-2 optimizer traces and, with PYTHON_JIT=1, the JIT
compiles: arithmetic on small ints, no call.

    python jit_loop.py ROUNDS [--lag]

With --lag, prints how far the frame's instruction pointer lags behind
the instruction running in the loop's trace, from the trace itself
(_opcode.get_executor: its micro-ops, each with the instruction it
comes from; the pointer moves only at _SET_IP): "lag: N instructions
in the trace, C with a current pointer, max M behind, L lines max".
"""
import sys


def hot(n):
    t = 0
    for i in range(n):
        t += (i * 3) % 7
        t ^= i & 15
        t = t % 1000003
    return t


def lag():
    import _opcode
    co = hot.__code__
    lines = {}
    for start, end, line in co.co_lines():
        for u in range(start // 2, end // 2):
            lines[u] = line
    for off in range(0, len(co.co_code), 2):
        try:
            ex = _opcode.get_executor(co, off)
        except (ValueError, RuntimeError):
            continue
        # in the trace's order: each instruction's distance from the one
        # the last _SET_IP named, in instructions run and in lines
        ip, last, since, seen = None, None, 0, []
        for name, _, target, _ in ex:
            if name == "_SET_IP":
                ip, since = target, 0
            if target not in lines or ip is None or target == last:
                continue
            if target != ip:
                since += 1
            last = target
            seen.append((since, abs(lines[target] - lines[ip])))
        current = sum(1 for d, _ in seen if d == 0)
        behind = max(d for d, _ in seen)
        lines_behind = max(n for _, n in seen)
        print("lag: %d instructions in the trace, %d with a current pointer, "
              "max %d behind, %d lines max" % (len(seen), current, behind,
                                               lines_behind))
        return
    print("lag: no executor")


rounds = int(sys.argv[1])
for _ in range(rounds):
    hot(100000)
if "--lag" in sys.argv:
    lag()
