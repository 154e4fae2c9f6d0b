/*
 * `evalprof export`: write a trace in another format.  Each format is one
 * entry of the table below, a thin wrapper around a writer or a view,
 * which declares the records it reads (events, samples) and the options
 * it takes for a trace of each kind: the command checks a trace and the
 * options given against the entry before anything is written.
 *
 *   text    the discussion's text format (plus evalprof's comment lines)
 *   evp     the binary format, optionally zstd-compressed
 *   folded  collapsed stacks for flame graphs (--ops, --phases, --max-depth)
 *   chrome  a timeline in the Trace Event Format (Perfetto, chrome://tracing),
 *           frames as slices, with --ops instructions and --phases loop phases
 *   speedscope  speedscope's own format: one evented profile per thread,
 *           --ops and --phases as for chrome
 *   pprof   gzipped profile.proto for `go tool pprof` (--ops, --phases,
 *           --max-depth as for folded)
 *   pstats  cProfile's marshal format for Python's pstats
 *   callgrind  callgrind's format for callgrind_annotate and KCachegrind
 *           (--ops: an instruction count beside the time)
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views.h"
#include "cli.h"

struct export_opts {
    const char *out; /* "-" for stdout */
    int zstd;        /* level, 0 none */
    int ops;         /* folded: opcode leaves */
    int lines;       /* folded: file:line leaves */
    int phases;      /* folded: loop phases as leaves */
    int raw;         /* folded: --no-compensate */
    long max_depth;  /* folded: frames kept on a stack, 0 all */
    int depth_given; /* --max-depth was: the timelines take it too */
    struct evp_cli_filter filter; /* chrome, speedscope */
};

/* The options a format takes, as its entry of the table declares them. */
#define X_OPS 0x01u    /* --ops */
#define X_PHASES 0x02u /* --phases */
#define X_LINES 0x04u  /* --lines */
#define X_RAW 0x08u    /* --no-compensate */
#define X_DEPTH 0x10u  /* --max-depth */
#define X_WINDOW 0x20u /* --from, --to, --func */
#define X_THREAD 0x40u /* --thread */
#define X_ZSTD 0x80u   /* --zstd */

/* A trace writer (text, evp) into O's output, whole or not at all. */
static int export_trace(struct evp_trace *t, const struct export_opts *o,
                        int zstd)
{
    struct evp_outfile of;
    char err[512];
    if (!evp_cli_out_open(&of, o->out))
        return 1;
    const char *name = of.f == stdout ? "standard output" : o->out;
    int rc = zstd < 0
                 ? evp_trace_write_text_to(t, of.f, name, err, sizeof err)
                 : evp_trace_write_evp_to(t, of.f, name, zstd, err, sizeof err);
    if (rc < 0) {
        evp_cli_error("%s", err);
        rc = EVP_CLI_REPORTED;
    }
    return evp_cli_out_close(&of, rc);
}

static int export_text(struct evp_trace *t, const struct export_opts *o)
{
    return export_trace(t, o, -1);
}

static int export_evp(struct evp_trace *t, const struct export_opts *o)
{
    return export_trace(t, o, o->zstd);
}

static int export_folded(struct evp_trace *t, const struct export_opts *o)
{
    struct evp_outfile of;
    FILE *f = evp_cli_out_open(&of, o->out);
    if (!f)
        return 1;
    struct evp_folded_opts fo = {.ops = o->ops,
                                 .lines = o->lines,
                                 .phases = o->phases,
                                 .compensate =
                                     !evp_trace_info(t)->text && !o->raw,
                                 .stream = -1,
                                 .max_depth = (size_t)o->max_depth};
    struct evp_diag diag = {{0}, {0}};
    fo.diag = &diag;
    return evp_cli_out_close(
        &of, evp_cli_view_done("export", &diag, evp_view_folded(t, f, &fo)));
}

static int export_timeline(struct evp_trace *t, const struct export_opts *o,
                           const char *name,
                           int (*view)(struct evp_trace *, FILE *,
                                       const struct evp_chrome_opts *))
{
    struct evp_chrome_opts co = {.ops = o->ops,
                                 .phases = o->phases,
                                 .compensate = !evp_trace_info(t)->text};
    struct evp_cli_filter fo = o->filter;
    if (o->depth_given)
        fo.f.max_depth = (size_t)o->max_depth;
    char cmd[32];
    snprintf(cmd, sizeof cmd, "export --format %s", name);
    if (evp_cli_filter_resolve(cmd, t, &fo, &fo.f.stream) < 0)
        return 2;
    int filtered = evp_filter_active(&fo.f);
    if (filtered)
        co.filter = &fo.f;
    /* bytes an event on average, measured on the demo's trace (one in
     * twenty is a frame's edge; with --ops every instruction a slice) */
    int chrome = strcmp(name, "chrome") == 0;
    double per_event =
        o->ops || o->phases ? (chrome ? 90 : 60) : (chrome ? 6 : 4);
    evp_cli_warn_size(cmd, t, per_event, filtered);
    struct evp_outfile of;
    FILE *f = evp_cli_out_open(&of, o->out);
    if (!f)
        return 1;
    struct evp_diag diag = {{0}, {0}};
    co.diag = &diag;
    return evp_cli_out_close(&of,
                             evp_cli_view_done(cmd, &diag, view(t, f, &co)));
}

static int export_chrome(struct evp_trace *t, const struct export_opts *o)
{
    return export_timeline(t, o, "chrome", evp_view_chrome);
}

static int export_speedscope(struct evp_trace *t, const struct export_opts *o)
{
    return export_timeline(t, o, "speedscope", evp_view_speedscope);
}

/* The profile exports (pprof, pstats, callgrind). */
static int export_profile(struct evp_trace *t, const struct export_opts *o,
                          int (*view)(struct evp_trace *, FILE *,
                                      const struct evp_profile_opts *))
{
    struct evp_profile_opts po = {.ops = o->ops,
                                  .phases = o->phases,
                                  .compensate = !evp_trace_info(t)->text,
                                  .max_depth = (size_t)o->max_depth};
    struct evp_outfile of;
    FILE *f = evp_cli_out_open(&of, o->out);
    if (!f)
        return 1;
    struct evp_diag diag = {{0}, {0}};
    po.diag = &diag;
    return evp_cli_out_close(
        &of, evp_cli_view_done("export", &diag, view(t, f, &po)));
}

static int export_pprof(struct evp_trace *t, const struct export_opts *o)
{
    return export_profile(t, o, evp_view_pprof);
}

static int export_pstats(struct evp_trace *t, const struct export_opts *o)
{
    return export_profile(t, o, evp_view_pstats);
}

static int export_callgrind(struct evp_trace *t, const struct export_opts *o)
{
    return export_profile(t, o, evp_view_callgrind);
}

#define R_EVENTS EVP_RECORDS_EVENTS
#define R_BOTH (EVP_RECORDS_EVENTS | EVP_RECORDS_SAMPLES)
#define TIMELINE (X_OPS | X_PHASES | X_DEPTH | X_WINDOW | X_THREAD)

/* Each format: what it writes ("a binary trace" refuses a terminal), the
 * records it reads, and the options it takes of a trace of events and
 * of a sampled trace. */
static const struct format {
    const char *name;
    int (*fn)(struct evp_trace *t, const struct export_opts *o);
    const char *binary; /* "a binary trace": refused on a terminal */
    unsigned reads;     /* EVP_RECORDS_* */
    unsigned events;    /* X_*: the options for a trace of events */
    unsigned samples;   /* X_*: for a sampled trace */
} formats[] = {
    {"text", export_text, NULL, R_BOTH, 0, 0},
    {"evp", export_evp, "a binary trace", R_BOTH, X_ZSTD, X_ZSTD},
    {"folded", export_folded, NULL, R_BOTH,
     X_OPS | X_PHASES | X_LINES | X_RAW | X_DEPTH,
     X_OPS | X_PHASES | X_LINES | X_RAW | X_DEPTH},
    {"chrome", export_chrome, NULL, R_BOTH, TIMELINE, TIMELINE},
    {"speedscope", export_speedscope, NULL, R_BOTH, TIMELINE, TIMELINE},
    {"pprof", export_pprof, "a binary pprof profile", R_BOTH,
     X_OPS | X_PHASES | X_DEPTH, X_OPS | X_PHASES | X_DEPTH},
    {"pstats", export_pstats, "a binary pstats profile", R_BOTH, 0, 0},
    {"callgrind", export_callgrind, NULL, R_BOTH, X_OPS, 0},
};

#define NFORMATS (sizeof formats / sizeof formats[0])

/* "folded", "chrome and speedscope": the formats that take option X of
 * a trace of events, into BUF. */
static const char *takers(unsigned x, char *buf, size_t len)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < NFORMATS; i++)
        n += (formats[i].events & x) != 0;
    buf[0] = '\0';
    for (size_t i = 0, l = 0; i < NFORMATS; i++) {
        if (!(formats[i].events & x))
            continue;
        k++;
        l += (size_t)snprintf(buf + l, len - l, "%s%s",
                              k == 1   ? ""
                              : k == n ? " and "
                                       : ", ",
                              formats[i].name);
        if (l >= len)
            break;
    }
    return buf;
}

/* The options O gives, as X_* (WINDOW: --from/--to/--func given;
 * THREAD: --thread). */
static unsigned given(const struct export_opts *o, int window, int thread)
{
    return (o->ops ? X_OPS : 0u) | (o->phases ? X_PHASES : 0u) |
           (o->lines ? X_LINES : 0u) | (o->raw ? X_RAW : 0u) |
           (o->depth_given ? X_DEPTH : 0u) | (window ? X_WINDOW : 0u) |
           (thread ? X_THREAD : 0u) | (o->zstd ? X_ZSTD : 0u);
}

/* "--ops", ... : the first of the options X that is named alone (NULL:
 * none). */
static const char *first_option(unsigned x)
{
    static const struct {
        unsigned x;
        const char *opt;
    } opts[] = {{X_OPS, "--ops"},     {X_PHASES, "--phases"},
                {X_LINES, "--lines"}, {X_DEPTH, "--max-depth"},
                {X_ZSTD, "--zstd"},   {X_RAW, "--no-compensate"}};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (x & opts[i].x)
            return opts[i].opt;
    return NULL;
}

/* Refuse, in one line, an option F does not take of a trace of events
 * (before the trace is read): 0, or 2. */
static int check_options(const struct format *f, unsigned x)
{
    char list[128];
    unsigned bad = x & ~f->events;
    const char *opt = first_option(bad);
    if (bad & X_RAW) {
        evp_cli_error("export: --no-compensate is for %s, not %s",
                      takers(X_RAW, list, sizeof list), f->name);
        return 2;
    }
    if (bad & (X_WINDOW | X_THREAD)) {
        evp_cli_error("export: --from, --to, --func and --thread are for %s, "
                      "not %s",
                      takers(X_WINDOW, list, sizeof list), f->name);
        return 2;
    }
    if (opt) {
        evp_cli_error("export: %s has no meaning for %s", opt, f->name);
        return 2;
    }
    return 0;
}

/* Refuse, in one line, what F cannot write of trace T (read from IN):
 * the records T holds, the options given for a sampled trace.  0, or the
 * exit status. */
static int check_trace(const struct format *f, struct evp_trace *t, unsigned x)
{
    unsigned has = evp_trace_records(t);
    if (has && !(has & f->reads)) {
        evp_cli_error("export --format %s: %s is a sampled trace: it has "
                      "samples and no events to show %s (use summary, "
                      "flamegraph, export --format folded or export "
                      "--format speedscope)",
                      f->name, evp_trace_info(t)->path,
                      strcmp(f->name, "chrome") == 0 ? "as a timeline"
                                                     : "in this format");
        return 1;
    }
    unsigned bad = has == EVP_RECORDS_SAMPLES ? x & ~f->samples : 0;
    if (bad) {
        evp_cli_error("export --format %s: %s has no meaning for a sampled "
                      "trace",
                      f->name, first_option(bad));
        return 2;
    }
    return 0;
}

int evp_cli_parse_zstd(const char *arg)
{
    if (!arg)
        return 3;
    long v = evp_cli_parse_long("--zstd", arg);
    if (v < 1 || v > 19) {
        if (v >= 0)
            evp_cli_error("--zstd: level %ld out of range (1-19)", v);
        return -1;
    }
    return (int)v;
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"zstd", optional_argument, NULL, 'z'},
        {"ops", no_argument, NULL, 'O'},
        {"lines", no_argument, NULL, 'L'},
        {"phases", no_argument, NULL, 'P'},
        {"no-compensate", no_argument, NULL, 'n'},
        {"max-depth", required_argument, NULL, 'D'},
        {"python", required_argument, NULL, 'p'},
        EVP_CLI_FILTER_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct export_opts o = {.out = "-",
                            .max_depth = EVP_FOLDED_DEFAULT_DEPTH,
                            .filter = EVP_CLI_FILTER_INIT};
    const char *fmt = NULL, *python = NULL;
    int c, k, window = 0, thread = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
        if ((k = evp_cli_filter_option(c, optarg, &o.filter)) != 0) {
            if (k < 0)
                return 2;
            if (c == EVP_CLI_OPT_THREAD)
                thread = 1;
            else
                window = 1;
            continue;
        }
        switch (c) {
        case 'f':
            fmt = optarg;
            break;
        case 'o':
            o.out = optarg;
            break;
        case 'z':
            if ((o.zstd = evp_cli_parse_zstd(optarg)) < 0)
                return 2;
            break;
        case 'O':
            o.ops = 1;
            break;
        case 'L':
            o.lines = 1;
            break;
        case 'P':
            o.phases = 1;
            break;
        case 'n':
            o.raw = 1;
            break;
        case 'D':
            if ((o.max_depth = evp_cli_parse_long("--max-depth", optarg)) < 0)
                return 2;
            o.depth_given = 1;
            break;
        case 'p':
            python = optarg;
            break;
        case 'h':
            return evp_cli_help("export");
        default:
            evp_cli_usage(stderr, "export");
            return 2;
        }
    }
    if (evp_cli_operands("export", argc - optind, 1, "one TRACE") < 0)
        return 2;
    size_t i, n = NFORMATS;
    char names[256] = "";
    for (i = 0; i < n; i++) {
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                 formats[i].name);
    }
    if (!fmt) {
        evp_cli_usage(stderr, "export");
        evp_cli_error("export: --format is required (%s)", names);
        return 2;
    }
    for (i = 0; i < n && strcmp(formats[i].name, fmt) != 0; i++)
        ;
    if (i == n) {
        evp_cli_error("export: unknown format '%s' (%s)", fmt, names);
        return 2;
    }
    const struct format *f = &formats[i];
    unsigned x = given(&o, window, thread);
    if (check_options(f, x))
        return 2;
    if (f->binary && strcmp(o.out, "-") == 0 && isatty(1)) {
        evp_cli_error("export: refusing to write %s to a terminal (use -o "
                      "FILE)",
                      f->binary);
        return 2;
    }
    const char *in = argv[optind];
    if (evp_cli_out_check("export", o.out, &in, 1))
        return 2;
    struct evp_trace *t = evp_cli_open_trace(in, python);
    if (!t)
        return 1;
    int rc = check_trace(f, t, x);
    if (!rc)
        rc = f->fn(t, &o);
    evp_trace_close(t);
    return evp_cli_finish(rc);
}
