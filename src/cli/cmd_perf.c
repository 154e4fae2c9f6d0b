/*
 * `evalprof perf`: profile a command with Linux perf and turn the samples
 * into evalprof's pictures in one step, replacing the discussion's recipe
 * of perf record, perf script, two Perl scripts and sysctl tweaks:
 *
 *   perf record (-g, cpu-clock, CLOCK_MONOTONIC; -X perf for CPython 3.12+)
 *     -> perf script -> DIR/perf.script
 *     -> collapsed natively (stackcollapse-perf.pl conventions)
 *     -> DIR/perf.folded, DIR/flamegraph.svg, the hot-function table
 *     -> with --startup: pymain_init / pyinit_core / pyinit_main /
 *        running / finalisation as shares of the samples
 *     -> with --trace FILE: the cross-check against the evalprof trace the
 *        command recorded
 *     -> with --ops: each eval-function sample's leaf (DIR/perf.leaves)
 *        to its source line and opcode handler (src/perf/ops.c)
 *
 * --script FILE skips recording and reads existing `perf script` text
 * (refused when most of it is something else).  Stacks cut at
 * kernel.perf_event_max_stack are counted and reported with the sysctl
 * that fixes them.  Recording itself is evp_perf_record (src/perf/run.c);
 * this file parses the options, collapses, writes and prints.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"
#include "xcheck.h"
#include "views.h"
#include "cli.h"

struct perf_ctx {
    struct evp_stacks *stacks;
    struct evp_hot *hot;
    struct evp_startup su;
    int startup;
    const char *comm_prefix;
    struct evp_xc_trace *xt;
    struct evp_xc_perf xp;
    long max_stack;
    uint64_t cut;      /* samples at the max-stack limit */
    uint64_t unrooted; /* user stacks not ending at a thread root */
    uint64_t user;     /* samples with user frames */
    char *key;
    size_t kcap;
    long pids[64];
    size_t npids;
};

static int on_sample(void *c, const struct evp_perf_sample *s)
{
    struct perf_ctx *p = c;
    size_t len;
    int rc = evp_perf_sample_key(s, &p->key, &p->kcap, &len);
    if (!rc)
        rc = evp_stacks_add(p->stacks, p->key, len, s->period);
    if (!rc)
        rc = evp_hot_add(p->hot, s);
    if (rc)
        return rc;
    if (p->startup)
        evp_startup_add(&p->su, s, p->comm_prefix);
    if (p->xt)
        evp_xc_add(&p->xp, p->xt, s);
    if (p->max_stack > 0 && (long)s->raw_frames >= p->max_stack)
        p->cut++;
    else if (s->nframes) {
        const struct evp_perf_frame *root = &s->frames[0];
        int kernel_root = root->dso_len && root->dso[0] == '[' &&
                          root->dso_len > 1 && root->dso[1] == 'k';
        if (!kernel_root) {
            p->user++;
            if (!evp_perf_is_root_frame(root->name, root->len))
                p->unrooted++;
        }
    }
    long pid = s->pid >= 0 ? s->pid : s->tid;
    size_t i;
    for (i = 0; i < p->npids && p->pids[i] != pid; i++)
        ;
    if (i == p->npids && p->npids < 64)
        p->pids[p->npids++] = pid;
    return 0;
}

/* PATH written by FN whole or not at all: 0, or 1 after one line. */
static int write_file(const char *path, int (*fn)(void *ctx, FILE *f),
                      void *ctx)
{
    struct evp_outfile o;
    if (!evp_cli_out_open(&o, path))
        return 1;
    int rc = fn(ctx, o.f);
    if (rc < 0 && rc != -EIO) {
        evp_cli_error("%s: %s", path, strerror(-rc));
        rc = EVP_CLI_REPORTED;
    }
    return evp_cli_out_close(&o, rc);
}

static int put_folded(void *ctx, FILE *f)
{
    return evp_stacks_write(ctx, f);
}

struct svg_job {
    struct evp_stacks *stacks;
    struct evp_flame_opts *o;
};

static int add_stack(void *ctx, const char *key, size_t len, uint64_t v)
{
    return evp_flame_add(ctx, key, len, (double)v);
}

static int put_svg(void *ctx, FILE *f)
{
    struct svg_job *j = ctx;
    struct evp_flame *fl = evp_flame_new();
    if (!fl)
        return -ENOMEM;
    int rc = evp_stacks_each(j->stacks, add_stack, fl);
    if (!rc)
        rc = evp_flame_write_svg(fl, f, j->o, NULL);
    evp_flame_free(fl);
    return rc;
}

/* -X perf makes the interpreter write /tmp/perf-PID.map for perf script;
 * remove the ones this run created once they have been read. */
static void remove_perf_maps(const struct perf_ctx *p, time_t since)
{
    for (size_t i = 0; i < p->npids; i++) {
        char path[64];
        struct stat sb;
        snprintf(path, sizeof path, "/tmp/perf-%ld.map", p->pids[i]);
        if (stat(path, &sb) == 0 && sb.st_mtime >= since)
            unlink(path);
    }
}

/* The command line, once parsed. */
struct perf_args {
    const char *dir, *event, *cg, *trace, *script_in, *title, *perf_name;
    const char *python;
    long freq, top;
    unsigned repeat;
    int startup, with_pid, ops;
    double threshold;
    char **cmd; /* the command to profile, NCMD words */
    int ncmd;
};

/* Everything one run holds, released in one place (run_free). */
struct perf_run {
    char script[4096], folded[4096], svg[4096], leaves[4096];
    struct perf_ctx p;
    struct evp_trace *t;
    struct evp_xc_trace xt;
    struct evp_collapse_stats cs;
    /* a stripped interpreter whose eval loop was named (unnamed.c) */
    char unnamed_dso[4096];
    uint64_t unnamed_frames;
    int status; /* the profiled command's exit status */
    int xperf;  /* -X perf was added */
    time_t started;
};

/* Options into A: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct perf_args *a)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"freq", required_argument, NULL, 'F'},
        {"event", required_argument, NULL, 'e'},
        {"call-graph", required_argument, NULL, 'g'},
        {"startup", no_argument, NULL, 'S'},
        {"repeat", required_argument, NULL, 'r'},
        {"trace", required_argument, NULL, 'T'},
        {"script", required_argument, NULL, 's'},
        {"top", required_argument, NULL, 'n'},
        {"title", required_argument, NULL, 't'},
        {"perf", required_argument, NULL, 'P'},
        {"threshold", required_argument, NULL, 'x'},
        {"pid", no_argument, NULL, 'p'},
        {"python", required_argument, NULL, 'y'},
        {"ops", no_argument, NULL, 'O'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *a = (struct perf_args){.dir = "evalprof-perf",
                            .event = "cpu-clock",
                            .perf_name = "perf",
                            .freq = -1,
                            .top = 20,
                            .repeat = 1,
                            .threshold = 5.0};
    long v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:F:e:r:n:h", longopts, NULL)) !=
           -1) {
        switch (c) {
        case 'o':
            a->dir = optarg;
            break;
        case 'F':
            if ((a->freq = evp_cli_parse_long("-F", optarg)) < 1 ||
                a->freq > 1000000) {
                if (a->freq >= 0)
                    evp_cli_error("perf: -F must be 1-1000000");
                return 2;
            }
            break;
        case 'e':
            a->event = optarg;
            break;
        case 'g':
            if (strcmp(optarg, "fp") && strcmp(optarg, "dwarf") &&
                strcmp(optarg, "lbr")) {
                evp_cli_error("perf: --call-graph is fp, dwarf or lbr");
                return 2;
            }
            a->cg = optarg;
            break;
        case 'S':
            a->startup = 1;
            break;
        case 'r':
            if ((v = evp_cli_parse_long("--repeat", optarg)) < 1 || v > 1000) {
                if (v >= 0)
                    evp_cli_error("perf: --repeat must be 1-1000");
                return 2;
            }
            a->repeat = (unsigned)v;
            break;
        case 'T':
            a->trace = optarg;
            break;
        case 's':
            a->script_in = optarg;
            break;
        case 'n':
            if ((a->top = evp_cli_parse_long("--top", optarg)) < 0)
                return 2;
            break;
        case 't':
            a->title = optarg;
            break;
        case 'P':
            a->perf_name = optarg;
            break;
        case 'x': {
            char *end;
            a->threshold = strtod(optarg, &end);
            /* written so that nan fails too */
            if (end == optarg || *end ||
                !(a->threshold >= 0 && a->threshold <= 100)) {
                evp_cli_error("perf: --threshold is in points, 0-100");
                return 2;
            }
            break;
        }
        case 'p':
            a->with_pid = 1;
            break;
        case 'y':
            a->python = optarg;
            break;
        case 'O':
            a->ops = 1;
            break;
        case 'h':
            return evp_cli_help("perf");
        default:
            evp_cli_usage(stderr, "perf");
            return 2;
        }
    }
    a->cmd = argv + optind;
    a->ncmd = argc - optind;
    if (a->ncmd > 0 && strcmp(a->cmd[0], "--") == 0) {
        a->cmd++;
        a->ncmd--;
    }
    if (!a->script_in && a->ncmd == 0) {
        evp_cli_error("perf: no command to profile (evalprof perf -- CMD ...)"
                      " and no --script");
        evp_cli_usage(stderr, "perf");
        return 2;
    }
    if (a->script_in && a->ncmd > 0) {
        evp_cli_error("perf: give a command or --script, not both");
        return 2;
    }
    if (a->ops && a->script_in) {
        evp_cli_error("perf: --ops needs a command: it reads each sample's "
                      "symbol offset from perf.data, not --script text");
        return 2;
    }
#ifndef EVP_HAVE_LIBDW
    if (a->ops) {
        evp_cli_error("perf: --ops is not built in: evalprof was built "
                      "without libdw (Debian package libdw-dev)");
        return 2;
    }
#endif
    if (!a->cg)
        a->cg = (a->startup || a->trace) ? "dwarf" : "fp";
    if (a->freq < 0)
        a->freq = a->startup ? 10000 : (a->trace || a->ops) ? 4999 : 999;
    return -1;
}

/* The perf script text into R->script: the one given, or recorded now.
 * 0, or -1 after printing why. */
static int get_script(const struct perf_args *a, struct perf_run *r)
{
    if (a->script_in) {
        snprintf(r->script, sizeof r->script, "%s", a->script_in);
        return 0;
    }
    char perf[4096];
    if (evp_perf_which(a->perf_name, perf, sizeof perf) != 0) {
        evp_cli_error("perf: '%s' not found: install Debian's linux-perf "
                      "package (apt-get install linux-perf)",
                      a->perf_name);
        return -1;
    }
    snprintf(r->script, sizeof r->script, "%s/perf.script", a->dir);
    snprintf(r->leaves, sizeof r->leaves, "%s/perf.leaves", a->dir);
    /* -X perf stops unwinding at the first Python frame, and the
     * start-up breakdown needs whole C stacks down to main. */
    struct evp_perf_record_opts ro = {.perf = perf,
                                      .dir = a->dir,
                                      .cmd = a->cmd,
                                      .ncmd = a->ncmd,
                                      .event = a->event,
                                      .callgraph = a->cg,
                                      .freq = a->freq,
                                      .repeat = a->repeat,
                                      .script = r->script,
                                      .want_xperf = !a->startup && !a->trace,
                                      .ops = a->ops ? r->leaves : NULL};
    char msg[1024];
    r->status = evp_perf_record(&ro, &r->xperf, msg, sizeof msg);
    if (r->status < 0) {
        evp_cli_error("%s", msg);
        return -1;
    }
    return 0;
}

/* Refuses, before anything runs, outputs under DIR that are one of the
 * inputs (perf.script, perf.folded, flamegraph.svg): 0, or 2 after one
 * line. */
static int check_outputs(const struct perf_args *a)
{
    static const char *const names[] = {"perf.folded", "flamegraph.svg",
                                        "perf.script"};
    const char *ins[] = {a->script_in, a->trace};
    /* perf.script is written only when perf runs */
    size_t n = a->script_in ? 2 : 3;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", a->dir, names[i]);
        if (evp_cli_out_check("perf", path, ins, 2))
            return 2;
    }
    char leaves[4096];
    snprintf(leaves, sizeof leaves, "%s/perf.leaves", a->dir);
    if (a->ops && evp_cli_out_check("perf", leaves, ins, 2))
        return 2;
    return 0;
}

/* The accumulators, and the trace for the cross-check when one is given:
 * 0, or -1 after printing why. */
static int open_inputs(const struct perf_args *a, struct perf_run *r)
{
    struct perf_ctx *p = &r->p;
    p->stacks = evp_stacks_new();
    p->hot = evp_hot_new();
    p->startup = a->startup;
    p->max_stack = evp_perf_max_stack();
    /* Text made elsewhere may have been cut by perf script's own default
     * of 127 frames. */
    if (a->script_in && (p->max_stack < 0 || p->max_stack > 127))
        p->max_stack = 127;
    if (!a->script_in && evp_perf_is_python(a->cmd[0]))
        p->comm_prefix = "python";
    if (!a->trace)
        return 0;
    r->t = evp_cli_open_trace(a->trace, a->python);
    if (!r->t)
        return -1;
    if (evp_xc_from_trace(r->t, &r->xt) < 0) {
        evp_cli_error("%s: the trace could not be replayed", a->trace);
        return -1;
    }
    p->xt = &r->xt;
    return 0;
}

/* Collapse the perf script text: 0, or -1 after printing why. */
static int collapse(const struct perf_args *a, struct perf_run *r)
{
    const char *text;
    size_t len;
    int mapped;
    int rc = evp_flame_map(r->script, &text, &len, &mapped);
    if (rc) {
        evp_cli_error("%s: %s", r->script, strerror(-rc));
        return -1;
    }
    if (open_inputs(a, r)) {
        evp_flame_unmap(text, len, mapped);
        return -1;
    }
    struct evp_collapse_opts co = {.pid = a->with_pid};
    struct evp_collapse_stats *cs = &r->cs;
    co.unnamed = evp_perf_unnamed_scan(text, len);
    rc = (!r->p.stacks || !r->p.hot)
             ? -ENOMEM
             : evp_perf_parse(text, len, &co, on_sample, &r->p, cs);
    const char *un = evp_perf_unnamed_report(co.unnamed, &r->unnamed_frames);
    if (un)
        snprintf(r->unnamed_dso, sizeof r->unnamed_dso, "%s", un);
    evp_perf_unnamed_free(co.unnamed);
    evp_flame_unmap(text, len, mapped);
    if (rc == -ERANGE) {
        evp_cli_error("%s: line %llu: %s %s is out of range (at most %llu)",
                      r->script, (unsigned long long)cs->bad_line, cs->bad_what,
                      cs->bad_num, (unsigned long long)cs->bad_max);
        return -1;
    }
    if (rc) {
        evp_cli_error("perf: out of memory collapsing %s", r->script);
        return -1;
    }
    if (!cs->samples) {
        if (cs->unrecognized && !cs->filtered)
            evp_cli_error("%s: not `perf script` output (line %llu is not "
                          "a sample header or a stack line)",
                          r->script,
                          (unsigned long long)cs->first_unrecognized);
        else
            evp_cli_error("%s: no samples (the command ran too briefly for "
                          "-F %ld, or perf recorded nothing)",
                          r->script, a->freq);
        return -1;
    }
    if (cs->first_binary) {
        evp_cli_error("%s: not `perf script` output (binary data at line "
                      "%llu)",
                      r->script, (unsigned long long)cs->first_binary);
        return -1;
    }
    /* A few samples found in text that is mostly something else are
     * chance matches, not a profile. */
    if (cs->unrecognized * 2 > cs->lines - cs->ignored) {
        evp_cli_error("%s: not `perf script` output (%llu of %llu lines are "
                      "not sample headers or stack lines; first: line %llu)",
                      r->script, (unsigned long long)cs->unrecognized,
                      (unsigned long long)(cs->lines - cs->ignored),
                      (unsigned long long)cs->first_unrecognized);
        return -1;
    }
    if (cs->unrecognized)
        evp_cli_warn("%s: %llu unrecognised line%s (first: line %llu)",
                     r->script, (unsigned long long)cs->unrecognized,
                     cs->unrecognized == 1 ? "" : "s",
                     (unsigned long long)cs->first_unrecognized);
    if (cs->other_event[0])
        evp_cli_warn("%s: kept the %s samples, left out %llu of other events "
                     "(first: %s)",
                     r->script, cs->event, (unsigned long long)cs->filtered,
                     cs->other_event);
    return 0;
}

/* DIR/perf.folded and DIR/flamegraph.svg: 0, or -1 after printing why. */
static int write_outputs(const struct perf_args *a, struct perf_run *r)
{
    snprintf(r->folded, sizeof r->folded, "%s/perf.folded", a->dir);
    snprintf(r->svg, sizeof r->svg, "%s/flamegraph.svg", a->dir);
    const struct evp_collapse_stats *cs = &r->cs;
    if (write_file(r->folded, put_folded, r->p.stacks))
        return -1;
    char sub[256];
    snprintf(sub, sizeof sub, "%llu samples of %s",
             (unsigned long long)cs->samples,
             cs->event[0] ? cs->event : "perf");
    int ns_units = strcmp(cs->event, "cpu-clock") == 0 ||
                   strcmp(cs->event, "task-clock") == 0;
    struct evp_flame_opts fo = {.title = a->title,
                                .subtitle = sub,
                                .countname = ns_units ? "ns" : "events",
                                .min_width = -1};
    struct svg_job job = {r->p.stacks, &fo};
    return write_file(r->svg, put_svg, &job) ? -1 : 0;
}

/* What was made, the warnings about the stacks, and the tables. */
static void print_report(const struct perf_args *a, const struct perf_run *r)
{
    const struct perf_ctx *p = &r->p;
    const struct evp_collapse_stats *cs = &r->cs;
    char n1[32];
    printf("evalprof perf: %s samples of %s",
           evp_perf_count(n1, sizeof n1, cs->samples),
           cs->event[0] ? cs->event : "perf");
    if (!a->script_in)
        printf(" (call graph %s, %ld Hz%s%s)", a->cg, a->freq,
               a->repeat > 1 ? ", repeated" : "", r->xperf ? ", -X perf" : "");
    printf("\n  folded stacks: %s\n  flame graph:   %s\n", r->folded, r->svg);
    if (!a->script_in)
        printf("  perf script:   %s\n", r->script);
    if (p->cut) {
        printf("\nwarning: %llu samples (%.1f%%) hit kernel.perf_event_max_"
               "stack=%ld: their stacks are cut and their roots are wrong.\n"
               "  fix: sysctl -w kernel.perf_event_max_stack=1024 (as root),"
               " then run again%s\n",
               (unsigned long long)p->cut,
               100.0 * (double)p->cut / (double)cs->samples, p->max_stack,
               a->script_in ? " (and give perf script --max-stack=1024)" : "");
    }
    if (p->user && p->unrooted * 5 > p->user && strcmp(a->cg, "dwarf") != 0) {
        printf("\nnote: %.0f%% of user stacks stop before main or a thread "
               "start: the binaries lack frame pointers; --call-graph dwarf "
               "unwinds them\n",
               100.0 * (double)p->unrooted / (double)p->user);
    }
    if (r->unnamed_dso[0]) {
        char n2[32];
        printf("\nnote: %s is stripped: its eval loop has no name of its "
               "own; %s frames in functions of %u KiB or more by its unwind "
               "table are shown as %s\n",
               r->unnamed_dso, evp_perf_count(n2, sizeof n2, r->unnamed_frames),
               EVP_PERF_EVAL_MIN_BYTES / 1024, EVP_PERF_UNNAMED_EVAL);
    }
    printf("\nhot functions (top %ld by self share):\n", a->top);
    evp_hot_print(p->hot, stdout, (size_t)a->top);
    if (a->startup) {
        putchar('\n');
        char what[1024] = "";
        size_t w = 0;
        for (int i = 0; i < a->ncmd && w + 2 < sizeof what; i++)
            w += (size_t)snprintf(what + w, sizeof what - w, "%s%s",
                                  i ? " " : "", a->cmd[i]);
        evp_startup_print(&p->su, stdout, a->script_in ? a->script_in : what,
                          a->repeat, a->script_in ? NULL : a->cg);
    }
    if (a->trace) {
        putchar('\n');
        evp_xc_print(stdout, &r->xt, &p->xp, a->threshold, a->trace);
    }
}

/* With --ops: opcode shares and the hottest eval-loop lines from
 * DIR/perf.leaves.  0, or 1 after one line. */
static int print_ops(const struct perf_args *a, const struct perf_run *r)
{
#ifdef EVP_HAVE_LIBDW
    const char *text;
    size_t len;
    int mapped;
    int rc = evp_flame_map(r->leaves, &text, &len, &mapped);
    if (rc) {
        evp_cli_error("%s: %s", r->leaves, strerror(-rc));
        return 1;
    }
    struct evp_ops *o = evp_ops_new();
    char msg[1024];
    rc = o ? evp_ops_read_script(o, text, len) : -ENOMEM;
    evp_flame_unmap(text, len, mapped);
    if (rc)
        evp_cli_error("perf --ops: out of memory reading %s", r->leaves);
    else if (evp_ops_resolve(o, msg, sizeof msg) < 0) {
        evp_cli_error("perf --ops: %s", msg);
        rc = -1;
    } else {
        putchar('\n');
        if (evp_ops_print(o, stdout, (size_t)a->top) == -ENOMEM) {
            evp_cli_error("perf --ops: out of memory");
            rc = -1;
        }
    }
    evp_ops_free(o);
    return rc ? 1 : 0;
#else
    return 1;
#endif
}

static void run_free(struct perf_run *r)
{
    if (r->t) {
        evp_xc_trace_free(&r->xt);
        evp_trace_close(r->t);
    }
    free(r->p.key);
    evp_stacks_free(r->p.stacks);
    evp_hot_free(r->p.hot);
}

int cmd_perf(int argc, char **argv)
{
    struct perf_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (mkdir(a.dir, 0755) != 0 && errno != EEXIST) {
        evp_cli_error("%s: %s", a.dir, strerror(errno));
        return 1;
    }
    struct perf_run *r = calloc(1, sizeof *r);
    if (!r) {
        evp_cli_error("perf: out of memory");
        return 1;
    }
    r->started = time(NULL);
    rc = check_outputs(&a);
    if (rc == 0) {
        rc = 1;
        if (get_script(&a, r) == 0 && collapse(&a, r) == 0 &&
            write_outputs(&a, r) == 0) {
            print_report(&a, r);
            rc = a.ops ? print_ops(&a, r) : 0;
            if (r->xperf)
                remove_perf_maps(&r->p, r->started);
            if (!a.script_in && r->status)
                evp_cli_warn("perf: the command exited with status %d",
                             r->status);
        }
    }
    run_free(r);
    free(r);
    return rc ? rc : evp_cli_finish(0);
}
