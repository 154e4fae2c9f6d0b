/*
 * Helpers shared by the subcommands: one-line errors, opening a trace
 * with the common options, and the final check that stdout was written
 * (perf's run_builtin does the same: a full disk must not exit 0).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void evp_cli_warn(const char *fmt, ...)
{
    va_list ap;
    fputs("evalprof: warning: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

struct evp_trace *evp_cli_open_trace(const char *path, const char *python)
{
    struct evp_open_opts o = {.python = python};
    struct evp_trace *t;
    char err[512];
    if (evp_trace_open(path, &o, &t, err, sizeof err) < 0) {
        evp_cli_error("%s: %s", path, err);
        return NULL;
    }
    return t;
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
