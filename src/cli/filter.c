/*
 * The options that narrow the tree and the timeline exports (--from, --to,
 * --func, --thread), the warning before an output too large to read, and
 * the tree's pager: what a user of a long trace needs before the tree of
 * a 0.8 s run fills 3.3 GB of a terminal.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views.h"
#include "cli.h"

static int parse_seconds(const char *opt, const char *arg, uint64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !(v >= 0) || v > 1e9) {
        evp_cli_error("%s: expected seconds from the trace's start (a "
                      "non-negative number), got '%s'",
                      opt, arg);
        return -1;
    }
    *ns = (uint64_t)llround(v * 1e9);
    return 1;
}

int evp_cli_filter_option(int c, const char *arg, struct evp_cli_filter *o)
{
    long v;
    switch (c) {
    case EVP_CLI_OPT_FROM:
        return parse_seconds("--from", arg, &o->f.from_ns);
    case EVP_CLI_OPT_TO:
        if (parse_seconds("--to", arg, &o->f.to_ns) < 0)
            return -1;
        if (!o->f.to_ns)
            o->f.to_ns = 1; /* an empty window, not none */
        return 1;
    case EVP_CLI_OPT_FUNC:
        o->f.func = arg;
        return 1;
    case EVP_CLI_OPT_THREAD:
        if ((v = evp_cli_parse_long("--thread", arg)) < 0)
            return -1;
        o->thread = v;
        return 1;
    default:
        return 0;
    }
}

int evp_cli_filter_resolve(const char *cmd, struct evp_trace *t,
                           struct evp_cli_filter *o, long *stream)
{
    if (o->f.to_ns && o->f.to_ns <= o->f.from_ns) {
        evp_cli_error("%s: --to must be later than --from", cmd);
        return -1;
    }
    if (o->thread < 0)
        return 0;
    size_t n = evp_trace_nstreams(t);
    for (size_t i = 0; i < n; i++) {
        const struct evp_stream *s = evp_trace_stream(t, i);
        if (s->tid && s->tid == (uint64_t)o->thread) {
            *stream = (long)i;
            return 0;
        }
    }
    if ((size_t)o->thread < n) {
        *stream = o->thread;
        return 0;
    }
    evp_cli_error("%s: --thread %ld: no thread of the trace has that id "
                  "(a tid, or a stream number below %zu, as `evalprof info` "
                  "lists them)",
                  cmd, o->thread, n);
    return -1;
}

void evp_cli_warn_size(const char *cmd, struct evp_trace *t,
                       double bytes_per_event, int filtered)
{
    const char *env = getenv("EVALPROF_WARN_BYTES");
    double limit = env && *env ? strtod(env, NULL) : 1e9;
    double bytes = (double)evp_trace_info(t)->events * bytes_per_event;
    if (filtered || bytes <= limit)
        return;
    char n[32];
    fprintf(stderr,
            "evalprof: %s: warning: this output will be about %.1f %s (%s "
            "events); --from/--to SECONDS, --func NAME, --max-depth N or "
            "--thread ID narrow it\n",
            cmd, bytes >= 1e9 ? bytes / 1e9 : bytes / 1e6,
            bytes >= 1e9 ? "GB" : "MB",
            evp_num_group(n, sizeof n, evp_trace_info(t)->events));
}

FILE *evp_cli_pager_open(int no_pager)
{
    if (no_pager || !isatty(STDOUT_FILENO))
        return NULL;
    const char *pager = getenv("EVALPROF_PAGER");
    if (!pager)
        pager = getenv("PAGER");
    if (!pager)
        pager = "less -FRX";
    if (!*pager || strcmp(pager, "cat") == 0)
        return NULL;
    fflush(stdout);
    FILE *p = popen(pager, "w");
    if (p)
        signal(SIGPIPE, SIG_IGN); /* the reader quit: stop quietly */
    return p;
}

int evp_cli_pager_close(FILE *p, int rc)
{
    /* (the failed write's errno, before pclose sets its own) */
    int broken = (ferror(p) || rc == -EIO) && errno == EPIPE;
    pclose(p);
    if (broken)
        return 0;
    return rc;
}
