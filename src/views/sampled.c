/*
 * Views of a sampled trace (docs/FORMAT.md "Samples"): one pass over the
 * samples (evp_trace_samples) into per-function, per-opcode and per-state
 * weights, and `summary` of them: shares of the timer periods with their
 * 95% confidence intervals, and estimated times (weight x period).
 *
 * A sample's weight is the number of timer periods it stands for; a
 * row's share is its weight over the total, and its interval is the
 * Wilson score interval of a binomial proportion with the periods as
 * trials.  That covers the sampling error only: where a sampler's
 * signals land (safe points, the clock's granularity) biases shares in
 * ways no interval shows, and the summary says so.
 *
 * The stack of a sample is its leaf node's chain in the trace's stack
 * table (evp_trace_stack); a chain cut by damage starts with the
 * "<unknown stack>" pseudo frame, and a sample naming no known node is
 * that frame alone.  The folded stacks, speedscope and diff views read
 * stacks through the same helpers (views.h "sampled traces").
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "stats.h"
#include "views.h"

/* ---- shared helpers ----------------------------------------------------- */

int evp_sampled_only(const struct evp_trace *t)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    return in->sampled && !in->events;
}

int evp_sample_cat(uint32_t state, uint32_t stack)
{
    if (state & EVP_SAMPLE_NO_GIL)
        return state & EVP_SAMPLE_GIL_WAIT  ? EVP_SCAT_GIL_WAIT
               : state & EVP_SAMPLE_SYSCALL ? EVP_SCAT_SYSCALL
                                            : EVP_SCAT_NO_GIL;
    if (state & EVP_SAMPLE_C_CALL)
        return EVP_SCAT_C_CALL;
    if (state & EVP_SAMPLE_IN_EVAL)
        return EVP_SCAT_EVAL;
    if ((state & EVP_SAMPLE_NO_FRAME) || !stack)
        return EVP_SCAT_NO_FRAME;
    return EVP_SCAT_OTHER;
}

const char *evp_sample_cat_name(int cat)
{
    static const char *const names[EVP_SCAT__COUNT] = {
        "in the eval loop",    "C call (GIL held)",
        "waiting for the GIL", "no GIL, in a system call",
        "no GIL, not blocked", "runtime other (frame)",
        "no Python frame"};
    return cat >= 0 && cat < EVP_SCAT__COUNT ? names[cat] : "?";
}

const char *evp_sample_cat_leaf(int cat)
{
    static const char *const leaves[EVP_SCAT__COUNT] = {
        "[eval loop]", "[C call]",        "[GIL wait]",     "[syscall]",
        "[no GIL]",    "[runtime other]", "[runtime other]"};
    return cat >= 0 && cat < EVP_SCAT__COUNT ? leaves[cat] : "[?]";
}

size_t evp_sample_frames(const struct evp_trace *t, uint32_t leaf,
                         uint32_t **buf, size_t *cap, int *unknown)
{
    *unknown = 0;
    if (!leaf)
        return 0;
    const struct evp_stack_node *nd = evp_trace_stack(t, leaf);
    if (!nd) {
        *unknown = 1;
        return 0;
    }
    size_t depth = nd->depth;
    if (evp_grow((void **)buf, cap, depth ? depth : 1, sizeof **buf, 64)) {
        *unknown = 1;
        return 0;
    }
    size_t i = depth;
    uint32_t id = leaf;
    while (i && nd) {
        (*buf)[--i] = nd->func;
        if (nd->parent == EVP_STACK_UNKNOWN) {
            *unknown = 1;
            break;
        }
        id = nd->parent;
        nd = id ? evp_trace_stack(t, id) : NULL;
    }
    /* a chain resolved by the reader always has DEPTH nodes; anything
     * else is cut at what was walked */
    if (i) {
        memmove(*buf, *buf + i, (depth - i) * sizeof **buf);
        *unknown = 1;
    }
    return depth - i;
}

void evp_wilson(uint64_t k, uint64_t n, double *lo, double *hi)
{
    if (!n) {
        *lo = *hi = 0;
        return;
    }
    const double z = 1.959963984540054;
    double nn = (double)n, p = (double)k / nn, z2 = z * z;
    double den = 1 + z2 / nn;
    double mid = (p + z2 / (2 * nn)) / den;
    double half = z * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / den;
    *lo = mid - half < 0 ? 0 : mid - half;
    *hi = mid + half > 1 ? 1 : mid + half;
}

int evp_two_prop_z(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2,
                   double *z)
{
    *z = 0;
    if (!n1 || !n2)
        return 0;
    double p1 = (double)k1 / (double)n1, p2 = (double)k2 / (double)n2;
    double p = (double)(k1 + k2) / (double)(n1 + n2);
    double se = sqrt(p * (1 - p) * (1 / (double)n1 + 1 / (double)n2));
    if (!(se > 0))
        return 0;
    *z = (p2 - p1) / se;
    return fabs(*z) > 1.959963984540054;
}

int evp_sample_stream_kept(const struct evp_trace *t, long index,
                           uint32_t stream)
{
    if (index < 0)
        return 1;
    const struct evp_stream *s = evp_trace_stream(t, (size_t)index);
    return s && s->id == stream;
}

uint64_t evp_sample_ns(const struct evp_trace *t, uint64_t weight)
{
    double ns = (double)weight * evp_trace_info(t)->sample_period_ns;
    return ns > 0 && ns < 1.8e19 ? (uint64_t)(ns + 0.5) : 0;
}

/* ---- the aggregate ----------------------------------------------------- */

struct agg {
    struct evp_trace *t;
    long stream;
    int group;                /* specialized opcodes folded into their base */
    uint32_t nfuncs, unknown; /* UNKNOWN: the "<unknown stack>" row */
    uint64_t *self, *incl;    /* by function id, UNKNOWN last */
    uint32_t *seen;           /* by function id: the last sample counted */
    uint32_t stamp;
    uint64_t op[EVP_SAMPLE_OP_MASK + 1]; /* by opcode; [MASK]: none */
    uint64_t cat[EVP_SCAT__COUNT];
    uint64_t phase[33]; /* by kind + 1; [0]: none */
    uint64_t total, samples;
    uint32_t *frames;
    size_t fcap;
};

static int agg_sample(void *ctx, uint32_t stream,
                      const struct evp_sample_rec *s, uint64_t ns)
{
    struct agg *a = ctx;
    (void)ns;
    if (!evp_sample_stream_kept(a->t, a->stream, stream))
        return 0;
    uint64_t w = s->weight;
    a->total += w;
    a->samples++;
    a->cat[evp_sample_cat(s->state, s->stack)] += w;
    int ph = evp_sample_phase(s->state);
    a->phase[ph >= 0 && ph < 32 ? ph + 1 : 0] += w;
    int op = evp_sample_opcode(s->state);
    if (op >= 0 && a->group)
        op =
            (int)evp_trace_opbase(a->t, (unsigned)op) & (int)EVP_SAMPLE_OP_MASK;
    a->op[op >= 0 ? (unsigned)op : EVP_SAMPLE_OP_MASK] += w;
    int unknown;
    size_t n =
        evp_sample_frames(a->t, s->stack, &a->frames, &a->fcap, &unknown);
    if (++a->stamp == 0) {
        memset(a->seen, 0, ((size_t)a->unknown + 1) * sizeof *a->seen);
        a->stamp = 1;
    }
    if (unknown && !n)
        a->self[a->unknown] += w;
    else if (n)
        a->self[a->frames[n - 1] <= a->nfuncs ? a->frames[n - 1]
                                              : a->unknown] += w;
    if (unknown) {
        a->incl[a->unknown] += w;
        a->seen[a->unknown] = a->stamp;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t f = a->frames[i] <= a->nfuncs ? a->frames[i] : a->unknown;
        if (a->seen[f] != a->stamp) {
            a->seen[f] = a->stamp;
            a->incl[f] += w;
        }
    }
    return 0;
}

static void agg_free(struct agg *a)
{
    free(a->self);
    free(a->incl);
    free(a->seen);
    free(a->frames);
}

static int agg_compute(struct evp_trace *t, struct agg *a, long stream,
                       int group)
{
    memset(a, 0, sizeof *a);
    a->t = t;
    a->stream = stream;
    a->group = group;
    a->nfuncs = evp_trace_nfuncs(t);
    a->unknown = a->nfuncs + 1;
    size_t n = (size_t)a->unknown + 1;
    a->self = calloc(n, sizeof *a->self);
    a->incl = calloc(n, sizeof *a->incl);
    a->seen = calloc(n, sizeof *a->seen);
    if (!a->self || !a->incl || !a->seen) {
        agg_free(a);
        return -ENOMEM;
    }
    int rc = evp_trace_samples(t, agg_sample, a);
    if (rc < 0)
        agg_free(a);
    return rc;
}

/* ---- tables ------------------------------------------------------------ */

/* One row: a name, its weight (and a second one: inclusive). */
struct srow {
    char name[288];
    int cols;
    uint64_t w, w2;
    uint32_t order;
};

static int cmp_srow(const void *x, const void *y, void *arg)
{
    const struct srow *a = x, *b = y;
    enum evp_sort s = *(const enum evp_sort *)arg;
    if (s == EVP_SORT_NAME) {
        int c = strcmp(a->name, b->name);
        if (c)
            return c;
    } else if (s == EVP_SORT_TOTAL && a->w2 != b->w2) {
        return a->w2 < b->w2 ? 1 : -1;
    } else if (a->w != b->w) {
        return a->w < b->w ? 1 : -1;
    }
    if (a->w != b->w)
        return a->w < b->w ? 1 : -1;
    return (a->order > b->order) - (a->order < b->order);
}

/* "12.3%" and "[11.1, 13.6]" for K of N. */
static void share_cells(uint64_t k, uint64_t n, char *sh, size_t shl, char *ci,
                        size_t cil)
{
    double lo, hi;
    evp_wilson(k, n, &lo, &hi);
    snprintf(sh, shl, "%.1f%%", n ? 100.0 * (double)k / (double)n : 0.0);
    snprintf(ci, cil, "%.1f-%.1f%%", 100 * lo, 100 * hi);
}

/* The rule under a heading: the name column's dashes, then each
 * column's after a blank (evp_fmt_dashes). */
static void dashes_line(FILE *out, const int *w, size_t n)
{
    for (int i = 0; i < w[0]; i++)
        putc('-', out);
    for (size_t i = 1; i < n; i++)
        evp_fmt_dashes(out, w[i]);
    putc('\n', out);
}

/* A table of ROWS: name, then per weight column (one, or two with
 * INCL) its share, interval and estimated time. */
static void share_table(FILE *out, const struct evp_trace *t, const char *title,
                        struct srow *rows, size_t n, uint64_t total, int incl,
                        int unit)
{
    int w = 26;
    uint64_t lo[2] = {UINT64_MAX, UINT64_MAX};
    for (size_t i = 0; i < n; i++) {
        if (rows[i].cols + 1 > w)
            w = rows[i].cols + 1;
        evp_fmt_col_see(&lo[0], evp_sample_ns(t, rows[i].w));
        evp_fmt_col_see(&lo[1], evp_sample_ns(t, rows[i].w2));
    }
    int u[2] = {evp_fmt_col_unit(unit, lo[0]), evp_fmt_col_unit(unit, lo[1])};
    int tw = 14;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c <= incl; c++) {
            char v[48];
            int len = (int)strlen(evp_fmt_us(
                          v, sizeof v,
                          evp_sample_ns(t, c ? rows[i].w2 : rows[i].w), u[c])) +
                      4;
            if (len > tw)
                tw = len;
        }
    fprintf(out, "%s:\n\n", title);
    const char *labels[7] = {"name",      incl ? "self" : "share",
                             "95% CI",    "est. time",
                             "inclusive", "95% CI",
                             "est. time"};
    int widths[7] = {w + 1, 7, 12, tw, 9, 12, tw};
    size_t ncol = incl ? 7 : 4;
    for (size_t i = 0; i < ncol; i++) {
        int len = (int)strlen(labels[i]), left = (widths[i] - len) / 2;
        fprintf(out, "%s%*s%s", i ? " " : "", left, "", labels[i]);
        if (i + 1 < ncol)
            fprintf(out, "%*s", widths[i] - len - left, "");
    }
    putc('\n', out);
    dashes_line(out, widths, ncol);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, " %s%*s", rows[i].name, w - rows[i].cols, "");
        for (int c = 0; c <= incl; c++) {
            char sh[16], ci[32], v[48];
            uint64_t k = c ? rows[i].w2 : rows[i].w;
            share_cells(k, total, sh, sizeof sh, ci, sizeof ci);
            fprintf(out, " %*s %*s %*s %s", widths[1 + 3 * c], sh, 12, ci,
                    tw - 3, evp_fmt_us(v, sizeof v, evp_sample_ns(t, k), u[c]),
                    evp_fmt_unit(u[c]));
        }
        putc('\n', out);
    }
    dashes_line(out, widths, ncol);
}

/* An exact count of an opcode (counts.op.NAME) and its sampled weight. */
struct crow {
    const char *name;
    uint64_t count, w;
};

static int cmp_crow(const void *x, const void *y)
{
    const struct crow *a = x, *b = y;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    return strcmp(a->name, b->name);
}

/*
 * With exact counts (mode A, EVALPROF_COUNTS=1: metadata counts.op.NAME),
 * each counted opcode's count beside its sampled estimate, and the two
 * combined: the estimated time of one execution.  The counts are of the
 * executed opcodes, as the trace names them; with --group-specialized
 * a specialized form's count goes to its base, as its samples do.
 */
static void counts_table(FILE *out, struct evp_trace *t, const struct agg *a)
{
    size_t n = 0, cap = 0;
    struct crow *rows = NULL;
    for (size_t i = 0; i < evp_trace_meta_count(t); i++) {
        const char *k, *v;
        if (evp_trace_meta_at(t, i, &k, &v) || strncmp(k, "counts.op.", 10))
            continue;
        char *end;
        unsigned long long c = strtoull(v, &end, 10);
        if (end == v || *end)
            continue;
        if (evp_grow((void **)&rows, &cap, n + 1, sizeof *rows, 64)) {
            free(rows);
            return;
        }
        /* the opcode named, and with --group-specialized its base */
        const char *name = k + 10;
        int op = -1;
        for (unsigned o = 0; o < EVP_SAMPLE_OP_MASK && op < 0; o++) {
            const char *nm = evp_trace_opname(t, o);
            if (nm && strcmp(nm, name) == 0)
                op = (int)o;
        }
        if (op >= 0 && a->group) {
            op = (int)evp_trace_opbase(t, (unsigned)op);
            if (evp_trace_opname(t, (unsigned)op))
                name = evp_trace_opname(t, (unsigned)op);
        }
        struct crow *r = NULL;
        for (size_t j = 0; j < n && !r; j++)
            if (strcmp(rows[j].name, name) == 0)
                r = &rows[j];
        if (!r) {
            r = &rows[n++];
            r->name = name;
            r->count = 0;
            r->w = op >= 0 ? a->op[op] : 0;
        }
        r->count += c;
    }
    if (!n)
        return;
    qsort(rows, n, sizeof *rows, cmp_crow);
    fprintf(out, "exact counts (every instruction counted, EVALPROF_COUNTS=1), "
                 "with the samples' estimate of each:\n\n");
    fprintf(out, " %-40s %15s %14s %14s\n", "name", "count", "est. time",
            "per execution");
    fprintf(out, " ---------------------------------------- --------------- "
                 "-------------- --------------\n");
    for (size_t i = 0; i < n; i++) {
        char c[32], v[48], pe[48] = "";
        uint64_t ns = evp_sample_ns(t, rows[i].w);
        snprintf(v, sizeof v, "%.1f ms", (double)ns / 1e6);
        if (rows[i].count && rows[i].w)
            snprintf(pe, sizeof pe, "%.1f ns",
                     (double)ns / (double)rows[i].count);
        char nm[128];
        evp_esc_term_cell(nm, sizeof nm, rows[i].name, 40);
        fprintf(out, " %-40s %15s %14s %14s\n", nm,
                evp_num_group(c, sizeof c, rows[i].count), v, pe);
    }
    fprintf(out, " total: %zu opcodes counted\n\n", n);
    free(rows);
}

static void sampled_header(FILE *out, const struct evp_trace *t,
                           const struct agg *a, int unit)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    char c1[32], c2[32], v[48], p[48];
    const char *clock = !strcmp(in->sample_clock, "cpu")    ? "CPU time"
                        : !strcmp(in->sample_clock, "wall") ? "wall clock"
                        : *in->sample_clock                 ? in->sample_clock
                                            : "an unknown clock";
    uint64_t period =
        in->sample_period_ns > 0 ? (uint64_t)(in->sample_period_ns + 0.5) : 0;
    int pu = evp_fmt_col_unit(unit, period);
    fprintf(out,
            "%-11s%s samples standing for %s timer periods, every %s %s of "
            "%s (%.0f Hz per thread)\n",
            "sampled:", evp_num_group(c1, sizeof c1, a->samples),
            evp_num_group(c2, sizeof c2, a->total),
            evp_fmt_us(p, sizeof p, period, pu), evp_fmt_unit(pu), clock,
            in->sample_rate_hz);
    uint64_t est = evp_sample_ns(t, a->total);
    int eu = evp_fmt_col_unit(unit, est);
    fprintf(out, "%-11s%s %s of %s (periods x period)\n",
            "est. time:", evp_fmt_us(v, sizeof v, est, eu), evp_fmt_unit(eu),
            clock);
    fprintf(out,
            "%-11s%s periods missed (counted in the weights), %s "
            "samples lost in full buffers\n",
            "missed:", evp_num_group(c1, sizeof c1, in->sample_missed),
            evp_num_group(c2, sizeof c2, in->samples_lost));
    fprintf(out,
            "%-11sshares are estimated from %s timer periods, with 95%% "
            "confidence intervals (Wilson score interval, binomial); an "
            "interval covers the sampling error only, not the sampler's "
            "bias (where its signals land)\n",
            "estimate:", evp_num_group(c1, sizeof c1, a->total));
    const char *sampler = evp_trace_meta(t, "sample.sampler");
    int ticker = sampler && !strncmp(sampler, "sampler thread", 14);
    if (!strcmp(in->sample_clock, "wall") && ticker &&
        (a->cat[EVP_SCAT_GIL_WAIT] || a->cat[EVP_SCAT_SYSCALL]))
        fprintf(out,
                "%-11sa thread that stays blocked is sampled without being "
                "interrupted; one that ran past a CPU budget while blocked "
                "is interrupted once, and CPython then takes the GIL again "
                "before it blocks again: its \"waiting for the GIL\" "
                "share can be a few points above what it is untraced "
                "(README, \"Sampled mode\")\n",
                "bias:");
    else if (!strcmp(in->sample_clock, "wall") &&
             (a->cat[EVP_SCAT_GIL_WAIT] || a->cat[EVP_SCAT_SYSCALL]))
        fprintf(out,
                "%-11swith the wall clock a sample interrupts a blocked "
                "call (sleep, lock, I/O), and CPython takes the GIL again "
                "before it blocks again: while another thread holds the "
                "GIL, such a thread waits for it at every sample, and its "
                "\"waiting for the GIL\" share can be several times what "
                "it is untraced (README, \"Sampled mode\"); the CPU clock "
                "interrupts no blocked thread\n",
                "bias:");
}

static void op_rows(const struct evp_trace *t, const struct agg *a,
                    struct srow *rows, size_t *n)
{
    *n = 0;
    for (unsigned op = 0; op <= EVP_SAMPLE_OP_MASK; op++) {
        if (!a->op[op])
            continue;
        struct srow *r = &rows[(*n)++];
        char nm[128];
        if (op == EVP_SAMPLE_OP_MASK)
            snprintf(nm, sizeof nm, "(no opcode)");
        else
            evp_view_op_name(t, op, nm, sizeof nm);
        r->cols = evp_esc_term_cell(r->name, sizeof r->name, nm, 70);
        r->w = r->w2 = a->op[op];
        r->order = op;
    }
}

/* The function rows; NULL when out of memory. */
static struct srow *func_rows(const struct evp_trace *t, const struct agg *a,
                              int wide, size_t *n)
{
    struct srow *rows = calloc((size_t)a->unknown + 1, sizeof *rows);
    if (!rows)
        return NULL;
    *n = 0;
    for (uint32_t id = 1; id <= a->unknown; id++) {
        if (!a->incl[id] && !a->self[id])
            continue;
        struct srow *r = &rows[(*n)++];
        char nm[1024];
        if (id == a->unknown)
            snprintf(nm, sizeof nm, "%s", EVP_STACK_UNKNOWN_NAME);
        else
            evp_view_func_key(t, id, nm, sizeof nm);
        r->cols =
            evp_view_func_cell(r->name, sizeof r->name, nm, wide ? 0 : 70);
        r->w = a->self[id];
        r->w2 = a->incl[id];
        r->order = id;
    }
    return rows;
}

int evp_view_summary_sampled(struct evp_trace *t, FILE *out,
                             const struct evp_summary_opts *o)
{
    struct agg a;
    int rc = agg_compute(t, &a, o->stream, o->group_specialized);
    if (rc < 0) {
        fprintf(stderr, "evalprof: out of memory\n");
        return rc;
    }
    enum evp_sort sort = o->sort;
    fprintf(out,
            "reading from %s\n(showing results in 'summary' format, of "
            "a sampled trace)\n\n",
            evp_trace_info(t)->path);
    evp_view_header(out, t, "", 11, 0, o->ns);
    sampled_header(out, t, &a, o->ns);
    fputc('\n', out);

    struct srow rows[EVP_SAMPLE_OP_MASK + 40];
    size_t n = 0;
    memset(rows, 0, sizeof rows);
    /* a trace whose producer could not tell a blocked thread from the
     * rest has one row for every sample without the GIL */
    int blocked = evp_trace_info(t)->sample_blocked;
    for (int c = 0; c < EVP_SCAT__COUNT; c++) {
        if (!blocked && (c == EVP_SCAT_GIL_WAIT || c == EVP_SCAT_SYSCALL)) {
            a.cat[EVP_SCAT_NO_GIL] += a.cat[c];
            continue;
        }
        struct srow *r = &rows[n++];
        r->cols = evp_esc_term_cell(
            r->name, sizeof r->name,
            blocked || c != EVP_SCAT_NO_GIL ? evp_sample_cat_name(c) : "no GIL",
            70);
        r->w = r->w2 = a.cat[c];
        r->order = (uint32_t)c;
    }
    share_table(out, t, "where (state of the sampled thread)", rows, n, a.total,
                0, o->ns);
    fputc('\n', out);
    if (a.total > a.phase[0]) {
        n = 0;
        memset(rows, 0, sizeof rows);
        for (int k = 0; k <= 32; k++) {
            if (!a.phase[k])
                continue;
            struct srow *r = &rows[n++];
            r->cols = evp_esc_term_cell(
                r->name, sizeof r->name,
                k ? evp_kind_name((unsigned)k - 1) : "(none reported)", 70);
            r->w = r->w2 = a.phase[k];
            r->order = (uint32_t)k;
        }
        qsort_r(rows, n, sizeof *rows, cmp_srow, &sort);
        share_table(out, t, "loop phases", rows, n, a.total, 0, o->ns);
        fputc('\n', out);
    }
    memset(rows, 0, sizeof rows);
    op_rows(t, &a, rows, &n);
    qsort_r(rows, n, sizeof *rows, cmp_srow, &sort);
    share_table(out, t, "ops", rows, n, a.total, 0, o->ns);
    /* as the exact summary counts: base instructions when folded, else
     * every named opcode */
    unsigned named = evp_trace_nopcodes(t);
    if (!o->group_specialized)
        for (unsigned op = named = 0; op < 65536; op++)
            named += evp_trace_opname(t, op) != NULL;
    fprintf(out, " total: %zu/%u\n\n", n - (a.op[EVP_SAMPLE_OP_MASK] != 0),
            named);
    counts_table(out, t, &a);
    size_t nf = 0;
    struct srow *fr = func_rows(t, &a, o->wide_names, &nf);
    if (!fr) {
        agg_free(&a);
        fprintf(stderr, "evalprof: out of memory\n");
        return -ENOMEM;
    }
    fprintf(out, "funcs: %zu seen on the sampled stacks\n", nf);
    if (o->funcs) {
        fputc('\n', out);
        qsort_r(fr, nf, sizeof *fr, cmp_srow, &sort);
        share_table(out, t,
                    "functions (self: the leaf frame; inclusive: "
                    "anywhere on the stack)",
                    fr, nf, a.total, 1, o->ns);
        fprintf(out, " total: %zu functions\n", nf);
    }
    free(fr);
    agg_free(&a);
    return 0;
}

/* ---- diff of two sampled traces ----------------------------------------- */

/* A row of the diff: a function or opcode of either run, matched by KEY,
 * with its weights in each. */
struct dsrow {
    char *key;
    char name[288];
    int cols;
    uint64_t w[2], w2[2]; /* self (or the opcode's), inclusive */
    uint32_t order;
};

static int cmp_key(const void *x, const void *y)
{
    const struct dsrow *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* A new row keyed KEY at the end of *R (N rows, CAP room), its weights
 * zero; NULL when out of memory. */
static struct dsrow *drow_add(struct dsrow **r, size_t *n, size_t *cap,
                              const char *key)
{
    if (evp_grow((void **)r, cap, *n + 1, sizeof **r, 64))
        return NULL;
    struct dsrow *d = &(*r)[*n];
    memset(d, 0, sizeof *d);
    if (!(d->key = strdup(key)))
        return NULL;
    ++*n;
    return d;
}

/* Merge rows of equal keys (sorted by key first): weights summed, the
 * first row's name and order kept.  Returns the rows left. */
static size_t merge_keys(struct dsrow *r, size_t n)
{
    if (!n)
        return 0; /* (R may be NULL) */
    qsort(r, n, sizeof *r, cmp_key);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && strcmp(r[k - 1].key, r[i].key) == 0) {
            for (int j = 0; j < 2; j++) {
                r[k - 1].w[j] += r[i].w[j];
                r[k - 1].w2[j] += r[i].w2[j];
            }
            free(r[i].key);
            continue;
        }
        r[k++] = r[i];
    }
    return k;
}

struct dsort {
    enum evp_sort sort;
    const uint64_t *total; /* each run's periods */
    int incl;
};

static double share_of(uint64_t k, uint64_t n)
{
    return n ? (double)k / (double)n : 0;
}

static int cmp_dsrow(const void *x, const void *y, void *arg)
{
    const struct dsrow *a = x, *b = y;
    const struct dsort *s = arg;
    if (s->sort == EVP_SORT_NAME) {
        int c = strcmp(a->name, b->name);
        if (c)
            return c;
    } else {
        const uint64_t *wa = s->incl ? a->w2 : a->w,
                       *wb = s->incl ? b->w2 : b->w;
        double da = fabs(share_of(wa[1], s->total[1]) -
                         share_of(wa[0], s->total[0])),
               db = fabs(share_of(wb[1], s->total[1]) -
                         share_of(wb[0], s->total[0]));
        if (da != db)
            return da < db ? 1 : -1;
    }
    return (a->order > b->order) - (a->order < b->order);
}

static void diff_table(FILE *out, const char *title, struct dsrow *r, size_t n,
                       const uint64_t total[2], int incl, enum evp_sort sort)
{
    struct dsort ds = {sort, total, incl};
    if (n)
        qsort_r(r, n, sizeof *r, cmp_dsrow, &ds);
    int w = 26;
    for (size_t i = 0; i < n; i++)
        if (r[i].cols + 1 > w)
            w = r[i].cols + 1;
    fprintf(out, "%s:\n\n", title);
    fprintf(out, " %-*s %10s %10s %12s %7s\n", w, "name", "base share",
            "new share", "change", "z");
    int widths[] = {w + 1, 10, 10, 12, 7};
    dashes_line(out, widths, 5);
    for (size_t i = 0; i < n; i++) {
        const uint64_t *k = incl ? r[i].w2 : r[i].w;
        double p0 = share_of(k[0], total[0]), p1 = share_of(k[1], total[1]), z;
        int sig = evp_two_prop_z(k[0], total[0], k[1], total[1], &z);
        char a[16], b[16], c[24];
        snprintf(a, sizeof a, "%.1f%%", 100 * p0);
        snprintf(b, sizeof b, "%.1f%%", 100 * p1);
        snprintf(c, sizeof c, "%+.1f pp %s", 100 * (p1 - p0), sig ? "*" : " ");
        fprintf(out, " %s%*s %10s %10s %12s %+7.1f\n", r[i].name, w - r[i].cols,
                "", a, b, c, z);
    }
    dashes_line(out, widths, 5);
    fputc('\n', out);
}

static void diff_run(FILE *out, const char *label, const struct evp_trace *t,
                     const struct agg *a)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    char c1[32], c2[32], p[48];
    uint64_t period = (uint64_t)(in->sample_period_ns + 0.5);
    int pu = evp_fmt_col_unit(EVP_UNIT_AUTO, period);
    fprintf(out, "%-11s%s\n", label, in->path);
    fprintf(out, "  python:   %s\n", in->executable);
    fprintf(out, "  argv:     %s\n", in->argv);
    fprintf(out,
            "  sampled:  %s samples, %s timer periods of %s %s (%s "
            "clock)\n",
            evp_num_group(c1, sizeof c1, a->samples),
            evp_num_group(c2, sizeof c2, a->total),
            evp_fmt_us(p, sizeof p, period, pu), evp_fmt_unit(pu),
            *in->sample_clock ? in->sample_clock : "unknown");
}

int evp_view_diff_sampled(struct evp_trace *base, struct evp_trace *new_,
                          FILE *out, const struct evp_diff_opts *o)
{
    struct evp_trace *t[2] = {base, new_};
    struct agg a[2];
    struct dsrow *r = NULL;
    size_t n = 0, cap = 0;
    int rc = agg_compute(base, &a[0], -1, 0);
    if (rc < 0)
        return rc;
    if ((rc = agg_compute(new_, &a[1], -1, 0)) < 0) {
        agg_free(&a[0]);
        return rc;
    }
    uint64_t total[2] = {a[0].total, a[1].total};
    fprintf(out,
            "reading from %s\nreading from %s\n(showing results in "
            "'diff' format, of two sampled traces)\n\n",
            evp_trace_info(base)->path, evp_trace_info(new_)->path);
    diff_run(out, "base:", base, &a[0]);
    diff_run(out, "new:", new_, &a[1]);
    fprintf(out, "estimate:  shares of each run's timer periods; change in "
                 "percentage points (pp); * marks a change significant at 95%% "
                 "(two-proportion z-test on the periods, |z| > 1.96), which "
                 "covers the sampling error only, not the samplers' bias\n\n");

    /* ops, matched by name (numbers change between versions) */
    for (int i = 0; i < 2 && !rc; i++)
        for (unsigned op = 0; op <= EVP_SAMPLE_OP_MASK && !rc; op++) {
            if (!a[i].op[op])
                continue;
            char nm[128];
            if (op == EVP_SAMPLE_OP_MASK)
                snprintf(nm, sizeof nm, "(no opcode)");
            else
                evp_view_op_name(t[i], op, nm, sizeof nm);
            struct dsrow *d = drow_add(&r, &n, &cap, nm);
            if (!d) {
                rc = -ENOMEM;
                break;
            }
            d->cols = evp_esc_term_cell(d->name, sizeof d->name, nm, 70);
            d->w[i] = d->w2[i] = a[i].op[op];
            d->order = (uint32_t)i << 16 | op;
        }
    if (!rc) {
        n = merge_keys(r, n);
        diff_table(out, "ops", r, n, total, 0, o->sort);
    }
    for (size_t i = 0; i < n; i++)
        free(r[i].key);
    n = 0;

    /* functions, matched as diff --funcs matches them: name and file
     * relative to the run's recorded roots, no line */
    for (int i = 0; i < 2 && !rc; i++) {
        struct evp_stats_roots roots;
        evp_stats_roots_load(t[i], &roots);
        for (uint32_t id = 1; id <= a[i].unknown && !rc; id++) {
            if (!a[i].self[id] && !a[i].incl[id])
                continue;
            char key[1100], nm[1024];
            if (id == a[i].unknown) {
                snprintf(key, sizeof key, "%s", EVP_STACK_UNKNOWN_NAME);
                snprintf(nm, sizeof nm, "%s", EVP_STACK_UNKNOWN_NAME);
            } else {
                evp_stats_func_rel_key(t[i], &roots, id, key, sizeof key);
                evp_view_func_key(t[i], id, nm, sizeof nm);
            }
            struct dsrow *d = drow_add(&r, &n, &cap, key);
            if (!d) {
                rc = -ENOMEM;
                break;
            }
            d->cols = evp_view_func_cell(d->name, sizeof d->name, nm,
                                         o->wide_names ? 0 : 70);
            d->w[i] = a[i].self[id];
            d->w2[i] = a[i].incl[id];
            d->order = (uint32_t)i << 31 | id;
        }
    }
    if (!rc) {
        n = merge_keys(r, n);
        diff_table(out, "functions (self: the leaf frame)", r, n, total, 0,
                   o->sort);
        if (o->funcs)
            diff_table(out, "functions (inclusive: anywhere on the stack)", r,
                       n, total, 1, o->sort);
    }
    for (size_t i = 0; i < n; i++)
        free(r[i].key);
    free(r);
    agg_free(&a[0]);
    agg_free(&a[1]);
    return rc;
}
