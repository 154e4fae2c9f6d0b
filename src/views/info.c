/*
 * The info view (`evalprof info`): what a trace is and how healthy it is.
 * Metadata, the clock and its calibration, the measured per-event cost,
 * which kinds the producer can emit, per-thread event counts (by kind),
 * dropped events and every warning met while reading.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

struct info_acc {
    FILE *out;
    uint64_t *count; /* per kind, current stream */
    uint16_t *seen;  /* kinds counted in the current stream, so that a
                        stream costs its kinds, not all 65536 (a trace
                        may have tens of thousands of threads) */
    size_t nseen;
    uint64_t unmatched;
};

static int info_begin(void *ctx, const struct evp_stream *s)
{
    struct info_acc *a = ctx;
    (void)s;
    for (size_t i = 0; i < a->nseen; i++) /* a stream left unfinished */
        a->count[a->seen[i]] = 0;
    a->nseen = 0;
    return 0;
}

static int info_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct info_acc *a = ctx;
    for (size_t i = 0; i < n; i++) {
        uint16_t k = (uint16_t)ev[i].kind;
        if (!a->count[k]++)
            a->seen[a->nseen++] = k;
    }
    return 0;
}

static int cmp_kind(const void *x, const void *y)
{
    uint16_t a = *(const uint16_t *)x, b = *(const uint16_t *)y;
    return (a > b) - (a < b);
}

static int info_end(void *ctx, const struct evp_stream *s)
{
    struct info_acc *a = ctx;
    char c[32], d[32];
    /* The name comes from the trace: escaped as every view writes names
     * (src/util/esc.c), padded by its display width. */
    fprintf(a->out, "  %-4u %-10" PRIu64 " ", s->id, s->tid);
    size_t w = evp_esc_term(a->out, s->name, strlen(s->name), 0);
    fprintf(a->out, "%*s %14s %8u %10s\n", w < 24 ? (int)(24 - w) : 0, "",
            evp_num_group(c, sizeof c, s->events), s->chunks,
            evp_num_group(d, sizeof d, s->dropped));
    fputs("       by kind:", a->out);
    qsort(a->seen, a->nseen, sizeof *a->seen, cmp_kind);
    for (size_t i = 0; i < a->nseen; i++) {
        unsigned k = a->seen[i];
        fprintf(a->out, "%s %s %s", i ? ";" : "", evp_kind_name(k),
                evp_num_group(c, sizeof c, a->count[k]));
        a->count[k] = 0;
    }
    fputs(a->nseen ? "\n" : " (none)\n", a->out);
    a->nseen = 0;
    return 0;
}

int evp_view_info(struct evp_trace *t, FILE *out)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    char a[128], note[256];
    const char *v;

    fprintf(out, "trace:       %s (%s)\n", in->path,
            in->text ? "text trace" : "binary .evp trace");
    if (!*evp_view_producer_note(t, note, sizeof note))
        fprintf(out, "producer:    %s\n",
                in->text ? "text trace (the discussion's format)"
                         : in->producer);
    evp_view_header(out, t, "", 13, 1, 0);
    if (in->pid >= 0) {
        fprintf(out, "pid:         %ld", in->pid);
        if (in->parent_pid > 0)
            fprintf(out, ", forked by %ld (the trace starts at the fork)",
                    in->parent_pid);
        fputc('\n', out);
    }
    fprintf(out, "clock:       %s", *in->clock ? in->clock : "unknown");
    if (strcmp(in->clock, "tsc") == 0)
        fprintf(out, ", %.6f GHz", in->clock_hz / 1e9);
    fputc('\n', out);
    if (in->event_cost_ns > 0)
        fprintf(out,
                "event cost:  %.1f ns (measured by the recorder at start)\n",
                in->event_cost_ns);
    if (in->has_kind_cost) {
        char c[768];
        evp_view_kind_costs(t, c, sizeof c);
        fprintf(out,
                "traced cost: %s at start (the producer's work and the "
                "recorder's)\n",
                c);
    }
    fputs("can emit:   ", out);
    const char *sep = " ";
    for (unsigned k = 0; k < EVP_EV__COUNT; k++)
        if (in->can_emit & EVP_KIND_BIT(k) && k != EVP_EV_LOG_WRITTEN) {
            fprintf(out, "%s%s", sep, evp_kind_name(k));
            sep = ", ";
        }
    fputc('\n', out);
    fprintf(out, "opcodes:     %u base instructions named (%s)\n",
            evp_trace_nopcodes(t), in->opcode_source);
    fprintf(out, "functions:   %s\n",
            evp_num_group(a, sizeof a, evp_trace_nfuncs(t)));
    fprintf(out, "events:      %s in %zu stream%s\n",
            evp_num_group(a, sizeof a, in->events), evp_trace_nstreams(t),
            evp_trace_nstreams(t) == 1 ? "" : "s");
    if (in->sampled) {
        char b[32], c[32], d[32];
        fprintf(
            out,
            "sampled:     %s samples (%s timer periods) in %s stack "
            "nodes; %s clock, %.0f Hz, %s ns a period\n",
            evp_num_group(a, sizeof a, in->samples),
            evp_num_group(b, sizeof b, in->sample_weight),
            evp_num_group(c, sizeof c, in->stack_nodes),
            *in->sample_clock ? in->sample_clock : "unknown",
            in->sample_rate_hz,
            evp_num_group(d, sizeof d, (uint64_t)(in->sample_period_ns + 0.5)));
        fprintf(out, "             %s samples lost, %s periods missed\n",
                evp_num_group(a, sizeof a, in->samples_lost),
                evp_num_group(b, sizeof b, in->sample_missed));
        const char *un = evp_trace_meta(t, "sample.unsampled");
        if (un)
            fprintf(out,
                    "             %s periods unsampled (a signal that took "
                    "no sample: evalprof's own code running, or a frame walk "
                    "that faulted)\n",
                    evp_num_group(a, sizeof a, strtoull(un, NULL, 10)));
        const char *n = evp_trace_meta(t, "sample.throttled");
        const char *ns = evp_trace_meta(t, "sample.throttled_max_ns");
        if (n)
            fprintf(out,
                    "             throttled: the period raised %s time%s, "
                    "to %s ns at most (a signal cost more than the period)\n",
                    n, strcmp(n, "1") ? "s" : "", ns ? ns : "?");
    }
    if (!in->dropped)
        fputs("dropped:     none\n", out);
    if ((v = evp_trace_meta(t, "kinds.enabled")))
        fprintf(out, "recorded:    kinds mask %s\n", v);

    fputs("\nstreams:\n  id   tid        name                             "
          "events   chunks    dropped\n",
          out);
    struct info_acc acc = {.out = out,
                           .count = calloc(65536, sizeof(uint64_t)),
                           .seen = malloc(65536 * sizeof(uint16_t))};
    if (!acc.count || !acc.seen) {
        free(acc.count);
        free(acc.seen);
        return -ENOMEM;
    }
    static const struct evp_replay_ops ops = {info_begin, info_events, info_end,
                                              NULL};
    struct evp_replay_stats st;
    struct evp_replay_opts ro = {.stream = -1, .stats = &st};
    int rc = evp_replay(t, &ro, &ops, &acc);
    free(acc.count);
    free(acc.seen);
    if (in->sampled) {
        fputs("\nsampled streams:\n  id   name"
              "                            "
              "samples    periods   chunks       lost\n",
              out);
        for (size_t i = 0; i < evp_trace_nstreams(t); i++) {
            const struct evp_stream *s = evp_trace_stream(t, i);
            char b[32], c[32], d[32];
            fprintf(out, "  %-4u ", s->id);
            size_t w = evp_esc_term(out, s->name, strlen(s->name), 24);
            fprintf(out, "%*s %14s %10s %8u %10s\n", w < 24 ? (int)(24 - w) : 0,
                    "", evp_num_group(b, sizeof b, s->samples),
                    evp_num_group(c, sizeof c, s->sample_weight),
                    s->sample_chunks,
                    evp_num_group(d, sizeof d, s->samples_lost));
        }
    }
    if (st.unmatched || st.unclosed)
        fprintf(out,
                "  (%" PRIu64 " unmatched exits, %" PRIu64
                " frames open at the end)\n",
                st.unmatched, st.unclosed);

    fputs("\nmetadata:\n", out);
    size_t n = evp_trace_meta_count(t);
    for (size_t i = 0; i < n; i++) {
        const char *k, *val;
        evp_trace_meta_at(t, i, &k, &val);
        fputs("  ", out);
        size_t w = evp_esc_term(out, k, strlen(k), 0);
        fprintf(out, "%*s ", w < 24 ? (int)(24 - w) : 0, "");
        evp_esc_term(out, val, strlen(val), 0);
        fputc('\n', out);
    }
    size_t nw = evp_trace_nwarnings(t);
    char untraced[96];
    int nu = *evp_view_untraced_note(t, untraced, sizeof untraced) != 0;
    if (!nw && !nu) {
        fputs("\nwarnings:    none\n", out);
    } else {
        fprintf(out, "\nwarnings:    %zu\n", nw + (size_t)nu);
        for (size_t i = 0; i < nw; i++)
            fprintf(out, "  %s\n", evp_trace_warning(t, i));
        if (nu)
            fprintf(out, "  %s\n", untraced);
    }
    return rc < 0 ? rc : 0;
}
