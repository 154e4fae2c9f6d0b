"""The floor of op tracing on 3.12+: sys.monitoring INSTRUCTION events
delivered to a C function that does nothing (operator.is_), no recording.

    python floor.py SCRIPT [ARGS...]

Whatever evalprof's ops mode costs beyond this run is evalprof's (its
callback, the timestamps, the recorder); this much is the interpreter's
price for reporting every instruction at all.
"""
import operator
import os
import sys


def main():
    script = os.path.abspath(sys.argv[1])
    sys.argv[:] = sys.argv[1:]
    sys.path[0] = os.path.dirname(script)
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec")
    mon = sys.monitoring
    tool = 4
    mon.use_tool_id(tool, "floor")
    mon.register_callback(tool, mon.events.INSTRUCTION, operator.is_)
    mon.set_events(tool, mon.events.INSTRUCTION)
    g = {"__name__": "__main__", "__file__": script,
         "__builtins__": __builtins__}
    try:
        exec(code, g)
    finally:
        mon.set_events(tool, 0)


if __name__ == "__main__":
    main()
