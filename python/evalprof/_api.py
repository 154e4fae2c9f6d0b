"""The evalprof Python API: start(), stop(), profile and friends.

Loads the ``evalprof._tracer`` extension built for this interpreter, gives
it the trace metadata (interpreter version, mode B, what this producer
cannot emit) and the interpreter's opcode table, and handles the process
events a trace must survive:

- interpreter exit: the trace is closed by an exit handler, after
  non-daemon threads have been joined, so their events are in it;
- os.fork(): the recorder gives a forked child a trace of its own,
  ``PATH.<pid>``; here the child's main stream gets its thread name back,
  and a multiprocessing child (which leaves through os._exit) closes its
  trace before it goes.

evalprof's own frames are left out of the trace.
"""
import _thread
import atexit
import errno
import os
import sys
import threading
import time

from evalprof import _kinds

__version__ = "0.1.0"


def _cannot_emit(can_emit):
    """The discussion's kinds a stock interpreter cannot show (phases
    inside the eval loop that only the instrumented interpreter, mode A,
    records), by name: those missing from the extension's CAN_EMIT."""
    return ", ".join(_kinds.NAMES[k] for k in range(_kinds.CLASSIC_COUNT)
                     if not can_emit >> k & 1)


class TracerUnavailable(ImportError):
    """The evalprof._tracer extension is missing for this interpreter."""


def _version_tag():
    """X.Y.Z and ABI flags: the tag python/find_interpreters.py gave the
    extension built for this interpreter."""
    return "%d.%d.%d%s" % (sys.version_info[:3]
                           + (getattr(sys, "abiflags", ""),))


def _load_tracer():
    """Import evalprof._tracer.

    A build directory holds one extension per interpreter it was built for,
    named ``_tracer-<X.Y.Z><abiflags>.so``; the exact version is preferred,
    then another build of the same X.Y (their ABI is the same).  A module
    installed under the standard name is used first.
    """
    try:
        from evalprof import _tracer  # noqa: F401
        return _tracer
    except ImportError:
        pass
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    abiflags = getattr(sys, "abiflags", "")
    exact = "_tracer-%s.so" % _version_tag()
    minor = "_tracer-%d.%d." % sys.version_info[:2]
    try:
        names = os.listdir(here)
    except OSError:
        names = []
    builds = sorted(n for n in names if n.startswith("_tracer-")
                    and n.endswith(".so"))
    if exact in builds:
        path = os.path.join(here, exact)
    else:
        same = [n for n in builds if n.startswith(minor)
                and n.endswith(abiflags + ".so")]
        if not same:
            built = ", ".join(n[len("_tracer-"):-len(".so")]
                              for n in builds) or "none"
            raise TracerUnavailable(
                "evalprof: the evalprof._tracer extension was not built for "
                "Python %s (%s); built for: %s.  Run `make` in the evalprof "
                "tree: it builds one for every CPython 3.11-3.15 it finds."
                % (_version_tag(), sys.executable, built))
        path = os.path.join(here, same[-1])
    loader = importlib.machinery.ExtensionFileLoader("evalprof._tracer", path)
    spec = importlib.util.spec_from_file_location("evalprof._tracer", path,
                                                  loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules["evalprof._tracer"] = module
    return module


_tracer = None
_state = {"path": None, "quiet": True, "hooks_set": False}
_lock = threading.Lock()


def _tracer_module():
    global _tracer
    if _tracer is None:
        _tracer = _load_tracer()
    return _tracer


def _opcode_table():
    """(opcode, base opcode, name) for every opcode this interpreter has,
    specialized forms included (they map to their base instruction).
    The names and numbers are dis._all_opmap's, made from opcode as dis
    makes them (importing dis would cost every traced program its
    imports): 3.13 lists the specialized forms' numbers, 3.11 and 3.12
    give them the unnamed slots in order."""
    import opcode

    allmap = dict(opcode.opmap)
    specialized = getattr(opcode, "_specialized_opmap", None)
    if specialized is not None:
        allmap.update(specialized)
    else:
        free = [op for op, name in enumerate(opcode.opname)
                if name.startswith("<")]
        allmap.update(zip(getattr(opcode, "_specialized_instructions", ()),
                          free))
    base_of = {}
    for base, forms in getattr(opcode, "_specializations", {}).items():
        for form in forms:
            base_of[form] = base
    table = []
    for name, op in allmap.items():
        if not 0 <= op <= 255:
            continue  # pseudo-instructions never execute
        base = base_of.get(name, name)
        table.append((op, allmap.get(base, op), name))
    table.sort()
    return table


def _roots(extra):
    """The directories the trace's functions are keyed relative to, so
    that diff can match two runs' functions (root.* metadata): the
    interpreter's stdlib and site-packages, and the program's directory.
    The runner names the script's (root.script, root.script.real); a
    program that calls start() itself gets its __main__ file's directory,
    or the working directory."""
    import sysconfig

    roots = {}
    try:
        paths = sysconfig.get_paths()
    except Exception:
        paths = {}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(name):
            roots["root." + name] = os.path.abspath(paths[name])
    # where the stdlib really loads from (sysconfig names the installed
    # place, which an interpreter run from its build tree does not use),
    # as the instrumented interpreter records it
    if getattr(sys, "_stdlib_dir", None):
        roots["root.stdlib"] = os.path.abspath(sys._stdlib_dir)
    if "root.script" not in (extra or {}):
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        try:
            roots["root.script"] = (os.path.dirname(os.path.abspath(main))
                                    if main else os.getcwd())
        except (OSError, TypeError, ValueError):
            pass
    return roots


def _jit_metadata(ops, sample):
    """What the trace says of the JIT: "python.jit", whether this
    interpreter has one and runs it (sys._jit, 3.14+), and for exact mode
    "jit.while_traced", what tracing does to it.  sys.monitoring's events
    are set when tracing starts and cleared when it stops: either
    invalidates every executor the tier-2 optimizer made (their machine
    code included); with INSTRUCTION events (ops) every instruction of the
    traced code is instrumented, which the optimizer makes no trace of, so
    while traced the program runs in the tier-1 interpreter; without them
    (--no-ops) it compiles traces again."""
    jit = getattr(sys, "_jit", None)
    if jit is None:
        if sys.version_info >= (3, 13):
            return {"python.jit": "unknown: CPython %d.%d does not say "
                    "whether it runs a JIT (sys._jit is 3.14's)"
                    % sys.version_info[:2]}
        return {"python.jit": "none: CPython %d.%d has no JIT"
                % sys.version_info[:2]}
    try:
        available, enabled = jit.is_available(), jit.is_enabled()
    except Exception:
        return {"python.jit": "unknown: sys._jit did not answer"}
    if not available:
        return {"python.jit": "not built in (CPython configured without "
                "--enable-experimental-jit)"}
    if not enabled:
        return {"python.jit": "off: built in, not enabled (PYTHON_JIT=1 "
                "enables it)"}
    meta = {"python.jit": "on (PYTHON_JIT=1)"}
    if sample:
        pass  # the sampled mode sets no events: the JIT runs as untraced
    elif ops:
        meta["jit.while_traced"] = (
            "off: setting sys.monitoring's events when tracing started "
            "discarded every executor compiled before, and INSTRUCTION "
            "events instrument every instruction, of which the tier-2 "
            "optimizer makes no trace: the traced program ran in the "
            "tier-1 interpreter (and its compiled code is discarded again "
            "when tracing stops)")
    else:
        meta["jit.while_traced"] = (
            "on, compiled afresh: setting sys.monitoring's events (CALL, "
            "C_RETURN, C_RAISE, RAISE, RERAISE) when tracing started "
            "discarded every executor compiled before, and the optimizer "
            "compiled hot code again while traced (--no-ops sets no "
            "INSTRUCTION events)")
    return meta


def _metadata(ops, threads, extra, can_emit, sample=False):
    impl = sys.implementation
    meta = {
        "python.version": sys.version.split()[0],
        "python.executable": sys.executable or "",
        "python.implementation": "%s (%s)" % (impl.name, impl.cache_tag),
        "python.build": " ".join(sys.version.split()),
        "evalprof.version": __version__,
        "ops": "on" if ops else "off",
        "ops.form": ("base instructions: while traced the interpreter runs "
                     "its generic (unspecialized) instructions"),
        "threads": "all" if threads else "starting thread only",
        "cannot_emit": _cannot_emit(can_emit)
        + ("" if ops else ", op (--no-ops)")
        + " (the instrumented interpreter, mode A, records the loop phases)",
    }
    meta.update(_jit_metadata(ops, sample))
    if sample:
        meta["ops"] = "sampled"
        meta["ops.form"] = ("executed instructions, specialized forms "
                            "included: the interpreter runs as untraced "
                            "(the opcode table maps each to its base)")
    meta.update(_roots(extra))
    for key, value in (extra or {}).items():
        meta[str(key)] = str(value)
    return meta


# ---- what tracing costs the program, per event ------------------------------

# Code for the calibration, compiled under a name of its own: evalprof
# leaves its own package's frames out of traces.
_CALIBRATION_SOURCE = """
def loop(n):
    i = 0
    while i < n:
        i += 1
    return i

def leaf():
    pass

def calls(n):
    f = leaf
    g = len
    x = ()
    for _ in range(n):
        f()
        g(x)
"""

_OP_KINDS = (_kinds.OP, _kinds.LOOP_EXCEPTION)
# with lines, ops are op at events, from a callback of their own
_LINES_KINDS = _OP_KINDS + (_kinds.OP_AT,)
_FRAME_KINDS = (_kinds.ENTER, _kinds.EXIT, _kinds.RUNTIME_OTHER,
                _kinds.RESUME, _kinds.SUSPEND, _kinds.C_CALL, _kinds.C_RETURN,
                _kinds.C_RAISE)
_calibrated = {}


def _best_ns(fn, n, runs, clock=time.perf_counter_ns):
    """Best time of RUNS calls FN(N), by the clock as it was at import (a
    program may have patched time since)."""
    best = None
    for _ in range(runs):
        t0 = clock()
        fn(n)
        t = clock() - t0
        if best is None or t < best:
            best = t
    return best


def _traced(tracer, fn, n, runs, ops, lines=False):
    """Best time of RUNS calls of FN(N) traced into a scratch trace (None
    for RUNS 0), and the events that trace holds."""
    import tempfile  # (imported here: exact mode's calibration alone)

    fd, scratch = tempfile.mkstemp(prefix="evalprof-calibration-",
                                   suffix=".evp")
    os.close(fd)
    try:
        tracer.start(scratch, ops=ops, threads=False, follow_fork=False,
                     opcodes=_opcode_table(), meta={},
                     ignore_prefix=_package_dir(), lines=lines)
        try:
            best = _best_ns(fn, n, runs) if runs else None
        finally:
            stats = tracer.stop()
    finally:
        try:
            os.unlink(scratch)
        except OSError:
            pass
    return best, stats["events"], stats.get("event_cost_ns", 0.0)


def _event_costs(tracer, ops, lines=False):
    """What one event costs the traced program in all: the interpreter's
    hook or callback, evalprof's work in it and the recorder's, in ns.

    Small loops run untraced and traced (into scratch traces); the
    difference of their best times over the events they recorded gives the
    cost of an op event (a loop of plain instructions) and of a frame or C
    call event (a loop of calls, traced as the real trace will be: with
    ops, the loop's op events are counted apart and their cost taken off
    first).  Kept as event_cost.kind.* metadata, by which the reports
    compensate each event's elapsed time.  Measured once per process
    (about 40 ms); what could not be measured is left out, and tried
    again at the next start().  With LINES (and ops) the loops are traced
    with lines, whose callback costs more, and the op cost is also that of
    an op at event.

    Returns (costs, problem): PROBLEM is None, or one line saying why the
    calibration failed (the trace then goes on with the recorder's own
    cost only, and says so).
    """
    key = bool(ops)
    lines = bool(lines) and key
    if (key, lines) in _calibrated:
        return _calibrated[key, lines], None
    op_kinds = _LINES_KINDS if lines else _OP_KINDS
    costs = {}
    problem = None
    try:
        code = {}
        exec(compile(_CALIBRATION_SOURCE, "<evalprof calibration>", "exec"),
             code)
        n, runs = 2000, 7
        base = {}  # events of a session that runs nothing, by ops
        floor = [0.0]  # the recorder's own cost: no event costs less

        def per_run(fn, with_ops, nruns):
            with_lines = lines and with_ops
            if with_ops not in base:
                base[with_ops] = _traced(tracer, fn, n, 0, with_ops,
                                         with_lines)[1]
            best, events, rec = _traced(tracer, fn, n, nruns, with_ops,
                                        with_lines)
            floor[0] = max(floor[0], rec)
            return best, (events - base[with_ops]) / float(nruns)

        op_ns = None
        if ops:
            plain = _best_ns(code["loop"], n, runs)
            traced, events = per_run(code["loop"], True, runs)
            if events > 0:
                # a noisy machine can make the difference implausibly
                # small: never below what the recorder alone costs
                op_ns = max((traced - plain) / events, floor[0])
                for kind in op_kinds:
                    costs[_kinds.cost_key(kind)] = "%.2f" % op_ns
        calls = code["calls"]
        plain = _best_ns(calls, n, runs)
        traced, events = per_run(calls, key, runs)
        frames = events
        if ops:
            # the op events among them, and what they cost
            frames = per_run(calls, False, 1)[1]
            traced -= (events - frames) * (op_ns or 0)
        if frames > 0 and (op_ns or not ops):
            frame_ns = max((traced - plain) / frames, floor[0])
            for kind in _FRAME_KINDS:
                costs[_kinds.cost_key(kind)] = "%.2f" % frame_ns
    except Exception as e:
        costs = {}
        problem = "%s: %s" % (type(e).__name__, e) if str(e) else \
            type(e).__name__
    if len(costs) == len(_FRAME_KINDS) + (len(op_kinds) if ops else 0):
        _calibrated[key, lines] = costs
    elif problem is None:
        problem = "its loops recorded no events"
    return costs, problem


def _package_dir():
    return os.path.dirname(os.path.abspath(__file__)) + os.sep


def _at_exit():
    with _lock:
        if is_active():
            _stop_locked()


def _wrap_os_exit():
    """Make os._exit() close the trace first.

    os._exit() skips every exit handler, so a forked child leaving that
    way (the usual way) would lose what it recorded since the writer's
    last flush.  The wrapper behaves as os._exit() otherwise.
    """
    original = os._exit
    if getattr(original, "_evalprof_original", None) is not None:
        return

    def _exit(status):
        # Never block (a signal handler may run while start() or stop()
        # holds the lock) and never raise: the process leaves either way.
        try:
            if _lock.acquire(blocking=False):
                try:
                    if is_active():
                        _stop_locked()
                finally:
                    _lock.release()
        except BaseException:
            pass
        original(status)

    _exit.__name__ = original.__name__
    _exit.__qualname__ = getattr(original, "__qualname__", "_exit")
    _exit.__doc__ = original.__doc__
    _exit._evalprof_original = original
    os._exit = _exit


def _before_fork():
    # The recorder's writer thread is stopped for a fork from the main
    # thread (from another one, the program has threads of its own):
    # 3.12+ warns of a fork in a multi-threaded process, counting every
    # thread the kernel sees, and the program did not start that one.
    # _tracer.fork_resume, the parent's after-fork hook, restarts it.
    if is_active() and threading.current_thread() is threading.main_thread():
        _tracer.fork_pause()


def _after_fork_in_child():
    global _lock
    # A fork from another thread while start() or stop() held the lock
    # leaves it held in the child, by a thread the child does not have.
    _lock = threading.Lock()
    if not is_active():
        return
    try:
        _tracer.thread_name(threading.current_thread().name)
    except Exception:
        pass
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        # A multiprocessing child leaves through os._exit() after running
        # its finalizers: close the trace in the last of them.
        util.register_after_fork(_MP_ANCHOR, _mp_child_started)


class _Anchor(object):
    pass


_MP_ANCHOR = _Anchor()


def _mp_child_started(_anchor):
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.Finalize(None, _at_exit, exitpriority=-1000000)


def _recorder_env(buffers, buffer_size, on_overflow, max_size, duration):
    """The recorder's options, as its environment carries them (the same
    for evalprof record, python -m evalprof and the instrumented
    interpreter); a forked child's session inherits them."""
    if on_overflow not in (None, "wait", "drop"):
        raise ValueError("on_overflow must be 'wait' or 'drop', not %r"
                         % (on_overflow,))
    for name, value, var in (("buffers", buffers, "EVALPROF_BUFFERS"),
                             ("buffer_size", buffer_size,
                              "EVALPROF_BUFFER_SIZE"),
                             ("max_size", max_size, "EVALPROF_MAX_SIZE"),
                             ("duration", duration, "EVALPROF_DURATION")):
        if value is None:
            continue
        if isinstance(value, str):
            text = value
        elif isinstance(value, (int, float)) and value > 0:
            text = repr(value)
        else:
            raise ValueError("%s must be a positive number, not %r"
                             % (name, value))
        os.environ[var] = text
    if on_overflow is not None:
        os.environ["EVALPROF_ON_OVERFLOW"] = on_overflow


def start(path="evalprof.evp", ops=True, threads=True, follow_fork=True,
          quiet=True, meta=None, calibrate=True, lines=False, buffers=None,
          buffer_size=None, on_overflow=None, max_size=None, duration=None,
          zstd=False, sample=False, rate=None, clock="cpu", max_depth=None):
    """Start tracing into PATH (an ``.evp`` file, created or truncated).

    ops: record every instruction executed (op events); False records
        frames, C calls and exceptions only, at a fraction of the cost.
    threads: trace every thread, including threads already running and
        threads started later (the default); False traces only the
        calling thread, and counts the threads that ran untraced (the
        trace's threads.untraced metadata, and a line on stderr at the
        end, quiet or not).
    follow_fork: a forked child writes its own trace, PATH.<pid>.
    lines: op events carry their instruction's offset, and each function
        its line table, so that the reports can say which line is hot
        (``summary --lines``); with ops only.
    quiet: no summary line on stderr when the trace is closed (problems
        writing the trace are reported either way).
    meta: extra metadata pairs for the trace.
    calibrate: measure first what one event costs the program (about
        40 ms, once per process), so that the reports can take it off
        each event's elapsed time; False records the recorder's own cost
        only.
    buffers, buffer_size: how many buffers each thread may fill before
        the writer has written them (default 32) and their size in bytes
        (default 1 MiB; "4M" accepted): a thread's records take at most
        buffers * buffer_size.
    on_overflow: "wait" (the default) for the writer when every buffer is
        full, or "drop" whole buffers of events, counted in the trace.
    max_size, duration: stop recording once the trace holds max_size
        bytes ("500M" accepted) or duration seconds after the start; the
        program runs on, and the trace's recorder.stopped says which.
    zstd: write event chunks zstd-compressed (True: level 1, or a level)
        whenever the writer keeps up.
    sample: record samples instead of events: no hook is installed; a
        timer interrupts each thread RATE times a second (default 1000, at
        most 100000) of its CPU time (clock "cpu", the default) or of
        real time ("wall"), and the thread's stack, executed instruction
        and state are written (docs/FORMAT.md "Samples").  Stacks deeper
        than max_depth frames (default 512) lose their outermost frames.
        ops, lines and calibrate do not apply.

    Raises OSError when PATH cannot be created (nothing is traced then),
    RuntimeError when a trace is already being recorded, and
    TracerUnavailable when the extension is missing for this interpreter.
    """
    tracer = _tracer_module()
    if sample:
        if clock not in ("cpu", "wall"):
            raise ValueError("clock must be 'cpu' or 'wall', not %r"
                             % (clock,))
        for name, value in (("rate", rate), ("max_depth", max_depth)):
            if value is not None and (isinstance(value, bool) or not
                                      isinstance(value, int) or value <= 0):
                raise ValueError("%s must be a positive int, not %r"
                                 % (name, value))
    _recorder_env(buffers, buffer_size, on_overflow, max_size, duration)
    if zstd:
        os.environ["EVALPROF_ZSTD"] = "1" if zstd is True else str(int(zstd))
    path = os.path.abspath(os.fspath(path))
    with _lock:
        if tracer.active():
            raise RuntimeError("evalprof is already tracing (into %s)"
                               % _state["path"])
        if not _state["hooks_set"]:
            atexit.register(_at_exit)
            _wrap_os_exit()
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(before=_before_fork,
                                    after_in_parent=tracer.fork_resume,
                                    after_in_child=_after_fork_in_child)
            _state["hooks_set"] = True
        costs, problem = (_event_costs(tracer, ops, lines)
                          if calibrate and not sample else ({}, None))
        if problem is not None:
            # Not fatal: the reports compensate by the recorder's own cost.
            problem = " ".join(problem.split())[:300]
            sys.stderr.write("evalprof: calibration failed (%s); elapsed "
                             "times are compensated by the recorder's own "
                             "cost only\n" % problem)
            costs = {"event_cost.calibration": "failed: " + problem}
        extra = {}
        if sample:
            extra = dict(sample=True, rate=rate or 0,
                         cpu_clock=clock == "cpu", max_depth=max_depth or 0)
        tracer.start(path, ops=bool(ops), threads=bool(threads),
                     follow_fork=bool(follow_fork), opcodes=_opcode_table(),
                     meta=dict(_metadata(ops, threads, meta,
                                         tracer.can_emit, sample), **costs),
                     ignore_prefix=_package_dir(),
                     lines=bool(lines) and not sample, **extra)
        if sample and threads:
            _wrap_thread_start(tracer)
            _wrap_raw_thread_start(tracer)
        _state["sample"] = bool(sample)
        _state["path"] = path
        _state["quiet"] = quiet
        _state["started"] = time.monotonic()
        _state["untraced_hint"] = "threads=False"


def stop():
    """Stop tracing and close the trace.

    Returns a dict of figures: events, dropped, bytes, chunks,
    event_cost_ns, error (an errno, 0 when every write succeeded), path,
    with threads=False untraced_threads (how many other threads ran
    Python code untraced), and for a sampled session "sampling": a dict
    of samples, dropped (lost to full rings), missed (timer overruns,
    folded into weights) and threads.
    Raises RuntimeError when not tracing.
    """
    with _lock:
        return _stop_locked()


def _wrap_thread_start(tracer):
    """Sampled sessions: a thread started through threading registers for
    sampling first thing (once per thread), from threading's own
    Thread._bootstrap_inner wrapped.  This wrapper's frame is evalprof's,
    left out of the samples' stacks."""
    original = threading.Thread._bootstrap_inner
    if getattr(original, "_evalprof_original", None) is not None:
        return

    def _bootstrap_inner(self):
        try:
            tracer.sample_thread(self.name)
        except Exception:
            pass  # this thread goes unsampled; the program runs on
        return original(self)

    _bootstrap_inner._evalprof_original = original
    threading.Thread._bootstrap_inner = _bootstrap_inner


class _RawThreadStart:
    """A thread started with _thread.start_new_thread while sampling: it
    registers first, then runs FUNCTION.  Its repr and attributes are
    FUNCTION's, so that an exception the thread leaves unhandled is
    reported as it would be without evalprof ("Exception ignored in
    thread started by ...", sys.unraisablehook's object; only its
    identity differs)."""

    __slots__ = ("tracer", "function")

    def __init__(self, tracer, function):
        self.tracer = tracer
        self.function = function

    def __call__(self, *args, **kwargs):
        try:
            self.tracer.sample_thread("thread %d" % _thread.get_native_id())
        except Exception:
            pass  # this thread goes unsampled; the program runs on
        return self.function(*args, **kwargs)

    def __repr__(self):
        return repr(self.function)

    def __getattr__(self, name):
        return getattr(self.function, name)


# _thread's functions that start a thread (start_new is the old name)
_RAW_STARTS = ("start_new_thread", "start_new")


def _wrap_raw_thread_start(tracer):
    """Sampled sessions: a thread started with _thread.start_new_thread
    (or its old name start_new) looked up at the call registers too.
    threading's own threads come through Thread._bootstrap_inner; a
    caller that bound the function before start() keeps the original."""
    for name in _RAW_STARTS:
        original = getattr(_thread, name, None)
        if original is None or \
                getattr(original, "_evalprof_original", None) is not None:
            continue

        def start_new_thread(function, args, kwargs=None, *,
                             _original=original):
            if callable(function):  # (else the original's own error)
                function = _RawThreadStart(tracer, function)
            if kwargs is None:
                return _original(function, args)
            return _original(function, args, kwargs)

        start_new_thread.__name__ = name
        start_new_thread.__qualname__ = name
        start_new_thread.__doc__ = original.__doc__
        start_new_thread._evalprof_original = original
        setattr(_thread, name, start_new_thread)


def _unwrap_thread_start():
    current = threading.Thread._bootstrap_inner
    original = getattr(current, "_evalprof_original", None)
    if original is not None:
        threading.Thread._bootstrap_inner = original
    for name in _RAW_STARTS:
        original = getattr(getattr(_thread, name, None),
                           "_evalprof_original", None)
        if original is not None:
            setattr(_thread, name, original)


def _stop_locked():
    _unwrap_thread_start()
    stats = _tracer_module().stop()
    stats["path"] = stats.get("path") or _current_path(_state["path"])
    if not _state["quiet"]:
        _report(stats)
    # what the trace lacks is said either way, as a write error is
    _report_untraced(stats.get("untraced_threads", 0))
    return stats


def _current_path(path):
    """The file this process wrote: a forked child writes PATH.<pid>."""
    if path is None:
        return None
    child = "%s.%d" % (path, os.getpid())
    if os.path.exists(child):
        return child
    return path


def _report(stats):
    if stats.get("error") == errno.ENOENT:
        return  # the file is gone: the recorder has said so
    size = stats.get("bytes", 0)
    if size >= 10 * 1024 * 1024:
        human = "%.1f MB" % (size / 1e6)
    else:
        human = "%.1f kB" % (size / 1e3)
    sampling = stats.get("sampling")
    if sampling is not None:
        what = "%s samples" % format(sampling.get("samples", 0), ",")
    else:
        what = "%s events" % format(stats.get("events", 0), ",")
    line = "evalprof: wrote %s (%s, %s" % (stats.get("path"), what, human)
    secs = time.monotonic() - _state.get("started", time.monotonic())
    if secs > 0 and sampling is not None:
        # a sampled trace grows by kilobytes a second
        line += ", %.1f kB/s" % (size / 1e3 / secs)
    elif secs > 0:
        line += ", %.1f MB/s" % (size / 1e6 / secs)
    line += ")"
    if stats.get("dropped"):
        line += ", %s events lost" % format(stats["dropped"], ",")
    if sampling is not None and sampling.get("dropped"):
        line += ", %s samples lost" % format(sampling["dropped"], ",")
    if stats.get("error"):
        line += ", write error: %s" % os.strerror(stats["error"])
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:
        pass


def _report_untraced(n):
    if not n:
        return
    try:
        sys.stderr.write("evalprof: %d thread%s ran untraced (%s)\n"
                         % (n, "" if n == 1 else "s",
                            _state["untraced_hint"]))
        sys.stderr.flush()
    except Exception:
        pass


def is_active():
    """True while this process is recording a trace."""
    return _tracer is not None and _tracer.active()


class profile(object):
    """Trace a block or a function.

        with evalprof.profile("block.evp"):
            work()

        @evalprof.profile("calls.evp", ops=False)
        def work(): ...

    The arguments are start()'s.  The figures of the finished trace are in
    the ``stats`` attribute.
    """

    def __init__(self, path="evalprof.evp", **options):
        self.path = path
        self.options = options
        self.stats = None

    def __enter__(self):
        start(self.path, **self.options)
        return self

    def __exit__(self, *exc):
        self.stats = stop()
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def traced(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return traced
