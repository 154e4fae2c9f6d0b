"""The floor of op tracing on 3.12+: sys.monitoring INSTRUCTION events
delivered to a C function that does nothing (operator.is_), no recording.

    python floor.py [--calls EXT] SCRIPT [ARGS...]
    python floor.py [--calls EXT] -m MODULE [ARGS...]
    python floor.py --tsc EXT

Whatever evalprof's ops mode costs beyond this run is evalprof's (its
callback, the timestamps, the recorder); this much is the interpreter's
price for reporting every instruction at all.

--calls EXT (the _floor module built in build/bench, EXT its path) adds
the other events ops mode asks for, CALL, C_RETURN, C_RAISE, RAISE and
RERAISE, to EXT's do-nothing vectorcall callable, and EXT's PEP 523 frame
hook that only calls the default eval function: the interpreter's price
for the function and C call events too (calls no longer inlined, every
call reported), with still nothing recorded.  --tsc EXT prints what one
TSC read costs, in ns (the best of 5 runs of 2M reads).
"""
import importlib.machinery
import importlib.util
import operator
import os
import runpy
import sys


def load_ext(path):
    loader = importlib.machinery.ExtensionFileLoader("_floor", path)
    spec = importlib.util.spec_from_file_location("_floor", path,
                                                  loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def main():
    ext = None
    if sys.argv[1] == "--tsc":
        ext = load_ext(sys.argv[2])
        print(min(ext.tsc_ns(2000000) for _ in range(5)))
        return
    if sys.argv[1] == "--calls":
        ext = load_ext(sys.argv[2])
        del sys.argv[1:3]
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
    events = mon.events.INSTRUCTION
    if ext is not None:
        for name in ("CALL", "C_RETURN", "C_RAISE", "RAISE", "RERAISE"):
            bit = getattr(mon.events, name)
            mon.register_callback(tool, bit, ext.noop)
            events |= bit
        ext.hook()
    mon.set_events(tool, events)
    try:
        run()
    finally:
        mon.set_events(tool, 0)


if __name__ == "__main__":
    main()
