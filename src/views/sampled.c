/*
 * Views of a sampled trace (docs/FORMAT.md "Samples"): one pass over the
 * samples (evp_trace_samples) into per-function, per-opcode and per-state
 * weights, and `summary` of them: shares of the timer periods with their
 * 95% confidence intervals, and estimated times (weight x period).
 *
 * A sample's weight is the number of timer periods it stands for; a
 * row's share is its weight over the total, and its interval is the
 * Wilson score interval of a binomial proportion whose trials are the
 * samples' effective count, (sum w)^2 / sum w^2 (Kish's): the periods
 * while every sample stands for one, fewer where weights are uneven (a
 * POSIX timer firing at the kernel's tick at a higher rate asked, late
 * signals whose missed periods go into one sample).  That covers the
 * sampling error only: where a sampler's signals land (safe points, the
 * clock's granularity) biases shares in ways no interval shows, and the
 * summary says so.
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
#include <stddef.h>
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
    if (state & EVP_SAMPLE_NO_PC)
        return (state & EVP_SAMPLE_NO_FRAME) || !stack ? EVP_SCAT_NO_FRAME
                                                       : EVP_SCAT_NO_PC;
    if (state & EVP_SAMPLE_IN_JIT)
        return EVP_SCAT_JIT;
    if (state & EVP_SAMPLE_C_CALL)
        return EVP_SCAT_C_CALL;
    if (state & EVP_SAMPLE_IN_EVAL)
        return EVP_SCAT_EVAL;
    if (state & EVP_SAMPLE_TIER2)
        return EVP_SCAT_JIT_CALLED;
    if ((state & EVP_SAMPLE_NO_FRAME) || !stack)
        return EVP_SCAT_NO_FRAME;
    return EVP_SCAT_OTHER;
}

int evp_sample_jit_told(struct evp_trace *const *t, size_t runs)
{
    for (size_t i = 0; i < runs; i++) {
        const char *how = evp_trace_meta(t[i], "sample.jit");
        if (how && strncmp(how, "none", 4) != 0)
            return 1;
    }
    return 0;
}

const char *evp_sample_cat_name(int cat)
{
    static const char *const names[EVP_SCAT__COUNT] = {
        "in the eval loop",
        "C call (GIL held)",
        "waiting for the GIL",
        "no GIL, in a system call",
        "no GIL, not blocked",
        "runtime other (frame)",
        "no Python frame",
        "GIL held: eval loop, C call or runtime (not told: sampler thread)",
        "in JIT-compiled code",
        "runtime, called from JIT code"};
    return cat >= 0 && cat < EVP_SCAT__COUNT ? names[cat] : "?";
}

const char *evp_sample_cat_leaf(int cat)
{
    static const char *const leaves[EVP_SCAT__COUNT] = {
        "[eval loop]", "[C call]",          "[GIL wait]",      "[syscall]",
        "[no GIL]",    "[runtime other]",   "[runtime other]", "[GIL held]",
        "[JIT code]",  "[runtime from JIT]"};
    return cat >= 0 && cat < EVP_SCAT__COUNT ? leaves[cat] : "[?]";
}

double evp_sample_trials(uint64_t total, double w2)
{
    return w2 > 0 ? (double)total * (double)total / w2 : (double)total;
}

void evp_wilson(double p, double nn, double *lo, double *hi)
{
    if (!(nn > 0)) {
        *lo = *hi = 0;
        return;
    }
    const double z = 1.959963984540054;
    double z2 = z * z;
    double den = 1 + z2 / nn;
    double mid = (p + z2 / (2 * nn)) / den;
    double half = z * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / den;
    *lo = mid - half < 0 ? 0 : mid - half;
    *hi = mid + half > 1 ? 1 : mid + half;
}

int evp_two_prop_z(double p1, double n1, double p2, double n2, double *z)
{
    *z = 0;
    if (!(n1 > 0) || !(n2 > 0))
        return 0;
    double p = (p1 * n1 + p2 * n2) / (n1 + n2);
    double se = sqrt(p * (1 - p) * (1 / n1 + 1 / n2));
    if (!(se > 0))
        return 0;
    *z = (p2 - p1) / se;
    return fabs(*z) > 1.959963984540054;
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
    uint64_t op_jit; /* in JIT code: the instruction pointer may lag */
    uint64_t cat[EVP_SCAT__COUNT];
    uint64_t phase[33]; /* by kind + 1; [0]: none */
    uint64_t total, samples;
    uint64_t nopc; /* the weight of the samples with no program counter */
    double w2;     /* the weights squared, summed (evp_sample_trials) */
};

static void agg_sample(struct agg *a, const struct evp_sample *s)
{
    uint64_t w = s->weight;
    a->total += w;
    a->samples++;
    a->w2 += (double)w * (double)w;
    a->cat[evp_sample_cat(s->state, s->stack)] += w;
    if (s->state & EVP_SAMPLE_NO_PC)
        a->nopc += w;
    int ph = evp_sample_phase(s->state);
    a->phase[ph >= 0 && ph < 32 ? ph + 1 : 0] += w;
    int op = evp_sample_opcode(s->state);
    if (op >= 0 && a->group)
        op =
            (int)evp_trace_opbase(a->t, (unsigned)op) & (int)EVP_SAMPLE_OP_MASK;
    if (s->state & EVP_SAMPLE_IN_JIT)
        a->op_jit += w;
    else
        a->op[op >= 0 ? (unsigned)op : EVP_SAMPLE_OP_MASK] += w;
    size_t n = (size_t)s->depth;
    int unknown = (s->flags & EVP_SMPF_CUT) != 0;
    if (++a->stamp == 0) {
        memset(a->seen, 0, ((size_t)a->unknown + 1) * sizeof *a->seen);
        a->stamp = 1;
    }
    if (unknown && !n)
        a->self[a->unknown] += w;
    else if (n)
        a->self[s->func[n - 1] <= a->nfuncs ? s->func[n - 1] : a->unknown] += w;
    if (unknown) {
        a->incl[a->unknown] += w;
        a->seen[a->unknown] = a->stamp;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t f = s->func[i] <= a->nfuncs ? s->func[i] : a->unknown;
        if (a->seen[f] != a->stamp) {
            a->seen[f] = a->stamp;
            a->incl[f] += w;
        }
    }
}

static int agg_samples(void *ctx, const struct evp_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        agg_sample(ctx, &s[i]);
    return 0;
}

static void agg_free(struct agg *a)
{
    free(a->self);
    free(a->incl);
    free(a->seen);
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
    static const struct evp_replay_ops ops = {.samples = agg_samples};
    struct evp_replay_opts ro = {.stream = stream};
    int rc = evp_replay(t, &ro, &ops, a);
    if (rc < 0)
        agg_free(a);
    return rc;
}

/* ---- rows matched across runs ------------------------------------------- */

/* A function or opcode of one run or several, matched by KEY, with its
 * weights in each run: self (or the opcode's) and inclusive.  A summary
 * of one trace keys functions by id, so that none merge; several runs
 * (and diff) match them as summary of exact runs and diff --funcs do. */
struct krow {
    char *key;
    char name[288];
    int cols;
    uint64_t *w;    /* run i: self w[2 * i], inclusive w[2 * i + 1] */
    uint64_t order; /* the first run's index << 32 | its function id */
    uint32_t line;  /* summary --lines: the row's line */
};

struct krows {
    struct krow *r;
    size_t n, cap, runs;
};

static void krows_free(struct krows *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->r[i].key);
        free(k->r[i].w);
    }
    free(k->r);
    k->r = NULL;
    k->n = k->cap = 0;
}

/* A new row keyed KEY, its weights zero; NULL when out of memory. */
static struct krow *krow_add(struct krows *k, const char *key)
{
    if (evp_grow((void **)&k->r, &k->cap, k->n + 1, sizeof *k->r, 64))
        return NULL;
    struct krow *d = &k->r[k->n];
    memset(d, 0, sizeof *d);
    d->key = strdup(key);
    d->w = calloc(2 * k->runs, sizeof *d->w);
    if (!d->key || !d->w) {
        free(d->key);
        free(d->w);
        return NULL;
    }
    k->n++;
    return d;
}

static int cmp_key(const void *x, const void *y)
{
    const struct krow *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* Merge rows of equal keys: weights summed, the first row's name and
 * order kept. */
static void krows_merge(struct krows *k)
{
    if (!k->n)
        return; /* (k->r may be NULL) */
    qsort(k->r, k->n, sizeof *k->r, cmp_key);
    size_t m = 0;
    for (size_t i = 0; i < k->n; i++) {
        struct krow *r = &k->r[i];
        if (m && strcmp(k->r[m - 1].key, r->key) == 0) {
            for (size_t j = 0; j < 2 * k->runs; j++)
                k->r[m - 1].w[j] += r->w[j];
            free(r->key);
            free(r->w);
            continue;
        }
        k->r[m++] = *r;
    }
    k->n = m;
}

/* The opcodes of K->runs runs, matched by name (numbers change between
 * versions).  0 or -ENOMEM. */
static int keyed_ops(struct krows *k, struct evp_trace *const *t,
                     const struct agg *a)
{
    for (size_t i = 0; i < k->runs; i++)
        for (unsigned op = 0; op <= EVP_SAMPLE_OP_MASK; op++) {
            if (!a[i].op[op])
                continue;
            char nm[128];
            if (op == EVP_SAMPLE_OP_MASK)
                snprintf(nm, sizeof nm, "(no opcode)");
            else
                evp_view_op_name(t[i], op, nm, sizeof nm);
            struct krow *d = krow_add(k, nm);
            if (!d)
                return -ENOMEM;
            d->cols = evp_esc_term_cell(d->name, sizeof d->name, nm, 70);
            d->w[2 * i] = d->w[2 * i + 1] = a[i].op[op];
            d->order = (uint64_t)i << 32 | op;
        }
    for (size_t i = 0; i < k->runs; i++) {
        if (!a[i].op_jit)
            continue;
        struct krow *d = krow_add(k, EVP_SAMPLE_JIT_OP_NAME);
        if (!d)
            return -ENOMEM;
        d->cols = evp_esc_term_cell(d->name, sizeof d->name,
                                    EVP_SAMPLE_JIT_OP_NAME, 70);
        d->w[2 * i] = d->w[2 * i + 1] = a[i].op_jit;
        d->order = (uint64_t)i << 32 | (EVP_SAMPLE_OP_MASK + 1);
    }
    krows_merge(k);
    return 0;
}

/* The functions seen on the stacks of K->runs runs: of one, by id; of
 * several, by name and file relative to each run's recorded roots, no
 * line (evp_stats_func_rel_key, as diff --funcs matches them).  0 or
 * -ENOMEM. */
static int keyed_funcs(struct krows *k, struct evp_trace *const *t,
                       const struct agg *a, int wide)
{
    for (size_t i = 0; i < k->runs; i++) {
        struct evp_stats_roots roots;
        evp_stats_roots_load(t[i], &roots);
        for (uint32_t id = 1; id <= a[i].unknown; id++) {
            if (!a[i].self[id] && !a[i].incl[id])
                continue;
            char key[1100], nm[1024];
            if (id == a[i].unknown)
                snprintf(nm, sizeof nm, "%s", EVP_STACK_UNKNOWN_NAME);
            else
                evp_view_func_key(t[i], id, nm, sizeof nm);
            if (k->runs == 1)
                snprintf(key, sizeof key, "%010" PRIu32, id);
            else if (id == a[i].unknown)
                snprintf(key, sizeof key, "%s", EVP_STACK_UNKNOWN_NAME);
            else
                evp_stats_func_rel_key(t[i], &roots, id, key, sizeof key);
            struct krow *d = krow_add(k, key);
            if (!d)
                return -ENOMEM;
            d->cols =
                evp_view_func_cell(d->name, sizeof d->name, nm, wide ? 0 : 70);
            d->w[2 * i] = a[i].self[id];
            d->w[2 * i + 1] = a[i].incl[id];
            d->order = (uint64_t)i << 32 | id;
        }
    }
    krows_merge(k);
    return 0;
}

/* ---- summary tables ----------------------------------------------------- */

/* A weight column of a row: its periods (summed over the runs), and the
 * estimated time, one run's or the median and range of the runs'. */
struct scol {
    uint64_t w, est, min, max;
};

/* One row: a name and its weight columns (the opcode's or self, and
 * inclusive). */
struct srow {
    char name[288];
    int cols;
    struct scol c[2];
    uint64_t order;
};

/* Column C of R from the weights W[0], W[STRIDE], ... of the RUNS runs
 * T; SCRATCH has 2 * RUNS slots. */
static void srow_set(struct srow *r, int c, struct evp_trace *const *t,
                     size_t runs, const uint64_t *w, size_t stride,
                     uint64_t *scratch)
{
    struct scol *s = &r->c[c];
    s->w = 0;
    for (size_t i = 0; i < runs; i++) {
        s->w += w[i * stride];
        scratch[i] = evp_sample_ns(t[i], w[i * stride]);
    }
    evp_runs_reduce(scratch, runs, scratch + runs, &s->est, &s->min, &s->max);
}

/* Both columns of R from one weight per run, A[i] + OFF bytes. */
static void srow_agg(struct srow *r, struct evp_trace *const *t, size_t runs,
                     const struct agg *a, size_t off, uint64_t *scratch)
{
    uint64_t *w = scratch + 2 * runs;
    for (size_t i = 0; i < runs; i++)
        memcpy(&w[i], (const char *)&a[i] + off, sizeof *w);
    srow_set(r, 0, t, runs, w, 1, scratch);
    r->c[1] = r->c[0];
}

static int cmp_srow(const void *x, const void *y, void *arg)
{
    const struct srow *a = x, *b = y;
    enum evp_sort s = *(const enum evp_sort *)arg;
    if (s == EVP_SORT_NAME) {
        int c = strcmp(a->name, b->name);
        if (c)
            return c;
    } else if (s == EVP_SORT_TOTAL && a->c[1].w != b->c[1].w) {
        return a->c[1].w < b->c[1].w ? 1 : -1;
    } else if (a->c[0].w != b->c[0].w) {
        return a->c[0].w < b->c[0].w ? 1 : -1;
    }
    if (a->c[0].w != b->c[0].w)
        return a->c[0].w < b->c[0].w ? 1 : -1;
    return (a->order > b->order) - (a->order < b->order);
}

void evp_share_cells(uint64_t k, uint64_t n, double trials, char *sh,
                     size_t shl, char *ci, size_t cil)
{
    double lo, hi, p = n ? (double)k / (double)n : 0.0;
    evp_wilson(p, trials, &lo, &hi);
    snprintf(sh, shl, "%.1f%%", 100.0 * p);
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

/* "[650.0 - 750.0]": the range of a column's estimates in unit U. */
static size_t range_cell(char *buf, size_t len, const struct scol *s, int u)
{
    char a[48], b[48];
    int k = snprintf(buf, len, "[%s - %s]", evp_fmt_us(a, sizeof a, s->min, u),
                     evp_fmt_us(b, sizeof b, s->max, u));
    return k > 0 ? (size_t)k : 0;
}

/* A table of ROWS: name, then per weight column (one, or two with INCL:
 * self and inclusive) its share of TOTAL periods, interval and
 * estimated time; of several runs (RUNS > 1) also the periods summed
 * before the share and the range of the runs' estimates after the
 * median. */
static void share_table(FILE *out, const char *title, struct srow *rows,
                        size_t n, uint64_t total, double trials, int incl,
                        int unit, size_t runs)
{
    int w = 26, multi = runs > 1;
    uint64_t lo[2] = {UINT64_MAX, UINT64_MAX};
    for (size_t i = 0; i < n; i++) {
        if (rows[i].cols + 1 > w)
            w = rows[i].cols + 1;
        for (int c = 0; c < 2; c++) {
            evp_fmt_col_see(&lo[c], rows[i].c[c].est);
            evp_fmt_col_see(&lo[c], rows[i].c[c].min);
        }
    }
    int u[2] = {evp_fmt_col_unit(unit, lo[0]), evp_fmt_col_unit(unit, lo[1])};
    int tw = 14, pw = 7, rw = 11;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c <= incl; c++) {
            char v[112];
            int len =
                (int)strlen(evp_fmt_us(v, sizeof v, rows[i].c[c].est, u[c])) +
                4;
            if (len > tw)
                tw = len;
            if (!multi)
                continue;
            len = (int)range_cell(v, sizeof v, &rows[i].c[c], u[c]);
            if (len > rw)
                rw = len;
            len = (int)strlen(evp_num_group(v, sizeof v, rows[i].c[c].w));
            if (len > pw)
                pw = len;
        }
    fprintf(out, "%s:\n\n", title);
    const char *labels[11] = {"name"};
    int widths[11] = {w + 1};
    size_t ncol = 1;
    for (int c = 0; c <= incl; c++) {
        if (multi) {
            labels[ncol] = "periods";
            widths[ncol++] = pw;
        }
        labels[ncol] = c ? "inclusive" : incl ? "self" : "share";
        widths[ncol++] = c ? 9 : 7;
        labels[ncol] = "95% CI";
        widths[ncol++] = 12;
        labels[ncol] = "est. time";
        widths[ncol++] = tw;
        if (multi) {
            labels[ncol] = "[min - max]";
            widths[ncol++] = rw;
        }
    }
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
            const struct scol *s = &rows[i].c[c];
            char sh[16], ci[32], v[112];
            if (multi)
                fprintf(out, " %*s", pw, evp_num_group(v, sizeof v, s->w));
            evp_share_cells(s->w, total, trials, sh, sizeof sh, ci, sizeof ci);
            fprintf(out, " %*s %*s %*s %s", c ? 9 : 7, sh, 12, ci, tw - 3,
                    evp_fmt_us(v, sizeof v, s->est, u[c]), evp_fmt_unit(u[c]));
            if (multi) {
                range_cell(v, sizeof v, s, u[c]);
                fprintf(out, " %*s", rw, v);
            }
        }
        putc('\n', out);
    }
    dashes_line(out, widths, ncol);
}

/* An exact count of an opcode (counts.op.NAME, summed over the runs that
 * recorded counts) and the estimated time of its samples in those runs. */
struct crow {
    const char *name;
    uint64_t count, ns;
    size_t run; /* the last run whose estimate is in NS, + 1 */
};

static int cmp_crow(const void *x, const void *y)
{
    const struct crow *a = x, *b = y;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* Run RUN's counts (trace T, its aggregate A) into *ROWS; returns how
 * many it had, or -ENOMEM. */
static long counts_add(struct crow **rows, size_t *n, size_t *cap,
                       struct evp_trace *t, const struct agg *a, size_t run)
{
    long had = 0;
    for (size_t i = 0; i < evp_trace_meta_count(t); i++) {
        const char *k, *v;
        if (evp_trace_meta_at(t, i, &k, &v) || strncmp(k, "counts.op.", 10))
            continue;
        char *end;
        unsigned long long c = strtoull(v, &end, 10);
        if (end == v || *end)
            continue;
        if (evp_grow((void **)rows, cap, *n + 1, sizeof **rows, 64))
            return -ENOMEM;
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
        for (size_t j = 0; j < *n && !r; j++)
            if (strcmp((*rows)[j].name, name) == 0)
                r = &(*rows)[j];
        if (!r) {
            r = &(*rows)[(*n)++];
            *r = (struct crow){name, 0, 0, 0};
        }
        if (r->run != run + 1) {
            r->ns += evp_sample_ns(t, op >= 0 ? a->op[op] : 0);
            r->run = run + 1;
        }
        r->count += c;
        had++;
    }
    return had;
}

/*
 * With exact counts (mode A, EVALPROF_COUNTS=1: metadata counts.op.NAME),
 * each counted opcode's count beside its sampled estimate, and the two
 * combined: the estimated time of one execution.  The counts are of the
 * executed opcodes, as the trace names them; with --group-specialized
 * a specialized form's count goes to its base, as its samples do.  Of
 * several runs, counts and estimates are summed over the runs that
 * recorded counts.
 */
static void counts_table(FILE *out, struct evp_trace *const *t,
                         const struct agg *a, size_t runs)
{
    size_t n = 0, cap = 0, counted = 0;
    struct crow *rows = NULL;
    for (size_t i = 0; i < runs; i++) {
        long had = counts_add(&rows, &n, &cap, t[i], &a[i], i);
        if (had < 0) {
            free(rows);
            return;
        }
        counted += had > 0;
    }
    if (!n)
        return;
    qsort(rows, n, sizeof *rows, cmp_crow);
    if (runs > 1)
        fprintf(out,
                "exact counts (every instruction counted, "
                "EVALPROF_COUNTS=1), summed over the %zu of %zu runs that "
                "counted, with the samples' estimate of each in those "
                "runs:\n\n",
                counted, runs);
    else
        fprintf(out, "exact counts (every instruction counted, "
                     "EVALPROF_COUNTS=1), with the samples' estimate of "
                     "each:\n\n");
    fprintf(out, " %-40s %15s %14s %14s\n", "name", "count", "est. time",
            "per execution");
    fprintf(out, " ---------------------------------------- --------------- "
                 "-------------- --------------\n");
    for (size_t i = 0; i < n; i++) {
        char c[32], v[48], pe[48] = "";
        uint64_t ns = rows[i].ns;
        snprintf(v, sizeof v, "%.1f ms", (double)ns / 1e6);
        if (rows[i].count && ns)
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

static const char *clock_name(const struct evp_trace_info *in)
{
    return !strcmp(in->sample_clock, "cpu")    ? "CPU time"
           : !strcmp(in->sample_clock, "wall") ? "wall clock"
           : *in->sample_clock                 ? in->sample_clock
                                               : "an unknown clock";
}

/* "every 1.0 ms of CPU time (1000 Hz per thread)" */
static void period_words(FILE *out, const struct evp_trace_info *in, int unit)
{
    char p[48];
    uint64_t period =
        in->sample_period_ns > 0 ? (uint64_t)(in->sample_period_ns + 0.5) : 0;
    int pu = evp_fmt_col_unit(unit, period);
    fprintf(out, "every %s %s of %s (%.0f Hz per thread)",
            evp_fmt_us(p, sizeof p, period, pu), evp_fmt_unit(pu),
            clock_name(in), in->sample_rate_hz);
}

/* Whether the RUNS runs T were sampled at one period of one clock. */
static int one_rate(struct evp_trace *const *t, size_t runs)
{
    const struct evp_trace_info *a = evp_trace_info(t[0]);
    for (size_t i = 1; i < runs; i++) {
        const struct evp_trace_info *b = evp_trace_info(t[i]);
        if (a->sample_period_ns != b->sample_period_ns ||
            strcmp(a->sample_clock, b->sample_clock))
            return 0;
    }
    return 1;
}

/* ", over the samples' effective count, N: ..." when TOTAL periods count
 * as fewer TRIALS (evp_sample_trials), else "". */
static const char *trials_words(char *buf, size_t len, uint64_t total,
                                double trials)
{
    char c[32];
    if (!(trials < (double)total - 0.5))
        return "";
    snprintf(buf, len,
             ", over the samples' effective count, %s: their periods weigh "
             "unevenly",
             evp_num_group(c, sizeof c, (uint64_t)(trials + 0.5)));
    return buf;
}

/* Of several runs, the estimate: line (the shares pooled over the runs'
 * TOTAL periods, WHAT, of SAMPLES samples when known; the intervals over
 * TRIALS) and a note: when the runs were sampled at different rates or
 * clocks. */
static void pooled_lines(FILE *out, struct evp_trace *const *t, size_t runs,
                         uint64_t total, double trials, const char *what,
                         uint64_t samples, int unit)
{
    char c1[32], c2[32], of[64] = "", tw[160];
    if (samples)
        snprintf(of, sizeof of, " (%s samples)",
                 evp_num_group(c2, sizeof c2, samples));
    fprintf(out,
            "%-11sshares are pooled over the %zu runs' %s timer periods%s%s, "
            "with 95%% confidence intervals (Wilson score interval, "
            "binomial%s); an interval covers the sampling error only, not "
            "the sampler's bias (where its signals land) nor how the runs "
            "differ (their est. times' [min - max] shows that)\n",
            "estimate:", runs, evp_num_group(c1, sizeof c1, total), what, of,
            trials_words(tw, sizeof tw, total, trials));
    if (one_rate(t, runs))
        return;
    const char *clock0 = evp_trace_info(t[0])->sample_clock;
    int clocks = 0;
    fprintf(out, "%-11sthe runs were sampled at different rates or clocks (",
            "note:");
    for (size_t i = 0; i < runs; i++) {
        const struct evp_trace_info *ti = evp_trace_info(t[i]);
        fprintf(out, "%s", i ? ", " : "");
        evp_esc_term(out, ti->path, strlen(ti->path), 0);
        fprintf(out, " %.0f Hz of %s", ti->sample_rate_hz, clock_name(ti));
        clocks |= strcmp(ti->sample_clock, clock0) != 0;
    }
    fprintf(out,
            "): the pooled shares weight each run by its timer periods, so "
            "that a run sampled faster weighs more per second%s; each run's "
            "est. time is its own periods x its period\n",
            clocks ? ", and periods of CPU time and of wall-clock time are "
                     "pooled alike"
                   : "");
}

/* Whether TOTAL periods whose samples count as TRIALS (evp_sample_trials)
 * are sparse: the count under half the periods (summary's sparse: line,
 * diff's mark). */
static int sparse(uint64_t total, double trials)
{
    return total && trials < 0.5 * (double)total;
}

/*
 * The sparse: line, when the samples' effective count TRIALS is under
 * half the TOTAL periods they stand for (SAMPLES samples): the timer
 * fired far less often than asked, and the shares stand on that many
 * trials, not on the periods.  The POSIX CPU-time timer is the usual
 * cause (it fires at the kernel's tick whatever the rate), and the line
 * says so where the trace was sampled by it.
 */
static void sparse_line(FILE *out, struct evp_trace *const *t, size_t runs,
                        uint64_t total, double trials, uint64_t samples)
{
    if (!sparse(total, trials))
        return;
    char c1[32], c2[32], c3[32];
    const struct evp_trace_info *in = evp_trace_info(t[0]);
    fprintf(out,
            "%-11sthe samples' effective count, %s, is %.1f%% of the %s timer "
            "periods they stand for",
            "sparse:", evp_num_group(c1, sizeof c1, (uint64_t)(trials + 0.5)),
            100.0 * trials / (double)total,
            evp_num_group(c2, sizeof c2, total));
    if (one_rate(t, runs) && in->sample_rate_hz > 0)
        fprintf(out, " (%s samples: %.0f Hz of %s, for %.0f Hz asked)",
                evp_num_group(c3, sizeof c3, samples),
                in->sample_rate_hz * (double)samples / (double)total,
                clock_name(in), in->sample_rate_hz);
    int posix = 0, throttled = 0;
    for (size_t i = 0; i < runs; i++) {
        const struct evp_trace_info *ti = evp_trace_info(t[i]);
        const char *sampler = evp_trace_meta(t[i], "sample.sampler");
        posix |= sampler && !strncmp(sampler, "timer_create", 12) &&
                 !strcmp(ti->sample_clock, "cpu");
        throttled |= evp_trace_meta(t[i], "sample.throttled") != NULL;
    }
    fprintf(out, ": every share stands on that count, and its interval is "
                 "as wide as that; ");
    if (posix)
        fprintf(out, "the POSIX CPU-time timer (used where the kernel "
                     "refuses perf events, or with "
                     "EVALPROF_SAMPLE_TIMER=posix) fires only at the kernel's "
                     "tick, whatever the rate: a rate at or below the tick, "
                     "or perf events (kernel.perf_event_paranoid), sample as "
                     "asked\n");
    else if (throttled)
        fprintf(out, "the period was raised (throttled:, above)\n");
    else
        fprintf(out, "the signals came late or not at all (a thread that "
                     "blocks signals, a virtual CPU descheduled, a handler "
                     "slower than the period)\n");
}

/* The sampled:, est. time:, missed: and estimate: lines (and of runs
 * sampled at different rates or clocks, a note:); TOTAL and SAMPLES are
 * summed over the runs. */
static void sampled_header(FILE *out, struct evp_trace *const *t,
                           const struct agg *a, size_t runs, uint64_t total,
                           double trials, uint64_t samples, uint64_t *scratch,
                           int unit)
{
    const struct evp_trace_info *in = evp_trace_info(t[0]);
    char c1[32], c2[32], v[48], r[112];
    int same = one_rate(t, runs);
    fprintf(out, "%-11s%s samples standing for %s timer periods",
            "sampled:", evp_num_group(c1, sizeof c1, samples),
            evp_num_group(c2, sizeof c2, total));
    if (runs > 1)
        fprintf(out, " in %zu runs", runs);
    fputs(", ", out);
    if (same)
        period_words(out, in, unit);
    else
        fputs("at different rates or clocks (note: below)", out);
    putc('\n', out);
    struct srow est;
    uint64_t missed = 0, lost = 0;
    for (size_t i = 0; i < runs; i++) {
        scratch[2 * runs + i] = a[i].total;
        missed += evp_trace_info(t[i])->sample_missed;
        lost += evp_trace_info(t[i])->samples_lost;
    }
    srow_set(&est, 0, t, runs, scratch + 2 * runs, 1, scratch);
    int eu = evp_fmt_col_unit(unit, est.c[0].min ? est.c[0].min : est.c[0].est);
    fprintf(out, "%-11s%s %s",
            "est. time:", evp_fmt_us(v, sizeof v, est.c[0].est, eu),
            evp_fmt_unit(eu));
    if (runs > 1) {
        range_cell(r, sizeof r, &est.c[0], eu);
        fprintf(out, " %s", r);
    }
    if (same)
        fprintf(out, " of %s", clock_name(in));
    fprintf(out, runs > 1 ? " per run (periods x period; median [min - max])\n"
                          : " (periods x period)\n");
    fprintf(out,
            "%-11s%s periods missed (counted in the weights), %s "
            "samples lost in full buffers%s\n",
            "missed:", evp_num_group(c1, sizeof c1, missed),
            evp_num_group(c2, sizeof c2, lost),
            runs > 1 ? " (summed over the runs)" : "");
    uint64_t unsampled = 0;
    int peeked = 0; /* the sampler thread's: its own causes */
    for (size_t i = 0; i < runs; i++) {
        const char *un = evp_trace_meta(t[i], "sample.unsampled");
        unsampled += un ? strtoull(un, NULL, 10) : 0;
        peeked |= evp_trace_meta(t[i], "sample.peeks") != NULL;
    }
    if (unsampled)
        fprintf(out,
                "%-11s%s periods in no sample (%s; not in the shares nor in "
                "est. time)%s\n",
                "unsampled:", evp_num_group(c1, sizeof c1, unsampled),
                peeked ? "the sampler thread's walks that faulted or kept "
                         "meeting a frame chain that moved, and a thread's "
                         "periods not yet sampled when it stopped"
                       : "a signal that took none: evalprof's own code "
                         "running, or a frame walk that faulted",
                runs > 1 ? " (summed over the runs)" : "");
    for (size_t i = 0; i < runs; i++) {
        const char *n = evp_trace_meta(t[i], "sample.throttled");
        const char *ns = evp_trace_meta(t[i], "sample.throttled_max_ns");
        if (!n)
            continue;
        fprintf(out, "%-11s", "throttled:");
        if (runs > 1)
            fprintf(out, "run %zu: ", i + 1);
        fprintf(out,
                "the CPU clock's period was raised %s time%s, to %s ns at "
                "most: a signal cost the threads more than the period asked "
                "for (the periods between their samples are missed ones)\n",
                n, strcmp(n, "1") ? "s" : "", ns ? ns : "?");
    }
    char tw[160];
    if (runs > 1) {
        pooled_lines(out, t, runs, total, trials, "", samples, unit);
    } else {
        fprintf(out,
                "%-11sshares are estimated from %s timer periods, with 95%% "
                "confidence intervals (Wilson score interval, binomial%s); an "
                "interval covers the sampling error only, not the sampler's "
                "bias (where its signals land)\n",
                "estimate:", evp_num_group(c1, sizeof c1, total),
                trials_words(tw, sizeof tw, total, trials));
    }
    sparse_line(out, t, runs, total, trials, samples);
    /* blocked samples of the wall clock: taken by the sampler thread, or
     * (EVALPROF_SAMPLE_WALL=timer, older traces) by interrupting them */
    int ticker = 0, timer = 0;
    for (size_t i = 0; i < runs; i++) {
        if (strcmp(evp_trace_info(t[i])->sample_clock, "wall") ||
            !(a[i].cat[EVP_SCAT_GIL_WAIT] || a[i].cat[EVP_SCAT_SYSCALL]))
            continue;
        const char *sampler = evp_trace_meta(t[i], "sample.sampler");
        if (sampler && !strncmp(sampler, "sampler thread", 14))
            ticker = 1;
        else
            timer = 1;
    }
    if (timer)
        fprintf(out,
                "%-11swith the wall clock a sample interrupts a blocked "
                "call (sleep, lock, I/O), and CPython takes the GIL again "
                "before it blocks again: while another thread holds the "
                "GIL, such a thread waits for it at every sample, and its "
                "\"waiting for the GIL\" share can be several times what "
                "it is untraced (README, \"Sampled mode\"); the CPU clock "
                "interrupts no blocked thread\n",
                "bias:");
    else if (ticker)
        fprintf(out,
                "%-11sa thread that stays blocked is sampled without being "
                "interrupted (after it ran Python code, such samples name "
                "its stack but no instruction); one that stays blocked "
                "50 ms past a CPU budget, not waiting for the GIL, is "
                "interrupted once, and CPython then takes the GIL back "
                "before it blocks again, a wait it does not have untraced "
                "(README, \"Sampled mode\")\n",
                "bias:");
    /* the sampler thread's samples (no program counter): read from
     * outside the thread, whose latest stores it may not see yet
     * (docs/EVENTS.md, "The sampler thread"; bench/fidelity) */
    uint64_t nopc = 0;
    for (size_t i = 0; i < runs; i++)
        nopc += a[i].nopc;
    if (nopc)
        fprintf(out,
                "%-11s%.1f%% of the periods were read by the sampler thread, "
                "from outside the thread, which interrupts none: the "
                "instruction and phase a sample names are the thread's as "
                "its stores were seen then, a few instructions late, so "
                "their shares lean toward the instructions before slow "
                "ones (bench/fidelity: 2.2-5.1 points off the run's own "
                "timings, against 0.4-1.3 for a signal's samples); the "
                "function and loop are as a signal's (0.1-0.6); eval loop, "
                "C call and runtime are not told apart (README, \"Sampled "
                "mode\")\n",
                "bias:", total ? 100.0 * (double)nopc / (double)total : 0.0);
    /* an instrumented interpreter's sampled copy stores no phase per
     * instruction (docs/EVENTS.md, "Sampled mode") */
    for (size_t i = 0; i < runs; i++) {
        const char *unseen = evp_trace_meta(t[i], "sample.phases_unseen");
        if (!unseen || !*unseen)
            continue;
        fprintf(out, "%-11sphases not sampled apart (", "note:");
        evp_esc_term(out, unseen, strlen(unseen), 0);
        fprintf(out, "): their time is in the rows of the instructions "
                     "they belong to; exact mode records them\n");
        break;
    }
    /* a stock interpreter that exports no eval function: no sample is
     * marked in it (docs/EVENTS.md, flag in eval) */
    size_t noeval = 0;
    for (size_t i = 0; i < runs; i++) {
        const char *er = evp_trace_meta(t[i], "sample.eval_ranges");
        noeval += er && !strcmp(er, "0");
    }
    if (noeval)
        fprintf(out,
                "%-11sthe interpreter%s exported no _PyEval_EvalFrameDefault "
                "for the sampler to find: no sample is marked in the eval "
                "loop, its time is in \"runtime other (frame)\" and, at a "
                "call instruction, in \"C call\"\n",
                "note:", runs > 1 ? " of some runs" : "");
}

/* Rows from matched rows K: both weight columns (the inclusive one the
 * same as the first for opcodes). */
static void krows_to_srows(const struct krows *k, struct srow *rows,
                           struct evp_trace *const *t, uint64_t *scratch)
{
    for (size_t i = 0; i < k->n; i++) {
        struct srow *r = &rows[i];
        memcpy(r->name, k->r[i].name, sizeof r->name);
        r->cols = k->r[i].cols;
        r->order = k->r[i].order;
        srow_set(r, 0, t, k->runs, k->r[i].w, 2, scratch);
        srow_set(r, 1, t, k->runs, k->r[i].w + 1, 2, scratch);
    }
}

/* The summary of the RUNS sampled traces T (one, or several runs). */
static int summary_sampled(struct evp_trace *const *t, size_t runs, FILE *out,
                           const struct evp_summary_opts *o)
{
    struct agg *a = calloc(runs, sizeof *a);
    uint64_t *scratch = calloc(3 * runs, sizeof *scratch);
    struct krows ops = {.runs = runs}, funcs = {.runs = runs};
    struct srow *rows = NULL;
    size_t done = 0, n = 0;
    int rc = a && scratch ? 0 : -ENOMEM;
    for (; !rc && done < runs; done++)
        if ((rc = agg_compute(t[done], &a[done], o->stream,
                              o->group_specialized)) < 0)
            break;
    if (!rc)
        rc = keyed_ops(&ops, t, a);
    if (!rc)
        rc = keyed_funcs(&funcs, t, a, o->wide_names);
    size_t nrows = EVP_SCAT__COUNT + 33;
    if (ops.n > nrows)
        nrows = ops.n;
    if (funcs.n > nrows)
        nrows = funcs.n;
    if (!rc && !(rows = calloc(nrows, sizeof *rows)))
        rc = -ENOMEM;
    if (rc < 0) {
        fprintf(stderr, "evalprof: out of memory\n");
        goto done;
    }
    uint64_t total = 0, samples = 0, phase0 = 0;
    double w2 = 0;
    for (size_t i = 0; i < runs; i++) {
        total += a[i].total;
        samples += a[i].samples;
        phase0 += a[i].phase[0];
        w2 += a[i].w2;
    }
    double trials = evp_sample_trials(total, w2);
    enum evp_sort sort = o->sort;
    if (runs > 1) {
        evp_view_runs_header(out, t, runs,
                             "sampled runs: periods summed, shares pooled, "
                             "est. times per run as median [min - max]",
                             o->ns);
    } else {
        fprintf(out,
                "reading from %s\n(showing results in 'summary' format, of "
                "a sampled trace)\n\n",
                evp_trace_info(t[0])->path);
        evp_view_header(out, t[0], "", 11, 0, o->ns);
    }
    sampled_header(out, t, a, runs, total, trials, samples, scratch, o->ns);
    fputc('\n', out);

    /* traces whose producer could not tell a blocked thread from the
     * rest have one row for every sample without the GIL */
    int blocked = 1;
    for (size_t i = 0; i < runs; i++)
        blocked &= evp_trace_info(t[i])->sample_blocked;
    /* the JIT's rows beside the eval loop's */
    static const int where_order[EVP_SCAT__COUNT] = {
        EVP_SCAT_EVAL,   EVP_SCAT_JIT,      EVP_SCAT_JIT_CALLED,
        EVP_SCAT_C_CALL, EVP_SCAT_GIL_WAIT, EVP_SCAT_SYSCALL,
        EVP_SCAT_NO_GIL, EVP_SCAT_OTHER,    EVP_SCAT_NO_FRAME,
        EVP_SCAT_NO_PC};
    for (int ci = 0; ci < EVP_SCAT__COUNT; ci++) {
        int c = where_order[ci];
        uint64_t any = 0;
        for (size_t i = 0; i < runs; i++)
            any |= a[i].cat[c];
        if (c == EVP_SCAT_NO_PC && !any)
            continue; /* only the sampler thread's samples have no PC */
        if ((c == EVP_SCAT_JIT || c == EVP_SCAT_JIT_CALLED) && !any &&
            !evp_sample_jit_told(t, runs))
            continue; /* an interpreter without a JIT */
        if (!blocked && (c == EVP_SCAT_GIL_WAIT || c == EVP_SCAT_SYSCALL)) {
            for (size_t i = 0; i < runs; i++) {
                a[i].cat[EVP_SCAT_NO_GIL] += a[i].cat[c];
                a[i].cat[c] = 0;
            }
            continue;
        }
        struct srow *r = &rows[n++];
        r->cols = evp_esc_term_cell(
            r->name, sizeof r->name,
            blocked || c != EVP_SCAT_NO_GIL ? evp_sample_cat_name(c) : "no GIL",
            70);
        srow_agg(r, t, runs, a, offsetof(struct agg, cat[c]), scratch);
        r->order = (uint32_t)ci;
    }
    share_table(out, "where (state of the sampled thread)", rows, n, total,
                trials, 0, o->ns, runs);
    fputc('\n', out);
    if (total > phase0) {
        n = 0;
        memset(rows, 0, nrows * sizeof *rows);
        for (int k = 0; k <= 32; k++) {
            uint64_t any = 0;
            for (size_t i = 0; i < runs; i++)
                any |= a[i].phase[k];
            if (!any)
                continue;
            struct srow *r = &rows[n++];
            r->cols = evp_esc_term_cell(
                r->name, sizeof r->name,
                k ? evp_kind_name((unsigned)k - 1) : "(none reported)", 70);
            srow_agg(r, t, runs, a, offsetof(struct agg, phase[k]), scratch);
            r->order = (uint32_t)k;
        }
        qsort_r(rows, n, sizeof *rows, cmp_srow, &sort);
        share_table(out, "loop phases", rows, n, total, trials, 0, o->ns, runs);
        fputc('\n', out);
    }
    memset(rows, 0, nrows * sizeof *rows);
    krows_to_srows(&ops, rows, t, scratch);
    n = ops.n;
    int none = 0;
    for (size_t i = 0; i < n; i++)
        none |= !strcmp(ops.r[i].key, "(no opcode)");
    qsort_r(rows, n, sizeof *rows, cmp_srow, &sort);
    share_table(out, "ops", rows, n, total, trials, 0, o->ns, runs);
    /* as the exact summary counts: base instructions when folded, else
     * every named opcode (of the first run: all are of one version) */
    unsigned named = evp_trace_nopcodes(t[0]);
    if (!o->group_specialized)
        for (unsigned op = named = 0; op < 65536; op++)
            named += evp_trace_opname(t[0], op) != NULL;
    fprintf(out, " total: %zu/%u\n\n", n - (size_t)none, named);
    counts_table(out, t, a, runs);
    memset(rows, 0, nrows * sizeof *rows);
    krows_to_srows(&funcs, rows, t, scratch);
    fprintf(out, "funcs: %zu seen on the sampled stacks\n", funcs.n);
    if (o->funcs) {
        fputc('\n', out);
        qsort_r(rows, funcs.n, sizeof *rows, cmp_srow, &sort);
        share_table(out,
                    "functions (self: the leaf frame; inclusive: "
                    "anywhere on the stack)",
                    rows, funcs.n, total, trials, 1, o->ns, runs);
        fprintf(out, " total: %zu functions\n", funcs.n);
    }
done:
    free(rows);
    krows_free(&ops);
    krows_free(&funcs);
    for (size_t i = 0; i < done && a; i++)
        agg_free(&a[i]);
    free(a);
    free(scratch);
    return rc;
}

/* ---- summary --lines of several runs ------------------------------------ */

/* One run's (function, line, opcode) rows into K, keyed by the function
 * as several runs match it, the line and the opcode's name. */
struct lines_run {
    struct krows *k;
    struct evp_trace *t;
    struct evp_stats_roots roots;
    size_t run;
};

static int lines_entry(void *ctx, uint32_t func, uint32_t line, unsigned op,
                       uint64_t periods)
{
    struct lines_run *c = ctx;
    char key[1300], fk[1100], nm[128];
    evp_stats_func_rel_key(c->t, &c->roots, func, fk, sizeof fk);
    evp_view_op_name(c->t, op, nm, sizeof nm);
    snprintf(key, sizeof key, "%s\x1f%010" PRIu32 "\x1f%s", fk, line, nm);
    struct krow *d = krow_add(c->k, key);
    if (!d)
        return -ENOMEM;
    d->cols = evp_esc_term_cell(d->name, sizeof d->name, nm, 70);
    d->line = line;
    d->w[2 * c->run] = d->w[2 * c->run + 1] = periods;
    d->order = (uint64_t)c->run << 32 | func;
    return 0;
}

/* Rows K[first .. first + nops) are one line's opcodes; C its periods
 * summed and its est. times across the runs. */
struct lgroup {
    size_t first, nops;
    struct scol c;
};

/* Whether matched rows A and B are of one line (their keys equal up to
 * the opcode's name). */
static int same_line(const struct krow *a, const struct krow *b)
{
    const char *ea = strrchr(a->key, '\x1f'), *eb = strrchr(b->key, '\x1f');
    return ea - a->key == eb - b->key &&
           memcmp(a->key, b->key, (size_t)(ea - a->key)) == 0;
}

static int cmp_lgroup(const void *x, const void *y)
{
    const struct lgroup *a = x, *b = y;
    if (a->c.w != b->c.w)
        return a->c.w < b->c.w ? 1 : -1;
    if (a->c.est != b->c.est)
        return a->c.est < b->c.est ? 1 : -1;
    return (a->first > b->first) - (a->first < b->first);
}

static uint64_t krow_sum(const struct krows *k, const struct krow *r)
{
    uint64_t s = 0;
    for (size_t i = 0; i < k->runs; i++)
        s += r->w[2 * i];
    return s;
}

static int cmp_krow_sum(const void *x, const void *y, void *arg)
{
    const struct krow *a = x, *b = y;
    uint64_t sa = krow_sum(arg, a), sb = krow_sum(arg, b);
    if (sa != sb)
        return sa < sb ? 1 : -1;
    return strcmp(a->key, b->key);
}

static void lines_runs_table(FILE *out, struct evp_trace *const *t,
                             struct krows *k, struct lgroup *g, size_t ng,
                             uint64_t all, uint64_t on_line, double trials,
                             int unit)
{
    uint64_t lo = UINT64_MAX;
    int rw = 11;
    for (size_t i = 0; i < ng && i < EVP_LINES_SHOWN; i++) {
        evp_fmt_col_see(&lo, g[i].c.est);
        evp_fmt_col_see(&lo, g[i].c.min);
    }
    unit = evp_fmt_col_unit(unit, lo);
    for (size_t i = 0; i < ng && i < EVP_LINES_SHOWN; i++) {
        char v[112];
        int len = (int)range_cell(v, sizeof v, &g[i].c, unit);
        if (len > rw)
            rw = len;
    }
    char head[32];
    snprintf(head, sizeof head, "time (%s)", evp_fmt_unit(unit));
    char c1[32], c2[32];
    fprintf(out,
            "lines (hottest first, by the timer periods of the samples "
            "whose leaf frame was on them, summed over the runs; share: of "
            "all the runs' %s periods, pooled, as in every view (%s of them "
            "on a line); time: estimated per run, median [min - max]):\n\n",
            evp_num_group(c1, sizeof c1, all),
            evp_num_group(c2, sizeof c2, on_line));
    /* (the µs heading is a byte wider than it shows) */
    fprintf(out, " %-40s %-28s %12s %7s %12s %*s %-*s  %s\n", "file:line",
            "function", "periods", "share", "95% CI",
            unit == EVP_UNIT_US ? 13 : 12, head, rw, "[min - max]", "top ops");
    for (size_t i = 0; i < ng && i < EVP_LINES_SHOWN; i++) {
        struct krow *r = &k->r[g[i].first];
        qsort_r(r, g[i].nops, sizeof *r, cmp_krow_sum, k);
        /* named as the first run that has the line names it */
        const struct krow *nr = r;
        for (size_t j = 1; j < g[i].nops; j++)
            if (r[j].order < nr->order)
                nr = &r[j];
        const struct evp_trace *tr = t[nr->order >> 32];
        uint32_t func = (uint32_t)nr->order;
        const struct evp_func *f = evp_trace_func(tr, func);
        char where[512], c[32], top[256], sh[16], ci[32], tm[48], rg[112];
        evp_lines_where(where, sizeof where, tr, func, nr->line);
        size_t tl = 0;
        top[0] = 0;
        for (size_t j = 0; j < g[i].nops && j < 3; j++) {
            tl += (size_t)snprintf(
                top + tl, sizeof top - tl, "%s%s %.0f%%", j ? ", " : "",
                r[j].name,
                g[i].c.w ? 100.0 * (double)krow_sum(k, &r[j]) / (double)g[i].c.w
                         : 0.0);
            if (tl >= sizeof top)
                break;
        }
        evp_share_cells(g[i].c.w, all, trials, sh, sizeof sh, ci, sizeof ci);
        range_cell(rg, sizeof rg, &g[i].c, unit);
        fprintf(out, " %-40s %-28.28s %12s %7s %12s %12s %-*s  %s\n", where,
                f ? f->name : "?", evp_num_group(c, sizeof c, g[i].c.w), sh, ci,
                evp_fmt_us(tm, sizeof tm, g[i].c.est, unit), rw, rg, top);
    }
    if (ng > EVP_LINES_SHOWN)
        fprintf(out, " ... %zu more lines\n", ng - EVP_LINES_SHOWN);
    fprintf(out, " total: %zu lines\n", ng);
}

int evp_view_lines_runs(struct evp_trace **t, size_t runs, FILE *out,
                        long stream, int unit)
{
    struct krows k = {.runs = runs};
    struct lgroup *g = NULL;
    uint64_t *scratch = calloc(3 * runs, sizeof *scratch);
    int rc = scratch ? 0 : -ENOMEM;
    /* the lines' periods count as the samples' effective count does
     * against all their periods */
    uint64_t all = 0;
    double w2 = 0;
    for (size_t i = 0; i < runs && !rc; i++) {
        struct lines_run c = {.k = &k, .t = t[i], .run = i};
        evp_stats_roots_load(t[i], &c.roots);
        rc = evp_lines_sampled_each(t[i], stream, lines_entry, &c, &all, &w2);
    }
    if (!rc) {
        krows_merge(&k);
        if (k.n && !(g = calloc(k.n, sizeof *g)))
            rc = -ENOMEM;
    }
    if (rc) {
        if (rc == -ENOMEM)
            fprintf(stderr, "evalprof: out of memory\n");
        goto done;
    }
    size_t ng = 0;
    uint64_t grand = 0, *w = scratch + 2 * runs;
    for (size_t i = 0; i < k.n; i++) {
        if (!i || !same_line(&k.r[i - 1], &k.r[i]))
            g[ng++] = (struct lgroup){i, 0, {0, 0, 0, 0}};
        g[ng - 1].nops++;
    }
    for (size_t j = 0; j < ng; j++) {
        struct srow r;
        memset(w, 0, runs * sizeof *w);
        for (size_t o = g[j].first; o < g[j].first + g[j].nops; o++)
            for (size_t i = 0; i < runs; i++)
                w[i] += k.r[o].w[2 * i];
        srow_set(&r, 0, t, runs, w, 1, scratch);
        g[j].c = r.c[0];
        grand += r.c[0].w;
    }
    if (ng)
        qsort(g, ng, sizeof *g, cmp_lgroup);
    evp_view_runs_header(out, t, runs,
                         "sampled runs: periods summed, shares pooled, "
                         "est. times per run as median [min - max]",
                         unit);
    double trials = evp_sample_trials(all, w2);
    pooled_lines(out, t, runs, all, trials, "", 0, unit);
    fputc('\n', out);
    lines_runs_table(out, t, &k, g, ng, all, grand, trials, unit);
done:
    free(g);
    free(scratch);
    krows_free(&k);
    return rc;
}

int evp_view_summary_sampled(struct evp_trace *t, FILE *out,
                             const struct evp_summary_opts *o)
{
    return summary_sampled(&t, 1, out, o);
}

int evp_view_summary_sampled_runs(struct evp_trace **t, size_t n, FILE *out,
                                  const struct evp_summary_opts *o)
{
    return summary_sampled(t, n, out, o);
}

/* ---- diff of two sampled traces ----------------------------------------- */

struct dsort {
    enum evp_sort sort;
    const uint64_t *total; /* each run's periods */
    int incl;
};

static double share_of(uint64_t k, uint64_t n)
{
    return n ? (double)k / (double)n : 0;
}

static int cmp_drow(const void *x, const void *y, void *arg)
{
    const struct krow *a = x, *b = y;
    const struct dsort *s = arg;
    if (s->sort == EVP_SORT_NAME) {
        int c = strcmp(a->name, b->name);
        if (c)
            return c;
    } else {
        const uint64_t *wa = a->w + s->incl, *wb = b->w + s->incl;
        double da = fabs(share_of(wa[2], s->total[1]) -
                         share_of(wa[0], s->total[0])),
               db = fabs(share_of(wb[2], s->total[1]) -
                         share_of(wb[0], s->total[0]));
        if (da != db)
            return da < db ? 1 : -1;
    }
    return (a->order > b->order) - (a->order < b->order);
}

static void diff_table(FILE *out, const char *title, struct krows *k,
                       const uint64_t total[2], const double trials[2],
                       int incl, enum evp_sort sort)
{
    struct dsort ds = {sort, total, incl};
    struct krow *r = k->r;
    size_t n = k->n;
    if (n)
        qsort_r(r, n, sizeof *r, cmp_drow, &ds);
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
        uint64_t k0 = r[i].w[incl], k1 = r[i].w[2 + incl];
        double p0 = share_of(k0, total[0]), p1 = share_of(k1, total[1]), z;
        int sig = evp_two_prop_z(p0, trials[0], p1, trials[1], &z);
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

/* A run's lines in diff's header; TRIALS its samples' effective count
 * (evp_sample_trials), given where it is below the periods, and marked
 * sparse where under half of them (summary's sparse: line says why). */
static void diff_run(FILE *out, const char *label, const struct evp_trace *t,
                     const struct agg *a, double trials)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    char c1[32], c2[32], c3[32], p[48];
    uint64_t period = (uint64_t)(in->sample_period_ns + 0.5);
    int pu = evp_fmt_col_unit(EVP_UNIT_AUTO, period);
    fprintf(out, "%-11s%s\n", label, in->path);
    fprintf(out, "  python:   %s\n", in->executable);
    fprintf(out, "  argv:     %s\n", in->argv);
    fprintf(out,
            "  sampled:  %s samples, %s timer periods of %s %s (%s "
            "clock)",
            evp_num_group(c1, sizeof c1, a->samples),
            evp_num_group(c2, sizeof c2, a->total),
            evp_fmt_us(p, sizeof p, period, pu), evp_fmt_unit(pu),
            *in->sample_clock ? in->sample_clock : "unknown");
    if (trials < (double)a->total - 0.5)
        fprintf(out, ", effective count %s%s",
                evp_num_group(c3, sizeof c3, (uint64_t)(trials + 0.5)),
                sparse(a->total, trials)
                    ? " (sparse: under half the periods; `evalprof "
                      "summary` says why)"
                    : "");
    fputc('\n', out);
}

int evp_view_diff_sampled(struct evp_trace *base, struct evp_trace *new_,
                          FILE *out, const struct evp_diff_opts *o)
{
    struct evp_trace *t[2] = {base, new_};
    struct agg a[2];
    struct krows k = {.runs = 2};
    int rc = agg_compute(base, &a[0], -1, 0);
    if (rc < 0)
        return rc;
    if ((rc = agg_compute(new_, &a[1], -1, 0)) < 0) {
        agg_free(&a[0]);
        return rc;
    }
    uint64_t total[2] = {a[0].total, a[1].total};
    double trials[2] = {evp_sample_trials(a[0].total, a[0].w2),
                        evp_sample_trials(a[1].total, a[1].w2)};
    fprintf(out,
            "reading from %s\nreading from %s\n(showing results in "
            "'diff' format, of two sampled traces)\n\n",
            evp_trace_info(base)->path, evp_trace_info(new_)->path);
    diff_run(out, "base:", base, &a[0], trials[0]);
    diff_run(out, "new:", new_, &a[1], trials[1]);
    fprintf(out, "estimate:  shares of each run's timer periods; change in "
                 "percentage points (pp); * marks a change significant at 95%% "
                 "(two-proportion z-test over each run's samples' effective "
                 "count, which is its periods while every sample stands for "
                 "one, |z| > 1.96), which covers the sampling error only, not "
                 "the samplers' bias\n\n");
    if (!(rc = keyed_ops(&k, t, a)))
        diff_table(out, "ops", &k, total, trials, 0, o->sort);
    krows_free(&k);
    if (!rc && !(rc = keyed_funcs(&k, t, a, o->wide_names))) {
        diff_table(out, "functions (self: the leaf frame)", &k, total, trials,
                   0, o->sort);
        if (o->funcs)
            diff_table(out, "functions (inclusive: anywhere on the stack)", &k,
                       total, trials, 1, o->sort);
    }
    krows_free(&k);
    agg_free(&a[0]);
    agg_free(&a[1]);
    return rc;
}
