/*
 * `evalprof record`: run a Python program and record a trace of it.
 *
 *   evalprof record [-o FILE] [--no-ops] [--lines] [--main-thread-only]
 *                   [--sample [--rate HZ] [--clock cpu|wall]
 *                    [--sampler signal|thread] [--max-depth N]]
 *                   [--no-follow-fork] [--no-calibrate] [-q]
 *                   [--buffers N] [--buffer-size SIZE]
 *                   [--on-overflow wait|drop] [--max-size SIZE]
 *                   [--duration SECONDS] [--zstd]
 *                   -- PYTHON [PYTHON-OPTIONS]
 *                   (SCRIPT | -m MODULE | -c CODE | -) [ARGS...]
 *
 * The interpreter is asked what it is (one short probe run) and then
 * replaced by the traced program (exec, so signals and the exit status are
 * the program's own):
 *
 *   - an evalprof-instrumented interpreter (mode A: it has sys._evalprof)
 *     runs the program unchanged with EVALPROF=FILE in its environment
 *     (and EVALPROF_EVENTS=no-op for --no-ops, EVALPROF_QUIET=1 for -q,
 *     EVALPROF_LINES=1 for --lines, EVALPROF_FORK=follow unless
 *     --no-follow-fork; EVALPROF_MODE=sample for --sample, with
 *     EVALPROF_SAMPLE_RATE, EVALPROF_SAMPLE_CLOCK,
 *     EVALPROF_SAMPLE_TIMER=thread and EVALPROF_SAMPLE_MAX_DEPTH for its
 *     options);
 *   - a stock CPython 3.11 to 3.15 (mode B) runs it through the
 *     evalprof package beside this binary (build/python in the build
 *     tree, PREFIX/lib/python3.X/site-packages installed), loaded by
 *     a -c bootstrap that puts that directory first on sys.path only while
 *     evalprof is imported.  Neither PYTHONPATH nor a sitecustomize is
 *     involved, so the program's own are untouched.  The interpreter's
 *     own options (-W error -X dev -O ...) go before the bootstrap, the
 *     program after it: PYTHON OPTIONS -c BOOT PKG RUNNER-OPTIONS PROGRAM;
 *   - anything else gets one line naming what is supported.
 *
 * The recorder's options (--buffers ... --duration) and the progress line
 * reach the recorder through its environment (EVALPROF_BUFFERS ...
 * EVALPROF_PROGRESS), read the same way in both modes.
 *
 * The trace path is checked (created and removed again) before anything
 * runs, so a missing or read-only directory, a FIFO or a device (but
 * /dev/null), or the script itself as the output is reported up front.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

/* Prints "VERSION IMPL MODE_A FREE_THREADED DEBUG"; valid Python 2 and
 * 3. */
static const char probe_code[] =
    "import sys\n"
    "i = getattr(sys, 'implementation', None)\n"
    "g = getattr(sys, '_is_gil_enabled', None)\n"
    "v = tuple(sys.version_info[:3])\n"
    "sys.stdout.write('%d.%d.%d %s %d %d %d\\n' % (v +"
    " (getattr(i, 'name', 'cpython'), int(hasattr(sys, '_evalprof')),"
    " int(g is not None and not g()),"
    " int(hasattr(sys, 'gettotalrefcount')))))\n";

/*
 * The -c program that runs evalprof's runner from PKGDIR (sys.argv[1]).
 * One line: it shows in the trace's recorded command line.  The runner
 * empties __main__ of the names it binds before the program runs.
 */
static const char boot_code[] =
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from evalprof._cli import main; del sys.path[0]; "
    "sys.exit(main(sys.argv[1:], prog='evalprof record -- PYTHON'))";

struct probe {
    int major, minor, micro;
    char impl[32];
    int mode_a;
    int free_threaded;
    int debug;
};

/* Run PYTHON with the probe; 0, or -1 after printing why not. */
static int probe_python(const char *python, struct probe *p)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        evp_cli_error("record: pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    /* Whatever a program that is not Python says to the probe. */
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)python, "-I", "-c", (char *)probe_code, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, python, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        evp_cli_error("cannot run %s: %s", python, strerror(rc));
        return -1;
    }
    char buf[256];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 &&
           (r = read(fds[0], buf + n, sizeof buf - 1 - n)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        n += (size_t)r;
    }
    buf[n] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        sscanf(buf, "%d.%d.%d %31s %d %d %d", &p->major, &p->minor, &p->micro,
               p->impl, &p->mode_a, &p->free_threaded, &p->debug) != 7) {
        evp_cli_error("record: %s is not a Python interpreter (it does not "
                      "answer `%s -I -c` with its version)",
                      python, python);
        return -1;
    }
    return 0;
}

/* The script among an interpreter's arguments, or NULL (-c, -m, -). */
static const char *script_of(char **args, int n)
{
    for (int i = 0; i < n; i++) {
        const char *a = args[i];
        if (a[0] != '-')
            return a;
        if (strcmp(a, "--") == 0)
            return i + 1 < n ? args[i + 1] : NULL;
        if (a[1] == '\0')
            return NULL; /* "-": standard input */
        if (a[1] == '-') {
            i += strcmp(a, "--check-hash-based-pycs") == 0;
            continue;
        }
        for (int j = 1; a[j]; j++) {
            if (a[j] == 'c' || a[j] == 'm')
                return NULL;
            if (a[j] == 'X' || a[j] == 'W') {
                i += a[j + 1] == '\0'; /* the value is the next word */
                break;
            }
        }
    }
    return NULL;
}

/* PYTHON as found on PATH (execvp's search) into BUF, or PYTHON itself. */
static const char *which(const char *python, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (strchr(python, '/') || !path)
        return python;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        int k = snprintf(buf, len, "%.*s/%s", (int)n, n ? p : ".", python);
        if (k > 0 && (size_t)k < len && access(buf, X_OK) == 0)
            return buf;
        p += n + (p[n] == ':');
    }
    return python;
}

/*
 * Make PATH absolute (the program may change directory) and check that
 * the trace can be created there, refusing what the recorder would
 * refuse (a FIFO, a device, a directory: outfile.h's rules) and the
 * interpreter or the script themselves: create it if missing, then
 * remove it.
 */
static int check_output(const char *path, char *abs, size_t len,
                        const char *python, char **args, int nargs)
{
    int n;
    if (path[0] == '/') {
        n = snprintf(abs, len, "%s", path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            evp_cli_error("record: cannot find the current directory: %s",
                          strerror(errno));
            return -1;
        }
        n = snprintf(abs, len, "%s/%s", cwd, path);
    }
    if (n < 0 || (size_t)n >= len) {
        evp_cli_error("cannot write trace %s: path too long", path);
        return -1;
    }
    char err[PATH_MAX + 128], exe[PATH_MAX];
    if (evp_outfile_check(abs, err, sizeof err) < 0) {
        /* ERR is "ABS: reason": the reason, after the name given. */
        size_t len_abs = strlen(abs);
        const char *why =
            strncmp(err, abs, len_abs) == 0 ? err + len_abs + 2 : err;
        evp_cli_error("cannot write trace %s: %s", path, why);
        return -1;
    }
    const char *ins[] = {which(python, exe, sizeof exe),
                         script_of(args, nargs)};
    if (evp_cli_out_check("record", path, ins, 2))
        return -1;
    struct stat st;
    int existed = stat(abs, &st) == 0;
    int fd = open(abs, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) {
        evp_cli_error("cannot write trace %s: %s", path, strerror(errno));
        return -1;
    }
    close(fd);
    if (!existed)
        unlink(abs);
    return 0;
}

/*
 * The evalprof package for CPython 3.MINOR, found from this binary's own
 * place (/proc/self/exe, so a copy or a symlink elsewhere still finds
 * it): DIR/python in the build tree, where DIR holds the binary, else
 * PREFIX/lib/python3.MINOR/site-packages of an installation (make
 * install; a virtual environment has the same layout), PREFIX being DIR
 * less the install's bindir (EVP_BINDIR, "bin").  OUT gets the directory
 * that holds evalprof/ and 0 is returned; -1 with OUT naming where it
 * looked.
 */
static int package_dir(int minor, char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(out, len, "/proc/self/exe");
        return -1;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    char tried[2][PATH_MAX + 64];
    snprintf(tried[0], sizeof tried[0], "%s/python", exe);
    /* Up one directory per component of the bindir. */
    int up = 1;
    for (const char *c = EVP_BINDIR; *c; c++)
        up += *c == '/' && c[1] && c[1] != '/';
    for (; up > 0 && (slash = strrchr(exe, '/')); up--)
        *slash = '\0';
    snprintf(tried[1], sizeof tried[1], "%s/lib/python3.%d/site-packages", exe,
             minor);
    for (int i = 0; i < 2; i++) {
        char init[sizeof tried[i] + 32];
        snprintf(init, sizeof init, "%s/evalprof/__init__.py", tried[i]);
        if (access(init, R_OK) == 0) {
            int k = snprintf(out, len, "%s", tried[i]);
            return k < 0 || (size_t)k >= len ? -1 : 0;
        }
    }
    snprintf(out, len, "%s/evalprof or %s/evalprof", tried[0], tried[1]);
    return -1;
}

/* The program's part of PYTHON's command line, and the options before it. */
struct py_cmdline {
    char **opts; /* the interpreter's own options, as given */
    int nopts;
    const char *kind; /* "--" (a script), "-" (stdin), "-m" or "-c" */
    const char *target;
    char **args; /* the program's arguments */
    int nargs;
    int skip_first_line; /* -x */
};

/*
 * Split ARGV (what follows PYTHON) as the interpreter does: option
 * clusters (-OO, -bb, -Es), options with a value attached or separate
 * (-W error, -Werror, -X dev, --check-hash-based-pycs always), then the
 * program: -m MODULE or -c CODE (which end the options, as -mjson.tool
 * does), "-", or the script (after "--" too).  Returns 0, or -1 after
 * printing what is missing.  Options the interpreter does not know are
 * left for it to refuse.
 */
static int split_python_cmdline(const char *python, int argc, char **argv,
                                struct py_cmdline *c)
{
    memset(c, 0, sizeof *c);
    c->opts = calloc((size_t)argc + 1, sizeof *c->opts);
    if (!c->opts)
        return -1;
    int i = 0;
    while (i < argc) {
        char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            c->kind = strcmp(a, "-") == 0 ? "-" : "--";
            c->target = a;
            i++;
            goto program;
        }
        if (strcmp(a, "--") == 0) {
            if (i + 1 >= argc)
                break;
            c->kind = "--";
            c->target = argv[i + 1];
            i += 2;
            goto program;
        }
        if (a[1] == '-') {
            if (strncmp(a, "--help", 6) == 0 || strcmp(a, "--version") == 0) {
                evp_cli_error("record: %s %s runs no program: nothing to "
                              "record",
                              python, a);
                return -1;
            }
            c->opts[c->nopts++] = a;
            if (strcmp(a, "--check-hash-based-pycs") == 0 && i + 1 < argc)
                c->opts[c->nopts++] = argv[++i];
            i++;
            continue;
        }
        for (const char *p = a + 1; *p; p++) {
            if (*p == 'W' || *p == 'X') {
                c->opts[c->nopts++] = a;
                if (p[1] == '\0' && i + 1 < argc)
                    c->opts[c->nopts++] = argv[++i];
                goto next;
            }
            if (*p == 'm' || *p == 'c') {
                if (p > a + 1) { /* -Bc CODE: -B is the interpreter's */
                    char *flags = strndup(a, (size_t)(p - a));
                    if (!flags)
                        return -1;
                    c->opts[c->nopts++] = flags;
                }
                c->kind = *p == 'm' ? "-m" : "-c";
                if (p[1] != '\0') {
                    c->target = p + 1;
                    i++;
                } else if (i + 1 < argc) {
                    c->target = argv[i + 1];
                    i += 2;
                } else {
                    evp_cli_error("record: %s -%c needs an argument "
                                  "(a %s)",
                                  python, *p,
                                  *p == 'm' ? "module name" : "program");
                    return -1;
                }
                goto program;
            }
            if (*p == 'h' || *p == '?' || *p == 'V') {
                evp_cli_error("record: %s %s runs no program: nothing to "
                              "record",
                              python, a);
                return -1;
            }
            if (*p == 'x')
                c->skip_first_line = 1;
        }
        c->opts[c->nopts++] = a;
    next:
        i++;
    }
    evp_cli_error("record: nothing to run after %s%s (a script, -m MODULE, "
                  "-c CODE or -)",
                  python, c->nopts ? " and its options" : "");
    return -1;
program:
    c->args = argv + i;
    c->nargs = argc - i;
    return 0;
}

/*
 * The value of option C (a positive number; with K, M or G, powers of
 * 1024, for a size) into the recorder's environment variable: 0, or -1
 * after one line naming the option.
 */
static int recorder_option(int c, const char *arg)
{
    static const struct {
        int c, size;
        const char *opt, *var;
    } opts[] = {{'B', 0, "buffers", "EVALPROF_BUFFERS"},
                {'S', 1, "buffer-size", "EVALPROF_BUFFER_SIZE"},
                {'X', 1, "max-size", "EVALPROF_MAX_SIZE"},
                {'D', 0, "duration", "EVALPROF_DURATION"}};
    size_t i = 0;
    while (opts[i].c != c)
        i++;
    const char *opt = opts[i].opt, *var = opts[i].var;
    int size = opts[i].size;
    char *end;
    errno = 0;
    double x = strtod(arg, &end);
    if (size && end != arg && *end && strchr("KkMmGg", *end)) {
        end++;
        if (*end == 'B' || (*end == 'i' && end[1] == 'B'))
            end += *end == 'i' ? 2 : 1;
    }
    if (errno || end == arg || *end || !(x > 0) || x > 1e15) {
        evp_cli_error("record: --%s %s: expected a positive %s", opt, arg,
                      size ? "size (bytes, or with K, M or G)" : "number");
        return -1;
    }
    if (setenv(var, arg, 1) < 0) {
        evp_cli_error("record: setenv: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* A positive integer option value of at most MAX, or -1 after one line
 * naming the option. */
static long count_option(const char *opt, const char *arg, long max)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v <= 0 || v > max) {
        evp_cli_error("record: --%s %s: expected a whole number from 1 to "
                      "%ld",
                      opt, arg, max);
        return -1;
    }
    return v;
}

int cmd_record(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"no-ops", no_argument, NULL, 'n'},
        {"lines", no_argument, NULL, 'L'},
        {"main-thread-only", no_argument, NULL, 'M'},
        {"threads", no_argument, NULL, 't'}, /* the default: accepted */
        {"no-follow-fork", no_argument, NULL, 'F'},
        {"no-calibrate", no_argument, NULL, 'C'},
        {"quiet", no_argument, NULL, 'q'},
        {"buffers", required_argument, NULL, 'B'},
        {"buffer-size", required_argument, NULL, 'S'},
        {"on-overflow", required_argument, NULL, 'O'},
        {"max-size", required_argument, NULL, 'X'},
        {"duration", required_argument, NULL, 'D'},
        {"zstd", no_argument, NULL, 'Z'},
        {"sample", no_argument, NULL, 's'},
        {"rate", required_argument, NULL, 'r'},
        {"clock", required_argument, NULL, 'c'},
        {"max-depth", required_argument, NULL, 'd'},
        {"sampler", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *out = "evalprof.evp";
    int no_ops = 0, lines = 0, main_only = 0, no_fork = 0, no_calib = 0;
    int quiet = 0, sample = 0, c;
    const char *rate = NULL, *clock = NULL, *depth = NULL, *sampler = NULL;
    optind = 1;
    /* '+': options end at PYTHON even without "--". */
    while ((c = getopt_long(argc, argv, "+o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'n':
            no_ops = 1;
            break;
        case 'L':
            lines = 1;
            break;
        case 'M':
            main_only = 1;
            break;
        case 't':
            break;
        case 'F':
            no_fork = 1;
            break;
        case 'C':
            no_calib = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'B': /* --buffers N */
        case 'S': /* --buffer-size SIZE */
        case 'X': /* --max-size SIZE */
        case 'D': /* --duration SECONDS */
            if (recorder_option(c, optarg) < 0)
                return 2;
            break;
        case 'Z':
            if (setenv("EVALPROF_ZSTD", "1", 1) < 0) {
                evp_cli_error("record: setenv: %s", strerror(errno));
                return 1;
            }
            break;
        case 'O':
            if (strcmp(optarg, "wait") != 0 && strcmp(optarg, "drop") != 0) {
                evp_cli_error("record: --on-overflow %s: expected wait or "
                              "drop",
                              optarg);
                return 2;
            }
            if (setenv("EVALPROF_ON_OVERFLOW", optarg, 1) < 0) {
                evp_cli_error("record: setenv: %s", strerror(errno));
                return 1;
            }
            break;
        case 's':
            sample = 1;
            break;
        case 'r': /* --rate HZ */
            if (count_option("rate", optarg, 100000) < 0)
                return 2;
            rate = optarg;
            break;
        case 'd': /* --max-depth N */
            if (count_option("max-depth", optarg,
                             4096) /* EVP_SAMPLE_DEPTH_LIMIT */
                < 0)
                return 2;
            depth = optarg;
            break;
        case 'c': /* --clock cpu|wall */
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "wall") != 0) {
                evp_cli_error("record: --clock %s: expected cpu or wall",
                              optarg);
                return 2;
            }
            clock = optarg;
            break;
        case 'T': /* --sampler signal|thread */
            if (strcmp(optarg, "signal") != 0 &&
                strcmp(optarg, "thread") != 0) {
                evp_cli_error("record: --sampler %s: expected signal or "
                              "thread",
                              optarg);
                return 2;
            }
            sampler = optarg;
            break;
        case 'h':
            return evp_cli_help("record");
        default:
            evp_cli_usage(stderr, "record");
            return 2;
        }
    }
    if (optind >= argc) {
        evp_cli_usage(stderr, "record");
        evp_cli_error("record: no interpreter given (-- PYTHON script.py)");
        return 2;
    }
    if (!sample && (rate || clock || depth || sampler)) {
        evp_cli_error("record: --%s needs --sample", rate      ? "rate"
                                                     : clock   ? "clock"
                                                     : sampler ? "sampler"
                                                               : "max-depth");
        return 2;
    }
    int peek = sampler && strcmp(sampler, "thread") == 0;
    /* --sampler signal undoes a thread setting only (not rt or posix) */
    const char *timer = getenv("EVALPROF_SAMPLE_TIMER");
    int unset_peek = sampler && !peek && timer && strcmp(timer, "thread") == 0;
    if (peek && clock && strcmp(clock, "wall") == 0) {
        evp_cli_error("record: --sampler thread samples CPU time, not "
                      "with --clock wall");
        return 2;
    }
    const char *python = argv[optind];
    char **target = argv + optind + 1;
    int ntarget = argc - optind - 1;
    char abs[PATH_MAX];
    if (check_output(out, abs, sizeof abs, python, target, ntarget) < 0)
        return 2;
    struct probe p;
    if (probe_python(python, &p) < 0)
        return 2;
    fflush(stdout);
    if (!quiet && setenv("EVALPROF_PROGRESS", "1", 1) < 0) {
        evp_cli_error("record: setenv: %s", strerror(errno));
        return 1;
    }

    if (p.mode_a) {
        /* The instrumented interpreter traces itself (its contract:
         * EVALPROF=FILE, EVALPROF_EVENTS, EVALPROF_FORK). */
        if (main_only)
            evp_cli_warn("%s is an instrumented interpreter: "
                         "--main-thread-only "
                         "applies to stock interpreters only",
                         python);
        if (setenv("EVALPROF", abs, 1) < 0 ||
            (no_ops && setenv("EVALPROF_EVENTS", "no-op", 1) < 0) ||
            (lines && setenv("EVALPROF_LINES", "1", 1) < 0) ||
            (quiet && setenv("EVALPROF_QUIET", "1", 1) < 0) ||
            setenv("EVALPROF_FORK", no_fork ? "stop" : "follow", 1) < 0 ||
            (sample && setenv("EVALPROF_MODE", "sample", 1) < 0) ||
            (rate && setenv("EVALPROF_SAMPLE_RATE", rate, 1) < 0) ||
            (clock && setenv("EVALPROF_SAMPLE_CLOCK", clock, 1) < 0) ||
            (depth && setenv("EVALPROF_SAMPLE_MAX_DEPTH", depth, 1) < 0) ||
            (peek && setenv("EVALPROF_SAMPLE_TIMER", "thread", 1) < 0) ||
            (unset_peek && unsetenv("EVALPROF_SAMPLE_TIMER") < 0)) {
            evp_cli_error("record: setenv: %s", strerror(errno));
            return 1;
        }
        char **args = calloc((size_t)ntarget + 2, sizeof *args);
        if (!args)
            return 1;
        args[0] = (char *)python;
        memcpy(args + 1, target, (size_t)ntarget * sizeof *args);
        execvp(python, args);
        evp_cli_error("cannot run %s: %s", python, strerror(errno));
        return 1;
    }

    int supported = strcmp(p.impl, "cpython") == 0 && p.major == 3 &&
                    p.minor >= 11 && p.minor <= 15 && !p.free_threaded &&
                    !p.debug;
    if (!supported) {
        evp_cli_error("%s is %s %d.%d.%d%s, which evalprof cannot trace; "
                      "supported: release builds of CPython 3.11, 3.12, "
                      "3.13, 3.14 and 3.15 with the GIL, or an "
                      "evalprof-instrumented interpreter",
                      python, strcmp(p.impl, "cpython") ? p.impl : "Python",
                      p.major, p.minor, p.micro,
                      p.free_threaded ? " (free-threaded)"
                      : p.debug       ? " (a debug build)"
                                      : "");
        return 2;
    }
    if (peek) {
        evp_cli_error("record: --sampler thread needs an evalprof-"
                      "instrumented interpreter (its state word and "
                      "frames are read from outside the thread); %s is a "
                      "stock one: leave --sampler out",
                      python);
        return 2;
    }
    struct py_cmdline cmd;
    if (split_python_cmdline(python, ntarget, target, &cmd) < 0) {
        evp_cli_usage(stderr, "record");
        return 2;
    }
    char pkg[2 * PATH_MAX + 160];
    if (package_dir(p.minor, pkg, sizeof pkg) < 0) {
        evp_cli_error("record: the evalprof Python package for Python "
                      "3.%d is not beside this binary (looked for %s); "
                      "run make, or make install",
                      p.minor, pkg);
        return 2;
    }

    /* PYTHON OPTIONS -c BOOT PKG [runner options] PROGRAM... */
    char **args = calloc((size_t)(cmd.nopts + cmd.nargs) + 28, sizeof *args);
    if (!args)
        return 1;
    int k = 0;
    args[k++] = (char *)python;
    for (int i = 0; i < cmd.nopts; i++)
        args[k++] = cmd.opts[i];
    args[k++] = "-c";
    args[k++] = (char *)boot_code;
    args[k++] = pkg;
    args[k++] = "-o";
    args[k++] = abs;
    if (no_ops)
        args[k++] = "--no-ops";
    if (lines)
        args[k++] = "--lines";
    if (main_only)
        args[k++] = "--main-thread-only";
    if (sample)
        args[k++] = "--sample";
    if (rate) {
        args[k++] = "--rate";
        args[k++] = (char *)rate;
    }
    if (clock) {
        args[k++] = "--clock";
        args[k++] = (char *)clock;
    }
    if (depth) {
        args[k++] = "--max-depth";
        args[k++] = (char *)depth;
    }
    if (no_fork)
        args[k++] = "--no-follow-fork";
    if (no_calib)
        args[k++] = "--no-calibrate";
    if (quiet)
        args[k++] = "-q";
    if (cmd.skip_first_line)
        args[k++] = "-x";
    if (strcmp(cmd.kind, "-") != 0) {
        /* "--" before a script: one whose name starts with '-' must not
         * be read as an option. */
        args[k++] = (char *)cmd.kind;
        args[k++] = (char *)cmd.target;
    } else {
        args[k++] = "-";
    }
    for (int i = 0; i < cmd.nargs; i++)
        args[k++] = cmd.args[i];
    args[k] = NULL;
    execvp(python, args);
    evp_cli_error("cannot run %s: %s", python, strerror(errno));
    return 1;
}
