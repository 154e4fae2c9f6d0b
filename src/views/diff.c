/*
 * The diff view (`evalprof diff BASE NEW`): two runs side by side.
 *
 * For every event kind, opcode and (with --funcs) function seen in either
 * trace: counts and mean elapsed in each, and the change in total elapsed
 * time, absolute and relative.  Rows are sorted by the size of that change
 * so the phases and instructions that moved the most come first; functions
 * are matched by qualified name and module-relative file, since ids and
 * interpreter prefixes differ between runs.
 *
 * Two sampled traces are compared by their shares: per opcode and
 * function (self, and with --funcs inclusive) each run's share of its
 * timer periods, the change in percentage points and whether it is
 * significant at 95% (a two-proportion z-test, sampled.c).
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "views.h"

struct drow {
    char name[200];
    uint64_t count[2], total[2];
    uint64_t first;
};

static double change(const struct drow *r)
{
    return (double)r->total[1] - (double)r->total[0];
}

static double mean(const struct drow *r, int i)
{
    return r->count[i] ? (double)r->total[i] / (double)r->count[i] : 0;
}

/* For qsort_r: ARG points to the enum evp_sort. */
static int cmp_drow(const void *x, const void *y, void *arg)
{
    const struct drow *a = x, *b = y;
    double da, db;
    switch (*(const enum evp_sort *)arg) {
    case EVP_SORT_NAME:
        return strcmp(a->name, b->name);
    case EVP_SORT_COUNT:
        da = fabs((double)a->count[1] - (double)a->count[0]);
        db = fabs((double)b->count[1] - (double)b->count[0]);
        break;
    case EVP_SORT_ELAPSED:
        da = fabs(mean(a, 1) - mean(a, 0));
        db = fabs(mean(b, 1) - mean(b, 0));
        break;
    default:
        da = fabs(change(a));
        db = fabs(change(b));
        break;
    }
    if (da != db)
        return da < db ? 1 : -1;
    return (a->first > b->first) - (a->first < b->first);
}

/* "+1,234.5 µs" / "-0.3 µs" */
static char *signed_us(char *buf, size_t len, double ns, int in_ns)
{
    char u[48];
    evp_fmt_us(u, sizeof u, (uint64_t)fabs(ns), in_ns);
    snprintf(buf, len, "%s%s %s", ns < 0 ? "-" : "+", u, evp_fmt_unit(in_ns));
    return buf;
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

/* Column widths: as wide as the figures they hold. */
struct dcols {
    int name, count, mean, change;
    int umean, uchange; /* the units of the mean and change columns */
};

/* One row: NAME is R's name escaped for the terminal, NCOLS wide. */
static void print_row(FILE *out, const struct drow *r, const char *name,
                      int ncols, struct dcols w)
{
    char c0[32], c1[32], m0[48], m1[48], d[64], pct[16];
    double ch = change(r);
    if (r->total[0])
        snprintf(pct, sizeof pct, "%+.1f%%", 100.0 * ch / (double)r->total[0]);
    else
        snprintf(pct, sizeof pct, "%s", r->total[1] ? "new" : "");
    fprintf(out, " %s%*s %*s %*s %*s %s %*s %s %*s", name, w.name - ncols, "",
            w.count, evp_num_group(c0, sizeof c0, r->count[0]), w.count,
            evp_num_group(c1, sizeof c1, r->count[1]), w.mean,
            evp_fmt_us_double(m0, sizeof m0, mean(r, 0) / 1000.0, w.umean),
            evp_fmt_unit(w.umean), w.mean,
            evp_fmt_us_double(m1, sizeof m1, mean(r, 1) / 1000.0, w.umean),
            evp_fmt_unit(w.umean), w.change,
            signed_us(d, sizeof d, ch, w.uchange));
    if (*pct)
        fprintf(out, " %8s", pct);
    putc('\n', out);
}

static void print_heading(FILE *out, const char *title, const char *unit,
                          struct dcols w)
{
    fprintf(out, "%s:\n\n", title);
    char b[32], nw[32];
    snprintf(b, sizeof b, "base %s", unit);
    snprintf(nw, sizeof nw, "new %s", unit);
    int uw = 3; /* " µs", " ns" */
    fprintf(out, " %-*s %*s %*s %*s %*s %*s\n", w.name, "name", w.count, b,
            w.count, nw, w.mean + uw, "base mean", w.mean + uw, "new mean",
            w.change, "total change");
    for (int i = 0; i < w.name + 1; i++)
        putc('-', out);
    evp_fmt_dashes(out, w.count);
    evp_fmt_dashes(out, w.count);
    evp_fmt_dashes(out, w.mean + uw);
    evp_fmt_dashes(out, w.mean + uw);
    evp_fmt_dashes(out, w.change);
    evp_fmt_dashes(out, 8);
    putc('\n', out);
}

static void print_rows(FILE *out, const char *title, const char *unit,
                       struct drow *rows, size_t n, int funcs,
                       const struct evp_diff_opts *o)
{
    enum evp_sort sort = o->sort;
    qsort_r(rows, n, sizeof *rows, cmp_drow, &sort);
    /* names escaped for the terminal, a function's cut to 70 columns
     * unless --wide or two that differ would print alike; columns as wide
     * as their figures */
    size_t k = n ? n : 1;
    /* each row's cells in blocks of their own size: a trace may name
     * hundreds of thousands of functions */
    char **cut = calloc(k, sizeof *cut);
    char **whole = funcs ? calloc(k, sizeof *whole) : NULL;
    const char **shown = calloc(k, sizeof *shown);
    const char **full = calloc(k, sizeof *full);
    int *cols = calloc(k, sizeof *cols),
        *fullcols = calloc(k, sizeof *fullcols);
    int ok = cut && shown && full && cols && fullcols && (whole || !funcs);
    char cell[4400];
    for (size_t i = 0; ok && i < n; i++) {
        const char *name = rows[i].name;
        if (!funcs) {
            cols[i] = evp_esc_term_cell(cell, 288, name, 70);
            ok = (cut[i] = strdup(cell)) != NULL;
            full[i] = shown[i] = cut[i], fullcols[i] = cols[i];
            continue;
        }
        fullcols[i] = evp_view_func_cell(cell, sizeof cell, name, 0);
        ok = (whole[i] = strdup(cell)) != NULL;
        cols[i] = evp_view_func_cell(cell, 288, name, 70);
        ok = ok && (cut[i] = strdup(cell)) != NULL;
        full[i] = whole[i];
        shown[i] = cut[i];
        if (o->wide_names || cols[i] == fullcols[i])
            shown[i] = full[i], cols[i] = fullcols[i];
    }
    if (!ok) {
        fprintf(out, "%s: (out of memory)\n\n", title);
        n = 0;
    }
    if (funcs)
        evp_view_cells_unique(n, shown, cols, full, fullcols);
    /* one unit for both means, so that they compare at a glance */
    uint64_t lo_mean = UINT64_MAX, lo_change = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < 2; j++)
            evp_fmt_col_see(&lo_mean, (uint64_t)mean(&rows[i], j));
        evp_fmt_col_see(&lo_change, (uint64_t)fabs(change(&rows[i])));
    }
    struct dcols w = {26,
                      12,
                      11,
                      16,
                      evp_fmt_col_unit(o->ns, lo_mean),
                      evp_fmt_col_unit(o->ns, lo_change)};
    for (size_t i = 0; i < n; i++) {
        const struct drow *r = &rows[i];
        char c[32], m[48], d[64];
        w.name = max_int(w.name, cols[i] + 1);
        for (int j = 0; j < 2; j++) {
            w.count = max_int(
                w.count, (int)strlen(evp_num_group(c, sizeof c, r->count[j])));
            w.mean = max_int(w.mean,
                             (int)strlen(evp_fmt_us_double(
                                 m, sizeof m, mean(r, j) / 1000.0, w.umean)));
        }
        w.change =
            max_int(w.change,
                    (int)strlen(signed_us(d, sizeof d, change(r), w.uchange)));
    }
    if (ok) {
        print_heading(out, title, unit, w);
        for (size_t i = 0; i < n; i++)
            print_row(out, &rows[i], shown[i], cols[i], w);
        fputc('\n', out);
    }
    for (size_t i = 0; i < k; i++) {
        free(cut ? cut[i] : NULL);
        free(whole ? whole[i] : NULL);
    }
    free(cut);
    free(whole);
    free(shown);
    free(full);
    free(cols);
    free(fullcols);
}

/* Function rows: matched by name and file across the two traces. */
static struct drow *func_rows(struct evp_trace *t[2], struct evp_stats s[2],
                              size_t *nrows)
{
    struct evp_func_match *m;
    size_t n;
    if (evp_stats_match_funcs(t, s, &m, &n) < 0)
        return NULL;
    struct drow *rows = calloc(n ? n : 1, sizeof *rows);
    for (size_t i = 0; rows && i < n; i++) {
        /* matched on the whole key, shown cut as before */
        size_t l = strnlen(m[i].name, sizeof rows[i].name - 1);
        memcpy(rows[i].name, m[i].name, l);
        for (int side = 0; side < 2; side++) {
            rows[i].count[side] = m[i].calls[side];
            rows[i].total[side] = m[i].incl[side];
        }
        rows[i].first = m[i].first;
    }
    evp_stats_match_funcs_free(m, n);
    *nrows = n;
    return rows;
}

/* One trace's block of the header; returns its elapsed time. */
static uint64_t trace_header(FILE *out, const struct evp_trace *t,
                             const char *label, int in_ns)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    uint64_t end = evp_trace_end_ns(t);
    uint64_t el = end > in->start_ns ? end - in->start_ns : 0;
    char note[256], us[48];
    fprintf(out, "%-11s%s\n", label, in->path);
    /* what the trace says is escaped, as in the other headers */
    fputs("  python:   ", out);
    evp_view_python(out, in);
    fputs("\n  argv:     ", out);
    evp_esc_term(out, in->argv, strlen(in->argv), 0);
    putc('\n', out);
    if (*evp_view_producer_note(t, note, sizeof note)) {
        fputs("  producer: ", out);
        evp_esc_term(out, note, strlen(note), 0);
        putc('\n', out);
    }
    fprintf(out, "  elapsed:  %s %s\n", evp_fmt_us(us, sizeof us, el, in_ns),
            evp_fmt_unit(in_ns));
    return el;
}

static void header(FILE *out, struct evp_trace *t[2],
                   const struct evp_diff_opts *o)
{
    fprintf(out,
            "reading from %s\nreading from %s\n(showing results in "
            "'diff' format)\n\n",
            evp_trace_info(t[0])->path, evp_trace_info(t[1])->path);
    uint64_t el[2];
    for (int i = 0; i < 2; i++)
        el[i] = trace_header(out, t[i], i ? "new:" : "base:", o->ns);
    if (el[0])
        fprintf(out, "change:    %+.1f%% elapsed\n",
                100.0 * ((double)el[1] - (double)el[0]) / (double)el[0]);
    if (o->compensate)
        fputs("(recorder cost per event subtracted where measured)\n", out);
    fputc('\n', out);
}

/* Rows of the kinds seen in either trace (ROWS has room for
 * EVP_STATS_KEYS, untouched beyond the rows filled). */
static size_t kind_rows(const struct evp_stats s[2], struct drow *rows)
{
    size_t n = 0;
    for (unsigned k = 0; k < EVP_STATS_KEYS; k++) {
        if (!s[0].kind_count[k] && !s[1].kind_count[k])
            continue;
        struct drow *r = &rows[n++];
        memset(r, 0, sizeof *r); /* the rows used only: 15 MB for all */
        snprintf(r->name, sizeof r->name, "%s", evp_kind_name(k));
        for (int i = 0; i < 2; i++) {
            r->count[i] = s[i].kind_count[k];
            r->total[i] = s[i].kind_total[k];
        }
        r->first = s[0].kind_count[k] ? s[0].kind_first[k]
                                      : (1u << 20) + s[1].kind_first[k];
    }
    return n;
}

/* Rows of the opcodes seen in either trace, matched by name (at most
 * EVP_STATS_KEYS, as ROWS holds). */
/* How opcodes are named for BASE and NEW (evp_stats_match_ops' FAMILY):
 * as across versions when the two are of different CPython versions
 * (renamed instructions matched), their families with GROUP. */
static int op_family(struct evp_trace *const *t, int group)
{
    const char *a = evp_trace_meta(t[0], "python.version");
    const char *b = evp_trace_meta(t[1], "python.version");
    unsigned am = 0, an = 0, bm = 0, bn = 0;
    int apart = a && b && sscanf(a, "%u.%u", &am, &an) == 2 &&
                sscanf(b, "%u.%u", &bm, &bn) == 2 && (am != bm || an != bn);
    return group ? 2 : apart;
}

static long op_rows(struct evp_trace *t[2], const struct evp_stats s[2],
                    int family, struct drow *rows)
{
    struct evp_op_match *m;
    size_t n;
    if (evp_stats_match_ops(t, s, family, &m, &n) < 0)
        return -ENOMEM;
    if (n > EVP_STATS_KEYS)
        n = EVP_STATS_KEYS;
    for (size_t j = 0; j < n; j++) {
        struct drow *r = &rows[j];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", m[j].name);
        memcpy(r->count, m[j].count, sizeof r->count);
        memcpy(r->total, m[j].total, sizeof r->total);
        r->first = m[j].first;
    }
    free(m);
    return (long)n;
}

static int print_diff(FILE *out, struct evp_trace *t[2], struct evp_stats s[2],
                      struct drow *rows, const struct evp_diff_opts *o)
{
    header(out, t, o);
    size_t n = kind_rows(s, rows);
    print_rows(out, "events", "count", rows, n, 0, o);
    int family = op_family(t, o->group_specialized);
    long nops = op_rows(t, s, family, rows);
    if (nops < 0)
        return (int)nops;
    n = (size_t)nops;
    if (n)
        print_rows(out, "ops", "count", rows, n, 0, o);
    const char *va = evp_trace_info(t[0])->python_version,
               *vb = evp_trace_info(t[1])->python_version;
    if (n && strcmp(va, vb) != 0)
        fprintf(out,
                "note: the traces come from different interpreter "
                "versions (%s, %s); opcodes are matched by name, a renamed "
                "or merged instruction by its newer name%s.\n\n",
                *va ? va : "unknown", *vb ? vb : "unknown",
                family > 1 ? ", specialized forms folded into their base" : "");
    if (o->funcs) {
        struct drow *fr = func_rows(t, s, &n);
        if (fr) {
            print_rows(out, "functions (inclusive time)", "calls", fr, n, 1, o);
            free(fr);
        }
    }
    return 0;
}

/* ---- two sampled traces -----------------------------------------------------
 */

/* ---- diff of two sampled traces ----------------------------------------- */

struct sdsort {
    enum evp_sort sort;
    const uint64_t *total; /* each run's periods */
    int incl;
};

static double share_of(uint64_t k, uint64_t n)
{
    return n ? (double)k / (double)n : 0;
}

static int cmp_sdrow(const void *x, const void *y, void *arg)
{
    const struct evp_match_row *a = x, *b = y;
    const struct sdsort *s = arg;
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

/* The estimated time of the rows' periods in run i (T[i]): "-" where
 * the run has none.  Into BUF in UNIT. */
static const char *est_cell(char *buf, size_t len, const struct evp_trace *t,
                            uint64_t periods, int unit)
{
    if (!periods)
        return "-";
    char v[40];
    snprintf(buf, len, "%s %s",
             evp_fmt_us(v, sizeof v, evp_sample_ns(t, periods), unit),
             evp_fmt_unit(unit));
    return buf;
}

/* One table of two sampled runs: each row's share, the change in points
 * and its z; then each run's estimated time (periods x period) and the
 * change in it, which says where the new run spent less time, not only a
 * smaller part of it (two runs of one program on two interpreters, or
 * with the JIT and without). */
static void sdiff_table(FILE *out, const char *title, struct evp_match *k,
                        struct evp_trace *const *t, const uint64_t total[2],
                        const double trials[2], int incl, enum evp_sort sort)
{
    struct sdsort ds = {sort, total, incl};
    struct evp_match_row *r = k->r;
    size_t n = k->n;
    if (n)
        qsort_r(r, n, sizeof *r, cmp_sdrow, &ds);
    int w = 26;
    uint64_t lo = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (r[i].cols + 1 > w)
            w = r[i].cols + 1;
        for (int j = 0; j < 2; j++)
            evp_fmt_col_see(&lo, evp_sample_ns(t[j], r[i].w[2 * j + incl]));
    }
    int unit = evp_fmt_col_unit(EVP_UNIT_AUTO, lo);
    fprintf(out, "%s:\n\n", title);
    fprintf(out, " %-*s %10s %10s %12s %7s %13s %13s %15s\n", w, "name",
            "base share", "new share", "change", "z", "base time", "new time",
            "time change");
    int widths[] = {w + 1, 10, 10, 12, 7, 13, 13, 15};
    evp_fmt_rule(out, widths, 8);
    for (size_t i = 0; i < n; i++) {
        uint64_t k0 = r[i].w[incl], k1 = r[i].w[2 + incl];
        double p0 = share_of(k0, total[0]), p1 = share_of(k1, total[1]), z;
        int sig = evp_two_prop_z(p0, trials[0], p1, trials[1], &z);
        char a[16], b[16], c[24], e0[48], e1[48], d[64], v[40];
        snprintf(a, sizeof a, "%.1f%%", 100 * p0);
        snprintf(b, sizeof b, "%.1f%%", 100 * p1);
        snprintf(c, sizeof c, "%+.1f pp %s", 100 * (p1 - p0), sig ? "*" : " ");
        uint64_t n0 = evp_sample_ns(t[0], k0), n1 = evp_sample_ns(t[1], k1);
        snprintf(d, sizeof d, "%s%s %s", n1 >= n0 ? "+" : "-",
                 evp_fmt_us(v, sizeof v, n1 >= n0 ? n1 - n0 : n0 - n1, unit),
                 evp_fmt_unit(unit));
        fprintf(out, " %s%*s %10s %10s %12s %+7.1f %13s %13s %15s\n", r[i].name,
                w - r[i].cols, "", a, b, c, z,
                est_cell(e0, sizeof e0, t[0], k0, unit),
                est_cell(e1, sizeof e1, t[1], k1, unit), d);
    }
    evp_fmt_rule(out, widths, 8);
    fputc('\n', out);
}

/* A run's lines in diff's header; TRIALS its samples' effective count
 * (evp_sample_trials), given where it is below the periods, and marked
 * sparse where under half of them (summary's sparse: line says why). */
static void sdiff_run(FILE *out, const char *label, const struct evp_trace *t,
                      const struct evp_sample_stats *a, double trials)
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
                evp_sample_sparse(a->total, trials)
                    ? " (sparse: under half the periods; `evalprof "
                      "summary` says why)"
                    : "");
    fputc('\n', out);
}

/* The states of summary's where table (the JIT's rows where a producer
 * could tell JIT code), each run's periods in each; -ENOMEM or 0. */
static int where_rows(struct evp_match *k, struct evp_trace *const *t,
                      const struct evp_sample_stats *a)
{
    int jit = evp_sample_jit_told(t, 2);
    /* as summary: one row for every sample without the GIL when a
     * producer could not tell the blocked ones */
    int blocked = evp_trace_info(t[0])->sample_blocked &&
                  evp_trace_info(t[1])->sample_blocked;
    for (int c = 0; c < EVP_SCAT__COUNT; c++) {
        uint64_t any = a[0].cat[c] | a[1].cat[c];
        if (!any && (c == EVP_SCAT_NO_PC ||
                     (!jit && (c == EVP_SCAT_JIT || c == EVP_SCAT_JIT_CALLED))))
            continue;
        const char *nm = evp_sample_cat_name(c);
        if (!blocked && (c == EVP_SCAT_GIL_WAIT || c == EVP_SCAT_SYSCALL))
            nm = "no GIL";
        else if (!blocked && c == EVP_SCAT_NO_GIL)
            nm = "no GIL";
        struct evp_match_row *d = evp_match_add(k, nm);
        if (!d)
            return -ENOMEM;
        d->cols = evp_esc_term_cell(d->name, sizeof d->name, nm, 70);
        for (int i = 0; i < 2; i++)
            d->w[2 * i] = d->w[2 * i + 1] = a[i].cat[c];
        d->order = (uint64_t)c;
    }
    evp_match_merge(k); /* (the rows named alike summed) */
    return 0;
}

/* `diff` of two sampled traces: per opcode and function (self, and with
 * o->funcs inclusive) each run's share, the change in points and whether
 * it is significant at 95% (evp_two_prop_z). */
static int diff_sampled(struct evp_trace *base, struct evp_trace *new_,
                        FILE *out, const struct evp_diff_opts *o)
{
    struct evp_trace *t[2] = {base, new_};
    struct evp_sample_stats a[2];
    struct evp_match k = {.runs = 2};
    int family = op_family(t, o->group_specialized);
    int rc = evp_stats_samples(base, &a[0], -1, family > 1);
    if (rc < 0)
        return rc;
    if ((rc = evp_stats_samples(new_, &a[1], -1, family > 1)) < 0) {
        evp_stats_samples_free(&a[0]);
        return rc;
    }
    a[0].family = a[1].family = family;
    uint64_t total[2] = {a[0].total, a[1].total};
    double trials[2] = {evp_sample_trials(a[0].total, a[0].w2),
                        evp_sample_trials(a[1].total, a[1].w2)};
    fprintf(out,
            "reading from %s\nreading from %s\n(showing results in "
            "'diff' format, of two sampled traces)\n\n",
            evp_trace_info(base)->path, evp_trace_info(new_)->path);
    sdiff_run(out, "base:", base, &a[0], trials[0]);
    sdiff_run(out, "new:", new_, &a[1], trials[1]);
    fprintf(out, "estimate:  shares of each run's timer periods; change in "
                 "percentage points (pp); * marks a change significant at 95%% "
                 "(two-proportion z-test over each run's samples' effective "
                 "count, which is its periods while every sample stands for "
                 "one, |z| > 1.96), which covers the sampling error only, not "
                 "the samplers' bias\n\n");
    if (family)
        fprintf(out, "note: opcodes are matched by name%s%s.\n\n",
                family == 2 || op_family(t, 0)
                    ? ", a renamed or merged instruction by its newer name "
                      "(the traces come from different interpreter versions, "
                      "or --group-specialized)"
                    : "",
                family > 1 ? ", specialized forms folded into their base" : "");
    if (!(rc = where_rows(&k, t, a)))
        sdiff_table(out, "where (state of the sampled thread)", &k, t, total,
                    trials, 0, o->sort);
    evp_match_free(&k);
    if (!rc && !(rc = evp_match_sample_ops(&k, t, a)))
        sdiff_table(out, family > 1 ? "ops (families)" : "ops", &k, t, total,
                    trials, 0, o->sort);
    evp_match_free(&k);
    if (!rc && !(rc = evp_match_sample_funcs(&k, t, a, o->wide_names))) {
        sdiff_table(out, "functions (self: the leaf frame)", &k, t, total,
                    trials, 0, o->sort);
        if (o->funcs)
            sdiff_table(out, "functions (inclusive: anywhere on the stack)", &k,
                        t, total, trials, 1, o->sort);
    }
    evp_match_free(&k);
    evp_stats_samples_free(&a[0]);
    evp_stats_samples_free(&a[1]);
    return rc;
}

/* ---- the view --------------------------------------------------------------
 */

int evp_view_diff(struct evp_trace *base, struct evp_trace *new_, FILE *out,
                  const struct evp_diff_opts *o)
{
    if (evp_sampled_only(base) && evp_sampled_only(new_))
        return diff_sampled(base, new_, out, o);
    struct evp_trace *t[2] = {base, new_};
    struct evp_stats s[2];
    struct drow *rows = NULL;
    int rc = evp_stats_compute(base, &s[0], o->compensate, -1, o->funcs);
    if (rc < 0)
        return rc;
    rc = evp_stats_compute(new_, &s[1], o->compensate, -1, o->funcs);
    if (rc < 0)
        goto done;
    rows = calloc(EVP_STATS_KEYS, sizeof *rows);
    if (rows)
        rc = print_diff(out, t, s, rows, o);
    else
        rc = -ENOMEM;
    evp_stats_free(&s[1]);
done:
    evp_stats_free(&s[0]);
    free(rows);
    return rc;
}
