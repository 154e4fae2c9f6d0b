"""``python -m evalprof``: run a script, module or command under evalprof.

In the style of ``python -m cProfile``, with the target running as it
would without the profiler: ``sys.argv``, ``sys.path[0]`` and a fresh
``__main__`` module are set up the way the interpreter sets them for
``python script.py``, ``python -m module`` and ``python -c code``; an
uncaught exception prints the usual traceback (without evalprof's frames)
and exits with status 1; ``sys.exit()`` exits with its status.

Tracing starts just before the target's first instruction and ends when
the interpreter exits, after non-daemon threads have finished, so the
trace covers everything the program does.  A trace path that cannot be
written is reported before the target runs.
"""
import os
import sys
import types

USAGE = """\
usage: python -m evalprof [-o FILE] [--no-ops] [--threads] [-q]
                          (script.py | -m module | -c code) [args ...]

Run a Python program under evalprof and write a .evp trace of its
evaluation loop: frames, instructions, C calls, exceptions.

options:
  -o, --output FILE  trace file to write (default: evalprof.evp)
  --no-ops           do not record instructions (op events): frames, C
                     calls and exceptions only, at a fraction of the cost
  --threads          trace every thread, not only the main thread
  --no-follow-fork   a forked child writes no trace (default: FILE.<pid>)
  --no-calibrate     do not measure first what one event costs the program
                     (about 40 ms); reports then compensate elapsed times
                     by the recorder's own cost only
  -q, --quiet        no summary line on stderr at the end
  -m module          run library module as a script (like python -m)
  -c code            run code given as a string (like python -c)
  -h, --help         show this help and exit
  --version          print evalprof's version and exit

Read the trace with `evalprof summary FILE`, `evalprof tree FILE`.
"""

_keep = []  # modules that must outlive the swap of __main__


class UsageError(Exception):
    pass


def _parse(argv):
    opts = {"output": "evalprof.evp", "ops": True, "threads": False,
            "follow_fork": True, "calibrate": True, "quiet": False, "kind": None,
            "target": None, "args": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            opts["kind"] = "help"
            return opts
        if a == "--version":
            opts["kind"] = "version"
            return opts
        if a in ("-o", "--output"):
            if i + 1 >= len(argv):
                raise UsageError("%s needs a file name" % a)
            opts["output"] = argv[i + 1]
            i += 2
            continue
        if a.startswith("--output="):
            opts["output"] = a[len("--output="):]
        elif a.startswith("-o") and len(a) > 2:
            opts["output"] = a[2:]
        elif a == "--no-ops":
            opts["ops"] = False
        elif a == "--ops":
            opts["ops"] = True
        elif a == "--threads":
            opts["threads"] = True
        elif a == "--no-follow-fork":
            opts["follow_fork"] = False
        elif a == "--no-calibrate":
            opts["calibrate"] = False
        elif a in ("-q", "--quiet"):
            opts["quiet"] = True
        elif a in ("-m", "-c"):
            if i + 1 >= len(argv):
                raise UsageError("%s needs an argument" % a)
            opts["kind"] = "module" if a == "-m" else "code"
            opts["target"] = argv[i + 1]
            opts["args"] = argv[i + 2:]
            return opts
        elif a.startswith("-m") or a.startswith("-c"):
            opts["kind"] = "module" if a[1] == "m" else "code"
            opts["target"] = a[2:]
            opts["args"] = argv[i + 1:]
            return opts
        elif a == "--":
            if i + 1 >= len(argv):
                raise UsageError("no script after --")
            opts["kind"] = "script"
            opts["target"] = argv[i + 1]
            opts["args"] = argv[i + 2:]
            return opts
        elif a.startswith("-") and a != "-":
            raise UsageError("unknown option %s" % a)
        else:
            opts["kind"] = "script"
            opts["target"] = a
            opts["args"] = argv[i + 1:]
            return opts
        i += 1
    raise UsageError("no script, -m module or -c code to run")


def _check_output(path):
    """One line about a trace path that cannot be written, or None.  The
    file is created (and removed again if it did not exist), so a
    read-only directory shows here, before the target runs."""
    d = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        return "cannot write trace %s: it is a directory" % path
    if not os.path.isdir(d):
        return "cannot write trace %s: directory %s does not exist" % (path, d)
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        return "cannot write trace %s: %s" % (path, e.strerror or e)
    if not existed:
        try:
            os.unlink(path)
        except OSError:
            pass
    return None


def _script_target(path):
    """(code, globals, argv0, path0) for `python script.py`."""
    import importlib.machinery
    import io

    if os.path.isdir(path) or not path.endswith(".py") and _is_zip(path):
        return None  # a directory or zip application: runpy runs it
    with io.open_code(path) as f:
        source = f.read()
    code = compile(source, path, "exec", dont_inherit=True)
    abspath = os.path.abspath(path)
    g = {
        "__name__": "__main__",
        "__file__": abspath,
        "__cached__": None,
        "__package__": None,
        "__spec__": None,
        "__loader__": importlib.machinery.SourceFileLoader("__main__",
                                                          abspath),
    }
    return code, g, path, os.path.dirname(os.path.realpath(path))


def _is_zip(path):
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def _module_target(name):
    """(code, globals, argv0, path0) for `python -m module`."""
    import runpy

    mod_name, spec, code = runpy._get_module_details(name)
    g = {
        "__name__": "__main__",
        "__file__": spec.origin,
        "__cached__": spec.cached,
        "__package__": spec.parent,
        "__spec__": spec,
        "__loader__": spec.loader,
    }
    return code, g, spec.origin, os.getcwd()


def _code_target(text):
    import importlib.machinery

    code = compile(text, "<string>", "exec", dont_inherit=True)
    g = {
        "__name__": "__main__",
        "__package__": None,
        "__spec__": None,
        "__loader__": importlib.machinery.BuiltinImporter,
    }
    return code, g, "-c", ""


def _install_main(g):
    """A fresh __main__ module holding G, as the interpreter makes one."""
    import builtins

    module = types.ModuleType("__main__")
    module.__dict__.update(g)
    module.__dict__["__builtins__"] = builtins
    _keep.append(sys.modules.get("__main__"))
    sys.modules["__main__"] = module
    return module.__dict__


def _one_line(text, limit=4000):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _run_meta(kind, target, args):
    """The program's own command line as "argv" (what the reports show),
    and evalprof's full command as "evalprof.command"."""
    import shlex

    head = {"script": [target], "module": ["-m", target],
            "code": ["-c", _one_line(target, 200)]}[kind]
    meta = {"argv": _one_line(shlex.join([sys.executable] + head
                                         + list(args))),
            "target": _one_line(" ".join(head), 400)}
    try:
        with open("/proc/self/cmdline", "rb") as f:
            raw = f.read().rstrip(b"\0").split(b"\0")
        meta["evalprof.command"] = _one_line(
            " ".join(a.decode("utf-8", "replace") for a in raw))
    except OSError:
        pass
    return meta


def _print_uncaught(exc):
    """Print an uncaught exception as the interpreter would, leaving out
    the runner's own frame."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_globals.get("__name__") == __name__:
        tb = tb.tb_next
    exc = exc.with_traceback(tb)
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:
        import traceback

        traceback.print_exception(type(exc), exc, tb)


def main(argv=None, prog="python -m evalprof"):
    if argv is None:
        argv = sys.argv[1:]
    try:
        opts = _parse(list(argv))
    except UsageError as e:
        sys.stderr.write(USAGE.replace("python -m evalprof", prog))
        sys.stderr.write("evalprof: %s\n" % e)
        return 2
    if opts["kind"] == "help":
        sys.stdout.write(USAGE.replace("python -m evalprof", prog))
        return 0
    if opts["kind"] == "version":
        from evalprof import __version__

        sys.stdout.write("evalprof %s\n" % __version__)
        return 0

    import evalprof

    problem = _check_output(opts["output"])
    if problem:
        sys.stderr.write("evalprof: %s\n" % problem)
        return 2
    try:
        evalprof._api._tracer_module()
    except ImportError as e:
        sys.stderr.write("%s\n" % e)
        return 2

    kind, target = opts["kind"], opts["target"]
    try:
        if kind == "script":
            made = _script_target(target)
        elif kind == "module":
            made = _module_target(target)
        else:
            made = _code_target(target)
    except OSError as e:
        sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n"
                         % (sys.executable, os.path.abspath(target),
                            e.errno or 0, e.strerror))
        return 2
    except SyntaxError as e:
        import traceback

        traceback.print_exception(type(e), e, None)
        return 1
    except ImportError as e:
        sys.stderr.write("%s: %s\n" % (sys.executable, e))
        return 1

    if made is None:  # a directory or zip application
        code = None
        argv0, path0 = target, os.path.abspath(target)
    else:
        code, g, argv0, path0 = made
    sys.argv[:] = [argv0] + list(opts["args"])
    if not getattr(sys.flags, "safe_path", False):
        if sys.path and sys.path[0] in ("", os.getcwd()):
            sys.path[0] = path0
        else:
            sys.path.insert(0, path0)

    try:
        evalprof.start(opts["output"], ops=opts["ops"],
                       threads=opts["threads"],
                       follow_fork=opts["follow_fork"], quiet=opts["quiet"],
                       calibrate=opts["calibrate"],
                       meta=_run_meta(kind, target, opts["args"]))
    except OSError as e:
        sys.stderr.write("evalprof: cannot write trace %s: %s\n"
                         % (opts["output"], e.strerror or e))
        return 2

    if code is None:
        import runpy

        runpy.run_path(target, run_name="__main__")
        return 0
    globs = _install_main(g)
    try:
        exec(code, globs)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        _print_uncaught(e)
        return 1
    return 0
