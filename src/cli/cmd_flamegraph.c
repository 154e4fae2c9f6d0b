/*
 * `evalprof flamegraph`: draw an interactive SVG flame graph from a trace
 * (binary or text; its folded stacks in nanoseconds) or from folded stacks
 * made by any tool (stackcollapse-*.pl, inferno, `evalprof perf`).
 *
 * The input kind is sniffed: the binary magic or a first line starting
 * with '#' means a trace, anything else is read as folded stacks;
 * --input forces one.  The SVG is written whole or not at all
 * (evp_cli_out_open), so a failed run never leaves half a picture behind,
 * and never over its input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "views.h"
#include "cli.h"
#include "evalprof/format.h"

/* 1: trace, 0: folded. */
static int sniff_trace(const char *buf, size_t len)
{
    if (len >= 8 && memcmp(buf, EVP_FILE_MAGIC, 8) == 0)
        return 1;
    size_t i = 0;
    while (i < len && (buf[i] == '\n' || buf[i] == '\r' || buf[i] == ' '))
        i++;
    return i < len && buf[i] == '#';
}

struct feed {
    struct evp_flame *fl;
    struct evp_flame_stats *st;
};

static int feed_line(void *ctx, const char *stack, size_t len, uint64_t ns)
{
    struct feed *fd = ctx;
    fd->st->lines++;
    fd->st->stacks++;
    return evp_flame_add(fd->fl, stack, len, (double)ns);
}

/* A trace's folded stacks straight into FL, line by line (never the whole
 * text in memory: deep stacks make it far larger than the tree). */
static int trace_to_flame(const char *path, const char *python, int ops,
                          int phases, int lines, size_t max_depth,
                          struct evp_flame *fl, struct evp_flame_stats *st,
                          uint64_t *samples)
{
    struct evp_trace *t = evp_cli_open_trace(path, python);
    if (!t)
        return -1;
    /* a sampled trace's widths are estimates: the subtitle says so */
    *samples = evp_sampled_only(t) ? evp_trace_nsamples(t) : 0;
    struct evp_folded_opts fo = {.ops = ops,
                                 .phases = phases,
                                 .lines = lines,
                                 .compensate = !evp_trace_info(t)->text,
                                 .stream = -1,
                                 .max_depth = max_depth};
    struct feed fd = {fl, st};
    struct evp_diag diag = {{0}, {0}};
    fo.diag = &diag;
    int rc = evp_cli_view_done("flamegraph", &diag,
                               evp_view_folded_each(t, &fo, feed_line, &fd));
    evp_trace_close(t);
    return rc ? -1 : 0;
}

struct load_opts {
    const char *input; /* --input, NULL: sniffed */
    const char *python;
    int ops, phases, depth_given;
    size_t max_depth;
    int lines; /* --lines: file:line leaves */
};

/* One input of the graph, and the buffer its names may point into. */
struct input {
    const char *path;
    char *buf;
    size_t len;
    int mapped, is_trace;
    struct evp_flame_stats st;
    uint64_t samples; /* a sampled trace's samples, 0: not sampled */
};

/* Merge IN (a trace or folded stacks) into FL: 0, or the exit status
 * after reporting. */
static int load(struct input *in, const struct load_opts *lo,
                struct evp_flame *fl)
{
    const char *path = in->path;
    struct evp_flame_stats st = {0};
    if (lo->input) {
        in->is_trace = strcmp(lo->input, "trace") == 0;
    } else {
        /* Sniff from the first bytes; a trace is opened by path. */
        FILE *f = strcmp(path, "-") == 0 ? NULL : fopen(path, "rb");
        if (!f && strcmp(path, "-") != 0) {
            evp_cli_error("%s: %s", path, strerror(errno));
            return 1;
        }
        if (f) {
            char head[256];
            size_t n = fread(head, 1, sizeof head, f);
            fclose(f);
            in->is_trace = sniff_trace(head, n);
        } else {
            in->is_trace = 0;
        }
    }
    if (in->is_trace) {
        if (strcmp(path, "-") == 0) {
            evp_cli_error("flamegraph: a trace is read from a file, not "
                          "standard input");
            return 2;
        }
        if (trace_to_flame(path, lo->python, lo->ops, lo->phases, lo->lines,
                           lo->max_depth, fl, &st, &in->samples) < 0)
            return 1;
    } else {
        if (lo->ops || lo->phases || lo->lines || lo->depth_given)
            evp_cli_warn(
                "flamegraph: --ops, --phases, --lines and --max-depth apply "
                "to traces, not to folded input");
        const char *map;
        int rc = evp_flame_map(path, &map, &in->len, &in->mapped);
        if (rc) {
            evp_cli_error("%s: %s", path, strerror(-rc));
            return 1;
        }
        in->buf = (char *)map;
        evp_flame_borrow(fl); /* BUF lives until the SVG is written */
        rc = evp_flame_add_folded(fl, in->buf, in->len, &st);
        if (rc == -ERANGE) {
            evp_cli_error("%s: line %llu: count %s is out of range (at most "
                          "%.0f)",
                          path, (unsigned long long)st.bad_line, st.bad_count,
                          EVP_FLAME_MAX_COUNT);
            return 1;
        }
        if (rc) {
            evp_cli_error("flamegraph: out of memory");
            return 1;
        }
    }
    if (!st.stacks) {
        if (in->is_trace)
            evp_cli_error("%s: the trace has no timed events to draw", path);
        else
            evp_cli_error("%s: no folded stacks (expected lines "
                          "'frame;frame;... COUNT')",
                          path);
        return 1;
    }
    in->st = st;
    return 0;
}

/* What was left out of IN, once it is known to be drawn. */
static void warn_input(const struct input *in)
{
    const struct evp_flame_stats *st = &in->st;
    if (st->malformed)
        evp_cli_warn("%s: ignored %llu line%s without a trailing count "
                     "(first: line %llu)",
                     in->path, (unsigned long long)st->malformed,
                     st->malformed == 1 ? "" : "s",
                     (unsigned long long)st->first_malformed);
    if (st->differential)
        evp_cli_warn("%s: two counts per line (differential input): the "
                     "second count is drawn",
                     in->path);
}

int cmd_flamegraph(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"title", required_argument, NULL, 't'},
        {"subtitle", required_argument, NULL, 's'},
        {"icicle", no_argument, NULL, 'i'},
        {"inverted", no_argument, NULL, 'i'},
        {"width", required_argument, NULL, 'w'},
        {"height", required_argument, NULL, 'H'},
        {"minwidth", required_argument, NULL, 'm'},
        {"countname", required_argument, NULL, 'c'},
        {"ops", no_argument, NULL, 'O'},
        {"group-specialized", no_argument, NULL, 'G'},
        {"phases", no_argument, NULL, 'P'},
        {"lines", no_argument, NULL, 'L'},
        {"input", required_argument, NULL, 'I'},
        {"max-depth", required_argument, NULL, 'D'},
        {"python", required_argument, NULL, 'p'},
        {"diff", no_argument, NULL, 'd'},
        {"negate", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evp_flame_opts fo = {.min_width = -1};
    const char *out = "-", *python = NULL, *input = NULL;
    int subtitle_given = 0, ops = 0, group = 0, phases = 0, lines = 0,
        depth_given = 0, diff = 0, negate = 0, c;
    long v, max_depth = EVP_FOLDED_DEFAULT_DEPTH;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 't':
            fo.title = optarg;
            break;
        case 's':
            fo.subtitle = optarg;
            subtitle_given = 1;
            break;
        case 'i':
            fo.icicle = 1;
            break;
        case 'w':
            if ((v = evp_cli_parse_long("--width", optarg)) < 0)
                return 2;
            if (v < 200 || v > 100000) {
                evp_cli_error("flamegraph: --width must be 200-100000");
                return 2;
            }
            fo.width = (int)v;
            break;
        case 'H':
            if ((v = evp_cli_parse_long("--height", optarg)) < 0)
                return 2;
            if (v < 4 || v > 200) {
                evp_cli_error("flamegraph: --height must be 4-200");
                return 2;
            }
            fo.frame_height = (int)v;
            break;
        case 'm': {
            char *end;
            double d = strtod(optarg, &end);
            /* written so that nan fails too */
            if (end == optarg || *end || !(d >= 0 && d <= 1000)) {
                evp_cli_error("flamegraph: --minwidth: '%s' is not a width "
                              "in pixels",
                              optarg);
                return 2;
            }
            fo.min_width = d;
            break;
        }
        case 'c':
            fo.countname = optarg;
            break;
        case 'O':
            ops = ops ? ops : 1;
            break;
        case 'G':
            group = 1;
            break;
        case 'P':
            phases = 1;
            break;
        case 'L':
            lines = 1;
            break;
        case 'I':
            if (strcmp(optarg, "folded") && strcmp(optarg, "trace")) {
                evp_cli_error("flamegraph: --input is 'folded' or 'trace'");
                return 2;
            }
            input = optarg;
            break;
        case 'D':
            if ((max_depth = evp_cli_parse_long("--max-depth", optarg)) < 0)
                return 2;
            depth_given = 1;
            break;
        case 'p':
            python = optarg;
            break;
        case 'd':
            diff = 1;
            break;
        case 'n':
            negate = 1;
            break;
        case 'h':
            return evp_cli_help("flamegraph");
        default:
            evp_cli_usage(stderr, "flamegraph");
            return 2;
        }
    }
    if (evp_cli_operands("flamegraph", argc - optind, 1 + diff,
                         diff ? "BASE and NEW (each a TRACE or FOLDED file)"
                              : "one TRACE or FOLDED file") < 0)
        return 2;
    if (evp_cli_out_check("flamegraph", out, (const char *const *)argv + optind,
                          1 + diff))
        return 2;
    if (negate && !diff) {
        evp_cli_error("flamegraph: --negate applies to --diff BASE NEW");
        return 2;
    }
    if (group && !ops) {
        evp_cli_error("flamegraph: --group-specialized applies to --ops");
        return 2;
    }
    if (group)
        ops = 2; /* opcode families (evp_folded_opts) */
    if (strcmp(out, "-") == 0 && isatty(1)) {
        evp_cli_error("flamegraph: refusing to write SVG to a terminal "
                      "(use -o FILE.svg)");
        return 2;
    }
    int status = 1;
    struct evp_flame *fl = NULL;
    struct evp_flame_stats st = {0};
    struct input ins[2] = {{0}, {0}};
    struct load_opts lo = {
        input, python, ops, phases, depth_given, (size_t)max_depth, lines};
    if (!(fl = evp_flame_new())) {
        evp_cli_error("flamegraph: out of memory");
        goto out;
    }
    if (diff) {
        /* BASE first, into the base side; NEW after it */
        ins[0].path = argv[optind];
        ins[1].path = argv[optind + 1];
        if (evp_flame_to_base(fl, 1)) {
            evp_cli_error("flamegraph: out of memory");
            goto out;
        }
        if ((status = load(&ins[0], &lo, fl)) != 0)
            goto out;
        evp_flame_to_base(fl, 0);
        status = 1;
        if ((status = load(&ins[1], &lo, fl)) != 0)
            goto out;
        status = 1;
        if (evp_flame_total(fl) <= 0 && evp_flame_base_total(fl) <= 0) {
            evp_cli_error("%s, %s: every count is zero: nothing to draw",
                          ins[0].path, ins[1].path);
            goto out;
        }
        if (negate ? evp_flame_base_total(fl) <= 0 : evp_flame_total(fl) <= 0) {
            evp_cli_error("%s: every count is zero: no widths to draw (%s)",
                          ins[negate ? 0 : 1].path,
                          negate ? "without --negate NEW's are drawn"
                                 : "--negate draws BASE's");
            goto out;
        }
        fo.negate = negate;
        if (!fo.subtitle)
            fo.subtitle = negate ? "widths: BASE; red: grew in NEW, "
                                   "blue: shrank in NEW"
                                 : "widths: NEW; red: grew from BASE, "
                                   "blue: shrank from BASE";
    } else {
        ins[0].path = argv[optind];
        if ((status = load(&ins[0], &lo, fl)) != 0)
            goto out;
        status = 1;
        if (evp_flame_total(fl) <= 0) {
            evp_cli_error("%s: every count is zero: nothing to draw",
                          ins[0].path);
            goto out;
        }
    }
    for (int i = 0; i < 1 + diff; i++)
        warn_input(&ins[i]);
    char est[160];
    if ((!fo.subtitle || (diff && !subtitle_given)) &&
        (ins[0].samples || ins[1].samples)) {
        char n0[32], n1[32];
        evp_num_group(n0, sizeof n0, ins[0].samples);
        evp_num_group(n1, sizeof n1, ins[1].samples);
        if (diff)
            snprintf(est, sizeof est,
                     "%s; times estimated from %s and %s samples", fo.subtitle,
                     n0, n1);
        else
            snprintf(est, sizeof est,
                     "times estimated from %s samples (timer periods x "
                     "period)",
                     n0);
        fo.subtitle = est;
    }
    if (!fo.countname)
        fo.countname = ins[0].is_trace || ins[1].is_trace ? "ns" : NULL;

    struct evp_outfile of;
    FILE *o = evp_cli_out_open(&of, out);
    if (!o)
        goto out;
    int rc = evp_flame_write_svg(fl, o, &fo, &st);
    if (rc < 0 && rc != -EIO) {
        evp_cli_error("flamegraph: %s", strerror(-rc));
        rc = EVP_CLI_REPORTED;
    }
    rc = evp_cli_out_close(&of, rc);
    status = rc ? rc : evp_cli_finish(0);
out:
    evp_flame_free(fl);
    for (int i = 0; i < 2; i++)
        evp_flame_unmap(ins[i].buf, ins[i].len, ins[i].mapped);
    return status;
}
