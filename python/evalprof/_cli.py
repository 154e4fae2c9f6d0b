"""``python -m evalprof``: run a script, module or command under evalprof.

In the style of ``python -m cProfile``, but the program cannot tell it is
traced: ``sys.argv``, ``sys.path[0]``, ``__file__`` and a pristine
``__main__`` are what ``python script.py``, ``python -m module``,
``python -c code`` and ``python -`` give it, and the program itself is run
by evalprof._tracer.run_main, from C, the way the interpreter's own main
runs it, with evalprof's frames set aside: tracebacks, the stack depth (so
RecursionError), ``sys._getframe()``, the exit status, ``sys.exit()`` and
KeyboardInterrupt are the untraced run's.

Tracing starts just before the program's first instruction and ends when
the interpreter exits, after non-daemon threads have finished, so the
trace covers everything the program does.  A trace path that cannot be
written is reported before the program runs.

``evalprof record -- PYTHON ...`` runs this same runner through a one-line
-c bootstrap (src/cli/cmd_record.c), the interpreter's own options before
it.

The command line is read without argparse where it is plain (options of
the table below, then the program): argparse, with the re, gettext and
locale it imports, was most of what evalprof's start-up cost a program
that does not import them itself (52 M instructions of 3.13's 75 M).
Anything else (help, --version, an error, an abbreviation, "--") is read
by argparse, as before.
"""
import os
import sys

DESCRIPTION = """\
Run a Python program under evalprof and write a .evp trace of its
evaluation loop: frames, instructions, C calls, exceptions; or, with
--sample, samples of each thread's stack and instruction.  The program
runs as it would without evalprof (same sys.argv, sys.path[0], __main__,
tracebacks, stack depth and exit status)."""

EPILOG = """\
program (the first argument that is not one of the options above):
  script.py [args]   run a script, as `python script.py`
  -m module [args]   run a library module as a script, as `python -m`
  -c code [args]     run code given as a string, as `python -c`
  - [args]           read the program from standard input, as `python -`

Read the trace with `evalprof summary FILE`, `evalprof tree FILE`; a
sampled one (--sample) with `evalprof summary --funcs FILE`, `summary
--lines`, `export --format folded`, `flamegraph`."""


def _columns():
    """The terminal's width as shutil.get_terminal_size() reads it, from
    COLUMNS or standard output, else 80: argparse makes a formatter at
    every add_argument, and its own default imports shutil (and bz2,
    lzma, fnmatch) into every program run under evalprof."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def _parser(prog):
    import argparse

    from evalprof import __version__

    class _Formatter(argparse.RawDescriptionHelpFormatter):
        def __init__(self, prog, width=None, **kw):
            super().__init__(prog, width=_columns() - 2 if width is None
                             else width, **kw)

    class _Parser(argparse.ArgumentParser):
        def error(self, message):
            self.print_usage(sys.stderr)
            self.exit(2, "evalprof: %s\n" % message)

    p = _Parser(prog=prog, description=DESCRIPTION, epilog=EPILOG,
                formatter_class=_Formatter,
                allow_abbrev=False,
                usage="%(prog)s [options] "
                      "(script.py | -m module | -c code | -) [args ...]")
    for flags, dest, what, default, meta, text in _OPTIONS:
        if isinstance(what, bool):
            p.add_argument(*flags, dest=dest, default=default, help=text,
                           action="store_true" if what else "store_false")
        elif isinstance(what, tuple):
            p.add_argument(*flags, dest=dest, default=default, choices=what,
                           help=text)
        else:
            p.add_argument(*flags, dest=dest, default=default, metavar=meta,
                           type=what, help=text)
    p.add_argument("--version", action="version",
                   version="evalprof %s" % __version__,
                   help="print evalprof's version and exit")
    which = p.add_mutually_exclusive_group()
    which.add_argument("-m", dest="module", nargs=argparse.REMAINDER,
                       metavar="module",
                       help="run library module as a script (as python -m); "
                            "what follows is the module's")
    which.add_argument("-c", dest="code", nargs=argparse.REMAINDER,
                       metavar="code",
                       help="run code given as a string (as python -c); "
                            "what follows is the program's")
    p.add_argument("program", nargs=argparse.REMAINDER,
                   help=argparse.SUPPRESS)
    return p


def _positive(kind):
    def check(text):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            import argparse

            raise argparse.ArgumentTypeError("expected a positive number, "
                                             "not %r" % text)
        return value
    return check


def _size(text):
    """A size in bytes, with K, M or G (powers of 1024): kept as text for
    the recorder, which reads it so."""
    t = text[:-2] if text.endswith("iB") else text
    t = t[:-1] if t[-1:] == "B" and t[-2:-1] in "KkMmGg" else t
    t = t[:-1] if t[-1:] in ("K", "k", "M", "m", "G", "g") else t
    try:
        ok = float(t) > 0
    except ValueError:
        ok = False
    if not ok:
        import argparse

        raise argparse.ArgumentTypeError("expected a positive size (bytes, "
                                         "or with K, M or G), not %r" % text)
    return text


# The runner's options, in the order --help lists them: option strings,
# dest, what it stores (True or False for a flag; a tuple of the values
# it takes; else the function that converts its value), its default,
# its metavar and its help.  The parser (_parser) and the quick reading
# (_quick) are both made from it; -m, -c, --version and the program are
# the parser's alone.
_OPTIONS = (
    (("-o", "--output"), "output", str, "evalprof.evp", "FILE",
     "trace file to write (default: evalprof.evp)"),
    (("--no-ops",), "ops", False, True, None,
     "do not record instructions (op events): frames, C calls and "
     "exceptions only, at a fraction of the cost"),
    (("--lines",), "lines", True, False, None,
     "op events carry their instruction's offset, so that summary --lines "
     "can say which line is hot"),
    (("--sample",), "sample", True, False, None,
     "record samples instead of events: no hook, a timer interrupts each "
     "thread --rate times a second and its stack, instruction and state "
     "are written (a few percent of overhead)"),
    (("--rate",), "rate", _positive(int), None, "HZ",
     "with --sample: samples per second and thread (default 1000, at most "
     "100000)"),
    (("--clock",), "clock", ("cpu", "wall"), None, None,
     "with --sample: the timer counts each thread's CPU time (cpu, the "
     "default) or real time (wall, so that waits show too)"),
    (("--max-depth",), "max_depth", _positive(int), None, "N",
     "with --sample: frames a sample walks (default 512, at most 4096); "
     "deeper stacks lose their outermost frames"),
    (("--main-thread-only",), "threads", False, True, None,
     "trace the main thread only (default: every thread, threads started "
     "later included); the threads left out are counted in the trace "
     "(threads.untraced) and on stderr"),
    (("--threads",), "threads_alias", True, False, None,
     "accepted for compatibility and does nothing: every thread is traced "
     "by default"),
    (("--no-follow-fork",), "follow_fork", False, True, None,
     "a forked child writes no trace (default: it writes FILE.<pid>)"),
    (("--no-calibrate",), "calibrate", False, True, None,
     "do not measure first what one event costs the program (about 40 "
     "ms); the reports then compensate elapsed times by the recorder's own "
     "cost only"),
    (("--buffers",), "buffers", _positive(int), None, "N",
     "buffers each thread may fill before the writer has written them "
     "(default 32): at most N times the buffer size a thread"),
    (("--buffer-size",), "buffer_size", _size, None, "SIZE",
     "bytes per buffer, with K, M or G (default 1M)"),
    (("--on-overflow",), "on_overflow", ("wait", "drop"), None, None,
     "when every buffer is full: wait for the writer (default) or drop "
     "whole buffers, counted in the trace"),
    (("--max-size",), "max_size", _size, None, "SIZE",
     "stop recording once the trace holds SIZE bytes (K, M or G); the "
     "program runs on"),
    (("--duration",), "duration", _positive(float), None, "SECONDS",
     "stop recording SECONDS after the start; the program runs on"),
    (("--zstd",), "zstd", True, False, None,
     "write event chunks zstd-compressed whenever the writer keeps up"),
    (("-q", "--quiet"), "quiet", True, False, None,
     "no progress line while recording and no summary line on stderr at "
     "the end"),
    (("-x",), "skip_first_line", True, False, None,
     "skip the script's first line (as python -x)"),
)
# option string -> (dest, what), and each dest's value when not given
_QUICK = {f: (o[1], o[2]) for o in _OPTIONS for f in o[0]}
_DEFAULTS = dict({o[1]: o[3] for o in _OPTIONS},
                 module=None, code=None, program=[])


def _quick(argv):
    """The options ARGV (split by _attached) gives, read as argparse reads
    them, or None where argparse must: anything but options of _QUICK
    (each once or more, a value after it or after "="), then the program
    (script.py, -, -m or -c with what follows, or "--" and what follows:
    evalprof record's form), and a value that would be refused or that
    begins with "-"."""
    import types

    opts = dict(_DEFAULTS)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-m", "-c"):
            if i + 1 == len(argv):
                return None
            opts["module" if a == "-m" else "code"] = argv[i + 1:]
            return types.SimpleNamespace(**opts)
        if a == "-" or a == "--" or not a.startswith("-"):
            opts["program"] = argv[i:]  # "--" kept, as argparse keeps it
            return types.SimpleNamespace(**opts)
        name, eq, value = a.partition("=") if a[:2] == "--" else (a, "", "")
        dest, what = _QUICK.get(name, (None, None))
        if dest is None or (eq and isinstance(what, bool)):
            return None
        if isinstance(what, bool):
            opts[dest] = what
            i += 1
            continue
        if not eq:
            if i + 1 == len(argv) or argv[i + 1].startswith("-"):
                return None
            value = argv[i + 1]
            i += 1
        if isinstance(what, tuple):
            if value not in what:
                return None
            opts[dest] = value
        else:
            try:
                opts[dest] = what(value)
            except Exception:
                return None
        i += 1
    return None  # no program: argparse says so


def _attached(argv):
    """ARGV with an attached -mMODULE or -cCODE split in two, so that what
    follows it is the program's, as for the interpreter."""
    out = list(argv)
    i = 0
    while i < len(out):
        a = out[i]
        if not isinstance(_QUICK.get(a, (None, True))[1], bool):
            i += 2  # an option and its value
            continue
        if a == "--" or not a.startswith("-") or a == "-":
            break
        if a[:2] in ("-m", "-c") and len(a) > 2:
            out[i:i + 1] = [a[:2], a[2:]]
            break
        i += 1
    return out


def _program(error, opts):
    """(kind, target, args) of the program to run, from the parsed OPTS;
    ERROR(message) reports a usage error and exits."""
    if opts.module is not None or opts.code is not None:
        kind = "module" if opts.module is not None else "code"
        rest = opts.module if opts.module is not None else opts.code
        rest = rest + opts.program
        if not rest:
            error("argument -%s: expected one argument" % kind[0])
        return kind, rest[0], rest[1:]
    rest = opts.program
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if not rest:
        error("no script, -m module, -c code or - to run")
    if rest[0] == "-":
        return "stdin", "-", rest[1:]
    return "script", rest[0], rest[1:]


def _check_output(path):
    """One line about a trace path that cannot be written, or None.  The
    file is created (and removed again if it did not exist), so a
    read-only directory shows here, before the program runs."""
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


def _is_importer(path):
    """A directory or zip file: the interpreter runs its __main__.  A
    file is asked of zipimport, as the interpreter's own main asks its
    path hooks (zipfile would cost every run its import: pathlib,
    shutil and more)."""
    import zipimport

    if os.path.isdir(path):
        return True
    try:
        zipimport.zipimporter(path)
    except (zipimport.ZipImportError, OSError, ValueError):
        return False
    return True


def _abspath(path):
    """PATH made absolute as the interpreter makes a script's path (no
    normalisation: `./x.py` is CWD/./x.py)."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def _pristine_main():
    """Empty __main__ of everything evalprof put in it (runpy ran
    evalprof.__main__ there; the bootstrap named things), back to what the
    interpreter sets up before it runs a program."""
    import builtins
    import importlib.machinery

    g = sys.modules["__main__"].__dict__
    g.clear()
    g.update({"__name__": "__main__", "__doc__": None, "__package__": None,
              "__loader__": importlib.machinery.BuiltinImporter,
              "__spec__": None, "__builtins__": builtins})
    if sys.version_info < (3, 14):
        # 3.14+ make a module's annotations when first asked (PEP 649)
        g["__annotations__"] = {}


def _set_path0(path0):
    """sys.path[0] as the interpreter sets it for the program (nothing with
    -P or -I), in place of the runner's own."""
    if getattr(sys.flags, "safe_path", False):
        return
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[0] = path0
    else:
        sys.path.insert(0, path0)


def _one_line(text, limit=4000):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# What shlex.quote leaves unquoted (its pattern, [^\w@%+=:,./-] with
# re.ASCII, spelt out: shlex imports re).
_SHELL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_@%+=:,./-")


def _shell_quote(arg):
    """ARG as shlex.quote gives it."""
    if not arg:
        return "''"
    if all(c in _SHELL_SAFE for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def _run_meta(kind, target, args):
    """The program's own command line as "argv" (what the reports show),
    and evalprof's full command as "evalprof.command"."""
    head = {"script": [target], "stdin": ["-"], "module": ["-m", target],
            "code": ["-c", _one_line(target, 200)]}[kind]
    meta = {"argv": _one_line(" ".join(_shell_quote(a) for a in
                                       [sys.executable] + head + list(args))),
            "target": _one_line(" ".join(head), 400)}
    try:
        with open("/proc/self/cmdline", "rb") as f:
            raw = f.read().rstrip(b"\0").split(b"\0")
        meta["evalprof.command"] = _one_line(
            " ".join(a.decode("utf-8", "replace") for a in raw))
    except OSError:
        pass
    return meta


def _script_roots(run, name, path0):
    """The program's directory as root.script metadata: the script's own
    directory as its file name gives it (the name its functions are
    recorded under), and root.script.real, the directory its modules
    import from (sys.path[0], resolved), where that differs; the
    working directory for -m, -c and standard input."""
    if run == "file":
        roots = {"root.script": os.path.dirname(name)}
        if path0 != roots["root.script"]:
            roots["root.script.real"] = path0
        return roots
    return {"root.script": path0 if run == "importer" else os.getcwd()}


def main(argv=None, prog="python -m evalprof"):
    """Run the program ARGV names under evalprof.  Returns only after the
    program ended normally (0), or with 2 for a usage error or a trace
    that cannot be written; an uncaught exception or sys.exit() in the
    program ends the process as the interpreter would."""
    if argv is None:
        argv = sys.argv[1:]
    argv = _attached(argv)
    opts = _quick(argv)
    if opts is None:
        opts = _parser(prog).parse_args(argv)

    def error(message):
        _parser(prog).error(message)

    kind, target, args = _program(error, opts)
    if not opts.sample:
        for opt, value in (("--rate", opts.rate), ("--clock", opts.clock),
                           ("--max-depth", opts.max_depth)):
            if value is not None:
                error("%s needs --sample" % opt)
    if opts.rate is not None and opts.rate > 100000:
        error("--rate %d: at most 100000 samples a second" % opts.rate)
    if opts.max_depth is not None and opts.max_depth > 4096:
        error("--max-depth %d: at most 4096" % opts.max_depth)

    import evalprof
    from evalprof import _api

    problem = _check_output(opts.output)
    if problem:
        sys.stderr.write("evalprof: %s\n" % problem)
        return 2
    try:
        tracer = evalprof._api._tracer_module()
    except ImportError as e:
        sys.stderr.write("%s\n" % e)
        return 2

    # What the interpreter would make of the same command line.
    run, name, path0 = kind, target, ""
    if kind == "script":
        name = _abspath(target)
        if _is_importer(name):
            run, path0 = "importer", name
        else:
            try:
                with open(name, "rb"):
                    pass
            except OSError as e:
                program = (getattr(sys, "orig_argv", None)
                           or [sys.executable])[0]
                sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n"
                                 % (program, name, e.errno or 0,
                                    e.strerror))
                return 2
            run, path0 = "file", os.path.dirname(os.path.realpath(name))
    elif kind == "module":
        path0 = os.getcwd()
    sys.argv[:] = [{"module": "-m", "code": "-c"}.get(kind, target)] + args
    _set_path0(path0)
    meta = _run_meta(kind, target, args)
    meta.update(_script_roots(run, name, path0))

    try:
        if not opts.quiet:
            os.environ.setdefault("EVALPROF_PROGRESS", "1")
        evalprof.start(opts.output, ops=opts.ops, lines=opts.lines,
                       threads=opts.threads,
                       follow_fork=opts.follow_fork, quiet=opts.quiet,
                       calibrate=opts.calibrate, buffers=opts.buffers,
                       buffer_size=opts.buffer_size,
                       on_overflow=opts.on_overflow,
                       max_size=opts.max_size, duration=opts.duration,
                       zstd=opts.zstd, sample=opts.sample,
                       rate=opts.rate, clock=opts.clock or "cpu",
                       max_depth=opts.max_depth,
                       meta=meta)
    except OSError as e:
        sys.stderr.write("evalprof: cannot write trace %s: %s\n"
                         % (opts.output, e.strerror or e))
        return 2
    # the threads left out are reported by the option that left them out
    _api._state["untraced_hint"] = "--main-thread-only"

    _pristine_main()
    if kind == "code" and sys.version_info >= (3, 13):
        # 3.13's main registers -c code with linecache, so that its
        # tracebacks show the lines (in place of the bootstrap's, here);
        # 3.14+ register it by its code objects, keyed by file name,
        # qualified name and first line, which a compilation of the same
        # text gives again.
        import linecache

        if sys.version_info >= (3, 14):
            try:
                code = compile(target, "<string>", "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                code = None  # run_main reports it, as the interpreter does
            if code is not None:
                linecache._register_code(code, target, "<string>")
        else:
            linecache._register_code("<string>", target, "<string>")
    if run == "importer":
        tracer.run_main("module", "__main__", alter_argv=False)
    else:
        tracer.run_main(run, name, skip_first_line=opts.skip_first_line)
    return 0
