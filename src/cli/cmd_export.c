/*
 * `evalprof export`: write a trace in another format.  Each format is one
 * entry of the table below, a thin wrapper around a writer or a view.
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
    if (strcmp(o->out, "-") == 0 && isatty(1)) {
        evp_cli_error("export: refusing to write a binary trace to a "
                      "terminal (use -o FILE)");
        return 2;
    }
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
    return evp_cli_out_close(&of, evp_view_folded(t, f, &fo));
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
    if (filtered && evp_sampled_only(t) &&
        (fo.f.from_ns || fo.f.to_ns || fo.f.func || fo.f.max_depth)) {
        evp_cli_error("%s: --from, --to, --func and --max-depth apply to "
                      "traces of events; a sampled trace takes --thread only",
                      cmd);
        return 2;
    }
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
    return evp_cli_out_close(&of, view(t, f, &co));
}

static int export_chrome(struct evp_trace *t, const struct export_opts *o)
{
    return export_timeline(t, o, "chrome", evp_view_chrome);
}

static int export_speedscope(struct evp_trace *t, const struct export_opts *o)
{
    return export_timeline(t, o, "speedscope", evp_view_speedscope);
}

/* The profile exports: MASK the options each takes (1 --ops, 2 --phases);
 * the binary ones refuse a terminal. */
static int export_profile(struct evp_trace *t, const struct export_opts *o,
                          const char *name, int mask, int binary,
                          int (*view)(struct evp_trace *, FILE *,
                                      const struct evp_profile_opts *))
{
    if ((o->ops && !(mask & 1)) || (o->phases && !(mask & 2))) {
        evp_cli_error("export: %s has no meaning for %s",
                      o->ops && !(mask & 1) ? "--ops" : "--phases", name);
        return 2;
    }
    if (binary && strcmp(o->out, "-") == 0 && isatty(1)) {
        evp_cli_error("export: refusing to write a binary %s profile to a "
                      "terminal (use -o FILE)",
                      name);
        return 2;
    }
    struct evp_profile_opts po = {.ops = o->ops,
                                  .phases = o->phases,
                                  .compensate = !evp_trace_info(t)->text,
                                  .max_depth = (size_t)o->max_depth};
    struct evp_outfile of;
    FILE *f = evp_cli_out_open(&of, o->out);
    if (!f)
        return 1;
    return evp_cli_out_close(&of, view(t, f, &po));
}

static int export_pprof(struct evp_trace *t, const struct export_opts *o)
{
    return export_profile(t, o, "pprof", 3, 1, evp_view_pprof);
}

static int export_pstats(struct evp_trace *t, const struct export_opts *o)
{
    return export_profile(t, o, "pstats", 0, 1, evp_view_pstats);
}

static int export_callgrind(struct evp_trace *t, const struct export_opts *o)
{
    return export_profile(t, o, "callgrind", 1, 0, evp_view_callgrind);
}

static const struct {
    const char *name;
    int (*fn)(struct evp_trace *t, const struct export_opts *o);
} formats[] = {
    {"text", export_text},
    {"evp", export_evp},
    {"folded", export_folded},
    {"chrome", export_chrome},
    {"speedscope", export_speedscope},
    {"pprof", export_pprof},
    {"pstats", export_pstats},
    {"callgrind", export_callgrind},
};

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
    int c, k, filters = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
        if ((k = evp_cli_filter_option(c, optarg, &o.filter)) != 0) {
            if (k < 0)
                return 2;
            filters = 1;
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
    size_t i, n = sizeof formats / sizeof formats[0];
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
    if (o.raw && formats[i].fn != export_folded) {
        evp_cli_error("export: --no-compensate is for folded, not %s", fmt);
        return 2;
    }
    if (filters && formats[i].fn != export_chrome &&
        formats[i].fn != export_speedscope) {
        evp_cli_error("export: --from, --to, --func and --thread are for "
                      "chrome and speedscope, not %s",
                      fmt);
        return 2;
    }
    const char *in = argv[optind];
    if (evp_cli_out_check("export", o.out, &in, 1))
        return 2;
    struct evp_trace *t = evp_cli_open_trace(in, python);
    if (!t)
        return 1;
    /* a sampled trace's samples go to the stack views; the others are
     * views of events (or would write a trace without its samples) */
    if (formats[i].fn != export_folded && formats[i].fn != export_speedscope &&
        strcmp(fmt, "evp") != 0) {
        char cmd[48];
        snprintf(cmd, sizeof cmd, "export --format %s", fmt);
        if (evp_cli_refuse_sampled(cmd, t)) {
            evp_trace_close(t);
            return 1;
        }
    }
    int rc = formats[i].fn(t, &o);
    evp_trace_close(t);
    return evp_cli_finish(rc);
}
