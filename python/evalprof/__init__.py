"""evalprof: trace CPython's bytecode evaluation loop.

This package traces an unmodified CPython 3.11 to 3.15 (evalprof's
"mode B") and writes the same ``.evp`` traces as the instrumented
interpreter: every Python frame evaluated (enter, exit, resume, suspend),
every instruction executed (op), exceptions, calls of C functions and the
time spent back in the runtime.  Read the traces with ``evalprof summary``,
``evalprof tree`` and the other views.

From the command line, in the manner of ``python -m cProfile``::

    python -m evalprof [-o FILE] [--no-ops] [--main-thread-only] script.py [args]
    python -m evalprof [-o FILE] -m module [args]
    python -m evalprof [-o FILE] -c code [args]

From Python::

    import evalprof
    evalprof.start("run.evp")
    ...
    evalprof.stop()

    with evalprof.profile("run.evp", ops=False):
        ...

This file only checks the interpreter and re-exports the API; it is kept
parseable by old interpreters so that they get a one-line error instead of
a syntax error.
"""
import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13), (3, 14), (3, 15))


def _unsupported_reason():
    impl = getattr(sys, "implementation", None)
    name = getattr(impl, "name", "cpython")
    version = "%d.%d.%d" % tuple(sys.version_info[:3])
    if name != "cpython":
        return "%s %s is not CPython" % (name, version)
    if tuple(sys.version_info[:2]) not in SUPPORTED:
        return "Python %s is not supported" % version
    gil = getattr(sys, "_is_gil_enabled", None)
    if gil is not None and not gil():
        return "Python %s runs without the GIL (free-threaded build)" % version
    if hasattr(sys, "gettotalrefcount"):
        return "Python %s is a debug build (--with-pydebug)" % version
    return None


_reason = _unsupported_reason()
if _reason is not None:
    _message = ("evalprof: %s (%s); evalprof traces release builds of "
                "CPython %s with the GIL" % (
                    _reason, sys.executable,
                    ", ".join("%d.%d" % v for v in SUPPORTED[:-1])
                    + " and %d.%d" % SUPPORTED[-1]))
    running_m = sys.argv[:1] == ["-m"] or (
        sys.version_info[0] < 3 and sys.argv[:1] == ["-c"])
    if running_m:
        # python -m evalprof (Python 2 shows "-c" there while it looks for
        # the module): one line, not a traceback.
        sys.stderr.write(_message + "\n")
        raise SystemExit(2)
    raise ImportError(_message)

from evalprof._api import (  # noqa: E402
    __version__,
    TracerUnavailable,
    is_active,
    profile,
    start,
    stop,
)

__all__ = ["start", "stop", "profile", "is_active", "TracerUnavailable",
           "__version__"]
