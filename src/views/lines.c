/*
 * Lines: where in a function its ops ran.  A trace recorded with --lines
 * has op at events (the replay gives them as ops with the instruction's
 * code unit, evp_event.unit) and, per function, its line table in the
 * metadata ("lines.ID": "unit:line,..." for each range's first unit,
 * docs/FORMAT.md).  This file maps units to lines and prints
 * `summary --lines`, the hottest lines with the ops that ran on them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "num.h"
#include "views.h"

struct lmap {
    uint32_t n;
    uint32_t *unit; /* ascending first units of the ranges */
    uint32_t *line; /* the line of each range, 0 for none */
};

struct evp_lines {
    const struct evp_trace *t;
    uint32_t nfuncs;
    struct lmap *m;        /* by function id */
    unsigned char *parsed; /* by function id */
};

/* Parse "unit:line,..." into M; a malformed table is no table. */
static void parse_map(struct lmap *m, const char *s)
{
    uint32_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    m->unit = malloc(cap * sizeof *m->unit);
    m->line = malloc(cap * sizeof *m->line);
    if (!m->unit || !m->line)
        goto bad;
    while (*s) {
        char *end;
        unsigned long u = strtoul(s, &end, 10);
        if (end == s || *end != ':')
            goto bad;
        s = end + 1;
        unsigned long l = strtoul(s, &end, 10);
        if (end == s || (*end && *end != ',') || u > UINT32_MAX ||
            l > UINT32_MAX || m->n >= cap || (m->n && u <= m->unit[m->n - 1]))
            goto bad;
        m->unit[m->n] = (uint32_t)u;
        m->line[m->n++] = (uint32_t)l;
        s = *end ? end + 1 : end;
    }
    return;
bad:
    free(m->unit);
    free(m->line);
    memset(m, 0, sizeof *m);
}

struct evp_lines *evp_lines_open(const struct evp_trace *t)
{
    struct evp_lines *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->t = t;
    l->nfuncs = evp_trace_nfuncs(t);
    l->m = calloc((size_t)l->nfuncs + 1, sizeof *l->m);
    l->parsed = calloc((size_t)l->nfuncs + 1, 1);
    if (!l->m || !l->parsed) {
        evp_lines_close(l);
        return NULL;
    }
    return l;
}

void evp_lines_close(struct evp_lines *l)
{
    if (!l)
        return;
    if (l->m)
        for (uint32_t i = 0; i <= l->nfuncs; i++) {
            free(l->m[i].unit);
            free(l->m[i].line);
        }
    free(l->m);
    free(l->parsed);
    free(l);
}

int evp_lines_present(const struct evp_trace *t)
{
    return (evp_trace_info(t)->can_emit & EVP_KIND_BIT(EVP_EV_OP_AT)) != 0;
}

uint32_t evp_lines_line(struct evp_lines *l, uint32_t func, uint32_t at)
{
    if (!at || !func || func > l->nfuncs)
        return 0;
    struct lmap *m = &l->m[func];
    if (!l->parsed[func]) {
        l->parsed[func] = 1;
        char key[32];
        snprintf(key, sizeof key, "lines.%" PRIu32, func);
        const char *v = evp_trace_meta(l->t, key);
        if (v)
            parse_map(m, v);
    }
    /* The last range starting at or before the unit. */
    uint32_t unit = at - 1, lo = 0, hi = m->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->unit[mid] <= unit)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? m->line[lo - 1] : 0;
}

/* ---- summary --lines ---------------------------------------------- */

/* One (function, line, opcode) the ops ran on. */
struct lop {
    uint32_t func, line;
    uint16_t op;
    uint64_t count, total;
};

struct lacc {
    struct evp_trace *t;
    long stream;
    struct evp_lines *lines;
    struct evp_itab tab;
    struct lop *v;
    size_t n, cap;
    int oom;
    uint64_t periods; /* sampled: every kept sample's, on a line or not */
    double w2;        /* and their weights squared */
};

struct lkey {
    const struct lacc *a;
    uint32_t func, line;
    uint16_t op;
};

static int same_lop(const void *ctx, uint32_t id)
{
    const struct lkey *k = ctx;
    const struct lop *r = &k->a->v[id];
    return r->func == k->func && r->line == k->line && r->op == k->op;
}

/* COUNT ops (or timer periods) of OP taking TOTAL ns at unit AT (+ 1) of
 * FUNC, into their line's row. */
static int lop_add(struct lacc *a, uint32_t func, uint32_t at, uint16_t op,
                   uint64_t count, uint64_t total)
{
    struct lkey k = {a, func, evp_lines_line(a->lines, func, at), op};
    uint64_t h =
        evp_itab_hash_u64(((uint64_t)k.func << 32 | k.line) * 0x10001u + k.op);
    uint32_t id = evp_itab_find(&a->tab, h, same_lop, &k);
    if (id == EVP_ITAB_NONE) {
        if (evp_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v, 256) <
                0 ||
            evp_itab_put(&a->tab, h, (uint32_t)a->n) < 0) {
            a->oom = 1;
            return -ENOMEM;
        }
        id = (uint32_t)a->n++;
        a->v[id] = (struct lop){k.func, k.line, k.op, 0, 0};
    }
    a->v[id].count += count;
    a->v[id].total += total;
    return 0;
}

static int lines_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct lacc *a = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        if (e->kind == EVP_EV_OP && e->unit &&
            lop_add(a, e->func, e->unit, e->aux, 1, e->elapsed) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Samples of a sampled trace: each its leaf frame's line, its weight in
 * periods and their estimated time (the samples with no unit or no
 * opcode have no line: they are left out, as ops without offsets are). */
static int lines_samples(void *ctx, const struct evp_sample *smp, size_t n)
{
    struct lacc *a = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_sample *s = &smp[i];
        int op = evp_sample_opcode(s->state);
        a->periods += s->weight;
        a->w2 += (double)s->weight * (double)s->weight;
        /* in JIT code the frame's instruction pointer may lag: no line */
        if (!s->depth || !s->unit || op < 0 || (s->state & EVP_SAMPLE_IN_JIT))
            continue;
        if (lop_add(a, s->func[s->depth - 1], s->unit, (uint16_t)op, s->weight,
                    evp_sample_ns(a->t, s->weight)) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int cmp_lop(const void *x, const void *y)
{
    const struct lop *a = x, *b = y;
    if (a->func != b->func)
        return a->func < b->func ? -1 : 1;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return a->op < b->op ? -1 : a->op > b->op;
}

/* A line's row: its ops are V[first .. first + nops), hottest first. */
struct lrow {
    size_t first, nops;
    uint64_t count, total;
};

static int cmp_lrow(const void *x, const void *y)
{
    const struct lrow *a = x, *b = y;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

void evp_lines_where(char *buf, size_t len, const struct evp_trace *t,
                     uint32_t func, uint32_t line)
{
    const struct evp_func *f = evp_trace_func(t, func);
    const char *file = f && *f->file ? f->file : "?", *cut = "";
    size_t fl = strlen(file);
    if (fl > 32) {
        file += fl - 29;
        cut = "...";
    }
    if (line)
        snprintf(buf, len, "%s%s:%" PRIu32, cut, file, line);
    else
        snprintf(buf, len, "%s%s:?", cut, file);
}

static void print_rows(FILE *out, const struct evp_trace *t,
                       const struct lacc *a, const struct lrow *rows,
                       size_t nrows, uint64_t grand, int unit, int sampled)
{
    uint64_t lo = UINT64_MAX, periods = 0;
    for (size_t i = 0; i < nrows && i < EVP_LINES_SHOWN; i++)
        evp_fmt_col_see(&lo, rows[i].total);
    for (size_t i = 0; i < nrows; i++)
        periods += rows[i].count;
    unit = evp_fmt_col_unit(unit, lo);
    char head[32], c1[32], c2[32], c3[32];
    snprintf(head, sizeof head, "time (%s)", evp_fmt_unit(unit));
    /* a sampled trace's share is of all its periods, as in every view
     * (the flame graph's, the other tables'), with its 95% interval over
     * the samples' effective count (evp_share_cells) */
    double trials = sampled ? evp_sample_trials(a->periods, a->w2) : 0;
    if (sampled) {
        fprintf(out,
                "lines (hottest first, by the estimated time of the "
                "samples whose leaf frame was on them; periods: the "
                "timer periods they stand for; share: of all the %s "
                "periods, as in every view (%s of them on a line), with "
                "its 95%% confidence interval (Wilson score interval, "
                "binomial",
                evp_num_group(c1, sizeof c1, a->periods),
                evp_num_group(c3, sizeof c3, periods));
        if (trials < (double)a->periods - 0.5)
            fprintf(out, ", over the samples' effective count, %s",
                    evp_num_group(c2, sizeof c2, (uint64_t)(trials + 0.5)));
        fprintf(out, "), which covers the sampling error only, not the "
                     "sampler's bias):\n\n");
        fprintf(out, " %-40s %-28s %*s %7s %12s %12s  %s\n", "file:line",
                "function", unit == EVP_UNIT_US ? 13 : 12, head, "share",
                "95% CI", "periods", "top ops");
    } else {
        fprintf(out, "lines (hottest first, by time in their ops):\n\n");
        /* (the µs heading is a byte wider than it shows) */
        fprintf(out, " %-40s %-28s %*s %6s %12s  %s\n", "file:line", "function",
                unit == EVP_UNIT_US ? 13 : 12, head, "%", "count", "top ops");
    }
    for (size_t i = 0; i < nrows && i < EVP_LINES_SHOWN; i++) {
        const struct lrow *r = &rows[i];
        const struct lop *o = &a->v[r->first];
        const struct evp_func *f = evp_trace_func(t, o->func);
        char where[512], c[32], top[256], nm[128];
        evp_lines_where(where, sizeof where, t, o->func, o->line);
        size_t tl = 0;
        top[0] = 0;
        for (size_t j = 0; j < r->nops && j < 3; j++) {
            evp_view_op_name(t, o[j].op, nm, sizeof nm);
            tl += (size_t)snprintf(
                top + tl, sizeof top - tl, "%s%s %.0f%%", j ? ", " : "", nm,
                r->total ? 100.0 * (double)o[j].total / (double)r->total : 0.0);
            if (tl >= sizeof top)
                break;
        }
        char tm[48];
        evp_fmt_us(tm, sizeof tm, r->total, unit);
        if (sampled) {
            char sh[16], ci[32];
            evp_share_cells(r->count, a->periods, trials, sh, sizeof sh, ci,
                            sizeof ci);
            fprintf(out, " %-40s %-28.28s %12s %7s %12s %12s  %s\n", where,
                    f ? f->name : "?", tm, sh, ci,
                    evp_num_group(c, sizeof c, r->count), top);
        } else {
            fprintf(out, " %-40s %-28.28s %12s %5.1f%% %12s  %s\n", where,
                    f ? f->name : "?", tm,
                    grand ? 100.0 * (double)r->total / (double)grand : 0.0,
                    evp_num_group(c, sizeof c, r->count), top);
        }
    }
    if (nrows > EVP_LINES_SHOWN)
        fprintf(out, " ... %zu more lines\n", nrows - EVP_LINES_SHOWN);
    fprintf(out, " total: %zu lines\n", nrows);
}

/* Some function of T has a line table (a sampled trace's samples carry
 * their leaf's code unit; the table maps it). */
static int lines_recorded(const struct evp_trace *t)
{
    size_t n = evp_trace_meta_count(t);
    for (size_t i = 0; i < n; i++) {
        const char *k, *v;
        if (evp_trace_meta_at(t, i, &k, &v) == 0 && !strncmp(k, "lines.", 6))
            return 1;
    }
    return 0;
}

/* No line table in T: one line saying so, -EINVAL. */
static int lines_refused(const struct evp_trace *t)
{
    fprintf(stderr,
            "evalprof: summary --lines: %s has no instruction "
            "offsets (record it with --lines)\n",
            evp_trace_info(t)->path);
    return -EINVAL;
}

/* T's ops (or samples) by function, line and opcode into A, sorted by
 * cmp_lop.  0 or a negative errno (out of memory said); the caller
 * frees A with lacc_free. */
static int lines_collect(struct evp_trace *t, struct lacc *a, int compensate,
                         long stream)
{
    int sampled = evp_sampled_only(t);
    *a = (struct lacc){.t = t, .stream = stream, .lines = evp_lines_open(t)};
    int rc = a->lines ? 0 : -ENOMEM;
    if (!rc) {
        struct evp_replay_opts ro = {.compensate = compensate,
                                     .stream = stream};
        struct evp_replay_ops ops = {.events = lines_events};
        if (sampled)
            ops = (struct evp_replay_ops){.samples = lines_samples};
        rc = evp_replay(t, &ro, &ops, a);
    }
    if (!rc && a->n) /* (no ops at all: a->v is NULL) */
        qsort(a->v, a->n, sizeof *a->v, cmp_lop);
    if (rc == -ENOMEM || a->oom)
        fprintf(stderr, "evalprof: out of memory\n");
    return rc;
}

static void lacc_free(struct lacc *a)
{
    free(a->v);
    evp_itab_free(&a->tab);
    evp_lines_close(a->lines);
}

int evp_lines_sampled_each(struct evp_trace *t, long stream,
                           int (*fn)(void *ctx, uint32_t func, uint32_t line,
                                     unsigned op, uint64_t periods),
                           void *ctx, uint64_t *periods, double *w2)
{
    if (!lines_recorded(t))
        return lines_refused(t);
    struct lacc a;
    int rc = lines_collect(t, &a, 0, stream);
    *periods += a.periods;
    *w2 += a.w2;
    for (size_t i = 0; i < a.n && !rc; i++)
        rc = fn(ctx, a.v[i].func, a.v[i].line, a.v[i].op, a.v[i].count);
    lacc_free(&a);
    return rc;
}

int evp_view_lines_table(struct evp_trace *t, FILE *out, int compensate,
                         long stream, int unit)
{
    int sampled = evp_sampled_only(t);
    if (sampled ? !lines_recorded(t) : !evp_lines_present(t))
        return lines_refused(t);
    struct lacc a;
    struct lrow *rows = NULL;
    int rc = lines_collect(t, &a, compensate, stream);
    if (!rc && a.n && !(rows = calloc(a.n, sizeof *rows))) {
        fprintf(stderr, "evalprof: out of memory\n");
        rc = -ENOMEM;
    }
    if (!rc) {
        size_t nrows = 0;
        uint64_t grand = 0;
        for (size_t i = 0; i < a.n; i++) {
            if (!i || a.v[i].func != a.v[i - 1].func ||
                a.v[i].line != a.v[i - 1].line)
                rows[nrows++] = (struct lrow){i, 0, 0, 0};
            struct lrow *r = &rows[nrows - 1];
            r->nops++;
            r->count += a.v[i].count;
            r->total += a.v[i].total;
            grand += a.v[i].total;
        }
        if (nrows)
            qsort(rows, nrows, sizeof *rows, cmp_lrow);
        print_rows(out, t, &a, rows, nrows, grand, unit, sampled);
    }
    free(rows);
    lacc_free(&a);
    return rc;
}
