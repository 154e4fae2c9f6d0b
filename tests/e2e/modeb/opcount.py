"""An independent opcode, exception and call counter in pure Python.

    python opcount.py OUT.json SCRIPT [ARGS...]

Runs SCRIPT as __main__ (as `python SCRIPT ARGS` would) and counts, for the
code objects of SCRIPT's file only:

- instructions executed, per function and base opcode name: with
  sys.settrace and f_trace_opcodes on 3.11, with a sys.monitoring
  INSTRUCTION callback on 3.12+ (a different mechanism from evalprof's C
  hooks, decoded here from co_code with dis's tables);
- exceptions: 'exception' trace events on 3.11, RAISE and RERAISE
  monitoring events on 3.12+;
- calls on 3.12+, per function (first line and name): the frame's
  evaluations as sys.monitoring reports them, PY_START, PY_RESUME and
  PY_THROW.  (cProfile's count differs on 3.14+: it watches PY_UNWIND,
  and while PY_UNWIND is watched generator.close() throws GeneratorExit
  into a suspended generator instead of finishing it without running it,
  as the unwatched interpreter does.)

3.11's tracer reports an instruction after EXTENDED_ARG only as the
EXTENDED_ARG; the count below expands that run, as every executed
instruction is wanted.
"""
import collections
import dis
import json
import os
import sys


def main():
    out, script = sys.argv[1], os.path.abspath(sys.argv[2])
    sys.argv[:] = sys.argv[2:]
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec")
    ops = collections.Counter()
    exc = collections.Counter()
    calls = collections.Counter()
    ext = dis.opmap["EXTENDED_ARG"]
    names = dis.opname

    def count_at(co, off):
        raw = co.co_code
        op = raw[off]
        ops[co.co_qualname, names[op]] += 1

    if sys.version_info < (3, 12):
        def tracer(frame, event, arg):
            co = frame.f_code
            if co.co_filename != script:
                return tracer
            if event == "call":
                frame.f_trace_opcodes = True
                frame.f_trace_lines = False
            elif event == "opcode":
                off = frame.f_lasti
                raw = co.co_code
                count_at(co, off)
                while raw[off] == ext:
                    off += 2
                    count_at(co, off)
            elif event == "exception":
                exc[co.co_qualname] += 1
            return tracer

        def on():
            sys.settrace(tracer)

        def off():
            sys.settrace(None)
    else:
        mon = sys.monitoring
        tool = 3

        def instruction(co, off):
            if co.co_filename == script:
                count_at(co, off)

        def raised(co, off, e):
            if co.co_filename == script:
                exc[co.co_qualname] += 1

        def started(co, off, *exc_value):
            if co.co_filename == script:
                calls["%d %s" % (co.co_firstlineno, co.co_name)] += 1

        def on():
            ev = mon.events
            mon.use_tool_id(tool, "opcount")
            mon.register_callback(tool, ev.INSTRUCTION, instruction)
            mon.register_callback(tool, ev.RAISE, raised)
            mon.register_callback(tool, ev.RERAISE, raised)
            for e in (ev.PY_START, ev.PY_RESUME, ev.PY_THROW):
                mon.register_callback(tool, e, started)
            mon.set_events(tool, ev.INSTRUCTION | ev.RAISE | ev.RERAISE
                           | ev.PY_START | ev.PY_RESUME | ev.PY_THROW)

        def off():
            mon.set_events(tool, 0)

    g = {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__}
    status = 0
    on()
    try:
        exec(code, g)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    finally:
        off()
    with open(out, "w") as f:
        json.dump({"ops": [[k[0], k[1], v] for k, v in ops.items()],
                   "exceptions": dict(exc), "calls": dict(calls)}, f)
    return status


if __name__ == "__main__":
    sys.exit(main())
