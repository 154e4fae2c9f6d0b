"""Count the instructions one call of a deterministic function executes.

    opcount.py settrace N   print the number of 'opcode' events sys.settrace
                            reports for target(N) (run with tracing off)
    opcount.py run N        call target(N) once (run with tracing on); the
                            e2e-modea test counts its op events in the trace

The interpreter specializes target's instructions during the one traced
call (the loop warms them up), so the op count also checks that an
instruction is counted once across specialization and deoptimisation.
"""
import sys


def target(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i
        else:
            total -= 1
        j = 0
        while j < 2:
            j += 1
    return total


def settrace_count(n):
    code = target.__code__
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if frame.f_code is not code:
            return None
        frame.f_trace = tracer          # 3.12+: before f_trace_opcodes
        frame.f_trace_lines = False
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return tracer

    sys.settrace(tracer)
    target(n)
    sys.settrace(None)
    return count


if __name__ == "__main__":
    mode, n = sys.argv[1], int(sys.argv[2])
    if mode == "settrace":
        print(settrace_count(n))
    else:
        print(target(n))
