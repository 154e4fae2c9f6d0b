/*
 * The HTML report (`evalprof report`): one self-contained page for a run,
 * or for two runs side by side, that opens with no network.
 *
 * One run: the header facts and notes (producer, compensation and the
 * per-event costs it used, dropped events, what the producer cannot see,
 * warnings), time by loop phase, the top opcodes by total and by mean, a
 * sortable and filterable function table and the interactive flame
 * graph.  Two runs: both headers, the diff view's tables (events, ops,
 * functions matched by name and file) and the differential flame graph.
 *
 * Every figure comes from the replay the summary and diff views use
 * (evp_stats_compute, with the same compensation) and is formatted by the
 * same helpers, so the page shows the numbers `evalprof summary` prints.
 * A sampled trace's page shows its samples' figures (evp_stats_samples):
 * the summary's head on the samples among the facts, where the thread
 * was, the phases, the opcodes and the functions, each row's share with
 * its 95% interval and its estimated time, and the flame graph of the
 * samples' stacks; of two sampled runs, their shares and the changes,
 * marked where significant, as `evalprof diff` compares them.
 * Names from the trace are written only as escaped HTML text (never into
 * the script, which reads the tables' cells); each number cell carries
 * its exact value in data-v for sorting.  A flame graph is the SVG of
 * flamegraph.c inside an iframe's srcdoc, so that its ids and script stay
 * its own; the page's script (report.js) is embedded at build time.
 */
#define _GNU_SOURCE /* open_memstream, qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "num.h"
#include "views.h"

#define TOP_OPS 20

static const char report_js[] =
#include "report_js.h"
    ;

/* Durations on the page are written as summary writes them by default
 * (µs with one decimal); each cell also carries its exact ns for sorting. */
#define PAGE_IN_NS 0

static void h(FILE *out, const char *s)
{
    evp_esc_html(out, s, strlen(s));
}

/* A number cell: VALUE for sorting, TEXT shown. */
static void num(FILE *out, double value, const char *text)
{
    fprintf(out, "<td class=\"n\" data-v=\"%.17g\">%s</td>", value, text);
}

static void count_cell(FILE *out, uint64_t v)
{
    char c[32];
    num(out, (double)v, evp_num_group(c, sizeof c, v));
}

static void us_cell(FILE *out, uint64_t ns)
{
    char c[48], t[64];
    snprintf(t, sizeof t, "%s %s", evp_fmt_us(c, sizeof c, ns, PAGE_IN_NS),
             evp_fmt_unit(PAGE_IN_NS));
    num(out, (double)ns, t);
}

static void mean_cell(FILE *out, uint64_t total, uint64_t count)
{
    char c[48], t[64];
    double ns = count ? (double)total / (double)count : 0;
    snprintf(t, sizeof t, "%s %s",
             evp_fmt_us_double(c, sizeof c, ns / 1000, PAGE_IN_NS),
             evp_fmt_unit(PAGE_IN_NS));
    num(out, ns, t);
}

static void fact(FILE *out, const char *key, const char *value)
{
    fprintf(out, "<tr><th>%s</th><td>", key);
    h(out, value);
    fputs("</td></tr>\n", out);
}

/* A sampled trace's lines of the summary's head (summary.c). */
static void sampled_facts(FILE *m, struct evp_trace *t,
                          const struct evp_sample_stats *a)
{
    uint64_t scratch[3];
    double trials = evp_sample_trials(a->total, a->w2);
    evp_summary_sampled_header(m, &t, a, 1, a->total, trials, a->samples,
                               scratch, PAGE_IN_NS);
}

/* The header block of the summary, as a table, then the notes (S: a
 * trace's of events, A: a sampled trace's). */
static void facts(FILE *out, struct evp_trace *t, const struct evp_stats *s,
                  const struct evp_sample_stats *a, int compensate,
                  const char *label)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    char c[800];
    fputs("<table class=\"facts\">\n", out);
    if (label)
        fact(out, "run", label);
    fact(out, "trace", in->path);
    /* The summary's own header lines ("key: value", values already
     * escaped for a terminal), one row each. */
    char *hdr = NULL;
    size_t hlen = 0;
    FILE *m = open_memstream(&hdr, &hlen);
    if (m) {
        evp_view_header(m, t, "", 0, compensate, PAGE_IN_NS);
        if (a)
            sampled_facts(m, t, a);
        fclose(m);
    }
    for (char *line = hdr; line && *line;) {
        char *nl = strchr(line, '\n'), *colon;
        if (nl)
            *nl = 0;
        if ((colon = strchr(line, ':')) != NULL) {
            *colon = 0;
            fprintf(out, "<tr><th>");
            h(out, line);
            fputs("</th><td>", out);
            h(out, colon + 1 + strspn(colon + 1, " "));
            fputs("</td></tr>\n", out);
        }
        line = nl ? nl + 1 : line + strlen(line);
    }
    free(hdr);
    if (!*evp_view_producer_note(t, c, sizeof c))
        fact(out, "producer",
             in->text ? "text trace (the discussion's format)" : in->producer);
    if (!a && !in->has_kind_cost && !(in->event_cost_ns > 0))
        fact(out, "overhead", "no per-event cost measured: nothing subtracted");
    if (!in->dropped)
        fact(out, "dropped", "none");
    fputs("</table>\n<ul class=\"notes\">\n", out);
    /* Kinds the producer cannot emit, as the summary names them (a
     * sampled trace emits none) */
    size_t l = 0;
    c[0] = 0;
    for (unsigned k = 0; !a && k < EVP_EV_CLASSIC_COUNT && l < sizeof c; k++)
        if (!(in->can_emit & EVP_KIND_BIT(k)))
            l += (size_t)snprintf(c + l, sizeof c - l, "%s%s", l ? ", " : "",
                                  evp_kind_name(k));
    if (*c) {
        fputs("<li class=\"cannot\">This producer cannot emit ", out);
        h(out, c);
        fputs("; an instrumented interpreter (mode A) records them.</li>\n",
              out);
    }
    if (s && (s->replay.unmatched || s->replay.unclosed))
        fprintf(out,
                "<li>%" PRIu64 " exit%s without a matching enter and %" PRIu64
                " frame%s still open at the end (a trace started or cut "
                "mid-call).</li>\n",
                s->replay.unmatched, s->replay.unmatched == 1 ? "" : "s",
                s->replay.unclosed, s->replay.unclosed == 1 ? "" : "s");
    for (size_t i = 0; i < evp_trace_nwarnings(t); i++) {
        fputs("<li class=\"warning\">warning: ", out);
        h(out, evp_trace_warning(t, i));
        fputs("</li>\n", out);
    }
    fputs("</ul>\n", out);
}

/* ---- one run's tables ----------------------------------------------- */

struct krow {
    char name[128]; /* kinds' and opcodes' names are short */
    uint64_t count, total, first;
};

/* The rows of S's event kinds, or (OPS) opcodes; *GRAND: their total. */
static size_t fill_krows(struct krow *r, const struct evp_trace *t,
                         const struct evp_stats *s, int ops, uint64_t *grand)
{
    const uint64_t *cnt = ops ? s->op_count : s->kind_count;
    const uint64_t *tot = ops ? s->op_total : s->kind_total;
    const uint64_t *first = ops ? s->op_first : s->kind_first;
    size_t n = 0;
    *grand = 0;
    for (unsigned k = 0; k < EVP_STATS_KEYS; k++) {
        if (!cnt[k])
            continue;
        struct krow *row = &r[n++];
        if (ops)
            evp_view_op_name(t, k, row->name, sizeof row->name);
        else
            snprintf(row->name, sizeof row->name, "%s", evp_kind_name(k));
        row->count = cnt[k];
        row->total = tot[k];
        row->first = first[k];
        *grand += row->total;
    }
    return n;
}

static int by_total(const void *x, const void *y)
{
    const struct krow *a = x, *b = y;
    if (a->total != b->total)
        return a->total < b->total ? 1 : -1;
    return (a->first > b->first) - (a->first < b->first);
}

static int by_mean(const void *x, const void *y)
{
    const struct krow *a = x, *b = y;
    double ma = a->count ? (double)a->total / (double)a->count : 0;
    double mb = b->count ? (double)b->total / (double)b->count : 0;
    if (ma != mb)
        return ma < mb ? 1 : -1;
    return (a->first > b->first) - (a->first < b->first);
}

static void table_head(FILE *out, const char *id, const char *const *cols)
{
    fprintf(out, "<table class=\"data sortable\" id=\"%s\"><thead><tr>", id);
    for (size_t i = 0; cols[i]; i++)
        fprintf(out, "<th data-type=\"%s\">%s</th>", i ? "n" : "s", cols[i]);
    fputs("</tr></thead><tbody>\n", out);
}

static void name_cell(FILE *out, const char *name)
{
    fputs("<td class=\"name\">", out);
    h(out, name);
    fputs("</td>", out);
}

static void krows(FILE *out, const char *id, struct krow *r, size_t n,
                  uint64_t grand)
{
    static const char *const cols[] = {"name",  "count", "mean",
                                       "total", "share", NULL};
    table_head(out, id, cols);
    for (size_t i = 0; i < n; i++) {
        char sh[16];
        fputs("<tr>", out);
        name_cell(out, r[i].name);
        count_cell(out, r[i].count);
        mean_cell(out, r[i].total, r[i].count);
        us_cell(out, r[i].total);
        double share = grand ? 100.0 * (double)r[i].total / (double)grand : 0;
        snprintf(sh, sizeof sh, "%.1f%%", share);
        num(out, share, sh);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
}

static int run_tables(FILE *out, struct evp_trace *t, struct evp_stats *s)
{
    const struct evp_trace_info *in = evp_trace_info(t);
    struct krow *r = calloc(EVP_STATS_KEYS, sizeof *r);
    if (!r)
        return -ENOMEM;
    uint64_t grand;
    size_t n = fill_krows(r, t, s, 0, &grand);
    qsort(r, n, sizeof *r, by_total);
    fputs("<section id=\"phases\"><h2>Time by loop phase</h2>\n", out);
    krows(out, "t-phases", r, n, grand);
    fputs("</section>\n", out);

    n = fill_krows(r, t, s, 1, &grand);
    fputs("<section id=\"ops\"><h2>Top opcodes</h2>\n", out);
    if (!n) {
        fputs("<p class=\"note\">No instructions in this trace", out);
        fputs(in->can_emit & EVP_KIND_BIT(EVP_EV_OP)
                  ? " (recorded without ops).</p>\n"
                  : ".</p>\n",
              out);
    }
    for (int by = 0; n && by < 2; by++) {
        qsort(r, n, sizeof *r, by ? by_mean : by_total);
        fprintf(out, "<h3>by %s (%zu of %zu)</h3>\n", by ? "mean" : "total",
                n < TOP_OPS ? n : TOP_OPS, n);
        krows(out, by ? "t-ops-mean" : "t-ops-total", r,
              n < TOP_OPS ? n : TOP_OPS, grand);
    }
    fputs("</section>\n", out);
    free(r);

    static const char *const cols[] = {
        "function", "file:line", "calls", "inclusive", "self", "mean", NULL};
    fputs("<section id=\"funcs\"><h2>Functions</h2>\n"
          "<p><label>Filter by name: <input type=\"search\" "
          "id=\"filter-funcs\" data-table=\"t-funcs\"></label> "
          "<span class=\"shown\" id=\"shown-funcs\"></span></p>\n",
          out);
    table_head(out, "t-funcs", cols);
    size_t nf = 0;
    for (uint32_t id = 1; id <= s->nfuncs; id++) {
        const struct evp_func_stats *fs = &s->funcs[id];
        if (!fs->calls && !fs->resumes)
            continue;
        const struct evp_func *f = evp_trace_func(t, id);
        uint64_t calls = fs->calls + fs->resumes;
        fputs("<tr>", out);
        name_cell(out, f ? f->name : "?");
        fputs("<td class=\"file\">", out);
        if (f && *f->file) {
            h(out, f->file);
            fprintf(out, ":%u", f->line);
        }
        fputs("</td>", out);
        count_cell(out, calls);
        us_cell(out, fs->incl_ns);
        us_cell(out, fs->self_ns);
        mean_cell(out, fs->incl_ns, calls);
        fputs("</tr>\n", out);
        nf++;
    }
    fprintf(out, "</tbody></table>\n<p>total: %zu functions</p></section>\n",
            nf);
    return 0;
}

/* ---- two runs: the diff view's tables --------------------------------- */

struct drow {
    char name[1100];
    uint64_t count[2], total[2], first;
};

static int by_change(const void *x, const void *y)
{
    const struct drow *a = x, *b = y;
    double da = fabs((double)a->total[1] - (double)a->total[0]);
    double db = fabs((double)b->total[1] - (double)b->total[0]);
    if (da != db)
        return da < db ? 1 : -1;
    return (a->first > b->first) - (a->first < b->first);
}

static void drows(FILE *out, const char *id, const char *what, struct drow *r,
                  size_t n)
{
    qsort(r, n, sizeof *r, by_change);
    const char *const cols[] = {what,        "base count", "new count",
                                "base mean", "new mean",   "total change",
                                "change %",  NULL};
    table_head(out, id, cols);
    for (size_t i = 0; i < n; i++) {
        char u[48], t[80], p[24];
        double ch = (double)r[i].total[1] - (double)r[i].total[0];
        fputs("<tr>", out);
        name_cell(out, r[i].name);
        count_cell(out, r[i].count[0]);
        count_cell(out, r[i].count[1]);
        mean_cell(out, r[i].total[0], r[i].count[0]);
        mean_cell(out, r[i].total[1], r[i].count[1]);
        snprintf(t, sizeof t, "%s%s %s", ch < 0 ? "-" : "+",
                 evp_fmt_us(u, sizeof u, (uint64_t)fabs(ch), PAGE_IN_NS),
                 evp_fmt_unit(PAGE_IN_NS));
        num(out, ch, t);
        if (r[i].total[0]) {
            double pc = 100.0 * ch / (double)r[i].total[0];
            snprintf(p, sizeof p, "%+.1f%%", pc);
            num(out, pc, p);
        } else {
            num(out, r[i].total[1] ? INFINITY : 0, r[i].total[1] ? "new" : "");
        }
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
}

static int diff_tables(FILE *out, struct evp_trace *t[2], struct evp_stats s[2])
{
    size_t cap = EVP_STATS_KEYS;
    struct drow *r = calloc(cap, sizeof *r);
    if (!r)
        return -ENOMEM;
    size_t n;
    for (int ops = 0; ops < 2; ops++) {
        n = 0;
        memset(r, 0, cap * sizeof *r);
        if (ops) {
            /* matched by name; ordered by first appearance in BASE,
             * then in NEW */
            struct evp_op_match *m;
            if (evp_stats_match_ops(t, s, 0, &m, &n) < 0) {
                free(r);
                return -ENOMEM;
            }
            n = n < cap ? n : cap;
            for (size_t j = 0; j < n; j++) {
                snprintf(r[j].name, sizeof r[j].name, "%s", m[j].name);
                memcpy(r[j].count, m[j].count, sizeof r[j].count);
                memcpy(r[j].total, m[j].total, sizeof r[j].total);
                r[j].first = m[j].first;
            }
            free(m);
        } else {
            for (unsigned k = 0; k < EVP_STATS_KEYS; k++) {
                const uint64_t *cnt[2] = {s[0].kind_count, s[1].kind_count};
                if (!cnt[0][k] && !cnt[1][k])
                    continue;
                /* ordered by first appearance in BASE, then in NEW */
                int side = cnt[0][k] ? 0 : 1;
                struct drow *d = &r[n++];
                snprintf(d->name, sizeof d->name, "%s", evp_kind_name(k));
                for (int i = 0; i < 2; i++) {
                    d->count[i] = cnt[i][k];
                    d->total[i] = s[i].kind_total[k];
                }
                d->first = (side ? 1u << 20 : 0) + s[side].kind_first[k];
            }
        }
        fprintf(out, "<section id=\"%s\"><h2>%s, BASE to NEW</h2>\n",
                ops ? "diff-ops" : "diff-phases",
                ops ? "Opcodes" : "Time by loop phase");
        drows(out, ops ? "t-diff-ops" : "t-diff-phases",
              ops ? "opcode" : "phase", r, n);
        fputs("</section>\n", out);
    }

    /* Functions matched by name and file, as the diff view does. */
    free(r);
    struct evp_func_match *m;
    if (evp_stats_match_funcs(t, s, &m, &n) < 0)
        return -ENOMEM;
    if (!(r = calloc(n ? n : 1, sizeof *r))) {
        evp_stats_match_funcs_free(m, n);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(r[i].name, sizeof r[i].name, "%s", m[i].name);
        for (int side = 0; side < 2; side++) {
            r[i].count[side] = m[i].calls[side];
            r[i].total[side] = m[i].incl[side];
        }
        r[i].first = m[i].first;
    }
    evp_stats_match_funcs_free(m, n);
    fputs("<section id=\"diff-funcs\"><h2>Functions (inclusive time), BASE "
          "to NEW</h2>\n<p><label>Filter by name: <input type=\"search\" "
          "id=\"filter-diff-funcs\" data-table=\"t-diff-funcs\"></label> "
          "<span class=\"shown\" id=\"shown-diff-funcs\"></span></p>\n",
          out);
    drows(out, "t-diff-funcs", "function", r, n);
    fputs("</section>\n", out);
    free(r);
    return 0;
}

/* ---- a sampled trace's tables ------------------------------------------ */

/* A share cell and its interval: K of N periods, counting as TRIALS
 * samples (the summary's cells, evp_share_cells). */
static void share_cells(FILE *out, uint64_t k, uint64_t n, double trials)
{
    char sh[16], ci[32];
    evp_share_cells(k, n, trials, sh, sizeof sh, ci, sizeof ci);
    num(out, n ? 100.0 * (double)k / (double)n : 0, sh);
    fputs("<td class=\"n\">", out);
    h(out, ci);
    fputs("</td>", out);
}

/* A table of the matched rows K of one run, T: each row's share of
 * TOTAL periods, interval and estimated time (with INCL, self then
 * inclusive); names cut as the terminal's are not: FUNCS splits a
 * function's "file:line" into a cell of its own. */
static void share_rows(FILE *out, const char *id, struct evp_trace *t,
                       const struct evp_match *k, uint64_t total, double trials,
                       int incl, int funcs)
{
    static const char *const one[] = {"name", "share", "95% CI", "est. time",
                                      NULL};
    static const char *const two[] = {"function", "file:line", "self",
                                      "95% CI",   "est. time", "inclusive",
                                      "95% CI",   "est. time", NULL};
    table_head(out, id, incl ? two : one);
    for (size_t i = 0; i < k->n; i++) {
        const struct evp_match_row *r = &k->r[i];
        fputs("<tr>", out);
        if (funcs) {
            uint32_t fid = (uint32_t)r->order;
            const struct evp_func *f = evp_trace_func(t, fid);
            name_cell(out, f ? f->name : EVP_STACK_UNKNOWN_NAME);
            fputs("<td class=\"file\">", out);
            if (f && *f->file) {
                h(out, f->file);
                fprintf(out, ":%u", f->line);
            }
            fputs("</td>", out);
        } else {
            name_cell(out, r->name);
        }
        for (int c = 0; c <= incl; c++) {
            share_cells(out, r->w[c], total, trials);
            us_cell(out, evp_sample_ns(t, r->w[c]));
        }
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
}

/* Heaviest first, then as matched: the summary's order by share. */
static int by_weight(const void *x, const void *y, void *arg)
{
    const struct evp_match_row *a = x, *b = y;
    int c = *(const int *)arg;
    if (a->w[c] != b->w[c])
        return a->w[c] < b->w[c] ? 1 : -1;
    if (a->w[0] != b->w[0])
        return a->w[0] < b->w[0] ? 1 : -1;
    return (a->order > b->order) - (a->order < b->order);
}

/* One sampled run: where the thread was, the phases the samples name,
 * the opcodes and the functions, each row's share with its interval and
 * its estimated time, as `summary --funcs` of the trace prints them. */
static int sampled_tables(FILE *out, struct evp_trace *t,
                          const struct evp_sample_stats *a)
{
    struct evp_match k = {.runs = 1};
    double trials = evp_sample_trials(a->total, a->w2);
    int rc = evp_match_sample_where(&k, &t, a);
    if (rc)
        goto done;
    fputs("<section id=\"where\"><h2>Where the sampled thread was</h2>\n", out);
    share_rows(out, "t-where", t, &k, a->total, trials, 0, 0);
    fputs("</section>\n", out);
    evp_match_free(&k);
    int col = 0;
    /* the phases the samples name (an instrumented interpreter's) */
    if (a->total > a->phase[0]) {
        for (int p = 1; p <= 32 && !rc; p++) {
            if (!a->phase[p])
                continue;
            struct evp_match_row *d =
                evp_match_add(&k, evp_kind_name((unsigned)p - 1));
            if (!d) {
                rc = -ENOMEM;
                break;
            }
            snprintf(d->name, sizeof d->name, "%s",
                     evp_kind_name((unsigned)p - 1));
            d->w[0] = d->w[1] = a->phase[p];
            d->order = (uint64_t)p;
        }
        if (a->phase[0] && !rc) {
            struct evp_match_row *d = evp_match_add(&k, "(none reported)");
            if (!d)
                rc = -ENOMEM;
            else {
                snprintf(d->name, sizeof d->name, "(none reported)");
                d->w[0] = d->w[1] = a->phase[0];
            }
        }
        if (rc)
            goto done;
        if (k.n)
            qsort_r(k.r, k.n, sizeof *k.r, by_weight, &col);
        fputs("<section id=\"phases\"><h2>Time by loop phase</h2>\n", out);
        share_rows(out, "t-phases", t, &k, a->total, trials, 0, 0);
        fputs("</section>\n", out);
        evp_match_free(&k);
    }
    k.runs = 1;
    if ((rc = evp_match_sample_ops(&k, &t, a)) < 0)
        goto done;
    if (k.n)
        qsort_r(k.r, k.n, sizeof *k.r, by_weight, &col);
    fputs("<section id=\"ops\"><h2>Opcodes</h2>\n", out);
    share_rows(out, "t-ops", t, &k, a->total, trials, 0, 0);
    fputs("</section>\n", out);
    evp_match_free(&k);
    k.runs = 1;
    if ((rc = evp_match_sample_funcs(&k, &t, a, 1)) < 0)
        goto done;
    col = 1; /* by inclusive share, as summary --sort total */
    if (k.n)
        qsort_r(k.r, k.n, sizeof *k.r, by_weight, &col);
    /* (a row's order is its function id; <unknown stack> is past them) */
    fputs("<section id=\"funcs\"><h2>Functions</h2>\n"
          "<p><label>Filter by name: <input type=\"search\" "
          "id=\"filter-funcs\" data-table=\"t-funcs\"></label> "
          "<span class=\"shown\" id=\"shown-funcs\"></span></p>\n",
          out);
    share_rows(out, "t-funcs", t, &k, a->total, trials, 1, 1);
    fprintf(out, "<p>total: %zu functions</p></section>\n", k.n);
done:
    evp_match_free(&k);
    return rc;
}

/* The two runs' periods, for ordering their rows by the change of
 * share. */
struct evp_sample_shares {
    uint64_t total[2];
};

static int by_share_change(const void *x, const void *y, void *arg)
{
    const struct evp_match_row *a = x, *b = y;
    const struct evp_sample_shares *s = arg;
    double n0 = s->total[0] ? (double)s->total[0] : 1,
           n1 = s->total[1] ? (double)s->total[1] : 1;
    double da = fabs((double)a->w[2] / n1 - (double)a->w[0] / n0),
           db = fabs((double)b->w[2] / n1 - (double)b->w[0] / n0);
    if (da != db)
        return da < db ? 1 : -1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Two sampled runs: where, opcodes and functions (self), each run's
 * share, the change in points and whether it is significant at 95%, and
 * each run's estimated time, as `diff` of the traces compares them. */
static int sampled_diff_tables(FILE *out, struct evp_trace *t[2],
                               const struct evp_sample_stats a[2])
{
    static const char *const titles[3] = {"Where the sampled thread was",
                                          "Opcodes", "Functions (self)"};
    static const char *const ids[3] = {"t-diff-where", "t-diff-ops",
                                       "t-diff-funcs"};
    double trials[2] = {evp_sample_trials(a[0].total, a[0].w2),
                        evp_sample_trials(a[1].total, a[1].w2)};
    int rc = 0;
    for (int which = 0; which < 3 && !rc; which++) {
        struct evp_match k = {.runs = 2};
        rc = which == 0   ? evp_match_sample_where(&k, t, a)
             : which == 1 ? evp_match_sample_ops(&k, t, a)
                          : evp_match_sample_funcs(&k, t, a, 1);
        if (rc) {
            evp_match_free(&k);
            break;
        }
        static const char *const cols[] = {
            "name", "base share", "new share", "change",
            "z",    "base est.",  "new est.",  NULL};
        /* the rows that moved most first, as diff orders them */
        struct evp_sample_shares sh = {{a[0].total, a[1].total}};
        if (k.n)
            qsort_r(k.r, k.n, sizeof *k.r, by_share_change, &sh);
        fprintf(out, "<section id=\"%s\"><h2>%s, BASE to NEW</h2>\n",
                ids[which] + 2, titles[which]);
        if (which == 2)
            fputs("<p><label>Filter by name: <input type=\"search\" "
                  "id=\"filter-diff-funcs\" data-table=\"t-diff-funcs\">"
                  "</label> <span class=\"shown\" id=\"shown-diff-funcs\">"
                  "</span></p>\n",
                  out);
        table_head(out, ids[which], cols);
        for (size_t i = 0; i < k.n; i++) {
            const struct evp_match_row *r = &k.r[i];
            double p0 = a[0].total ? (double)r->w[0] / (double)a[0].total : 0,
                   p1 = a[1].total ? (double)r->w[2] / (double)a[1].total : 0,
                   z;
            int sig = evp_two_prop_z(p0, trials[0], p1, trials[1], &z);
            char c0[16], c1[16], ch[32], zz[16];
            snprintf(c0, sizeof c0, "%.1f%%", 100 * p0);
            snprintf(c1, sizeof c1, "%.1f%%", 100 * p1);
            snprintf(ch, sizeof ch, "%+.1f pp%s", 100 * (p1 - p0),
                     sig ? " *" : "");
            snprintf(zz, sizeof zz, "%+.1f", z);
            fputs("<tr>", out);
            name_cell(out, r->name);
            num(out, 100 * p0, c0);
            num(out, 100 * p1, c1);
            num(out, 100 * (p1 - p0), ch);
            num(out, z, zz);
            us_cell(out, evp_sample_ns(t[0], r->w[0]));
            us_cell(out, evp_sample_ns(t[1], r->w[2]));
            fputs("</tr>\n", out);
        }
        fputs("</tbody></table>\n", out);
        if (which == 0)
            fputs("<p class=\"note\">Shares of each run's timer periods; "
                  "the change in percentage points, * where it is "
                  "significant at 95% (a two-proportion z-test over each "
                  "run's samples' effective count, which covers the "
                  "sampling error only, not the samplers' bias).</p>\n",
                  out);
        fputs("</section>\n", out);
        evp_match_free(&k);
    }
    return rc;
}

/* ---- flame graphs ----------------------------------------------------- */

static int feed(void *ctx, const char *stack, size_t len, uint64_t ns)
{
    return evp_flame_add(ctx, stack, len, (double)ns);
}

/* The flame graph of T (with BASE: the differential one) in an iframe. */
static int flame(FILE *out, struct evp_trace *base, struct evp_trace *t,
                 const struct evp_report_opts *o)
{
    struct evp_flame *fl = evp_flame_new();
    if (!fl)
        return -ENOMEM;
    struct evp_folded_opts fo = {.compensate = o->compensate,
                                 .stream = -1,
                                 .max_depth = EVP_FOLDED_DEFAULT_DEPTH,
                                 .diag = o->diag};
    int rc = 0;
    if (base && (rc = evp_flame_to_base(fl, 1)) == 0 &&
        (rc = evp_view_folded_each(base, &fo, feed, fl)) == 0)
        rc = evp_flame_to_base(fl, 0);
    if (!rc)
        rc = evp_view_folded_each(t, &fo, feed, fl);
    char *svg = NULL;
    size_t len = 0;
    if (!rc && evp_flame_total(fl) > 0) {
        struct evp_flame_opts so = {
            .countname = "ns",
            .min_width = -1,
            .subtitle = base ? "widths: NEW; red: grew from BASE, blue: "
                               "shrank from BASE"
                             : NULL};
        FILE *m = open_memstream(&svg, &len);
        if (!m) {
            rc = -ENOMEM;
        } else {
            rc = evp_flame_write_svg(fl, m, &so, NULL);
            if (fclose(m) && !rc)
                rc = -ENOMEM;
        }
    }
    evp_flame_free(fl);
    const char *id = base ? "diff-flame" : "flame";
    fprintf(out, "<section id=\"%s\"><h2>%s</h2>\n", id,
            base ? "Differential flame graph" : "Flame graph");
    if (!rc && svg) {
        fprintf(out,
                "<p class=\"note\">Hover a frame for its values, click to "
                "zoom, Search (or Ctrl-F inside the graph) to highlight, "
                "Escape to reset.</p>\n"
                "<iframe class=\"flame\" id=\"%s-frame\" title=\"%s\" "
                "srcdoc=\"",
                id, base ? "differential flame graph" : "flame graph");
        static const char pre[] = "<!DOCTYPE html><html><head><meta "
                                  "charset=\"utf-8\"><style>body{margin:0}"
                                  "</style></head><body>";
        evp_esc_html_doc(out, pre, sizeof pre - 1);
        evp_esc_html_doc(out, svg, len);
        fputs("\"></iframe>\n", out);
    } else if (!rc) {
        fputs("<p class=\"note\">No timed stacks to draw.</p>\n", out);
    }
    fputs("</section>\n", out);
    free(svg);
    return rc;
}

/* ---- the page --------------------------------------------------------- */

static void page_head(FILE *out, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          /* nothing is fetched: the page and its frames are complete */
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
          "'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
          "frame-src 'self' about:; img-src data:\">\n<title>",
          out);
    h(out, title);
    fputs("</title>\n<style>\n"
          "body { font-family: sans-serif; margin: 1em 2em; color: #222; }\n"
          "h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: "
          "1.6em; } h3 { font-size: 1em; }\n"
          "table { border-collapse: collapse; margin: 0.5em 0; }\n"
          "th, td { padding: 2px 8px; text-align: left; vertical-align: top; "
          "}\n"
          "table.data th { border-bottom: 1px solid #888; cursor: pointer; "
          "user-select: none; white-space: nowrap; }\n"
          "table.data th.asc::after { content: \" \\25b2\"; }\n"
          "table.data th.desc::after { content: \" \\25bc\"; }\n"
          "table.data tbody tr:nth-child(odd) { background: #f4f4f4; }\n"
          "td.n { text-align: right; white-space: nowrap; "
          "font-variant-numeric: tabular-nums; }\n"
          "td.name, td.file { font-family: monospace; word-break: "
          "break-all; }\n"
          "table.facts th { color: #555; font-weight: normal; }\n"
          "table.facts td { font-family: monospace; word-break: break-all; }\n"
          "ul.notes li.warning { color: #a40; }\n"
          "tr.hidden { display: none; }\n"
          "iframe.flame { width: 100%; max-width: 1220px; height: 420px; "
          "border: 1px solid #ccc; }\n"
          ".runs { display: flex; flex-wrap: wrap; gap: 2em; }\n"
          "</style></head><body>\n",
          out);
}

int evp_view_report(struct evp_trace *base, struct evp_trace *new_, FILE *out,
                    const struct evp_report_opts *o)
{
    struct evp_trace *t[2] = {base, new_};
    int two = new_ != NULL;
    /* sampled traces are shown from their samples (a command refuses a
     * sampled run beside one of events) */
    int sampled = evp_sampled_only(base);
    struct evp_stats s[2];
    struct evp_sample_stats sa[2];
    int rc = 0;
    for (int i = 0; i < 1 + two; i++) {
        rc = sampled ? evp_stats_samples(t[i], &sa[i], -1, 0)
                     : evp_stats_compute(t[i], &s[i], o->compensate, -1, 1);
        if (rc < 0) {
            if (i && sampled)
                evp_stats_samples_free(&sa[0]);
            else if (i)
                evp_stats_free(&s[0]);
            evp_diag_fail(o->diag, "report: %s", strerror(-rc));
            return rc;
        }
    }
    const char *p0 = evp_trace_info(base)->path;
    char title[512];
    if (two)
        snprintf(title, sizeof title, "evalprof report: %s vs %s", p0,
                 evp_trace_info(new_)->path);
    else
        snprintf(title, sizeof title, "evalprof report: %s", p0);
    page_head(out, title);
    fputs("<h1>", out);
    h(out, title);
    fputs("</h1>\n<section id=\"header\"><h2>The run", out);
    fputs(two ? "s</h2>\n<div class=\"runs\">\n" : "</h2>\n", out);
    for (int i = 0; i < 1 + two; i++) {
        fputs(two ? "<div>" : "", out);
        facts(out, t[i], sampled ? NULL : &s[i], sampled ? &sa[i] : NULL,
              o->compensate, two ? (i ? "NEW" : "BASE") : NULL);
        fputs(two ? "</div>\n" : "", out);
    }
    fputs(two ? "</div>\n" : "", out);
    if (two) {
        const struct evp_trace_info *a = evp_trace_info(base),
                                    *b = evp_trace_info(new_);
        uint64_t e0 = evp_trace_end_ns(base), e1 = evp_trace_end_ns(new_);
        uint64_t el0 = e0 > a->start_ns ? e0 - a->start_ns : 0;
        uint64_t el1 = e1 > b->start_ns ? e1 - b->start_ns : 0;
        if (el0)
            fprintf(out,
                    "<p id=\"elapsed-change\">change: %+.1f%% elapsed</p>\n",
                    100.0 * ((double)el1 - (double)el0) / (double)el0);
        if (strcmp(a->python_version, b->python_version) != 0) {
            fputs("<p class=\"note\">The traces come from different "
                  "interpreter versions (",
                  out);
            h(out, *a->python_version ? a->python_version : "unknown");
            fputs(", ", out);
            h(out, *b->python_version ? b->python_version : "unknown");
            fputs("); opcodes are matched by name.</p>\n", out);
        }
    }
    fputs("</section>\n", out);
    if (two)
        rc = sampled ? sampled_diff_tables(out, t, sa) : diff_tables(out, t, s);
    else
        rc = sampled ? sampled_tables(out, base, &sa[0])
                     : run_tables(out, base, &s[0]);
    if (!rc)
        rc = two ? flame(out, base, new_, o) : flame(out, NULL, base, o);
    fputs("<footer><p>Written by evalprof. Tables: click a column's heading to "
          "sort by it.</p></footer>\n"
          "<script>\n",
          out);
    fputs(report_js, out);
    fputs("</script>\n</body></html>\n", out);
    for (int i = 0; i < 1 + two; i++) {
        if (sampled)
            evp_stats_samples_free(&sa[i]);
        else
            evp_stats_free(&s[i]);
    }
    if (rc < 0)
        evp_diag_fail(o->diag, "report: %s", strerror(-rc));
    return rc < 0 ? rc : (ferror(out) ? -EIO : 0);
}
