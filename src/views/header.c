/*
 * The header block shared by the tree and summary reports: the
 * discussion's python/argv/start/end/elapsed lines, then evalprof's own
 * notes (producer, compensation, dropped events) for traces that carry
 * them.  Text traces of the discussion's format get exactly its header.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "views.h"

/* VALUE may come from the trace (executable, argv): escaped as names are
 * (src/util/esc.c), so that it stays on its line and out of the terminal's
 * control. */
static void line(FILE *out, const char *prefix, int width, const char *key,
                 const char *value)
{
    char k[64];
    snprintf(k, sizeof k, "%s%s:", prefix, key);
    fprintf(out, "%-*s", width, k);
    evp_esc_term(out, value, strlen(value), 0);
    putc('\n', out);
}

void evp_view_python(FILE *out, const struct evp_trace_info *in)
{
    evp_esc_term(out, in->executable, strlen(in->executable), 0);
    if (*in->python_version) {
        putc(' ', out);
        evp_esc_term(out, in->python_version, strlen(in->python_version), 0);
    }
}

const char *evp_view_producer_note(const struct evp_trace *t, char *buf,
                                   size_t len)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    const char *p = in->producer;
    buf[0] = '\0';
    if (strcmp(p, EVP_PRODUCER_INSTRUMENTED) == 0)
        snprintf(buf, len, "instrumented interpreter (mode A)%s%s",
                 *in->python_version ? ", CPython " : "", in->python_version);
    else if (strcmp(p, EVP_PRODUCER_EXTENSION) == 0)
        snprintf(buf, len,
                 "stock interpreter through the evalprof extension (mode "
                 "B)%s%s; loop phases are not visible",
                 *in->python_version ? ", CPython " : "", in->python_version);
    else if (strcmp(p, EVP_PRODUCER_SYNTHETIC) == 0)
        snprintf(buf, len, "synthetic workload (no interpreter)");
    else if (*p && strcmp(p, EVP_PRODUCER_TEXT) != 0)
        snprintf(buf, len, "%s", p);
    return buf;
}

/* Metadata KEY as a count in *V: 1, or 0 when absent or not a count. */
static int meta_count(const struct evp_trace *t, const char *key, uint64_t *v)
{
    const char *s = evp_trace_meta(t, key);
    char *end;
    if (!s || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (*end != '\0' || errno != 0)
        return 0;
    *v = n;
    return 1;
}

const char *evp_view_untraced_note(const struct evp_trace *t, char *buf,
                                   size_t len)
{
    uint64_t n;
    buf[0] = '\0';
    /* absent, or not a count: nothing to say */
    if (meta_count(t, "threads.untraced", &n) && n > 0)
        snprintf(buf, len, "%llu thread%s ran untraced (main thread only)",
                 (unsigned long long)n, n == 1 ? "" : "s");
    return buf;
}

/* "; evalprof's writer thread, beside the program: N ms of CPU (not
 * subtracted)" at BUF's end, where the recorder measured it
 * (recorder.writer_cpu_ns). */
static void writer_note(const struct evp_trace *t, char *buf, size_t len)
{
    uint64_t ns;
    size_t n = strlen(buf);
    if (meta_count(t, "recorder.writer_cpu_ns", &ns) && n < len)
        snprintf(buf + n, len - n,
                 "; evalprof's writer thread, beside the program: %.1f ms of "
                 "CPU (not subtracted)",
                 (double)ns / 1e6);
}

/* What sampling cost evalprof, summed over one run or several (RUNS):
 * the recorder's sample.signals, sample.handler_ns, sample.handler_long
 * and recorder.writer_cpu_ns, beside STOOD, the ns the samples stand for.
 * 0 when a run lacks them (a trace of an earlier recorder). */
struct sampling_cost {
    uint64_t signals, ns, slow, writer;
    uint64_t nop; /* sample.nop_signals: EVALPROF_TEST_SAMPLE_NOP's */
    int has_writer, has_nop;
    int nop_how; /* 2: NOP=2, no signal; 3: NOP=3, a sampler thread's reads */
    /* the CPU clock's sampler thread (sample.peeks, sample.sampler_cpu_ns):
     * its walks, and its CPU time */
    uint64_t peeks, sampler_ns, peek_signals;
    int has_peek;
    double stood;
};

static int sampling_cost(struct evp_trace *const *t, size_t runs,
                         struct sampling_cost *c)
{
    memset(c, 0, sizeof *c);
    c->has_writer = 1;
    for (size_t i = 0; i < runs; i++) {
        const struct evp_trace_info *in = evp_trace_info(t[i]);
        uint64_t signals, ns, slow = 0, writer = 0, nop = 0, peeks, cpu;
        if (meta_count(t[i], "sample.peeks", &peeks) &&
            meta_count(t[i], "sample.sampler_cpu_ns", &cpu)) {
            uint64_t sig = 0;
            meta_count(t[i], "sample.peek_signals", &sig);
            c->has_peek = 1;
            c->peeks += peeks;
            c->sampler_ns += cpu;
            c->peek_signals += sig;
        }
        if (!meta_count(t[i], "sample.signals", &signals) ||
            !meta_count(t[i], "sample.handler_ns", &ns))
            return 0;
        meta_count(t[i], "sample.handler_long", &slow);
        c->has_nop |= meta_count(t[i], "sample.nop_signals", &nop);
        const char *how = evp_trace_meta(t[i], "sample.nop");
        if (how && strcmp(how, "interrupts") == 0)
            c->nop_how = 2;
        else if (how && strcmp(how, "sampler thread") == 0)
            c->nop_how = 3;
        c->nop += nop;
        c->has_writer &= meta_count(t[i], "recorder.writer_cpu_ns", &writer);
        c->signals += signals;
        c->ns += ns;
        c->slow += slow;
        c->writer += writer;
        c->stood += (double)in->sample_weight * in->sample_period_ns;
    }
    return 1;
}

/* The overhead line's text for C (summed over RUNS runs). */
static void sampling_cost_text(const struct sampling_cost *c, size_t runs,
                               char *buf, size_t len)
{
    char a[32], b[32];
    size_t n;
    if (c->has_peek) {
        /* the sampler thread: its CPU, beside the program's threads */
        n = (size_t)snprintf(
            buf, len,
            "none in the figures; measured: evalprof's sampler thread, "
            "beside the program, %.1f ms of CPU over its ticks (its "
            "wake-ups, each thread's clock and state read, and %s walks)",
            (double)c->sampler_ns / 1e6,
            evp_num_group(a, sizeof a, c->peeks - c->peek_signals));
        if (c->peek_signals && n < len)
            n += (size_t)snprintf(
                buf + n, len - n,
                ", and %s signals it sent instead (a handler of the "
                "program's had replaced the walk's fault guard): "
                "evalprof's signal handlers %.1f ms in %s signals",
                evp_num_group(a, sizeof a, c->peek_signals),
                (double)c->ns / 1e6, evp_num_group(b, sizeof b, c->signals));
        else if (n < len)
            n += (size_t)snprintf(buf + n, len - n, ", interrupting no thread");
    } else {
        n = (size_t)snprintf(
            buf, len,
            "none in the figures; measured: evalprof's signal handlers %.1f "
            "ms in %s signals (%.1f µs each",
            (double)c->ns / 1e6, evp_num_group(a, sizeof a, c->signals),
            c->signals ? (double)c->ns / 1e3 / (double)c->signals : 0.0);
        if (c->stood > 0 && n < len)
            n += (size_t)snprintf(
                buf + n, len - n,
                ", %.2f%% of the %.1f ms the samples stand for",
                100.0 * (double)c->ns / c->stood, c->stood / 1e6);
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, ")");
        if (c->slow && n < len)
            n += (size_t)snprintf(
                buf + n, len - n,
                ", and %s signal%s that took over 100 µs of real time, left "
                "out (the thread was descheduled in the handler, most "
                "likely)",
                evp_num_group(a, sizeof a, c->slow), c->slow == 1 ? "" : "s");
    }
    if (c->has_writer && n < len)
        n += (size_t)snprintf(buf + n, len - n,
                              "; evalprof's writer thread %.1f ms of CPU",
                              (double)c->writer / 1e6);
    if (c->nop_how == 3 && n < len)
        n += (size_t)snprintf(
            buf + n, len - n,
            "; a benchmark's run (EVALPROF_TEST_SAMPLE_NOP=3): a sampler "
            "thread read each thread's CPU clock %s times, no signal sent, "
            "no sample taken",
            evp_num_group(a, sizeof a, c->nop));
    else if (c->nop_how == 2 && n < len)
        n += (size_t)snprintf(
            buf + n, len - n,
            "; a benchmark's run (EVALPROF_TEST_SAMPLE_NOP=2): the perf "
            "event's overflows interrupted the thread, no signal sent, no "
            "sample taken");
    else if (c->has_nop && n < len)
        n += (size_t)snprintf(
            buf + n, len - n,
            "; a benchmark's run (EVALPROF_TEST_SAMPLE_NOP): %s signals "
            "handled by returning at once, no sample taken",
            evp_num_group(a, sizeof a, c->nop));
    if (n < len)
        snprintf(buf + n, len - n,
                 "; not measured: %s (README, Sampled mode)%s",
                 c->has_peek ? "what its reads of a thread's frames cost that "
                               "thread"
                             : "the kernel's delivery of each signal",
                 runs > 1 ? " (summed over the runs)" : "");
}

/* A sampled trace's overhead line: what its samples cost evalprof's own
 * handlers and writer, as the recorder measured them, beside what no
 * sample sees. */
static void sampled_overhead(const struct evp_trace *t, char *buf, size_t len)
{
    struct sampling_cost c;
    struct evp_trace *one = (struct evp_trace *)t;
    if (!sampling_cost(&one, 1, &c)) {
        snprintf(buf, len,
                 "none in the figures: a sample is taken in a signal "
                 "handler, which no sample sees; what sampling costs the "
                 "run is in the README (Sampled mode)");
        return;
    }
    sampling_cost_text(&c, 1, buf, len);
}

void evp_view_overhead_runs(FILE *out, struct evp_trace *const *t, size_t runs)
{
    struct sampling_cost c;
    char buf[768];
    if (runs == 0 || !sampling_cost(t, runs, &c))
        return;
    sampling_cost_text(&c, runs, buf, sizeof buf);
    line(out, "", 11, "overhead", buf);
}

void evp_view_header(FILE *out, const struct evp_trace *t, const char *prefix,
                     int width, int compensate, int in_ns)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    char a[64], b[64];
    uint64_t end = evp_trace_end_ns(t);
    line(out, prefix, width, "python", in->executable);
    line(out, prefix, width, "argv", in->argv);
    line(out, prefix, width, "start",
         evp_fmt_wall(a, sizeof a, in->start_wall_ns));
    /* In unsigned arithmetic: a damaged start time near the end of
     * int64 must not overflow (it shows as unknown instead). */
    line(out, prefix, width, "end",
         evp_fmt_wall(b, sizeof b,
                      in->start_wall_ns < 0
                          ? -1
                          : (int64_t)((uint64_t)in->start_wall_ns +
                                      (end - in->start_ns))));
    snprintf(a, sizeof a, "%s %s",
             evp_fmt_us(b, sizeof b,
                        end > in->start_ns ? end - in->start_ns : 0, in_ns),
             evp_fmt_unit(in_ns));
    line(out, prefix, width, "elapsed", a);

    char note[256];
    if (*evp_view_producer_note(t, note, sizeof note))
        line(out, prefix, width, "producer", note);
    if (*evp_view_untraced_note(t, note, sizeof note))
        line(out, prefix, width, "threads", note);
    if (in->sampled && !in->events) {
        /* no event was timed: the recorder's per-event cost means nothing
         * here */
        char c[768];
        sampled_overhead(t, c, sizeof c);
        line(out, prefix, width, "overhead", c);
    } else if (in->has_kind_cost) {
        char c[768];
        evp_view_kind_costs(t, c, sizeof c);
        size_t n = strlen(c);
        snprintf(c + n, sizeof c - n, "; %s",
                 compensate ? "subtracted from elapsed times"
                            : "not subtracted (--no-compensate)");
        writer_note(t, c, sizeof c);
        line(out, prefix, width, "overhead", c);
    } else if (in->event_cost_ns > 0) {
        char c[256];
        snprintf(c, sizeof c, "%.1f ns per event measured; %s",
                 in->event_cost_ns,
                 compensate ? "subtracted from elapsed times"
                            : "not subtracted (--no-compensate)");
        writer_note(t, c, sizeof c);
        line(out, prefix, width, "overhead", c);
    }
    if (in->dropped) {
        snprintf(a, sizeof a, "%s events lost by the recorder",
                 evp_num_group(b, sizeof b, in->dropped));
        line(out, prefix, width, "dropped", a);
    }
    const char *stop = evp_trace_meta(t, "recorder.stopped");
    if (stop) {
        char c[160];
        snprintf(c, sizeof c,
                 "%s (recording stopped at --%s; the program "
                 "ran on)",
                 stop, stop);
        line(out, prefix, width, "stopped", c);
    }
}

size_t evp_view_kind_costs(const struct evp_trace *t, char *buf, size_t len)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    size_t n = 0;
    unsigned done = 0; /* bits of kinds written */
    buf[0] = 0;
    /* kinds of equal cost together, in kind order of their first */
    for (unsigned k = 0; k < EVP_EV__COUNT && n < len; k++) {
        double c = in->kind_cost_ns[k];
        if (c <= 0 || done & (1u << k))
            continue;
        const char *sep = n ? "; " : "";
        for (unsigned j = k; j < EVP_EV__COUNT && n < len; j++) {
            if (in->kind_cost_ns[j] != c)
                continue;
            n += (size_t)snprintf(buf + n, len - n, "%s%s", sep,
                                  evp_kind_name(j));
            sep = ", ";
            done |= 1u << j;
        }
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, " %.1f ns", c);
    }
    if (n < len && in->event_cost_ns > 0)
        n += (size_t)snprintf(buf + n, len - n,
                              "%sother kinds %.1f ns (the recorder alone)",
                              n ? "; " : "", in->event_cost_ns);
    if (n > 0 && n < len)
        n += (size_t)snprintf(buf + n, len - n, ", measured per event");
    return n < len ? n : len - 1;
}

void evp_view_runs_header(FILE *out, struct evp_trace *const *t, size_t n,
                          const char *what, int unit)
{
    char a[48], b[48], c[48];
    for (size_t i = 0; i < n; i++)
        fprintf(out, "reading from %s\n", evp_trace_info(t[i])->path);
    const struct evp_trace_info *in = evp_trace_info(t[0]);
    fprintf(out, "(showing results in 'summary' format, %zu %s)\n\n", n, what);
    fputs("python:    ", out);
    evp_view_python(out, in);
    putc('\n', out);
    uint64_t *el = calloc(2 * n, sizeof *el), med, min, max;
    if (!el)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct evp_trace_info *ti = evp_trace_info(t[i]);
        uint64_t end = evp_trace_end_ns(t[i]);
        el[i] = end > ti->start_ns ? end - ti->start_ns : 0;
    }
    evp_runs_reduce(el, n, el + n, &med, &min, &max);
    free(el);
    fprintf(out, "elapsed:   %s %s [%s - %s]\n",
            evp_fmt_us(a, sizeof a, med, unit), evp_fmt_unit(unit),
            evp_fmt_us(b, sizeof b, min, unit),
            evp_fmt_us(c, sizeof c, max, unit));
    evp_view_overhead_runs(out, t, n);
}
