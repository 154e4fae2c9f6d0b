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
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define NKEYS 65536 /* kinds and opcodes are 16-bit */

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

struct acc {
    uint64_t *count, *total, *first;
    uint64_t *opcount, *optotal, *opfirst;
    uint64_t seq, opseq;
    uint8_t *func_seen;
    uint32_t nfuncs;
};

static int sum_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct acc *a = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        unsigned k = e->kind;
        if (!a->count[k]++)
            a->first[k] = a->seq++;
        a->total[k] += e->elapsed;
        if (k == EVP_EV_OP) {
            unsigned op = e->aux;
            if (!a->opcount[op]++)
                a->opfirst[op] = a->opseq++;
            a->optotal[op] += e->elapsed;
        } else if (k == EVP_EV_ENTER && e->arg <= a->nfuncs) {
            a->func_seen[e->arg] = 1;
        }
    }
    return 0;
}

static enum evp_sort sort_key;

static int strcmp_ptr(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static int cmp_rows(const void *x, const void *y)
{
    const struct row *a = x, *b = y;
    double ma, mb;
    switch (sort_key) {
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
 * svg_escape.c): control characters and bytes that are not UTF-8 become
 * "\xNN", and a name wider than 70 columns is cut to end in "..". */
static void set_name(struct row *r, const char *s)
{
    FILE *m = fmemopen(r->name, sizeof r->name, "w");
    r->name[0] = '\0';
    r->cols = 0;
    if (m) {
        r->cols = (int)evp_esc_term(m, s, strlen(s), 70);
        fclose(m);
    }
}

static void rule(FILE *out, int w, int wide)
{
    for (int i = 0; i < w + 1; i++)
        putc('-', out);
    fputs(" ------------ --------------", out);
    if (wide)
        fputs(" -------------- -------", out);
    putc('\n', out);
}

/* "%^*s" of Python: centred, the odd space going right. */
static void centred(FILE *out, const char *s, int w)
{
    int len = (int)strlen(s), left = (w - len) / 2;
    fprintf(out, "%*s%s%*s", left, "", s, w - len - left, "");
}

static void table(FILE *out, const char *title, struct row *rows, size_t n,
                  int wide, uint64_t grand)
{
    int w = 26;
    for (size_t i = 0; i < n; i++)
        if (rows[i].cols + 1 > w)
            w = rows[i].cols + 1;
    fprintf(out, "%s:\n\n", title);
    char line[256];
    FILE *m = fmemopen(line, sizeof line, "w");
    if (m) {
        centred(m, "name", w + 1);
        putc(' ', m);
        centred(m, "count", 12);
        putc(' ', m);
        centred(m, "mean elapsed", 14);
        if (wide) {
            putc(' ', m);
            centred(m, "total elapsed", 14);
            putc(' ', m);
            centred(m, "share", 7);
        }
        fclose(m);
        size_t l = strlen(line);
        while (l && line[l - 1] == ' ')
            line[--l] = '\0';
        fprintf(out, "%s\n", line);
    }
    rule(out, w, wide);
    for (size_t i = 0; i < n; i++) {
        char c[32], mean[48], tot[48];
        double us = rows[i].count
                        ? (double)rows[i].total / (double)rows[i].count / 1000.0
                        : 0;
        fprintf(out, " %s%*s%12s%12s µs", rows[i].name, w - rows[i].cols, "",
                evp_fmt_count(c, sizeof c, rows[i].count),
                evp_fmt_us_double(mean, sizeof mean, us));
        if (wide)
            fprintf(out, "%12s µs %6.1f%%", evp_fmt_us(tot, sizeof tot, rows[i].total),
                    grand ? 100.0 * (double)rows[i].total / (double)grand : 0.0);
        putc('\n', out);
    }
    rule(out, w, wide);
}

static int cmp_func_rows(const void *x, const void *y)
{
    const struct row *a = x, *b = y;
    switch (sort_key) {
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
                       const struct evp_func_stats *fs, uint32_t nfuncs)
{
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
    qsort(rows, n, sizeof *rows, cmp_func_rows);
    fputs("functions:\n\n", out);
    char line[512];
    FILE *m = fmemopen(line, sizeof line, "w");
    if (m) {
        centred(m, "name", w + 1);
        putc(' ', m);
        centred(m, "calls", 12);
        putc(' ', m);
        centred(m, "inclusive", 14);
        putc(' ', m);
        centred(m, "self", 14);
        putc(' ', m);
        centred(m, "mean", 14);
        fclose(m);
        size_t l = strlen(line);
        while (l && line[l - 1] == ' ')
            line[--l] = '\0';
        fprintf(out, "%s\n", line);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < w + 1; i++)
            putc('-', out);
        fputs(" ------------ -------------- -------------- --------------\n",
              out);
        if (pass)
            break;
        for (size_t i = 0; i < n; i++) {
            char c[32], a[48], b[48], d[48];
            fprintf(out, " %s%*s%12s%12s µs%12s µs%12s µs\n", rows[i].name,
                    w - rows[i].cols, "",
                    evp_fmt_count(c, sizeof c, rows[i].count),
                    evp_fmt_us(a, sizeof a, rows[i].incl),
                    evp_fmt_us(b, sizeof b, rows[i].self),
                    evp_fmt_us_double(d, sizeof d,
                                      rows[i].count ? (double)rows[i].incl /
                                                          (double)rows[i].count /
                                                          1000.0
                                                    : 0));
        }
    }
    fprintf(out, " total: %zu functions\n", n);
    free(rows);
}

int evp_view_summary(struct evp_trace *t, FILE *out,
                     const struct evp_summary_opts *o)
{
    struct acc a = {0};
    uint32_t nfuncs = evp_trace_nfuncs(t);
    a.nfuncs = nfuncs;
    a.count = calloc(6 * NKEYS, sizeof(uint64_t));
    a.func_seen = calloc(nfuncs + 1, 1);
    struct evp_func_stats *fs =
        o->funcs ? calloc(nfuncs + 1, sizeof *fs) : NULL;
    struct row *rows = calloc(NKEYS, sizeof *rows);
    if (!a.count || !a.func_seen || (o->funcs && !fs) || !rows) {
        free(a.count);
        free(a.func_seen);
        free(fs);
        free(rows);
        fprintf(stderr, "evalprof: out of memory\n");
        return -ENOMEM;
    }
    a.total = a.count + NKEYS;
    a.first = a.total + NKEYS;
    a.opcount = a.first + NKEYS;
    a.optotal = a.opcount + NKEYS;
    a.opfirst = a.optotal + NKEYS;

    static const struct evp_replay_ops ops = {NULL, sum_events, NULL};
    struct evp_replay_stats rst;
    struct evp_replay_opts ro = {.compensate = o->compensate,
                                 .stream = o->stream,
                                 .func_stats = fs,
                                 .stats = &rst};
    int rc = evp_replay(t, &ro, &ops, &a);
    if (rc < 0)
        goto done;

    const struct evp_trace_info *in = evp_trace_info(t);
    fprintf(out, "reading from %s\n(showing results in 'summary' format)\n\n",
            in->path);
    evp_view_header(out, t, "", 11, o->compensate);
    fputc('\n', out);

    int wide = o->sort == EVP_SORT_TOTAL;
    sort_key = o->sort;
    uint64_t grand = 0;
    size_t n = 0;
    uint64_t seen = 0;
    for (unsigned k = 0; k < NKEYS; k++) {
        if (!a.count[k])
            continue;
        struct row *r = &rows[n++];
        set_name(r, evp_kind_name(k));
        r->count = a.count[k];
        r->total = a.total[k];
        r->first = a.first[k];
        grand += r->total;
        if (k < 64)
            seen |= UINT64_C(1) << k;
    }
    qsort(rows, n, sizeof *rows, cmp_rows);
    table(out, "events", rows, n, wide, grand);
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
            if (base == op || !a.opcount[op])
                continue;
            if (!a.opcount[base] || a.opfirst[op] < a.opfirst[base])
                a.opfirst[base] = a.opfirst[op];
            a.opcount[base] += a.opcount[op];
            a.optotal[base] += a.optotal[op];
            a.opcount[op] = 0;
        }
    n = 0;
    grand = 0;
    for (unsigned op = 0; op < NKEYS; op++) {
        if (!a.opcount[op])
            continue;
        struct row *r = &rows[n++];
        const char *nm = evp_trace_opname(t, op);
        char unk[16];
        snprintf(unk, sizeof unk, "<%u>", op);
        set_name(r, nm ? nm : unk);
        r->count = a.opcount[op];
        r->total = a.optotal[op];
        r->first = a.opfirst[op];
        grand += r->total;
    }
    if (n || (in->can_emit & EVP_KIND_BIT(EVP_EV_OP))) {
        qsort(rows, n, sizeof *rows, cmp_rows);
        table(out, o->group_specialized ? "ops (specialized forms folded into "
                                          "their base instruction)"
                                        : "ops",
              rows, n, wide, grand);
        /* Out of the instructions that could have been rows: base
         * instructions when specialized forms are folded into them, every
         * named opcode when they are rows of their own. */
        unsigned named = evp_trace_nopcodes(t);
        if (!o->group_specialized)
            for (unsigned op = named = 0; op < NKEYS; op++)
                named += evp_trace_opname(t, op) != NULL;
        fprintf(out, " total: %zu/%u\n\n", n, named);
    }

    uint64_t called = 0;
    {
        /* Distinct names, as the discussion counts ("simple" name). */
        char **names = calloc(nfuncs + 1, sizeof *names);
        size_t nn = 0;
        for (uint32_t id = 1; id <= nfuncs && names; id++) {
            const struct evp_func *f = evp_trace_func(t, id);
            if (a.func_seen[id] && f)
                names[nn++] = (char *)f->name;
        }
        qsort(names, nn, sizeof *names, strcmp_ptr);
        for (size_t i = 0; i < nn; i++)
            called += i == 0 || strcmp(names[i], names[i - 1]) != 0;
        free(names);
    }
    char c[32];
    fprintf(out, "funcs: %s called (by \"simple\" name)\n",
            evp_fmt_count(c, sizeof c, called));
    if (o->funcs) {
        fputc('\n', out);
        func_table(out, t, fs, nfuncs);
    }
    if (rst.unmatched || rst.unclosed)
        fprintf(out,
                "\nnote: %" PRIu64 " exit%s without a matching enter and %" PRIu64
                " frame%s still open at the end (a trace started or cut "
                "mid-call).\n",
                rst.unmatched, rst.unmatched == 1 ? "" : "s", rst.unclosed,
                rst.unclosed == 1 ? "" : "s");
done:
    free(a.count);
    free(a.func_seen);
    free(fs);
    free(rows);
    return rc < 0 ? rc : 0;
}
