"""The floor of op tracing on 3.12+: sys.monitoring INSTRUCTION events
delivered to a C function that does nothing (operator.is_), no recording.

    python floor.py SCRIPT [ARGS...]
    python floor.py -m MODULE [ARGS...]

Whatever evalprof's ops mode costs beyond this run is evalprof's (its
callback, the timestamps, the recorder); this much is the interpreter's
price for reporting every instruction at all.
"""
import operator
import os
import runpy
import sys


def main():
    if sys.argv[1] == "-m":
        module = sys.argv[2]
        sys.argv[:] = sys.argv[2:]
        sys.path[0] = os.getcwd()

        def run():
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        script = os.path.abspath(sys.argv[1])
        sys.argv[:] = sys.argv[1:]
        sys.path[0] = os.path.dirname(script)
        with open(script, "rb") as f:
            code = compile(f.read(), script, "exec")
        g = {"__name__": "__main__", "__file__": script,
             "__builtins__": __builtins__}

        def run():
            exec(code, g)
    mon = sys.monitoring
    tool = 4
    mon.use_tool_id(tool, "floor")
    mon.register_callback(tool, mon.events.INSTRUCTION, operator.is_)
    mon.set_events(tool, mon.events.INSTRUCTION)
    try:
        run()
    finally:
        mon.set_events(tool, 0)


if __name__ == "__main__":
    main()
