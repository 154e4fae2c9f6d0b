/*
 * Helpers shared by the subcommands: one-line errors, opening a trace
 * with the common options, and the final check that stdout was written
 * (perf's run_builtin does the same: a full disk must not exit 0).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "views.h"
#include "cli.h"

void evp_cli_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("evalprof: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int evp_cli_view_done(const char *cmd, const struct evp_diag *d, int rc)
{
    if (rc < 0 && rc != -EIO && d->reason[0])
        evp_cli_error("%s", d->reason);
    else if (rc < 0 && rc != -EIO)
        evp_cli_error("%s: %s", cmd, strerror(-rc));
    for (const char *p = d->note; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fflush(stdout);
        fprintf(stderr, "evalprof: note: %.*s\n", (int)n, p);
        p += n + (nl != NULL);
    }
    return rc;
}

/* The trace reader's warnings, one line each: "evalprof: PATH: MSG". */
static void warn_print(void *ctx, const char *path, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "evalprof: %s: %s\n", path, msg);
}

void evp_cli_trace_warn(void *ctx, const char *path, const char *msg)
{
    warn_print(ctx, path, msg);
}

void evp_cli_warn(const char *fmt, ...)
{
    va_list ap;
    fputs("evalprof: warning: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void warn_none(void *ctx, const char *path, const char *msg)
{
    (void)ctx;
    (void)path;
    (void)msg;
}

/* Open PATH; with WHOLE, a trace read around damage is refused (its
 * first warning the reason) instead of warned about. */
static struct evp_trace *open_trace(const char *path, const char *python,
                                    int whole)
{
    struct evp_open_opts o = {.python = python, .warn = warn_print};
    struct evp_trace *t;
    char err[512];
    if (whole)
        o.warn = warn_none;
    if (evp_trace_open(path, &o, &t, err, sizeof err) < 0) {
        evp_cli_error("%s: %s", path, err);
        return NULL;
    }
    size_t nw = evp_trace_nwarnings(t);
    if (whole && nw) {
        evp_cli_error("%s: %s%s; runs summarised together must be read "
                      "whole (summarise this one alone)",
                      path, evp_trace_warning(t, 0),
                      nw > 1 ? " (and more damage)" : "");
        evp_trace_close(t);
        return NULL;
    }
    return t;
}

struct evp_trace *evp_cli_open_trace(const char *path, const char *python)
{
    return open_trace(path, python, 0);
}

int evp_cli_common_option(int c, const char *arg, struct evp_cli_common *o)
{
    switch (c) {
    case 's':
        return (o->stream = evp_cli_parse_long("--stream", arg)) < 0 ? -1 : 1;
    case 'p':
        o->python = arg;
        return 1;
    case 'n':
        o->compensate = 0;
        return 1;
    case 'c':
        o->compensate = 1;
        return 1;
    case 'N':
        o->ns = EVP_UNIT_NS;
        return 1;
    case 'U':
        o->ns = EVP_UNIT_US;
        return 1;
    default:
        return 0;
    }
}

int evp_cli_unit(const struct evp_cli_common *o, int dflt)
{
    return o->ns >= 0 ? o->ns : dflt;
}

static struct evp_trace *open_common(const char *cmd, const char *path,
                                     struct evp_cli_common *o, int whole)
{
    struct evp_trace *t = open_trace(path, o->python, whole);
    if (!t)
        return NULL;
    if (o->compensate < 0)
        o->compensate = !evp_trace_info(t)->text;
    if (o->stream >= (long)evp_trace_nstreams(t)) {
        evp_cli_error("%s: --stream %ld: the trace has %zu stream(s)", cmd,
                      o->stream, evp_trace_nstreams(t));
        evp_trace_close(t);
        return NULL;
    }
    return t;
}

struct evp_trace *evp_cli_open_common(const char *cmd, const char *path,
                                      struct evp_cli_common *o)
{
    return open_common(cmd, path, o, 0);
}

struct evp_trace *evp_cli_open_run(const char *cmd, const char *path,
                                   struct evp_cli_common *o)
{
    return open_common(cmd, path, o, 1);
}

int evp_cli_parse_sort(const char *cmd, const char *arg, int *sort)
{
    static const struct {
        const char *name;
        enum evp_sort sort;
    } sorts[] = {{"name", EVP_SORT_NAME},
                 {"count", EVP_SORT_COUNT},
                 {"elapsed", EVP_SORT_ELAPSED},
                 {"total", EVP_SORT_TOTAL}};
    for (size_t i = 0; i < sizeof sorts / sizeof sorts[0]; i++)
        if (strcmp(arg, sorts[i].name) == 0) {
            *sort = (int)sorts[i].sort;
            return 0;
        }
    evp_cli_error("%s: unknown sort '%s' (name, count, elapsed, total)", cmd,
                  arg);
    return -1;
}

int evp_cli_finish(int status)
{
    /* A command that failed has said why in one line already; a second
     * line about the same full disk would only repeat it. */
    if ((fflush(stdout) != 0 || ferror(stdout)) && status == 0) {
        int e = errno;
        fprintf(stderr, "evalprof: writing standard output failed: %s\n",
                e ? strerror(e) : "I/O error");
        return 1;
    }
    return status;
}

int evp_cli_close_out(FILE *f, const char *path, int rc)
{
    int e = rc == -EIO ? EIO : 0, bad = rc == -EIO;
    if (f != stdout) {
        errno = 0;
        if (fflush(f) != 0 || ferror(f)) {
            bad = 1;
            e = errno ? errno : e;
        }
        if (fclose(f) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
    } else if (bad) {
        evp_cli_finish(0); /* says what became of stdout */
        return 1;
    }
    if (bad)
        evp_cli_error("%s: write failed: %s", path, strerror(e ? e : EIO));
    return bad || rc < 0;
}

int evp_cli_out_check(const char *cmd, const char *out, const char *const *in,
                      size_t n)
{
    char err[512];
    if (evp_outfile_check(out, err, sizeof err) < 0) {
        evp_cli_error("%s: %s", cmd, err);
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        if (in[i] && evp_same_file(in[i], out)) {
            evp_cli_error("%s: %s: the output is the input %s: refusing to "
                          "overwrite it",
                          cmd, out, in[i]);
            return 2;
        }
    return 0;
}

/* The temporary file being written, removed when a signal ends the
 * command half-way (one output at a time). */
static char pending_tmp[4096];

static void unlink_pending(void)
{
    if (pending_tmp[0])
        unlink(pending_tmp);
}

static void drop_pending(int sig)
{
    unlink_pending();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The signals that end a command and take its temporary file with it. */
static const int ending_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* A file-size limit is a write error (EFBIG), not a kill; an interrupt
 * or a hang-up takes the temporary file with it. */
static void guard_pending(const char *tmp)
{
    static int done;
    if (!done) {
        for (size_t i = 0; i < sizeof ending_sigs / sizeof *ending_sigs; i++) {
            struct sigaction sa, old;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = drop_pending;
            sigemptyset(&sa.sa_mask);
            if (sigaction(ending_sigs[i], NULL, &old) == 0 &&
                old.sa_handler == SIG_DFL)
                sigaction(ending_sigs[i], &sa, NULL);
        }
        signal(SIGXFSZ, SIG_IGN);
        /* an input that shrinks under a mapped read ends the command */
        evp_file_on_fatal(unlink_pending);
        done = 1;
    }
    snprintf(pending_tmp, sizeof pending_tmp, "%s", tmp ? tmp : "");
}

FILE *evp_cli_out_open(struct evp_outfile *o, const char *out)
{
    char err[512];
    /* held from the temporary file's creation until it is known to the
     * handlers: an interrupt in between would leave it behind */
    sigset_t ending, old;
    sigemptyset(&ending);
    for (size_t i = 0; i < sizeof ending_sigs / sizeof *ending_sigs; i++)
        sigaddset(&ending, ending_sigs[i]);
    sigprocmask(SIG_BLOCK, &ending, &old);
    int rc = evp_outfile_open(o, out, err, sizeof err);
    if (rc >= 0)
        guard_pending(o->tmp);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (rc < 0) {
        evp_cli_error("%s", err);
        return NULL;
    }
    return o->f;
}

int evp_cli_out_close(struct evp_outfile *o, int rc)
{
    if (o->f == stdout) {
        o->f = NULL;
        return evp_cli_close_out(stdout, "-", rc);
    }
    char err[512] = "";
    int r = evp_outfile_close(o, rc, err, sizeof err);
    pending_tmp[0] = '\0';
    if (err[0] && rc != EVP_CLI_REPORTED)
        evp_cli_error("%s", err);
    else if (r == -EIO && rc == -EIO)
        evp_cli_error("%s: write failed: %s", o->name, strerror(EIO));
    return r < 0;
}

FILE *evp_cli_report_open(const char *cmd, struct evp_outfile *o,
                          const char *out, const char *const *in, size_t n,
                          int *status)
{
    if (!out)
        out = "-";
    if (evp_cli_out_check(cmd, out, in, n)) {
        *status = 2;
        return NULL;
    }
    FILE *f = evp_cli_out_open(o, out);
    *status = f ? 0 : 1;
    return f;
}

int evp_cli_report_close(struct evp_outfile *o, int rc)
{
    int failed = evp_cli_out_close(o, rc >= 0      ? 0
                                      : rc == -EIO ? -EIO
                                                   : EVP_CLI_REPORTED);
    return failed || rc < 0 ? 1 : evp_cli_finish(0);
}

long evp_cli_parse_long(const char *opt, const char *val)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < 0) {
        evp_cli_error("%s: expected a non-negative number, got '%s'", opt, val);
        return -1;
    }
    return v;
}
