/*
 * Aggregate figures of a trace, computed by one replay.  Of a trace of
 * events: per event kind and per opcode the count, the total elapsed
 * time and the order of first appearance; per function the replay
 * engine's calls, inclusive and self times; the distinct function names
 * entered.  Of a sampled trace: the timer periods per state, phase,
 * opcode and function (self: the leaf frame; inclusive: anywhere on the
 * stack, once a stack however often the function recurs).  The summary,
 * diff and report views print them; rows of several runs are matched
 * here too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "stats.h"
#include "views.h"

static int stats_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct evp_stats *a = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        unsigned k = e->kind;
        if (!a->kind_count[k]++)
            a->kind_first[k] = a->kind_seq++;
        a->kind_total[k] += e->elapsed;
        if (k == EVP_EV_OP) {
            unsigned op = e->aux;
            if (!a->op_count[op]++)
                a->op_first[op] = a->op_seq++;
            a->op_total[op] += e->elapsed;
        } else if (k == EVP_EV_ENTER && e->arg <= a->nfuncs) {
            a->entered[e->arg] = 1;
        }
    }
    return 0;
}

void evp_stats_free(struct evp_stats *a)
{
    if (!a)
        return;
    free(a->kind_count);
    free(a->entered);
    free(a->funcs);
    memset(a, 0, sizeof *a);
}

int evp_stats_compute(struct evp_trace *t, struct evp_stats *a, int compensate,
                      long stream, int funcs)
{
    memset(a, 0, sizeof *a);
    a->nfuncs = evp_trace_nfuncs(t);
    a->kind_count = calloc(6 * (size_t)EVP_STATS_KEYS, sizeof(uint64_t));
    a->entered = calloc((size_t)a->nfuncs + 1, 1);
    a->funcs = funcs ? calloc((size_t)a->nfuncs + 1, sizeof *a->funcs) : NULL;
    if (!a->kind_count || !a->entered || (funcs && !a->funcs)) {
        evp_stats_free(a);
        return -ENOMEM;
    }
    a->kind_total = a->kind_count + EVP_STATS_KEYS;
    a->kind_first = a->kind_total + EVP_STATS_KEYS;
    a->op_count = a->kind_first + EVP_STATS_KEYS;
    a->op_total = a->op_count + EVP_STATS_KEYS;
    a->op_first = a->op_total + EVP_STATS_KEYS;

    static const struct evp_replay_ops ops = {NULL, stats_events, NULL, NULL};
    struct evp_replay_opts ro = {.compensate = compensate,
                                 .stream = stream,
                                 .func_stats = a->funcs,
                                 .stats = &a->replay};
    int rc = evp_replay(t, &ro, &ops, a);
    if (rc < 0)
        evp_stats_free(a);
    else
        evp_stats_roots_load(t, &a->roots);
    return rc < 0 ? rc : 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

void evp_runs_reduce(const uint64_t *v, size_t n, uint64_t *scratch,
                     uint64_t *med, uint64_t *min, uint64_t *max)
{
    memcpy(scratch, v, n * sizeof *scratch);
    qsort(scratch, n, sizeof *scratch, cmp_u64);
    *min = scratch[0];
    *max = scratch[n - 1];
    *med = n % 2
               ? scratch[n / 2]
               : scratch[n / 2 - 1] + (scratch[n / 2] - scratch[n / 2 - 1]) / 2;
}

static int cmp_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

uint64_t evp_stats_names_called(const struct evp_trace *t,
                                const struct evp_stats *a)
{
    /* Distinct names, as the discussion counts them ("simple" name). */
    const char **names = calloc((size_t)a->nfuncs + 1, sizeof *names);
    if (!names)
        return 0;
    size_t n = 0;
    for (uint32_t id = 1; id <= a->nfuncs; id++) {
        const struct evp_func *f = evp_trace_func(t, id);
        if (a->entered[id] && f)
            names[n++] = f->name;
    }
    qsort(names, n, sizeof *names, cmp_name);
    uint64_t called = 0;
    for (size_t i = 0; i < n; i++)
        called += i == 0 || strcmp(names[i], names[i - 1]) != 0;
    free(names);
    return called;
}

static int cmp_match(const void *x, const void *y)
{
    const struct evp_func_match *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->first > b->first) - (a->first < b->first);
}

/* The root.* metadata keys and the labels they stand for in a key. */
static const struct {
    const char *key, *label;
} root_keys[] = {
    {"root.stdlib", "<stdlib>"},         {"root.platstdlib", "<stdlib>"},
    {"root.purelib", "<site-packages>"}, {"root.platlib", "<site-packages>"},
    {"root.script", "<script>"},         {"root.script.real", "<script>"},
};

void evp_stats_roots_load(const struct evp_trace *t, struct evp_stats_roots *r)
{
    r->n = 0;
    for (size_t i = 0; i < sizeof root_keys / sizeof *root_keys; i++) {
        const char *dir = evp_trace_meta(t, root_keys[i].key);
        /* only absolute directories: a relative one names no file */
        if (!dir || *dir != '/' || r->n == sizeof r->root / sizeof *r->root)
            continue;
        size_t len = strlen(dir);
        while (len > 0 && dir[len - 1] == '/')
            len--;
        r->root[r->n].dir = dir;
        r->root[r->n].len = len;
        r->root[r->n].label = root_keys[i].label;
        r->n++;
    }
}

/* Where in FILE the part relative to the longest of ROOTS it is under
 * starts, with that root's label in *ROOT, or NULL. */
static const char *recorded_rel(const struct evp_stats_roots *roots,
                                const char *file, const char **root)
{
    const char *rel = NULL;
    size_t best = 0;
    for (size_t i = 0; i < roots->n; i++) {
        size_t len = roots->root[i].len;
        if ((rel && len <= best) || strncmp(file, roots->root[i].dir, len) ||
            file[len] != '/' || !file[len + 1])
            continue;
        rel = file + len + 1;
        best = len;
        *root = roots->root[i].label;
    }
    return rel;
}

/* Where in FILE the module-relative part starts by the path's shape alone,
 * with its root's label in *ROOT, or NULL when FILE is under no root known. */
static const char *guessed_rel(const char *file, const char **root)
{
    const char *p, *sp = NULL;
    for (p = strstr(file, "/site-packages/"); p;
         p = strstr(p + 1, "/site-packages/"))
        sp = p + strlen("/site-packages/");
    if (!sp)
        for (p = strstr(file, "/dist-packages/"); p;
             p = strstr(p + 1, "/dist-packages/"))
            sp = p + strlen("/dist-packages/");
    if (sp) {
        *root = "<site-packages>";
        return sp;
    }
    /* the last "/lib/pythonX.Y/" (a "t" or "d" suffix allowed) */
    const char *lib = NULL;
    for (p = strstr(file, "/lib/python"); p; p = strstr(p + 1, "/lib/python")) {
        const char *q = p + strlen("/lib/python");
        if (*q < '0' || *q > '9')
            continue;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q++ != '.' || *q < '0' || *q > '9')
            continue;
        while (*q >= '0' && *q <= '9')
            q++;
        while (*q >= 'a' && *q <= 'z')
            q++;
        if (*q == '/')
            lib = q + 1;
    }
    *root = "<stdlib>";
    return lib;
}

void evp_stats_func_rel_key(const struct evp_trace *t,
                            const struct evp_stats_roots *roots, uint32_t id,
                            char *buf, size_t len)
{
    const struct evp_func *f = evp_trace_func(t, id);
    const char *root = NULL, *rel = NULL;
    if (!f || !*f->file) {
        evp_view_func_key(t, id, buf, len);
        return;
    }
    if (roots)
        rel = recorded_rel(roots, f->file, &root);
    if (!rel)
        rel = guessed_rel(f->file, &root);
    if (rel)
        snprintf(buf, len, "%s/%s:%s", root, rel, f->name);
    else
        snprintf(buf, len, "%s:%s", f->file, f->name);
}

void evp_stats_match_funcs_free(struct evp_func_match *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++) {
        free(rows[i].name);
        free(rows[i].key);
    }
    free(rows);
}

/* Rows keep their strings in blocks of their own length: a trace may
 * name hundreds of thousands of functions, so that the rows cost what
 * the names do, not each the longest name's room. */
int evp_stats_match_funcs(struct evp_trace *t[2], const struct evp_stats s[2],
                          struct evp_func_match **rows, size_t *nrows)
{
    size_t cap = (size_t)s[0].nfuncs + s[1].nfuncs + 1, n = 0;
    struct evp_func_match *r = calloc(cap, sizeof *r);
    if (!r)
        return -ENOMEM;
    char name[1100], key[1100];
    /* every function called on either side, then one row per key */
    for (int side = 0; side < 2; side++)
        for (uint32_t id = 1; id <= s[side].nfuncs; id++) {
            const struct evp_func_stats *fs = &s[side].funcs[id];
            if (!fs->calls && !fs->resumes)
                continue;
            struct evp_func_match *m = &r[n++];
            evp_view_func_key(t[side], id, name, sizeof name);
            evp_stats_func_rel_key(t[side], &s[side].roots, id, key,
                                   sizeof key);
            m->name = strdup(name);
            m->key = strdup(key);
            if (!m->name || !m->key) {
                evp_stats_match_funcs_free(r, n);
                return -ENOMEM;
            }
            m->calls[side] = fs->calls + fs->resumes;
            m->incl[side] = fs->incl_ns;
            m->first = ((uint64_t)side << 32) + id;
        }
    qsort(r, n, sizeof *r, cmp_match);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && strcmp(r[k - 1].key, r[i].key) == 0) {
            /* shown as NEW has it */
            if (r[i].calls[1] && !r[k - 1].calls[1]) {
                char *shown = r[k - 1].name;
                r[k - 1].name = r[i].name;
                r[i].name = shown;
            }
            for (int side = 0; side < 2; side++) {
                r[k - 1].calls[side] += r[i].calls[side];
                r[k - 1].incl[side] += r[i].incl[side];
            }
            free(r[i].name);
            free(r[i].key);
        } else {
            r[k++] = r[i];
        }
    }
    *rows = r;
    *nrows = k;
    return 0;
}

int evp_stats_match_ops(struct evp_trace *t[2], const struct evp_stats s[2],
                        int family, struct evp_op_match **rows, size_t *nrows)
{
    size_t cap = 0, n = 0;
    for (int i = 0; i < 2; i++)
        for (unsigned op = 0; op < EVP_STATS_KEYS; op++)
            cap += s[i].op_count[op] != 0;
    struct evp_op_match *m = calloc(cap ? cap : 1, sizeof *m);
    if (!m)
        return -ENOMEM;
    for (int i = 0; i < 2; i++)
        for (unsigned op = 0; op < EVP_STATS_KEYS; op++) {
            if (!s[i].op_count[op])
                continue;
            char name[sizeof m->name];
            evp_view_op_name(t[i], family > 1 ? evp_trace_opbase(t[i], op) : op,
                             name, sizeof name);
            if (family)
                evp_view_op_family(name, sizeof name, family > 1);
            /* a run's names are unique but where FAMILY names several
             * opcodes alike: their figures are summed */
            size_t j = 0;
            while (j < n && strcmp(m[j].name, name))
                j++;
            if (j == n) {
                j = n++;
                snprintf(m[j].name, sizeof m[j].name, "%s", name);
                m[j].first = (i ? 1u << 20 : 0) + s[i].op_first[op];
            }
            m[j].count[i] += s[i].op_count[op];
            m[j].total[i] += s[i].op_total[op];
        }
    *rows = m;
    *nrows = n;
    return 0;
}

/* ---- a sampled trace's figures ------------------------------------------ */

static void agg_sample(struct evp_sample_stats *a, const struct evp_sample *s)
{
    uint64_t w = s->weight;
    a->total += w;
    a->samples++;
    a->w2 += (double)w * (double)w;
    a->cat[evp_sample_cat(s->state, s->stack)] += w;
    if (s->state & EVP_SAMPLE_NO_PC)
        a->nopc += w;
    int ph = evp_sample_phase(s->state);
    a->phase[ph >= 0 && ph < 32 ? ph + 1 : 0] += w;
    int op = evp_sample_opcode(s->state);
    if (op >= 0 && a->group)
        op =
            (int)evp_trace_opbase(a->t, (unsigned)op) & (int)EVP_SAMPLE_OP_MASK;
    if (!evp_sample_ip_current(a->t, s->state))
        a->op_jit += w;
    else
        a->op[op >= 0 ? (unsigned)op : EVP_SAMPLE_OP_MASK] += w;
    size_t n = (size_t)s->depth;
    int unknown = (s->flags & EVP_SMPF_CUT) != 0;
    if (++a->stamp == 0) {
        memset(a->seen, 0, ((size_t)a->unknown + 1) * sizeof *a->seen);
        a->stamp = 1;
    }
    if (unknown && !n)
        a->self[a->unknown] += w;
    else if (n)
        a->self[s->func[n - 1] <= a->nfuncs ? s->func[n - 1] : a->unknown] += w;
    if (unknown) {
        a->incl[a->unknown] += w;
        a->seen[a->unknown] = a->stamp;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t f = s->func[i] <= a->nfuncs ? s->func[i] : a->unknown;
        if (a->seen[f] != a->stamp) {
            a->seen[f] = a->stamp;
            a->incl[f] += w;
        }
    }
}

static int agg_samples(void *ctx, const struct evp_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        agg_sample(ctx, &s[i]);
    return 0;
}

void evp_stats_samples_free(struct evp_sample_stats *a)
{
    free(a->self);
    free(a->incl);
    free(a->seen);
}

int evp_stats_samples(struct evp_trace *t, struct evp_sample_stats *a,
                      long stream, int group)
{
    memset(a, 0, sizeof *a);
    a->t = t;
    a->group = group;
    a->nfuncs = evp_trace_nfuncs(t);
    a->unknown = a->nfuncs + 1;
    size_t n = (size_t)a->unknown + 1;
    a->self = calloc(n, sizeof *a->self);
    a->incl = calloc(n, sizeof *a->incl);
    a->seen = calloc(n, sizeof *a->seen);
    if (!a->self || !a->incl || !a->seen) {
        evp_stats_samples_free(a);
        return -ENOMEM;
    }
    static const struct evp_replay_ops ops = {.samples = agg_samples};
    struct evp_replay_opts ro = {.stream = stream};
    int rc = evp_replay(t, &ro, &ops, a);
    if (rc < 0)
        evp_stats_samples_free(a);
    return rc;
}

/* ---- rows of several runs, matched by key ------------------------------- */

void evp_match_free(struct evp_match *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->r[i].key);
        free(k->r[i].w);
    }
    free(k->r);
    k->r = NULL;
    k->n = k->cap = 0;
}

struct evp_match_row *evp_match_add(struct evp_match *k, const char *key)
{
    if (evp_grow((void **)&k->r, &k->cap, k->n + 1, sizeof *k->r, 64))
        return NULL;
    struct evp_match_row *d = &k->r[k->n];
    memset(d, 0, sizeof *d);
    d->key = strdup(key);
    d->w = calloc(2 * k->runs, sizeof *d->w);
    if (!d->key || !d->w) {
        free(d->key);
        free(d->w);
        return NULL;
    }
    k->n++;
    return d;
}

static int cmp_key(const void *x, const void *y)
{
    const struct evp_match_row *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

void evp_match_merge(struct evp_match *k)
{
    if (!k->n)
        return; /* (k->r may be NULL) */
    qsort(k->r, k->n, sizeof *k->r, cmp_key);
    size_t m = 0;
    for (size_t i = 0; i < k->n; i++) {
        struct evp_match_row *r = &k->r[i];
        if (m && strcmp(k->r[m - 1].key, r->key) == 0) {
            for (size_t j = 0; j < 2 * k->runs; j++)
                k->r[m - 1].w[j] += r->w[j];
            free(r->key);
            free(r->w);
            continue;
        }
        k->r[m++] = *r;
    }
    k->n = m;
}

int evp_match_sample_ops(struct evp_match *k, struct evp_trace *const *t,
                         const struct evp_sample_stats *a)
{
    for (size_t i = 0; i < k->runs; i++)
        for (unsigned op = 0; op <= EVP_SAMPLE_OP_MASK; op++) {
            if (!a[i].op[op])
                continue;
            char nm[128];
            if (op == EVP_SAMPLE_OP_MASK)
                snprintf(nm, sizeof nm, "(no opcode)");
            else
                evp_view_op_name(t[i], op, nm, sizeof nm);
            if (op != EVP_SAMPLE_OP_MASK && a[i].family)
                evp_view_op_family(nm, sizeof nm, a[i].group);
            struct evp_match_row *d = evp_match_add(k, nm);
            if (!d)
                return -ENOMEM;
            d->cols = evp_esc_term_cell(d->name, sizeof d->name, nm, 70);
            d->w[2 * i] = d->w[2 * i + 1] = a[i].op[op];
            d->order = (uint64_t)i << 32 | op;
        }
    for (size_t i = 0; i < k->runs; i++) {
        if (!a[i].op_jit)
            continue;
        struct evp_match_row *d = evp_match_add(k, EVP_SAMPLE_JIT_OP_NAME);
        if (!d)
            return -ENOMEM;
        d->cols = evp_esc_term_cell(d->name, sizeof d->name,
                                    EVP_SAMPLE_JIT_OP_NAME, 70);
        d->w[2 * i] = d->w[2 * i + 1] = a[i].op_jit;
        d->order = (uint64_t)i << 32 | (EVP_SAMPLE_OP_MASK + 1);
    }
    evp_match_merge(k);
    return 0;
}

int evp_match_sample_funcs(struct evp_match *k, struct evp_trace *const *t,
                           const struct evp_sample_stats *a, int wide)
{
    for (size_t i = 0; i < k->runs; i++) {
        struct evp_stats_roots roots;
        evp_stats_roots_load(t[i], &roots);
        for (uint32_t id = 1; id <= a[i].unknown; id++) {
            if (!a[i].self[id] && !a[i].incl[id])
                continue;
            char key[1100], nm[1024];
            if (id == a[i].unknown)
                snprintf(nm, sizeof nm, "%s", EVP_STACK_UNKNOWN_NAME);
            else
                evp_view_func_key(t[i], id, nm, sizeof nm);
            if (k->runs == 1)
                snprintf(key, sizeof key, "%010" PRIu32, id);
            else if (id == a[i].unknown)
                snprintf(key, sizeof key, "%s", EVP_STACK_UNKNOWN_NAME);
            else
                evp_stats_func_rel_key(t[i], &roots, id, key, sizeof key);
            struct evp_match_row *d = evp_match_add(k, key);
            if (!d)
                return -ENOMEM;
            d->cols =
                evp_view_func_cell(d->name, sizeof d->name, nm, wide ? 0 : 70);
            d->w[2 * i] = a[i].self[id];
            d->w[2 * i + 1] = a[i].incl[id];
            d->order = (uint64_t)i << 32 | id;
        }
    }
    evp_match_merge(k);
    return 0;
}

static int cmp_order(const void *x, const void *y)
{
    const struct evp_match_row *a = x, *b = y;
    return (a->order > b->order) - (a->order < b->order);
}

int evp_match_sample_where(struct evp_match *k, struct evp_trace *const *t,
                           const struct evp_sample_stats *a)
{
    /* the JIT's rows beside the eval loop's */
    static const int order[EVP_SCAT__COUNT] = {
        EVP_SCAT_EVAL,   EVP_SCAT_JIT,      EVP_SCAT_JIT_CALLED,
        EVP_SCAT_C_CALL, EVP_SCAT_GIL_WAIT, EVP_SCAT_SYSCALL,
        EVP_SCAT_NO_GIL, EVP_SCAT_OTHER,    EVP_SCAT_NO_FRAME,
        EVP_SCAT_NO_PC};
    /* traces whose producer could not tell a blocked thread from the
     * rest have one row for every sample without the GIL, in its place */
    int blocked = 1, no_gil = 0;
    for (size_t i = 0; i < k->runs; i++)
        blocked &= evp_trace_info(t[i])->sample_blocked;
    for (int ci = 0; ci < EVP_SCAT__COUNT; ci++)
        if (order[ci] == EVP_SCAT_NO_GIL)
            no_gil = ci;
    int jit = evp_sample_jit_told(t, k->runs);
    for (int ci = 0; ci < EVP_SCAT__COUNT; ci++) {
        int c = order[ci];
        uint64_t any = 0;
        for (size_t i = 0; i < k->runs; i++)
            any |= a[i].cat[c];
        if (c == EVP_SCAT_NO_PC && !any)
            continue; /* only the sampler thread's samples have no PC */
        if ((c == EVP_SCAT_JIT || c == EVP_SCAT_JIT_CALLED) && !any && !jit)
            continue; /* an interpreter without a JIT */
        int merged =
            !blocked && (c == EVP_SCAT_GIL_WAIT || c == EVP_SCAT_SYSCALL ||
                         c == EVP_SCAT_NO_GIL);
        const char *nm = merged ? "no GIL" : evp_sample_cat_name(c);
        struct evp_match_row *d = evp_match_add(k, nm);
        if (!d)
            return -ENOMEM;
        d->cols = evp_esc_term_cell(d->name, sizeof d->name, nm, 70);
        for (size_t i = 0; i < k->runs; i++)
            d->w[2 * i] = d->w[2 * i + 1] = a[i].cat[c];
        d->order = (uint64_t)(merged ? no_gil : ci);
    }
    evp_match_merge(k); /* the "no GIL" rows summed */
    if (k->n)
        qsort(k->r, k->n, sizeof *k->r, cmp_order);
    return 0;
}
