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
 *
 * --script FILE skips recording and reads existing `perf script` text.
 * Stacks cut at kernel.perf_event_max_stack are counted and reported with
 * the sysctl that fixes them.
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

static int write_file(const char *path, int (*fn)(void *ctx, FILE *f),
                      void *ctx)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* not a regular file: write in place, never rename over it */
        FILE *f = fopen(path, "w");
        if (!f)
            return -errno;
        int rc = fn(ctx, f);
        if (fclose(f) != 0 && !rc)
            rc = -EIO;
        return rc;
    }
    char *tmp;
    if (asprintf(&tmp, "%s.tmp%ld", path, (long)getpid()) < 0)
        return -ENOMEM;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        int e = -errno;
        free(tmp);
        return e;
    }
    int rc = fn(ctx, f);
    if (fclose(f) != 0 && !rc)
        rc = -EIO;
    if (!rc && rename(tmp, path) != 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    free(tmp);
    return rc;
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

static char *read_text(const char *path)
{
    char *b;
    size_t n;
    if (evp_flame_slurp(path, &b, &n))
        return NULL;
    return b;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int is_python(const char *exe)
{
    const char *b = base_name(exe);
    if (strncmp(b, "python", 6) != 0)
        return 0;
    for (b += 6; *b; b++)
        if (!(*b == '.' || (*b >= '0' && *b <= '9')))
            return 0;
    return 1;
}

/* Record CMD with perf into DIR and leave `perf script` text in SCRIPT.
 * Returns the command's exit status, or -1 after printing an error. */
static int record(const char *perf, const char *dir, char **cmd, int ncmd,
                  const char *event, const char *callgraph, long freq,
                  unsigned repeat, const char *script, int want_xperf,
                  int *added_xperf)
{
    char data[4096], err[4096], tmp[4096];
    snprintf(err, sizeof err, "%s/perf.err", dir);
    /* Preflight: can perf record here at all? */
    snprintf(data, sizeof data, "%s/preflight.data", dir);
    char *pre[] = {(char *)perf, "record", "-q", "-e",   (char *)event,
                   "-o",         data,     "--", "true", NULL};
    int rc = evp_perf_spawn(pre, "/dev/null", err, NULL);
    unlink(data);
    if (rc != 0) {
        char *text = read_text(err);
        char msg[512];
        evp_perf_explain(rc < 0 ? strerror(-rc) : text, msg, sizeof msg);
        evp_cli_error("perf: %s", msg);
        free(text);
        return -1;
    }
    /* CPython 3.12+ shows Python frames to perf with -X perf. */
    char **argv = calloc((size_t)ncmd + 3, sizeof *argv);
    if (!argv)
        return -1;
    int k = 0, major, minor;
    argv[k++] = cmd[0];
    *added_xperf = 0;
    if (want_xperf && is_python(cmd[0]) &&
        evp_perf_python_version(cmd[0], &major, &minor) == 0 &&
        (major > 3 || (major == 3 && minor >= 12))) {
        argv[k++] = "-X";
        argv[k++] = "perf";
        *added_xperf = 1;
    }
    for (int i = 1; i < ncmd; i++)
        argv[k++] = cmd[i];
    argv[k] = NULL;

    char freqs[32];
    snprintf(freqs, sizeof freqs, "%ld", freq);
    FILE *all = fopen(script, "w");
    if (!all) {
        evp_cli_error("%s: %s", script, strerror(errno));
        free(argv);
        return -1;
    }
    int status = 0;
    for (unsigned r = 0; r < repeat; r++) {
        snprintf(data, sizeof data, "%s/perf.data", dir);
        char *rec[64];
        int n = 0;
        rec[n++] = (char *)perf;
        rec[n++] = "record";
        rec[n++] = "-q";
        rec[n++] = "-e";
        rec[n++] = (char *)event;
        rec[n++] = "-F";
        rec[n++] = freqs;
        rec[n++] = "--call-graph";
        rec[n++] = (char *)callgraph;
        rec[n++] = "-k";
        rec[n++] = "CLOCK_MONOTONIC";
        rec[n++] = "-o";
        rec[n++] = data;
        rec[n++] = "--";
        char **full = malloc(((size_t)n + (size_t)k + 1) * sizeof *full);
        if (!full) {
            fclose(all);
            free(argv);
            return -1;
        }
        memcpy(full, rec, (size_t)n * sizeof *full);
        memcpy(full + n, argv, ((size_t)k + 1) * sizeof *full);
        status = evp_perf_spawn(full, NULL, NULL, NULL);
        free(full);
        if (status < 0) {
            evp_cli_error("perf: %s", strerror(-status));
            fclose(all);
            free(argv);
            return -1;
        }
        struct stat sb;
        if (stat(data, &sb) != 0 || sb.st_size == 0) {
            evp_cli_error("perf record wrote no data (exit status %d)", status);
            fclose(all);
            free(argv);
            return -1;
        }
        snprintf(tmp, sizeof tmp, "%s/perf.script.part", dir);
        /* perf script cuts stacks at 127 frames unless told otherwise,
         * whatever the kernel recorded. */
        char maxs[32];
        long ms = evp_perf_max_stack();
        snprintf(maxs, sizeof maxs, "--max-stack=%ld", ms > 127 ? ms : 127);
        char *scr[] = {
            (char *)perf, "script", "-i",
            data,         "-F",     "comm,pid,tid,time,period,event,ip,sym,dso",
            "--ns",       maxs,     NULL};
        int s = evp_perf_spawn(scr, tmp, err, NULL);
        if (s != 0) {
            char *text = read_text(err);
            char msg[512];
            evp_perf_explain(s < 0 ? strerror(-s) : text, msg, sizeof msg);
            evp_cli_error("perf script: %s", msg);
            free(text);
            fclose(all);
            free(argv);
            return -1;
        }
        char *part;
        size_t plen;
        if (evp_flame_slurp(tmp, &part, &plen) == 0) {
            fwrite(part, 1, plen, all);
            if (plen && part[plen - 1] != '\n')
                fputc('\n', all);
            fputc('\n', all);
            free(part);
        }
        unlink(tmp);
    }
    free(argv);
    if (fclose(all) != 0) {
        evp_cli_error("%s: write error", script);
        return -1;
    }
    return status;
}

int cmd_perf(int argc, char **argv)
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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *dir = "evalprof-perf", *event = "cpu-clock", *cg = NULL;
    const char *trace = NULL, *script_in = NULL, *title = NULL;
    const char *perf_name = "perf", *python = NULL;
    long freq = -1, top = 20, v;
    unsigned repeat = 1;
    int startup = 0, with_pid = 0, c;
    double threshold = 5.0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:F:e:r:n:h", longopts, NULL)) !=
           -1) {
        switch (c) {
        case 'o':
            dir = optarg;
            break;
        case 'F':
            if ((freq = evp_cli_parse_long("-F", optarg)) <= 0) {
                if (freq == 0)
                    evp_cli_error("perf: -F must be above 0");
                return 2;
            }
            break;
        case 'e':
            event = optarg;
            break;
        case 'g':
            if (strcmp(optarg, "fp") && strcmp(optarg, "dwarf") &&
                strcmp(optarg, "lbr")) {
                evp_cli_error("perf: --call-graph is fp, dwarf or lbr");
                return 2;
            }
            cg = optarg;
            break;
        case 'S':
            startup = 1;
            break;
        case 'r':
            if ((v = evp_cli_parse_long("--repeat", optarg)) < 1 || v > 1000) {
                if (v >= 0)
                    evp_cli_error("perf: --repeat must be 1-1000");
                return 2;
            }
            repeat = (unsigned)v;
            break;
        case 'T':
            trace = optarg;
            break;
        case 's':
            script_in = optarg;
            break;
        case 'n':
            if ((top = evp_cli_parse_long("--top", optarg)) < 0)
                return 2;
            break;
        case 't':
            title = optarg;
            break;
        case 'P':
            perf_name = optarg;
            break;
        case 'x': {
            char *end;
            threshold = strtod(optarg, &end);
            if (*end || threshold < 0 || threshold > 100) {
                evp_cli_error("perf: --threshold is in points, 0-100");
                return 2;
            }
            break;
        }
        case 'p':
            with_pid = 1;
            break;
        case 'y':
            python = optarg;
            break;
        case 'h':
            evp_cli_usage(stdout, "perf");
            return evp_cli_finish(0);
        default:
            evp_cli_usage(stderr, "perf");
            return 2;
        }
    }
    char **cmd = argv + optind;
    int ncmd = argc - optind;
    if (ncmd > 0 && strcmp(cmd[0], "--") == 0) {
        cmd++;
        ncmd--;
    }
    if (!script_in && ncmd == 0) {
        evp_cli_error("perf: no command to profile (evalprof perf -- CMD ...)"
                      " and no --script");
        evp_cli_usage(stderr, "perf");
        return 2;
    }
    if (script_in && ncmd > 0) {
        evp_cli_error("perf: give a command or --script, not both");
        return 2;
    }
    if (!cg)
        cg = (startup || trace) ? "dwarf" : "fp";
    if (freq < 0)
        freq = startup ? 10000 : trace ? 4999 : 999;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        evp_cli_error("%s: %s", dir, strerror(errno));
        return 1;
    }
    char script[4096], folded[4096], svg[4096];
    snprintf(folded, sizeof folded, "%s/perf.folded", dir);
    snprintf(svg, sizeof svg, "%s/flamegraph.svg", dir);
    int status = 0, xperf = 0;
    time_t started = time(NULL);
    if (script_in) {
        snprintf(script, sizeof script, "%s", script_in);
    } else {
        char perf[4096];
        if (evp_perf_which(perf_name, perf, sizeof perf) != 0) {
            evp_cli_error("perf: '%s' not found: install Debian's linux-perf "
                          "package (apt-get install linux-perf)",
                          perf_name);
            return 1;
        }
        snprintf(script, sizeof script, "%s/perf.script", dir);
        /* -X perf stops unwinding at the first Python frame, and the
         * start-up breakdown needs whole C stacks down to main. */
        status = record(perf, dir, cmd, ncmd, event, cg, freq, repeat, script,
                        !startup, &xperf);
        if (status < 0)
            return 1;
    }

    const char *text;
    size_t len;
    int mapped;
    int rc = evp_flame_map(script, &text, &len, &mapped);
    if (rc) {
        evp_cli_error("%s: %s", script, strerror(-rc));
        return 1;
    }
    struct perf_ctx p;
    memset(&p, 0, sizeof p);
    p.stacks = evp_stacks_new();
    p.hot = evp_hot_new();
    p.startup = startup;
    p.max_stack = evp_perf_max_stack();
    /* Text made elsewhere may have been cut by perf script's own default
     * of 127 frames. */
    if (script_in && (p.max_stack < 0 || p.max_stack > 127))
        p.max_stack = 127;
    if (!script_in && is_python(cmd[0]))
        p.comm_prefix = "python";
    struct evp_xc_trace xt;
    struct evp_trace *t = NULL;
    if (trace) {
        t = evp_cli_open_trace(trace, python);
        if (!t) {
            evp_flame_unmap(text, len, mapped);
            evp_stacks_free(p.stacks);
            evp_hot_free(p.hot);
            return 1;
        }
        if (evp_xc_from_trace(t, &xt) < 0) {
            evp_cli_error("%s: the trace could not be replayed", trace);
            evp_trace_close(t);
            evp_flame_unmap(text, len, mapped);
            evp_stacks_free(p.stacks);
            evp_hot_free(p.hot);
            return 1;
        }
        p.xt = &xt;
    }
    struct evp_collapse_opts co = {.pid = with_pid};
    struct evp_collapse_stats cs;
    rc = (!p.stacks || !p.hot)
             ? -ENOMEM
             : evp_perf_parse(text, len, &co, on_sample, &p, &cs);
    evp_flame_unmap(text, len, mapped);
    int exit_rc = 0;
    if (rc) {
        evp_cli_error("perf: out of memory collapsing %s", script);
        exit_rc = 1;
        goto out;
    }
    if (!cs.samples) {
        if (cs.unrecognized && !cs.filtered)
            evp_cli_error("%s: not `perf script` output (line %llu is not "
                          "a sample header or a stack line)",
                          script, (unsigned long long)cs.first_unrecognized);
        else
            evp_cli_error("%s: no samples (the command ran too briefly for "
                          "-F %ld, or perf recorded nothing)",
                          script, freq);
        exit_rc = 1;
        goto out;
    }
    if (cs.unrecognized)
        evp_cli_warn("%s: %llu unrecognised line%s (first: line %llu)", script,
                     (unsigned long long)cs.unrecognized,
                     cs.unrecognized == 1 ? "" : "s",
                     (unsigned long long)cs.first_unrecognized);
    if (cs.other_event[0])
        evp_cli_warn("%s: kept the %s samples, left out %llu of other events "
                     "(first: %s)",
                     script, cs.event, (unsigned long long)cs.filtered,
                     cs.other_event);

    rc = write_file(folded, put_folded, p.stacks);
    if (!rc) {
        char sub[256];
        snprintf(sub, sizeof sub, "%llu samples of %s",
                 (unsigned long long)cs.samples,
                 cs.event[0] ? cs.event : "perf");
        int ns_units = strcmp(cs.event, "cpu-clock") == 0 ||
                       strcmp(cs.event, "task-clock") == 0;
        struct evp_flame_opts fo = {.title = title,
                                    .subtitle = sub,
                                    .countname = ns_units ? "ns" : "events",
                                    .min_width = -1};
        struct svg_job job = {p.stacks, &fo};
        rc = write_file(svg, put_svg, &job);
        if (rc)
            evp_cli_error("%s: %s", svg, strerror(-rc));
    } else {
        evp_cli_error("%s: %s", folded, strerror(-rc));
    }
    if (rc) {
        exit_rc = 1;
        goto out;
    }

    char n1[32];
    printf("evalprof perf: %s samples of %s",
           evp_perf_count(n1, sizeof n1, cs.samples),
           cs.event[0] ? cs.event : "perf");
    if (!script_in)
        printf(" (call graph %s, %ld Hz%s%s)", cg, freq,
               repeat > 1 ? ", repeated" : "", xperf ? ", -X perf" : "");
    printf("\n  folded stacks: %s\n  flame graph:   %s\n", folded, svg);
    if (!script_in)
        printf("  perf script:   %s\n", script);
    if (p.cut) {
        printf("\nwarning: %llu samples (%.1f%%) hit kernel.perf_event_max_"
               "stack=%ld: their stacks are cut and their roots are wrong.\n"
               "  fix: sysctl -w kernel.perf_event_max_stack=1024 (as root),"
               " then run again%s\n",
               (unsigned long long)p.cut,
               100.0 * (double)p.cut / (double)cs.samples, p.max_stack,
               script_in ? " (and give perf script --max-stack=1024)" : "");
    }
    if (p.user && p.unrooted * 5 > p.user && strcmp(cg, "dwarf") != 0) {
        printf("\nnote: %.0f%% of user stacks stop before main or a thread "
               "start: the binaries lack frame pointers; --call-graph dwarf "
               "unwinds them\n",
               100.0 * (double)p.unrooted / (double)p.user);
    }
    printf("\nhot functions (top %ld by self share):\n", top);
    evp_hot_print(p.hot, stdout, (size_t)top);
    if (startup) {
        putchar('\n');
        char what[1024] = "";
        size_t w = 0;
        for (int i = 0; i < ncmd && w + 2 < sizeof what; i++)
            w += (size_t)snprintf(what + w, sizeof what - w, "%s%s",
                                  i ? " " : "", cmd[i]);
        evp_startup_print(&p.su, stdout, script_in ? script_in : what, repeat,
                          script_in ? NULL : cg);
    }
    if (trace) {
        putchar('\n');
        evp_xc_print(stdout, &xt, &p.xp, threshold, trace);
    }
    if (xperf)
        remove_perf_maps(&p, started);
    if (!script_in && status)
        evp_cli_warn("perf: the command exited with status %d", status);
out:
    if (t) {
        evp_xc_trace_free(&xt);
        evp_trace_close(t);
    }
    free(p.key);
    evp_stacks_free(p.stacks);
    evp_hot_free(p.hot);
    if (exit_rc)
        return exit_rc;
    return evp_cli_finish(0);
}
