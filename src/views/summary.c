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

static void table(FILE *out, const char *title, struct row *rows, size_t n,
                  int wide, uint64_t grand, int in_ns)
{
    int w = 26;
    for (size_t i = 0; i < n; i++)
        if (rows[i].cols + 1 > w)
            w = rows[i].cols + 1;
    struct cols cw = {12, 12};
    for (size_t i = 0; i < n; i++) {
        char c[32], v[48];
        double mean = rows[i].count ? (double)rows[i].total /
                                          (double)rows[i].count / 1000.0
                                    : 0;
        widen(&cw.count, evp_num_group(c, sizeof c, rows[i].count));
        widen(&cw.value, wide ? evp_fmt_us(v, sizeof v, rows[i].total, in_ns)
                              : evp_fmt_us_double(v, sizeof v, mean, in_ns));
    }
    fprintf(out, "%s:\n\n", title);
    char line[512];
    FILE *m = fmemopen(line, sizeof line, "w");
    if (m) {
        centred(m, "name", w + 1);
        putc(' ', m);
        centred(m, "count", cw.count);
        putc(' ', m);
        centred(m, "mean elapsed", cw.value + 2);
        if (wide) {
            putc(' ', m);
            centred(m, "total elapsed", cw.value + 2);
            putc(' ', m);
            centred(m, "share", 7);
        }
        fclose(m);
        size_t l = strlen(line);
        while (l && line[l - 1] == ' ')
            line[--l] = '\0';
        fprintf(out, "%s\n", line);
    }
    rule(out, w, wide, cw);
    for (size_t i = 0; i < n; i++) {
        char c[32], mean[48], tot[48];
        double us = rows[i].count
                        ? (double)rows[i].total / (double)rows[i].count / 1000.0
                        : 0;
        fprintf(out, " %s%*s%*s%*s %s", rows[i].name, w - rows[i].cols, "",
                cw.count, evp_num_group(c, sizeof c, rows[i].count), cw.value,
                evp_fmt_us_double(mean, sizeof mean, us, in_ns),
                evp_fmt_unit(in_ns));
        if (wide)
            fprintf(out, "%*s %s %6.1f%%", cw.value,
                    evp_fmt_us(tot, sizeof tot, rows[i].total, in_ns),
                    evp_fmt_unit(in_ns),
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
    int c = strcmp(a->name, b->name);
    return c ? c : (a->first > b->first) - (a->first < b->first);
}

static void func_table(FILE *out, const struct evp_trace *t,
                       const struct evp_func_stats *fs, uint32_t nfuncs,
                       const struct evp_summary_opts *o)
{
    enum evp_sort sort = o->sort;
    int in_ns = o->ns;
    size_t n = 0;
    for (uint32_t id = 1; id <= nfuncs; id++)
        n += fs[id].calls + fs[id].resumes > 0;
    struct row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return;
    size_t k = 0;
    int w = 26;
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
        set_name(r, nm);
        r->count = fs[id].calls + fs[id].resumes;
        r->incl = fs[id].incl_ns;
        r->self = fs[id].self_ns;
        r->first = id;
        if (r->cols + 1 > w)
            w = r->cols + 1;
    }
    qsort_r(rows, n, sizeof *rows, cmp_func_rows, &sort);
    struct cols cw = {12, 12};
    for (size_t i = 0; i < n; i++) {
        char c[32], v[48];
        widen(&cw.count, evp_num_group(c, sizeof c, rows[i].count));
        widen(&cw.value, evp_fmt_us(v, sizeof v, rows[i].incl, in_ns));
    }
    fputs("functions:\n\n", out);
    char line[512];
    FILE *m = fmemopen(line, sizeof line, "w");
    if (m) {
        centred(m, "name", w + 1);
        putc(' ', m);
        centred(m, "calls", cw.count);
        putc(' ', m);
        centred(m, "inclusive", cw.value + 2);
        putc(' ', m);
        centred(m, "self", cw.value + 2);
        putc(' ', m);
        centred(m, "mean", cw.value + 2);
        fclose(m);
        size_t l = strlen(line);
        while (l && line[l - 1] == ' ')
            line[--l] = '\0';
        fprintf(out, "%s\n", line);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < w + 1; i++)
            putc('-', out);
        evp_fmt_dashes(out, cw.count);
        for (int j = 0; j < 3; j++)
            evp_fmt_dashes(out, cw.value + 2);
        putc('\n', out);
        if (pass)
            break;
        for (size_t i = 0; i < n; i++) {
            char c[32], a[48], b[48], d[48];
            const char *u = evp_fmt_unit(in_ns);
            int v = cw.value;
            fprintf(out, " %s%*s%*s%*s %s%*s %s%*s %s\n", rows[i].name,
                    w - rows[i].cols, "", cw.count,
                    evp_num_group(c, sizeof c, rows[i].count), v,
                    evp_fmt_us(a, sizeof a, rows[i].incl, in_ns), u, v,
                    evp_fmt_us(b, sizeof b, rows[i].self, in_ns), u, v,
                    evp_fmt_us_double(d, sizeof d,
                                      rows[i].count
                                          ? (double)rows[i].incl /
                                                (double)rows[i].count / 1000.0
                                          : 0,
                                      in_ns),
                    u);
        }
    }
    fprintf(out, " total: %zu functions\n", n);
    free(rows);
}

int evp_view_summary(struct evp_trace *t, FILE *out,
                     const struct evp_summary_opts *o)
{
    uint32_t nfuncs = evp_trace_nfuncs(t);
    struct evp_stats a;
    struct row *rows = calloc(NKEYS, sizeof *rows);
    int rc = rows ? evp_stats_compute(t, &a, o->compensate, o->stream, o->funcs)
                  : -ENOMEM;
    if (rc < 0) {
        free(rows);
        if (rc == -ENOMEM)
            fprintf(stderr, "evalprof: out of memory\n");
        return rc;
    }
    struct evp_func_stats *fs = a.funcs;
    const struct evp_replay_stats rst = a.replay;

    const struct evp_trace_info *in = evp_trace_info(t);
    fprintf(out, "reading from %s\n(showing results in 'summary' format)\n\n",
            in->path);
    evp_view_header(out, t, "", 11, o->compensate, o->ns);
    fputc('\n', out);

    int wide = o->sort == EVP_SORT_TOTAL;
    enum evp_sort sort = o->sort;
    uint64_t grand = 0;
    size_t n = 0;
    uint64_t seen = 0;
    for (unsigned k = 0; k < NKEYS; k++) {
        if (!a.kind_count[k])
            continue;
        struct row *r = &rows[n++];
        set_name(r, evp_kind_name(k));
        r->count = a.kind_count[k];
        r->total = a.kind_total[k];
        r->first = a.kind_first[k];
        grand += r->total;
        if (k < 64)
            seen |= UINT64_C(1) << k;
    }
    qsort_r(rows, n, sizeof *rows, cmp_rows, &sort);
    table(out, "events", rows, n, wide, grand, o->ns);
    uint64_t known = (in->can_emit | seen) & ~EVP_KIND_BIT(EVP_EV_LOG_WRITTEN);
    fprintf(out, " total: %zu/%d\n\n", n, __builtin_popcountll(known));

    /* Kinds the producer cannot emit: say so rather than show nothing. */
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

    /* Ops, optionally folded into their base instruction. */
    if (o->group_specialized)
        for (unsigned op = 0; op < NKEYS; op++) {
            unsigned base = evp_trace_opbase(t, op);
            if (base == op || !a.op_count[op])
                continue;
            if (!a.op_count[base] || a.op_first[op] < a.op_first[base])
                a.op_first[base] = a.op_first[op];
            a.op_count[base] += a.op_count[op];
            a.op_total[base] += a.op_total[op];
            a.op_count[op] = 0;
        }
    n = 0;
    grand = 0;
    for (unsigned op = 0; op < NKEYS; op++) {
        if (!a.op_count[op])
            continue;
        struct row *r = &rows[n++];
        const char *nm = evp_trace_opname(t, op);
        char unk[16];
        snprintf(unk, sizeof unk, "<%u>", op);
        set_name(r, nm ? nm : unk);
        r->count = a.op_count[op];
        r->total = a.op_total[op];
        r->first = a.op_first[op];
        grand += r->total;
    }
    if (n || (in->can_emit & EVP_KIND_BIT(EVP_EV_OP))) {
        qsort_r(rows, n, sizeof *rows, cmp_rows, &sort);
        table(out,
              o->group_specialized ? "ops (specialized forms folded into "
                                     "their base instruction)"
                                   : "ops",
              rows, n, wide, grand, o->ns);
        /* Out of the instructions that could have been rows: base
         * instructions when specialized forms are folded into them, every
         * named opcode when they are rows of their own. */
        unsigned named = evp_trace_nopcodes(t);
        if (!o->group_specialized)
            for (unsigned op = named = 0; op < NKEYS; op++)
                named += evp_trace_opname(t, op) != NULL;
        fprintf(out, " total: %zu/%u\n\n", n, named);
    }

    uint64_t called = evp_stats_names_called(t, &a);
    char c[32];
    fprintf(out, "funcs: %s called (by \"simple\" name)\n",
            evp_num_group(c, sizeof c, called));
    if (o->funcs) {
        fputc('\n', out);
        func_table(out, t, fs, nfuncs, o);
    }
    if (rst.unmatched || rst.unclosed)
        fprintf(out,
                "\nnote: %" PRIu64
                " exit%s without a matching enter and %" PRIu64
                " frame%s still open at the end (a trace started or cut "
                "mid-call).\n",
                rst.unmatched, rst.unmatched == 1 ? "" : "s", rst.unclosed,
                rst.unclosed == 1 ? "" : "s");
    evp_stats_free(&a);
    free(rows);
    return 0;
}
