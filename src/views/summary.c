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
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int evp_view_summary(struct evp_trace *t, FILE *out,
                     const struct evp_summary_opts *o)
{
    if (o->lines)
        return evp_view_lines_table(t, out, o->compensate, o->stream, o->ns);
    if (evp_sampled_only(t))
        return evp_view_summary_sampled(t, out, o);
    struct evp_stats a;
    struct row *rows = calloc(NKEYS, sizeof *rows);
    int rc = rows ? evp_stats_compute(t, &a, o->compensate, o->stream, o->funcs)
                  : -ENOMEM;
    if (!rc) {
        print_summary(out, t, &a, rows, o);
        evp_stats_free(&a);
    } else if (rc == -ENOMEM) {
        fprintf(stderr, "evalprof: out of memory\n");
    }
    free(rows);
    return rc < 0 ? rc : 0;
}
