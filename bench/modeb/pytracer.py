"""A pure-Python tracer, for comparison: sys.settrace with opcode events.

    python pytracer.py SCRIPT [ARGS...]

Records (event, code, offset, time) for every call, return, exception
and instruction into a list, the way a tracer written in Python would
(handing each full batch of 65536 on, here: counting and dropping it, so
memory stays bounded), and prints the event count on stderr at the end.
Runs SCRIPT as __main__.
"""
import os
import sys
import time


def main():
    script = os.path.abspath(sys.argv[1])
    sys.argv[:] = sys.argv[1:]
    sys.path[0] = os.path.dirname(script)
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec")
    events = []
    put = events.append
    clock = time.perf_counter_ns
    done = [0]

    def tracer(frame, event, arg):
        if event == "call":
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
        put((event, frame.f_code, frame.f_lasti, clock()))
        if len(events) >= 65536:
            done[0] += len(events)
            events.clear()
        return tracer

    g = {"__name__": "__main__", "__file__": script,
         "__builtins__": __builtins__}
    # 3.12.1 turns opcode events on only once some frame asked for them
    # before sys.settrace; flags set from the 'call' event alone do not.
    sys._getframe().f_trace_opcodes = True
    sys.settrace(tracer)
    try:
        exec(code, g)
    finally:
        sys.settrace(None)
        sys.stderr.write("pytracer: %d events\n" % (done[0] + len(events)))


if __name__ == "__main__":
    main()
