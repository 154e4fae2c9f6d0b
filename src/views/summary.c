/*
 * The summary view (`evalprof summary`): the discussion's events and ops
 * tables, sorted as asked, plus evalprof's per-function table (--funcs).
 *
 *                name                count      mean elapsed
 *     --------------------------- ------------ --------------
 *      dispatch                        94,807         0.1 µs
 *
 * Rows that tie keep the order in which their kind first appeared in the
 * trace, as the discussion's analyzer does.  Kinds the producer cannot
 * emit are named in a note instead of being shown as empty rows.
 *
 * A sampled trace's summary has the same sections in its own terms: per
 * state of the sampled thread, loop phase, opcode and (--funcs) function,
 * each row's share of the timer periods with its 95% confidence interval
 * and its estimated time (sampled.c says what those figures are); the
 * exact counts beside the samples' estimate where the recording counted
 * (mode A, EVALPROF_COUNTS=1).  Of several sampled runs (summary_runs.c)
 * the same tables pool the runs' periods.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "stats.h"
#include "views.h"

#define NKEYS EVP_STATS_KEYS

/* A row owns its name: qsort moves rows, so a pointer into another
 * row's buffer would name the wrong row after sorting.  Room for 70
 * columns of 4-byte characters. */
struct row {
    char name[288];
    int cols; /* display width of name */
    uint64_t count;
    uint64_t total; /* elapsed ns */
    uint64_t first; /* order of first appearance */
    /* functions */
    uint64_t incl, self;
    char *full;        /* the whole name, escaped (NAME may be cut) */
    int fullcols;      /* its width */
    const char *shown; /* NAME or FULL, set once the rows are sorted */
};

/* Comparators for qsort_r: ARG points to the enum evp_sort. */
static int cmp_rows(const void *x, const void *y, void *arg)
{
    const struct row *a = x, *b = y;
    double ma, mb;
    switch (*(const enum evp_sort *)arg) {
    case EVP_SORT_NAME: {
        int c = strcmp(a->name, b->name);
        if (c)
            return c;
        break;
    }
    case EVP_SORT_COUNT:
        if (a->count != b->count)
            return a->count < b->count ? 1 : -1;
        break;
    case EVP_SORT_ELAPSED:
        ma = a->count ? (double)a->total / (double)a->count : 0;
        mb = b->count ? (double)b->total / (double)b->count : 0;
        if (ma != mb)
            return ma < mb ? 1 : -1;
        break;
    case EVP_SORT_TOTAL:
        if (a->total != b->total)
            return a->total < b->total ? 1 : -1;
        break;
    }
    return (a->first > b->first) - (a->first < b->first);
}

/* Set R's name from untrusted text S as every view writes names (see
 * src/util/esc.c): control characters and bytes that are not UTF-8 become
 * "\xNN", and a name wider than 70 columns is cut to end in "..". */
static void set_name(struct row *r, const char *s)
{
    r->cols = evp_esc_term_cell(r->name, sizeof r->name, s, 70);
}

/* Column widths: the discussion's 12 for counts and times, wider where a
 * figure needs it (seconds of nanoseconds with --ns). */
struct cols {
    int count, value;
};

/* Right-aligned figures keep one blank before them. */
static void widen(int *w, const char *s)
{
    int n = (int)strlen(s) + 1;
    if (n > *w)
        *w = n;
}

static void rule(FILE *out, int w, int wide, struct cols c)
{
    for (int i = 0; i < w + 1; i++)
        putc('-', out);
    evp_fmt_dashes(out, c.count);
    evp_fmt_dashes(out, c.value + 2);
    if (wide) {
        evp_fmt_dashes(out, c.value + 2);
        fputs(" -------", out);
    }
    putc('\n', out);
}

/* "%^*s" of Python: centred, the odd space going right. */
static void centred(FILE *out, const char *s, int w)
{
    int len = (int)strlen(s), left = (w - len) / 2;
    fprintf(out, "%*s%s%*s", left, "", s, w - len - left, "");
}

/* A table's column titles, each centred in its width, no trailing blanks. */
static void heading(FILE *out, const char *const *labels, const int *widths,
                    size_t n)
{
    char line[512];
    FILE *m = fmemopen(line, sizeof line, "w");
    if (!m)
        return;
    for (size_t i = 0; i < n; i++) {
        if (i)
            putc(' ', m);
        centred(m, labels[i], widths[i]);
    }
    fclose(m);
    size_t l = strlen(line);
    while (l && line[l - 1] == ' ')
        line[--l] = '\0';
    fprintf(out, "%s\n", line);
}

/* The mean of row R in ns (what the mean column shows). */
static uint64_t row_mean_ns(const struct row *r, uint64_t total)
{
    return r->count ? (uint64_t)((double)total / (double)r->count) : 0;
}

static void table(FILE *out, const char *title, struct row *rows, size_t n,
                  int wide, uint64_t grand, int unit)
{
    int w = 26;
    uint64_t lo_mean = UINT64_MAX, lo_total = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].cols + 1 > w)
            w = rows[i].cols + 1;
        evp_fmt_col_see(&lo_mean, row_mean_ns(&rows[i], rows[i].total));
        evp_fmt_col_see(&lo_total, rows[i].total);
    }
    int um = evp_fmt_col_unit(unit, lo_mean),
        ut = evp_fmt_col_unit(unit, lo_total);
    struct cols cw = {12, 12};
    for (size_t i = 0; i < n; i++) {
        char c[32], v[48];
        double mean = rows[i].count ? (double)rows[i].total /
                                          (double)rows[i].count / 1000.0
                                    : 0;
        widen(&cw.count, evp_num_group(c, sizeof c, rows[i].count));
        widen(&cw.value, evp_fmt_us_double(v, sizeof v, mean, um));
        if (wide)
            widen(&cw.value, evp_fmt_us(v, sizeof v, rows[i].total, ut));
    }
    fprintf(out, "%s:\n\n", title);
    static const char *const labels[] = {"name", "count", "mean elapsed",
                                         "total elapsed", "share"};
    int widths[] = {w + 1, cw.count, cw.value + 2, cw.value + 2, 7};
    heading(out, labels, widths, wide ? 5 : 3);
    rule(out, w, wide, cw);
    for (size_t i = 0; i < n; i++) {
        char c[32], mean[48], tot[48];
        double us = rows[i].count
                        ? (double)rows[i].total / (double)rows[i].count / 1000.0
                        : 0;
        fprintf(out, " %s%*s%*s%*s %s", rows[i].name, w - rows[i].cols, "",
                cw.count, evp_num_group(c, sizeof c, rows[i].count), cw.value,
                evp_fmt_us_double(mean, sizeof mean, us, um), evp_fmt_unit(um));
        if (wide)
            fprintf(out, "%*s %s %6.1f%%", cw.value,
                    evp_fmt_us(tot, sizeof tot, rows[i].total, ut),
                    evp_fmt_unit(ut),
                    grand ? 100.0 * (double)rows[i].total / (double)grand
                          : 0.0);
        putc('\n', out);
    }
    rule(out, w, wide, cw);
}

static int cmp_func_rows(const void *x, const void *y, void *arg)
{
    const struct row *a = x, *b = y;
    switch (*(const enum evp_sort *)arg) {
    case EVP_SORT_TOTAL:
        if (a->incl != b->incl)
            return a->incl < b->incl ? 1 : -1;
        break;
    case EVP_SORT_ELAPSED: {
        double ma = a->count ? (double)a->incl / (double)a->count : 0;
        double mb = b->count ? (double)b->incl / (double)b->count : 0;
        if (ma != mb)
            return ma < mb ? 1 : -1;
        break;
    }
    case EVP_SORT_COUNT:
        if (a->count != b->count)
            return a->count < b->count ? 1 : -1;
        break;
    case EVP_SORT_NAME:
        break;
    }
    int c = strcmp(a->full, b->full);
    return c ? c : (a->first > b->first) - (a->first < b->first);
}

/* The rows of the functions called or resumed, *N of them (unsorted),
 * each with its whole name and that name cut to 70 columns.  NULL when
 * out of memory. */
static struct row *func_rows(const struct evp_trace *t,
                             const struct evp_func_stats *fs, uint32_t nfuncs,
                             size_t *n)
{
    size_t k = 0;
    for (uint32_t id = 1; id <= nfuncs; id++)
        k += fs[id].calls + fs[id].resumes > 0;
    struct row *rows = calloc(k ? k : 1, sizeof *rows);
    if (!rows)
        return NULL;
    *n = k;
    k = 0;
    for (uint32_t id = 1; id <= nfuncs; id++) {
        if (!fs[id].calls && !fs[id].resumes)
            continue;
        struct row *r = &rows[k++];
        const struct evp_func *f = evp_trace_func(t, id);
        char nm[1024];
        if (f && *f->file)
            snprintf(nm, sizeof nm, "%s (%s:%u)", f->name, f->file, f->line);
        else
            snprintf(nm, sizeof nm, "%s", f ? f->name : "?");
        char big[4400];
        r->fullcols = evp_view_func_cell(big, sizeof big, nm, 0);
        if (!(r->full = strdup(big))) {
            *n = k - 1;
            return rows;
        }
        r->cols = evp_view_func_cell(r->name, sizeof r->name, nm, 70);
        r->count = fs[id].calls + fs[id].resumes;
        r->incl = fs[id].incl_ns;
        r->self = fs[id].self_ns;
        r->first = id;
    }
    return rows;
}

static void func_rule(FILE *out, int w, struct cols cw)
{
    for (int i = 0; i < w + 1; i++)
        putc('-', out);
    evp_fmt_dashes(out, cw.count);
    for (int j = 0; j < 3; j++)
        evp_fmt_dashes(out, cw.value + 2);
    putc('\n', out);
}

/* The units of the inclusive, self and mean columns. */
struct func_units {
    int incl, self, mean;
};

static void func_line(FILE *out, const struct row *r, int w, struct cols cw,
                      struct func_units u)
{
    char c[32], a[48], b[48], d[48];
    int v = cw.value;
    double mean = r->count ? (double)r->incl / (double)r->count / 1000.0 : 0;
    fprintf(out, " %s%*s%*s%*s %s%*s %s%*s %s\n", r->shown, w - r->cols, "",
            cw.count, evp_num_group(c, sizeof c, r->count), v,
            evp_fmt_us(a, sizeof a, r->incl, u.incl), evp_fmt_unit(u.incl), v,
            evp_fmt_us(b, sizeof b, r->self, u.self), evp_fmt_unit(u.self), v,
            evp_fmt_us_double(d, sizeof d, mean, u.mean), evp_fmt_unit(u.mean));
}

/* The table of ROWS, sorted, each printed as SHOWN[i] (COLS[i] wide). */
static void func_table_rows(FILE *out, struct row *rows, size_t n,
                            const char **shown, const int *cols, int unit)
{
    int w = 26;
    struct cols cw = {12, 12};
    uint64_t lo[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
    for (size_t i = 0; i < n; i++) {
        evp_fmt_col_see(&lo[0], rows[i].incl);
        evp_fmt_col_see(&lo[1], rows[i].self);
        evp_fmt_col_see(&lo[2], row_mean_ns(&rows[i], rows[i].incl));
    }
    struct func_units u = {evp_fmt_col_unit(unit, lo[0]),
                           evp_fmt_col_unit(unit, lo[1]),
                           evp_fmt_col_unit(unit, lo[2])};
    for (size_t i = 0; i < n; i++) {
        char c[32], v[48];
        rows[i].shown = shown[i], rows[i].cols = cols[i];
        if (cols[i] + 1 > w)
            w = cols[i] + 1;
        widen(&cw.count, evp_num_group(c, sizeof c, rows[i].count));
        widen(&cw.value, evp_fmt_us(v, sizeof v, rows[i].incl, u.incl));
        widen(&cw.value, evp_fmt_us(v, sizeof v, rows[i].self, u.self));
    }
    fputs("functions:\n\n", out);
    static const char *const labels[] = {"name", "calls", "inclusive", "self",
                                         "mean"};
    int v = cw.value + 2;
    heading(out, labels, (const int[]){w + 1, cw.count, v, v, v}, 5);
    func_rule(out, w, cw);
    for (size_t i = 0; i < n; i++)
        func_line(out, &rows[i], w, cw, u);
    func_rule(out, w, cw);
    fprintf(out, " total: %zu functions\n", n);
}

static void func_table(FILE *out, const struct evp_trace *t,
                       const struct evp_func_stats *fs, uint32_t nfuncs,
                       const struct evp_summary_opts *o)
{
    enum evp_sort sort = o->sort;
    size_t n = 0;
    struct row *rows = func_rows(t, fs, nfuncs, &n);
    const char **shown = calloc(n ? n : 1, sizeof *shown);
    const char **full = calloc(n ? n : 1, sizeof *full);
    int *cols = calloc(n ? n : 1, sizeof *cols);
    int *fullcols = calloc(n ? n : 1, sizeof *fullcols);
    if (rows && shown && full && cols && fullcols) {
        qsort_r(rows, n, sizeof *rows, cmp_func_rows, &sort);
        /* a cut name that would print as another function's prints whole */
        for (size_t i = 0; i < n; i++) {
            int cut = !o->wide_names && rows[i].cols < rows[i].fullcols;
            full[i] = rows[i].full, fullcols[i] = rows[i].fullcols;
            shown[i] = cut ? rows[i].name : full[i];
            cols[i] = cut ? rows[i].cols : fullcols[i];
        }
        evp_view_cells_unique(n, shown, cols, full, fullcols);
        func_table_rows(out, rows, n, shown, cols, o->ns);
    }
    for (size_t i = 0; rows && i < n; i++)
        free(rows[i].full);
    free(rows);
    free(shown);
    free(full);
    free(cols);
    free(fullcols);
}

/* The events table: one row per kind seen, and how many kinds there are
 * (those the producer can emit or that appear). */
static void events_section(FILE *out, const struct evp_trace *t,
                           const struct evp_stats *a, struct row *rows,
                           const struct evp_summary_opts *o)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    enum evp_sort sort = o->sort;
    uint64_t grand = 0, seen = 0;
    size_t n = 0;
    for (unsigned k = 0; k < NKEYS; k++) {
        if (!a->kind_count[k])
            continue;
        struct row *r = &rows[n++];
        set_name(r, evp_kind_name(k));
        r->count = a->kind_count[k];
        r->total = a->kind_total[k];
        r->first = a->kind_first[k];
        grand += r->total;
        if (k < 64)
            seen |= UINT64_C(1) << k;
    }
    qsort_r(rows, n, sizeof *rows, cmp_rows, &sort);
    table(out, "events", rows, n, sort == EVP_SORT_TOTAL, grand, o->ns);
    uint64_t known = (in->can_emit | seen) & ~EVP_KIND_BIT(EVP_EV_LOG_WRITTEN);
    fprintf(out, " total: %zu/%d\n\n", n, __builtin_popcountll(known));
}

/* Kinds the producer cannot emit: say so rather than show nothing. */
static void missing_note(FILE *out, const struct evp_trace_info *in)
{
    char missing[512] = "";
    for (unsigned k = 0; k < EVP_EV_CLASSIC_COUNT; k++)
        if (!(in->can_emit & EVP_KIND_BIT(k))) {
            size_t l = strlen(missing);
            snprintf(missing + l, sizeof missing - l, "%s%s", l ? ", " : "",
                     evp_kind_name(k));
        }
    if (*missing)
        fprintf(out,
                "note: this producer cannot emit %s; an instrumented "
                "interpreter (mode A) records them.\n\n",
                missing);
}

/* Fold the figures of specialized opcodes into their base instruction. */
static void fold_specialized(const struct evp_trace *t, struct evp_stats *a)
{
    for (unsigned op = 0; op < NKEYS; op++) {
        unsigned base = evp_trace_opbase(t, op);
        if (base == op || !a->op_count[op])
            continue;
        if (!a->op_count[base] || a->op_first[op] < a->op_first[base])
            a->op_first[base] = a->op_first[op];
        a->op_count[base] += a->op_count[op];
        a->op_total[base] += a->op_total[op];
        a->op_count[op] = 0;
    }
}

/* The ops table (when there are ops, or the producer can record them). */
static void ops_section(FILE *out, const struct evp_trace *t,
                        const struct evp_stats *a, struct row *rows,
                        const struct evp_summary_opts *o)
{
    enum evp_sort sort = o->sort;
    uint64_t grand = 0;
    size_t n = 0;
    for (unsigned op = 0; op < NKEYS; op++) {
        if (!a->op_count[op])
            continue;
        struct row *r = &rows[n++];
        char nm[256];
        evp_view_op_name(t, op, nm, sizeof nm);
        set_name(r, nm);
        r->count = a->op_count[op];
        r->total = a->op_total[op];
        r->first = a->op_first[op];
        grand += r->total;
    }
    if (!n && !(evp_trace_info(t)->can_emit & EVP_KIND_BIT(EVP_EV_OP)))
        return;
    qsort_r(rows, n, sizeof *rows, cmp_rows, &sort);
    table(out,
          o->group_specialized ? "ops (specialized forms folded into "
                                 "their base instruction)"
                               : "ops",
          rows, n, sort == EVP_SORT_TOTAL, grand, o->ns);
    /* Out of the instructions that could have been rows: base
     * instructions when specialized forms are folded into them, every
     * named opcode when they are rows of their own. */
    unsigned named = evp_trace_nopcodes(t);
    if (!o->group_specialized)
        for (unsigned op = named = 0; op < NKEYS; op++)
            named += evp_trace_opname(t, op) != NULL;
    fprintf(out, " total: %zu/%u\n\n", n, named);
}

/* Frames a trace started or was cut in the middle of. */
static void nesting_note(FILE *out, const struct evp_replay_stats *rst)
{
    if (rst->unmatched || rst->unclosed)
        fprintf(out,
                "\nnote: %" PRIu64
                " exit%s without a matching enter and %" PRIu64
                " frame%s still open at the end (a trace started or cut "
                "mid-call).\n",
                rst->unmatched, rst->unmatched == 1 ? "" : "s", rst->unclosed,
                rst->unclosed == 1 ? "" : "s");
}

/* How much of the trace's time compensation takes off (every event's
 * measured cost: the most taken off, as an event's time never goes below
 * zero), and how far the result can be from an untraced run. */
static void estimate_line(FILE *out, const struct evp_trace *t,
                          const struct evp_stats *a)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    double off = 0;
    for (unsigned k = 0; k < EVP_EV__COUNT; k++)
        off += (double)a->kind_count[k] * evp_trace_kind_cost_ns(t, k);
    uint64_t end = evp_trace_end_ns(t);
    double el = end > in->start_ns ? (double)(end - in->start_ns) : 0;
    if (!(off > 0) || !(el > 0))
        return;
    char v[48];
    int u = evp_fmt_col_unit(EVP_UNIT_AUTO, (uint64_t)off);
    fprintf(out,
            "%-11sup to %s %s (%.1f%% of the elapsed time) taken off at the "
            "per-event costs measured at start; what tracing costs beyond "
            "them (unspecialised instructions, cache, a loaded machine) "
            "stays in the times: compensated runs have measured 0.7x to 6x "
            "of untraced ones (README, Compensation; --no-compensate shows "
            "the raw times)\n",
            "estimate:", evp_fmt_us(v, sizeof v, (uint64_t)off, u),
            evp_fmt_unit(u), 100.0 * off / el);
}

static void print_summary(FILE *out, struct evp_trace *t, struct evp_stats *a,
                          struct row *rows, const struct evp_summary_opts *o)
{
    fprintf(out, "reading from %s\n(showing results in 'summary' format)\n\n",
            evp_trace_info(t)->path);
    evp_view_header(out, t, "", 11, o->compensate, o->ns);
    if (o->compensate)
        estimate_line(out, t, a);
    fputc('\n', out);
    events_section(out, t, a, rows, o);
    missing_note(out, evp_trace_info(t));
    if (o->group_specialized)
        fold_specialized(t, a);
    ops_section(out, t, a, rows, o);
    char c[32];
    fprintf(out, "funcs: %s called (by \"simple\" name)\n",
            evp_num_group(c, sizeof c, evp_stats_names_called(t, a)));
    if (o->funcs) {
        fputc('\n', out);
        func_table(out, t, a->funcs, evp_trace_nfuncs(t), o);
    }
    nesting_note(out, &a->replay);
}

/* ---- a sampled trace ------------------------------------------------------
 */

/* One row: a name and its weight columns (the opcode's or self, and
 * inclusive). */
struct srow {
    char name[288];
    int cols;
    struct evp_sample_est c[2];
    uint64_t order;
};

/* Column C of R from the weights W[0], W[STRIDE], ... of the RUNS runs
 * T; SCRATCH has 2 * RUNS slots. */
static void srow_set(struct srow *r, int c, struct evp_trace *const *t,
                     size_t runs, const uint64_t *w, size_t stride,
                     uint64_t *scratch)
{
    evp_sample_est(&r->c[c], t, runs, w, stride, scratch);
}

/* Both columns of R from one weight per run, A[i] + OFF bytes. */
static void srow_agg(struct srow *r, struct evp_trace *const *t, size_t runs,
                     const struct evp_sample_stats *a, size_t off,
                     uint64_t *scratch)
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
            len = (int)evp_sample_range_cell(v, sizeof v, &rows[i].c[c], u[c]);
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
    evp_fmt_rule(out, widths, ncol);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, " %s%*s", rows[i].name, w - rows[i].cols, "");
        for (int c = 0; c <= incl; c++) {
            const struct evp_sample_est *s = &rows[i].c[c];
            char sh[16], ci[32], v[112];
            if (multi)
                fprintf(out, " %*s", pw, evp_num_group(v, sizeof v, s->w));
            evp_share_cells(s->w, total, trials, sh, sizeof sh, ci, sizeof ci);
            fprintf(out, " %*s %*s %*s %s", c ? 9 : 7, sh, 12, ci, tw - 3,
                    evp_fmt_us(v, sizeof v, s->est, u[c]), evp_fmt_unit(u[c]));
            if (multi) {
                evp_sample_range_cell(v, sizeof v, s, u[c]);
                fprintf(out, " %*s", rw, v);
            }
        }
        putc('\n', out);
    }
    evp_fmt_rule(out, widths, ncol);
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
                       struct evp_trace *t, const struct evp_sample_stats *a,
                       size_t run)
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
                         const struct evp_sample_stats *a, size_t runs)
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

/* "every 1.0 ms of CPU time (1000 Hz per thread)" */
static void period_words(FILE *out, const struct evp_trace_info *in, int unit)
{
    char p[48];
    uint64_t period =
        in->sample_period_ns > 0 ? (uint64_t)(in->sample_period_ns + 0.5) : 0;
    int pu = evp_fmt_col_unit(unit, period);
    fprintf(out, "every %s %s of %s (%.0f Hz per thread)",
            evp_fmt_us(p, sizeof p, period, pu), evp_fmt_unit(pu),
            evp_sample_clock_name(in), in->sample_rate_hz);
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
    if (!evp_sample_sparse(total, trials))
        return;
    char c1[32], c2[32], c3[32];
    const struct evp_trace_info *in = evp_trace_info(t[0]);
    fprintf(out,
            "%-11sthe samples' effective count, %s, is %.1f%% of the %s timer "
            "periods they stand for",
            "sparse:", evp_num_group(c1, sizeof c1, (uint64_t)(trials + 0.5)),
            100.0 * trials / (double)total,
            evp_num_group(c2, sizeof c2, total));
    if (evp_sample_one_rate(t, runs) && in->sample_rate_hz > 0)
        fprintf(out, " (%s samples: %.0f Hz of %s, for %.0f Hz asked)",
                evp_num_group(c3, sizeof c3, samples),
                in->sample_rate_hz * (double)samples / (double)total,
                evp_sample_clock_name(in), in->sample_rate_hz);
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
void evp_summary_sampled_header(FILE *out, struct evp_trace *const *t,
                                const struct evp_sample_stats *a, size_t runs,
                                uint64_t total, double trials, uint64_t samples,
                                uint64_t *scratch, int unit)
{
    const struct evp_trace_info *in = evp_trace_info(t[0]);
    char c1[32], c2[32], v[48], r[112];
    int same = evp_sample_one_rate(t, runs);
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
        evp_sample_range_cell(r, sizeof r, &est.c[0], eu);
        fprintf(out, " %s", r);
    }
    if (same)
        fprintf(out, " of %s", evp_sample_clock_name(in));
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
        evp_sample_pooled_lines(out, t, runs, total, trials, "", samples);
    } else {
        fprintf(out,
                "%-11sshares are estimated from %s timer periods, with 95%% "
                "confidence intervals (Wilson score interval, binomial%s); an "
                "interval covers the sampling error only, not the sampler's "
                "bias (where its signals land)\n",
                "estimate:", evp_num_group(c1, sizeof c1, total),
                evp_sample_trials_words(tw, sizeof tw, total, trials));
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
static void krows_to_srows(const struct evp_match *k, struct srow *rows,
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

int evp_summary_sampled(struct evp_trace *const *t, size_t runs, FILE *out,
                        const struct evp_summary_opts *o)
{
    struct evp_sample_stats *a = calloc(runs, sizeof *a);
    uint64_t *scratch = calloc(3 * runs, sizeof *scratch);
    struct evp_match ops = {.runs = runs}, funcs = {.runs = runs};
    struct srow *rows = NULL;
    size_t done = 0, n = 0;
    int rc = a && scratch ? 0 : -ENOMEM;
    for (; !rc && done < runs; done++)
        if ((rc = evp_stats_samples(t[done], &a[done], o->stream,
                                    o->group_specialized)) < 0)
            break;
    if (!rc)
        rc = evp_match_sample_ops(&ops, t, a);
    if (!rc)
        rc = evp_match_sample_funcs(&funcs, t, a, o->wide_names);
    size_t nrows = EVP_SCAT__COUNT + 33;
    if (ops.n > nrows)
        nrows = ops.n;
    if (funcs.n > nrows)
        nrows = funcs.n;
    if (!rc && !(rows = calloc(nrows, sizeof *rows)))
        rc = -ENOMEM;
    if (rc < 0) {
        evp_diag_fail(o->diag, "out of memory");
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
    evp_summary_sampled_header(out, t, a, runs, total, trials, samples, scratch,
                               o->ns);
    fputc('\n', out);

    struct evp_match where = {.runs = runs};
    if ((rc = evp_match_sample_where(&where, t, a)) < 0) {
        evp_match_free(&where);
        goto done;
    }
    krows_to_srows(&where, rows, t, scratch);
    n = where.n;
    evp_match_free(&where);
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
            srow_agg(r, t, runs, a, offsetof(struct evp_sample_stats, phase[k]),
                     scratch);
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
    evp_match_free(&ops);
    evp_match_free(&funcs);
    for (size_t i = 0; i < done && a; i++)
        evp_stats_samples_free(&a[i]);
    free(a);
    free(scratch);
    return rc;
}

/* ---- the view --------------------------------------------------------------
 */

int evp_view_summary(struct evp_trace *t, FILE *out,
                     const struct evp_summary_opts *o)
{
    if (o->lines)
        return evp_view_lines_table(t, out, o->compensate, o->stream, o->ns,
                                    o->diag);
    if (evp_sampled_only(t))
        return evp_summary_sampled(&t, 1, out, o);
    struct evp_stats a;
    struct row *rows = calloc(NKEYS, sizeof *rows);
    int rc = rows ? evp_stats_compute(t, &a, o->compensate, o->stream, o->funcs)
                  : -ENOMEM;
    if (!rc) {
        print_summary(out, t, &a, rows, o);
        evp_stats_free(&a);
    } else if (rc == -ENOMEM) {
        evp_diag_fail(o->diag, "out of memory");
    }
    free(rows);
    return rc < 0 ? rc : 0;
}
