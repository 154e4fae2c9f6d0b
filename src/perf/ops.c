/*
 * Opcode shares from perf samples alone, with no instrumentation: each
 * sample whose leaf lies in the eval function (_PyEval_EvalFrameDefault)
 * is mapped to its source line through the interpreter's DWARF line
 * tables (libdw, as `perf annotate` and `addr2line` read them), and the
 * line to the opcode whose handler holds it: the TARGET(NAME) blocks of
 * ceval.c (3.11) or generated_cases.c.h (3.12+), when that source is on
 * disk.
 *
 *   perf script -F ip,sym,symoff,dso -G   "ip sym+0xOFF (dso)" per sample
 *     -> (dso, sym, offset) counted, sorted, made unique
 *     -> libdw: symbol address + offset -> line; for code inlined into
 *        the eval function, the call site in the eval function's own
 *        source (DW_AT_call_file / DW_AT_call_line of the outermost
 *        inlined scope), so that a Py_DECREF counts for its handler
 *     -> TARGET scan of that file: line ranges -> handler names
 *
 * Lines outside every handler count as "[dispatch/other]".  Shares carry
 * a 95% confidence interval (binomial, normal approximation): they are
 * sampling estimates, a third measure beside the trace's counts and
 * timings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "views.h"
#include "perf.h"

#define EVAL_FN "_PyEval_EvalFrameDefault"
#define OTHER "[dispatch/other]"

/* One sample's leaf, then (once sorted and merged) one distinct IP. */
struct leaf {
    char *dso;
    char *sym;
    uint64_t off;
    uint64_t n;
    /* resolved */
    const char *file; /* eval-level source file (owned by the file table) */
    int line;         /* 0: no line */
    const char *op;   /* handler name, OTHER, or NULL when no source */
};

struct srcfile {
    char *path;
    struct evp_ops_handler *h; /* NULL when not readable */
    size_t nh;
    int missing;
};

struct evp_ops {
    struct leaf *v;
    size_t n, cap;
    uint64_t total; /* every sample */
    uint64_t eval;  /* samples in the eval function */
    uint64_t nolines;
    struct srcfile *files;
    size_t nfiles;
    const char *nolines_dso; /* a dso without line tables */
    int nolines_stripped;    /* ... and without a symbol table */
    /* a stripped interpreter whose unnamed eval loop held samples
     * (unnamed.c): they have no line to map */
    char *stripped_dso;
    struct evp_perf_unnamed *unnamed; /* while the script is read */
};

struct evp_ops *evp_ops_new(void)
{
    return calloc(1, sizeof(struct evp_ops));
}

void evp_ops_free(struct evp_ops *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++) {
        free(o->v[i].dso);
        free(o->v[i].sym);
    }
    for (size_t i = 0; i < o->nfiles; i++) {
        free(o->files[i].path);
        free(o->files[i].h);
    }
    free(o->files);
    free(o->v);
    free(o->stripped_dso);
    free(o);
}

/* Is SYM (LEN bytes) the eval function or a part of it GCC split off
 * (".cold", ".part.0")? */
static int is_eval(const char *sym, size_t len)
{
    size_t k = strlen(EVAL_FN);
    return len >= k && memcmp(sym, EVAL_FN, k) == 0 &&
           (len == k || sym[k] == '.');
}

/* One line " ip sym+0xOFF (dso)": counted, kept when in the eval
 * function.  Lines of any other shape are not samples. */
static int add_line(struct evp_ops *o, const char *s, const char *e)
{
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    const char *ip = s;
    while (s < e && ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
        s++;
    if (s == ip || s == e || *s != ' ')
        return 0;
    size_t iplen = (size_t)(s - ip);
    while (s < e && *s == ' ')
        s++;
    if (e - s < 3 || e[-1] != ')')
        return 0;
    const char *open = NULL;
    for (const char *p = e - 1; p > s; p--)
        if (*p == '(' && p[-1] == ' ') {
            open = p;
            break;
        }
    if (!open)
        return 0;
    o->total++;
    const char *sym = s, *send = open - 1;
    const char *plus = NULL;
    for (const char *p = send; p > sym; p--)
        if (*p == '+') {
            plus = p;
            break;
        }
    if (!plus && send - sym == 9 && memcmp(sym, "[unknown]", 9) == 0 &&
        evp_perf_unnamed_name(o->unnamed, open + 1,
                              (size_t)(e - 1 - (open + 1)), ip, iplen)) {
        /* the unnamed eval loop of a stripped interpreter */
        o->eval++;
        o->nolines++;
        if (!o->stripped_dso) {
            o->stripped_dso = strndup(open + 1, (size_t)(e - 1 - (open + 1)));
            if (!o->stripped_dso)
                return -ENOMEM;
        }
        return 0;
    }
    if (!plus || !is_eval(sym, (size_t)(plus - sym)))
        return 0;
    char *end;
    unsigned long long off = strtoull(plus + 1, &end, 16);
    if (end != send)
        return 0;
    o->eval++;
    if (o->n == o->cap) {
        size_t c = o->cap ? o->cap * 2 : 1024;
        struct leaf *v = realloc(o->v, c * sizeof *v);
        if (!v)
            return -ENOMEM;
        o->v = v;
        o->cap = c;
    }
    struct leaf *l = &o->v[o->n];
    *l = (struct leaf){.off = off, .n = 1};
    l->sym = strndup(sym, (size_t)(plus - sym));
    l->dso = strndup(open + 1, (size_t)(e - 1 - (open + 1)));
    if (!l->sym || !l->dso) {
        free(l->sym);
        free(l->dso);
        return -ENOMEM;
    }
    o->n++;
    return 0;
}

static int cmp_leaf(const void *a, const void *b)
{
    const struct leaf *x = a, *y = b;
    int c = strcmp(x->dso, y->dso);
    if (!c)
        c = strcmp(x->sym, y->sym);
    if (!c)
        c = (x->off > y->off) - (x->off < y->off);
    return c;
}

int evp_ops_read_script(struct evp_ops *o, const char *buf, size_t len)
{
    const char *end = buf + len;
    o->unnamed = evp_perf_unnamed_scan(buf, len);
    while (buf < end) {
        const char *nl = memchr(buf, '\n', (size_t)(end - buf));
        const char *e = nl ? nl : end;
        int rc = add_line(o, buf, e);
        if (rc) {
            evp_perf_unnamed_free(o->unnamed);
            o->unnamed = NULL;
            return rc;
        }
        buf = nl ? nl + 1 : end;
    }
    evp_perf_unnamed_free(o->unnamed);
    o->unnamed = NULL;
    if (!o->n)
        return 0;
    qsort(o->v, o->n, sizeof *o->v, cmp_leaf);
    size_t w = 0;
    for (size_t i = 1; i < o->n; i++) {
        if (cmp_leaf(&o->v[w], &o->v[i]) == 0) {
            o->v[w].n += o->v[i].n;
            free(o->v[i].dso);
            free(o->v[i].sym);
        } else
            o->v[++w] = o->v[i];
    }
    o->n = w + 1;
    return 0;
}

uint64_t evp_ops_samples(const struct evp_ops *o, uint64_t *eval)
{
    if (eval)
        *eval = o->eval;
    return o->total;
}

/* ---- the TARGET scanner ---------------------------------------------- */

/* Is the line at P (to E) "TARGET(NAME)" after blanks?  NAME into OUT. */
static int target_line(const char *p, const char *e, char *out, size_t len)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    if (e - p < 8 || memcmp(p, "TARGET(", 7) != 0)
        return 0;
    p += 7;
    const char *n = p;
    while (p < e && (*p == '_' || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
        p++;
    if (p == n || p == e || *p != ')' || (size_t)(p - n) >= len)
        return 0;
    memcpy(out, n, (size_t)(p - n));
    out[p - n] = 0;
    return 1;
}

int evp_ops_scan_targets(const char *text, size_t len,
                         struct evp_ops_handler **out, size_t *count)
{
    struct evp_ops_handler *h = NULL;
    size_t n = 0, cap = 0;
    const char *p = text, *end = text + len;
    unsigned line = 1;
    /* the handler open, the depth of its braces once its first '{' is
     * met (0: not yet) */
    int open = 0, depth = 0, seen_brace = 0;
    int in_block = 0; /* inside a comment */
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        char name[sizeof h->name];
        if (!in_block && target_line(p, e, name, sizeof name)) {
            if (open)
                h[n - 1].last = line - 1;
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                struct evp_ops_handler *g = realloc(h, cap * sizeof *h);
                if (!g) {
                    free(h);
                    return -ENOMEM;
                }
                h = g;
            }
            h[n] = (struct evp_ops_handler){.first = line, .last = line};
            memcpy(h[n].name, name, sizeof name);
            n++;
            open = 1;
            depth = 0;
            seen_brace = 0;
        }
        /* braces outside comments, strings and character constants */
        for (const char *q = p; q < e; q++) {
            if (in_block) {
                if (q + 1 < e && q[0] == '*' && q[1] == '/') {
                    in_block = 0;
                    q++;
                }
                continue;
            }
            if (q + 1 < e && q[0] == '/' && q[1] == '/')
                break;
            if (q + 1 < e && q[0] == '/' && q[1] == '*') {
                in_block = 1;
                q++;
                continue;
            }
            if (*q == '"' || *q == '\'') {
                char quote = *q;
                for (q++; q < e && *q != quote; q++)
                    if (*q == '\\')
                        q++;
                continue;
            }
            if (!open)
                continue;
            if (*q == '{') {
                depth++;
                seen_brace = 1;
            } else if (*q == '}' && seen_brace && --depth == 0) {
                h[n - 1].last = line;
                open = 0;
                break;
            }
        }
        if (open)
            h[n - 1].last = line;
        line++;
        p = nl ? nl + 1 : end;
    }
    *out = h;
    *count = n;
    return 0;
}

const char *evp_ops_handler_at(const struct evp_ops_handler *h, size_t n,
                               unsigned line)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h[mid].last < line)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && h[lo].first <= line ? h[lo].name : NULL;
}

/* ---- resolving with libdw -------------------------------------------- */

/* The source file NAME as DWARF gives it, under the compilation
 * directory DIR when relative. */
static struct srcfile *source(struct evp_ops *o, const char *dir,
                              const char *name)
{
    char path[4096];
    if (name[0] != '/' && dir && *dir)
        snprintf(path, sizeof path, "%s/%s", dir, name);
    else
        snprintf(path, sizeof path, "%s", name);
    for (size_t i = 0; i < o->nfiles; i++)
        if (strcmp(o->files[i].path, path) == 0)
            return &o->files[i];
    struct srcfile *f = realloc(o->files, (o->nfiles + 1) * sizeof *f);
    if (!f)
        return NULL;
    o->files = f;
    f = &o->files[o->nfiles];
    *f = (struct srcfile){.path = strdup(path)};
    if (!f->path)
        return NULL;
    o->nfiles++;
    char *text;
    size_t len;
    if (evp_flame_slurp(path, &text, &len) != 0) {
        f->missing = 1;
        return f;
    }
    if (evp_ops_scan_targets(text, len, &f->h, &f->nh) != 0)
        f->missing = 1;
    free(text);
    return f;
}

/* The eval-level file and line of ADDR in MOD: the call site of the
 * outermost inlined scope, else the line table's own line.  0 when the
 * module has no line for it. */
static int eval_line(Dwfl_Module *mod, Dwarf_Addr addr, const char **dir,
                     const char **file, int *line)
{
    Dwfl_Line *dl = dwfl_module_getsrc(mod, addr);
    if (!dl)
        return 0;
    const char *f = dwfl_lineinfo(dl, NULL, line, NULL, NULL, NULL);
    if (!f)
        return 0;
    *file = f;
    *dir = dwfl_line_comp_dir(dl);
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
    Dwarf_Die *scopes = NULL;
    int ns = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
    Dwarf_Die *outer = NULL;
    for (int i = 0; i < ns; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_subprogram)
            break;
        if (tag == DW_TAG_inlined_subroutine)
            outer = &scopes[i];
    }
    Dwarf_Attribute at;
    Dwarf_Word cf, cl;
    Dwarf_Files *files;
    size_t nf;
    if (outer &&
        dwarf_formudata(dwarf_attr(outer, DW_AT_call_file, &at), &cf) == 0 &&
        dwarf_formudata(dwarf_attr(outer, DW_AT_call_line, &at), &cl) == 0 &&
        dwarf_getsrcfiles(cu, &files, &nf) == 0 && cf < nf) {
        const char *cfile = dwarf_filesrc(files, cf, NULL, NULL);
        if (cfile) {
            *file = cfile;
            *line = (int)cl;
        }
    }
    free(scopes);
    return 1;
}

/* MOD's file has no symbol table of its own (strip(1) removed it, and
 * the DWARF sections with it). */
static int stripped(Dwfl_Module *mod)
{
    GElf_Addr bias;
    Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
    if (!elf)
        return 0;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(elf, scn)) != NULL)
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
            return 0;
    return 1;
}

/* Resolve the leaves V[0..N) that share one dso. */
static int resolve_dso(struct evp_ops *o, struct leaf *v, size_t n)
{
    static const Dwfl_Callbacks cb = {
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
    };
    Dwfl *dwfl = dwfl_begin(&cb);
    if (!dwfl)
        return -ENOMEM;
    Dwfl_Module *mod = dwfl_report_offline(dwfl, "", v[0].dso, -1);
    dwfl_report_end(dwfl, NULL, NULL);
    int nsym = mod ? dwfl_module_getsymtab(mod) : -1;
    const char *last_sym = NULL;
    GElf_Addr base = 0;
    int have_base = 0, lines = 0;
    for (size_t i = 0; i < n; i++) {
        struct leaf *l = &v[i];
        if (!last_sym || strcmp(last_sym, l->sym) != 0) {
            last_sym = l->sym;
            have_base = 0;
            for (int k = 0; k < nsym && !have_base; k++) {
                GElf_Sym sym;
                GElf_Addr addr;
                const char *name = dwfl_module_getsym_info(mod, k, &sym, &addr,
                                                           NULL, NULL, NULL);
                if (name && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
                    strcmp(name, l->sym) == 0) {
                    base = addr;
                    have_base = 1;
                }
            }
        }
        const char *dir, *file;
        if (have_base && eval_line(mod, base + l->off, &dir, &file, &l->line)) {
            struct srcfile *f = source(o, dir, file);
            if (!f) {
                dwfl_end(dwfl);
                return -ENOMEM;
            }
            l->file = f->path;
            if (!f->missing) {
                const char *op =
                    evp_ops_handler_at(f->h, f->nh, (unsigned)l->line);
                l->op = op ? op : OTHER;
            }
            lines = 1;
        } else {
            l->line = 0;
            o->nolines += l->n;
        }
    }
    if (!lines && !o->nolines_dso) {
        o->nolines_dso = v[0].dso;
        o->nolines_stripped = stripped(mod);
    }
    dwfl_end(dwfl);
    return 0;
}

int evp_ops_resolve(struct evp_ops *o, char *msg, size_t len)
{
    if (!o->eval) {
        snprintf(msg, len,
                 "no sample fell in %s (%llu samples in all): is the "
                 "command a CPython interpreter, and did it run Python code "
                 "long enough?",
                 EVAL_FN, (unsigned long long)o->total);
        return -1;
    }
    for (size_t i = 0; i < o->n;) {
        size_t j = i + 1;
        while (j < o->n && strcmp(o->v[j].dso, o->v[i].dso) == 0)
            j++;
        if (resolve_dso(o, o->v + i, j - i) < 0) {
            snprintf(msg, len, "out of memory reading line tables");
            return -1;
        }
        i = j;
    }
    if (o->nolines == o->eval && (o->nolines_stripped || o->stripped_dso)) {
        snprintf(msg, len,
                 "%s is stripped: it has no symbol table and no DWARF line "
                 "tables, so opcodes cannot be told from addresses (its "
                 "debug symbols, or a build with -g, have them)",
                 o->stripped_dso ? o->stripped_dso : o->nolines_dso);
        return -1;
    }
    if (o->nolines == o->eval) {
        snprintf(msg, len,
                 "%s: no DWARF line tables for %s (built without -g): "
                 "opcodes cannot be told from addresses",
                 o->nolines_dso ? o->nolines_dso : o->v[0].dso, EVAL_FN);
        return -1;
    }
    return 0;
}

/* ---- the tables -------------------------------------------------------- */

struct row {
    const char *file;
    int line;
    const char *op;
    uint64_t n;
};

static int cmp_row_n(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? 1 : -1;
    int c = strcmp(x->op ? x->op : "", y->op ? y->op : "");
    if (!c && x->file && y->file)
        c = strcmp(x->file, y->file);
    return c ? c : x->line - y->line;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The 95% interval of K out of N, in percent, normal approximation. */
static void interval(uint64_t k, uint64_t n, double *lo, double *hi)
{
    double p = (double)k / (double)n;
    double h = 1.96 * sqrt(p * (1 - p) / (double)n);
    *lo = 100.0 * (p - h < 0 ? 0 : p - h);
    *hi = 100.0 * (p + h > 1 ? 1 : p + h);
}

/* Rows merged by opcode (BY_OP) or by file and line, heaviest first. */
static struct row *rows(const struct evp_ops *o, int by_op, size_t *count)
{
    struct row *r = calloc(o->n + 1, sizeof *r);
    if (!r)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < o->n; i++) {
        const struct leaf *l = &o->v[i];
        if (!l->line || (by_op && !l->op))
            continue;
        size_t k;
        for (k = 0; k < m; k++)
            if (by_op ? strcmp(r[k].op, l->op) == 0
                      : (r[k].file == l->file && r[k].line == l->line))
                break;
        if (k == m)
            r[m++] = (struct row){l->file, l->line, l->op, 0};
        r[k].n += l->n;
    }
    qsort(r, m, sizeof *r, cmp_row_n);
    *count = m;
    return r;
}

int evp_ops_print(const struct evp_ops *o, FILE *out, size_t top)
{
    char a[32], b[32];
    uint64_t known = 0;
    for (size_t i = 0; i < o->n; i++)
        if (o->v[i].line && o->v[i].op)
            known += o->v[i].n;
    fprintf(out, "eval loop: %s of %s samples (%.1f%%) in %s\n",
            evp_perf_count(a, sizeof a, o->eval),
            evp_perf_count(b, sizeof b, o->total),
            100.0 * (double)o->eval / (double)o->total, EVAL_FN);
    size_t missing = 0, first = 0;
    for (size_t i = 0; i < o->nfiles; i++)
        if (o->files[i].missing && !missing++)
            first = i;
    if (missing)
        fprintf(out,
                "  source not on disk: %s%s (lines are shown, opcodes "
                "cannot be named)\n",
                o->files[first].path, missing > 1 ? " and others" : "");
    for (size_t i = 0; i < o->nfiles; i++)
        if (!o->files[i].missing && o->files[i].nh)
            fprintf(out, "  handlers: %zu TARGET blocks in %s\n",
                    o->files[i].nh, o->files[i].path);
    if (o->nolines)
        fprintf(out, "  %s samples at addresses without a line\n",
                evp_perf_count(a, sizeof a, o->nolines));
    size_t n;
    struct row *r;
    if (known) {
        if (!(r = rows(o, 1, &n)))
            return -ENOMEM;
        fprintf(out,
                "\nopcode shares (handler holding each sample's line):\n"
                "  %-34s %10s %7s  %-15s %7s\n",
                "opcode", "samples", "eval%", "95% CI", "all%");
        for (size_t i = 0; i < n && i < top; i++) {
            double lo, hi;
            interval(r[i].n, o->eval, &lo, &hi);
            char ci[32];
            snprintf(ci, sizeof ci, "%.1f-%.1f", lo, hi);
            fprintf(out, "  %-34s %10s %6.1f%%  %-15s %6.1f%%\n", r[i].op,
                    evp_perf_count(a, sizeof a, r[i].n),
                    100.0 * (double)r[i].n / (double)o->eval, ci,
                    100.0 * (double)r[i].n / (double)o->total);
        }
        if (n > top)
            fprintf(out, "  (%zu more)\n", n - top);
        free(r);
    }
    if (!(r = rows(o, 0, &n)))
        return -ENOMEM;
    fprintf(out, "\nhottest eval-loop lines:\n  %-40s %-28s %10s %7s\n", "line",
            "opcode", "samples", "eval%");
    for (size_t i = 0; i < n && i < top; i++) {
        char where[512];
        snprintf(where, sizeof where, "%s:%d", base_name(r[i].file), r[i].line);
        fprintf(out, "  %-40s %-28s %10s %6.1f%%\n", where,
                r[i].op ? r[i].op : "?", evp_perf_count(a, sizeof a, r[i].n),
                100.0 * (double)r[i].n / (double)o->eval);
    }
    free(r);
    fprintf(out,
            "\nnote: sampling estimates from %s samples (95%% intervals, "
            "normal approximation); code inlined into %s counts at its call "
            "site%s\n",
            evp_perf_count(a, sizeof a, o->eval), EVAL_FN,
            missing ? "; opcodes need the interpreter's source tree" : "");
    return ferror(out) ? -EIO : 0;
}
