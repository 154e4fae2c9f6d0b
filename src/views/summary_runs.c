/*
 * The summary of several runs (`evalprof summary A.evp B.evp ...`): for
 * averaging noisy ones, such as start-up profiles.
 *
 * Every event kind, opcode and (with --funcs) function seen in any run is
 * one row: its count summed over the runs, and its total time in each run
 * reduced to the median and the range [min-max] across them (a run without
 * the row counts as 0).  Functions are matched across runs as diff matches
 * them (evp_stats_func_rel_key).  Rows sort by summed count, or with
 * --sort total/elapsed by median time, or by name.  Sampled runs are
 * summarised by the sampled summary (summary.c) and lines (lines.c),
 * their periods pooled.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "views.h"

struct rrow {
    char key[1100], name[1100];
    uint64_t count, med, min, max;
    uint64_t *total; /* per run */
    uint64_t first;
};

static int cmp_key(const void *x, const void *y)
{
    const struct rrow *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->first > b->first) - (a->first < b->first);
}

/* For qsort_r: ARG points to the enum evp_sort. */
static int cmp_show(const void *x, const void *y, void *arg)
{
    const struct rrow *a = x, *b = y;
    enum evp_sort sort_by = *(const enum evp_sort *)arg;
    if (sort_by == EVP_SORT_NAME) {
        int c = strcmp(a->name, b->name);
        if (c)
            return c;
    } else {
        uint64_t va = sort_by == EVP_SORT_COUNT ? a->count : a->med,
                 vb = sort_by == EVP_SORT_COUNT ? b->count : b->med;
        if (va != vb)
            return va < vb ? 1 : -1;
    }
    return (a->first > b->first) - (a->first < b->first);
}

/* Median and range of row R's times over N runs; SCRATCH has N slots. */
static void reduce(struct rrow *r, size_t n, uint64_t *scratch)
{
    evp_runs_reduce(r->total, n, scratch, &r->med, &r->min, &r->max);
}

static void print_table(FILE *out, const char *title, const char *what,
                        struct rrow *rows, size_t nrows, size_t nruns,
                        const struct evp_summary_opts *o)
{
    char a[48], b[48], c[48], cell[4096];
    uint64_t *scratch = malloc(nruns * sizeof *scratch);
    if (!scratch)
        return;
    for (size_t i = 0; i < nrows; i++)
        reduce(&rows[i], nruns, scratch);
    free(scratch);
    enum evp_sort sort_by = o->sort;
    qsort_r(rows, nrows, sizeof *rows, cmp_show, &sort_by);
    /* one unit for the median and its range, from the smallest minimum */
    uint64_t lo = UINT64_MAX;
    for (size_t i = 0; i < nrows; i++)
        evp_fmt_col_see(&lo, rows[i].min ? rows[i].min : rows[i].med);
    int u = evp_fmt_col_unit(o->ns, lo);
    fprintf(out, "%s:\n\n %-40s %12s %14s  %s\n", title, "name", what,
            "median total", "[min - max]");
    for (size_t i = 0; i < nrows; i++) {
        const struct rrow *r = &rows[i];
        evp_view_func_cell(cell, sizeof cell, r->name, o->wide_names ? 0 : 40);
        fprintf(out, " %-40s %12" PRIu64 " %11s %s  [%s - %s]\n", cell,
                r->count, evp_fmt_us(a, sizeof a, r->med, u), evp_fmt_unit(u),
                evp_fmt_us(b, sizeof b, r->min, u),
                evp_fmt_us(c, sizeof c, r->max, u));
    }
    fputc('\n', out);
}

/* Add (KEY, NAME) of run RUN to ROWS, merged later by key. */
static int add(struct rrow **rows, size_t *n, size_t *cap, size_t nruns,
               size_t run, const char *key, const char *name, uint64_t count,
               uint64_t total, uint64_t first)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct rrow *g = realloc(*rows, nc * sizeof *g);
        if (!g)
            return -ENOMEM;
        *rows = g;
        *cap = nc;
    }
    struct rrow *r = &(*rows)[*n];
    memset(r, 0, sizeof *r);
    r->total = calloc(nruns, sizeof *r->total);
    if (!r->total)
        return -ENOMEM;
    (*n)++;
    snprintf(r->key, sizeof r->key, "%s", key);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->count = count;
    r->total[run] = total;
    r->first = ((uint64_t)run << 40) + first;
    return 0;
}

/* One row per key: counts summed, per-run totals side by side. */
static size_t merge(struct rrow *rows, size_t n, size_t nruns)
{
    qsort(rows, n, sizeof *rows, cmp_key);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && strcmp(rows[k - 1].key, rows[i].key) == 0) {
            rows[k - 1].count += rows[i].count;
            for (size_t j = 0; j < nruns; j++)
                rows[k - 1].total[j] += rows[i].total[j];
            free(rows[i].total);
        } else {
            rows[k++] = rows[i];
        }
    }
    return k;
}

static void free_rows(struct rrow *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rows[i].total);
    free(rows);
}

enum table { T_KINDS, T_OPS, T_FUNCS };

static int table(FILE *out, struct evp_trace **t, struct evp_stats *s,
                 size_t nruns, enum table which,
                 const struct evp_summary_opts *o)
{
    struct rrow *rows = NULL;
    size_t n = 0, cap = 0;
    char name[1100], key[1100];
    int rc = 0;
    for (size_t run = 0; run < nruns && rc == 0; run++) {
        if (which == T_FUNCS) {
            for (uint32_t id = 1; id <= s[run].nfuncs && rc == 0; id++) {
                const struct evp_func_stats *fs = &s[run].funcs[id];
                if (!fs->calls && !fs->resumes)
                    continue;
                evp_view_func_key(t[run], id, name, sizeof name);
                evp_stats_func_rel_key(t[run], &s[run].roots, id, key,
                                       sizeof key);
                rc = add(&rows, &n, &cap, nruns, run, key, name,
                         fs->calls + fs->resumes, fs->incl_ns, id);
            }
            continue;
        }
        for (unsigned k = 0; k < EVP_STATS_KEYS && rc == 0; k++) {
            const uint64_t *cnt =
                which == T_KINDS ? s[run].kind_count : s[run].op_count;
            if (!cnt[k])
                continue;
            if (which == T_KINDS)
                snprintf(name, sizeof name, "%s", evp_kind_name(k));
            else
                evp_view_op_name(t[run], k, name, sizeof name);
            rc = add(
                &rows, &n, &cap, nruns, run, name, name, cnt[k],
                which == T_KINDS ? s[run].kind_total[k] : s[run].op_total[k],
                which == T_KINDS ? s[run].kind_first[k] : s[run].op_first[k]);
        }
    }
    if (rc == 0 && n) {
        n = merge(rows, n, nruns);
        print_table(out,
                    which == T_KINDS ? "events"
                    : which == T_OPS ? "ops"
                                     : "functions (inclusive time)",
                    which == T_FUNCS ? "calls" : "count", rows, n, nruns, o);
    }
    free_rows(rows, n);
    return rc;
}

int evp_view_summary_runs(struct evp_trace **t, size_t n, FILE *out,
                          const struct evp_summary_opts *o)
{
    if (evp_sampled_only(t[0]))
        return o->lines
                   ? evp_view_lines_runs(t, n, out, o->stream, o->ns, o->diag)
                   : evp_summary_sampled(t, n, out, o);
    struct evp_stats *s = calloc(n, sizeof *s);
    size_t done = 0;
    int rc = s ? 0 : -ENOMEM;
    for (; rc == 0 && done < n; done++)
        if ((rc = evp_stats_compute(t[done], &s[done], o->compensate, o->stream,
                                    o->funcs)) < 0)
            break;
    if (rc == 0) {
        evp_view_runs_header(out, t, n,
                             "runs: counts summed, times as median [min - max]",
                             o->ns);
        if (o->compensate)
            fputs("(recorder cost per event subtracted where measured)\n", out);
        fputc('\n', out);
        rc = table(out, t, s, n, T_KINDS, o);
        if (rc == 0)
            rc = table(out, t, s, n, T_OPS, o);
        if (rc == 0 && o->funcs)
            rc = table(out, t, s, n, T_FUNCS, o);
    }
    for (size_t i = 0; i < done && s; i++)
        evp_stats_free(&s[i]);
    free(s);
    return rc;
}
