/*
 * Lines: where in a function its ops ran.  A trace recorded with --lines
 * has op at events (the replay gives them as ops with the instruction's
 * code unit, evp_event.unit) and, per function, its line table in the
 * metadata ("lines.ID": "unit:line,..." for each range's first unit,
 * docs/FORMAT.md).  This file maps units to lines and prints
 * `summary --lines`, the hottest lines with the ops that ran on them: of
 * a trace of events by their ops' time, of a sampled trace by the timer
 * periods of the samples whose leaf frame was on them (a share of all
 * the periods with its interval, as in every sampled view), and of
 * several sampled runs with their periods pooled.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "num.h"
#include "stats.h"
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
        if (!s->depth || !s->unit || op < 0 ||
            !evp_sample_ip_current(a->t, s->state))
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
static int lines_refused(const struct evp_trace *t, struct evp_diag *d)
{
    evp_diag_fail(d,
                  "summary --lines: %s has no instruction offsets (record "
                  "it with --lines)",
                  evp_trace_info(t)->path);
    return -EINVAL;
}

/* T's ops (or samples) by function, line and opcode into A, sorted by
 * cmp_lop.  0 or a negative errno (out of memory said); the caller
 * frees A with lacc_free. */
static int lines_collect(struct evp_trace *t, struct lacc *a, int compensate,
                         long stream, struct evp_diag *d)
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
        evp_diag_fail(d, "out of memory");
    return rc;
}

static void lacc_free(struct lacc *a)
{
    free(a->v);
    evp_itab_free(&a->tab);
    evp_lines_close(a->lines);
}

/* Each (function, line, opcode) that the samples of sampled trace T
 * (stream index STREAM, -1 all) had as their leaf, with the timer
 * periods they stand for, to FN (stopping at its nonzero return, which
 * is returned); *PERIODS and *W2 gain all those samples' periods, on a
 * line or not, and their weights squared (evp_sample_trials).  A trace
 * without line tables is refused in one line, -EINVAL. */
static int lines_sampled_each(struct evp_trace *t, long stream,
                              int (*fn)(void *ctx, uint32_t func, uint32_t line,
                                        unsigned op, uint64_t periods),
                              void *ctx, uint64_t *periods, double *w2,
                              struct evp_diag *d)
{
    if (!lines_recorded(t))
        return lines_refused(t, d);
    struct lacc a;
    int rc = lines_collect(t, &a, 0, stream, d);
    *periods += a.periods;
    *w2 += a.w2;
    for (size_t i = 0; i < a.n && !rc; i++)
        rc = fn(ctx, a.v[i].func, a.v[i].line, a.v[i].op, a.v[i].count);
    lacc_free(&a);
    return rc;
}

int evp_view_lines_table(struct evp_trace *t, FILE *out, int compensate,
                         long stream, int unit, struct evp_diag *d)
{
    int sampled = evp_sampled_only(t);
    if (sampled ? !lines_recorded(t) : !evp_lines_present(t))
        return lines_refused(t, d);
    struct lacc a;
    struct lrow *rows = NULL;
    int rc = lines_collect(t, &a, compensate, stream, d);
    if (!rc && a.n && !(rows = calloc(a.n, sizeof *rows))) {
        evp_diag_fail(d, "out of memory");
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

/* ---- summary --lines of several sampled runs ----------------------------- */

/* ---- summary --lines of several runs ------------------------------------ */

/* One run's (function, line, opcode) rows into K, keyed by the function
 * as several runs match it, the line and the opcode's name. */
struct lines_run {
    struct evp_match *k;
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
    struct evp_match_row *d = evp_match_add(c->k, key);
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
    struct evp_sample_est c;
};

/* Whether matched rows A and B are of one line (their keys equal up to
 * the opcode's name). */
static int same_line(const struct evp_match_row *a,
                     const struct evp_match_row *b)
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

static uint64_t krow_sum(const struct evp_match *k,
                         const struct evp_match_row *r)
{
    uint64_t s = 0;
    for (size_t i = 0; i < k->runs; i++)
        s += r->w[2 * i];
    return s;
}

static int cmp_krow_sum(const void *x, const void *y, void *arg)
{
    const struct evp_match_row *a = x, *b = y;
    uint64_t sa = krow_sum(arg, a), sb = krow_sum(arg, b);
    if (sa != sb)
        return sa < sb ? 1 : -1;
    return strcmp(a->key, b->key);
}

static void lines_runs_table(FILE *out, struct evp_trace *const *t,
                             struct evp_match *k, struct lgroup *g, size_t ng,
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
        int len = (int)evp_sample_range_cell(v, sizeof v, &g[i].c, unit);
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
        struct evp_match_row *r = &k->r[g[i].first];
        qsort_r(r, g[i].nops, sizeof *r, cmp_krow_sum, k);
        /* named as the first run that has the line names it */
        const struct evp_match_row *nr = r;
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
        evp_sample_range_cell(rg, sizeof rg, &g[i].c, unit);
        fprintf(out, " %-40s %-28.28s %12s %7s %12s %12s %-*s  %s\n", where,
                f ? f->name : "?", evp_num_group(c, sizeof c, g[i].c.w), sh, ci,
                evp_fmt_us(tm, sizeof tm, g[i].c.est, unit), rw, rg, top);
    }
    if (ng > EVP_LINES_SHOWN)
        fprintf(out, " ... %zu more lines\n", ng - EVP_LINES_SHOWN);
    fprintf(out, " total: %zu lines\n", ng);
}

int evp_view_lines_runs(struct evp_trace **t, size_t runs, FILE *out,
                        long stream, int unit, struct evp_diag *d)
{
    struct evp_match k = {.runs = runs};
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
        rc = lines_sampled_each(t[i], stream, lines_entry, &c, &all, &w2, d);
    }
    if (!rc) {
        evp_match_merge(&k);
        if (k.n && !(g = calloc(k.n, sizeof *g)))
            rc = -ENOMEM;
    }
    if (rc) {
        if (rc == -ENOMEM)
            evp_diag_fail(d, "out of memory");
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
        memset(w, 0, runs * sizeof *w);
        for (size_t o = g[j].first; o < g[j].first + g[j].nops; o++)
            for (size_t i = 0; i < runs; i++)
                w[i] += k.r[o].w[2 * i];
        evp_sample_est(&g[j].c, t, runs, w, 1, scratch);
        grand += g[j].c.w;
    }
    if (ng)
        qsort(g, ng, sizeof *g, cmp_lgroup);
    evp_view_runs_header(out, t, runs,
                         "sampled runs: periods summed, shares pooled, "
                         "est. times per run as median [min - max]",
                         unit);
    double trials = evp_sample_trials(all, w2);
    evp_sample_pooled_lines(out, t, runs, all, trials, "", 0);
    fputc('\n', out);
    lines_runs_table(out, t, &k, g, ng, all, grand, trials, unit);
done:
    free(g);
    free(scratch);
    evp_match_free(&k);
    return rc;
}
