"""Short-lived code objects, one after another with no Python instruction
between them: map() compiles each source and exec() runs it, and the code
object is freed as exec() returns, so the next one often takes its address
with other instructions (evalprof keeps the last code object's decoded
instructions per thread)."""


def source(i):
    lines = ["y = %d" % i]
    for k in range(i % 7):
        lines.append("y = y %s %d" % ("+-*^|"[k % 5], k + 1))
    if i % 3 == 0:
        lines.append("z = [y, y][%d]" % (i % 2))
    if i % 4 == 1:
        lines.append("z = {'a': y}.get('a', %d)" % i)
    return "\n".join(lines) + "\n"


n = 400
srcs = [source(i) for i in range(n)]
list(map(exec, map(compile, srcs, [__file__] * n, ["exec"] * n)))
print(y)
