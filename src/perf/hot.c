/*
 * Hot-function table from perf samples, in the layout of the Visual
 * Studio table quoted in the eval-loop profiling discussion:
 *
 *   Function Name   Total [samples, %]   Self [samples, %]
 *
 * Total counts the samples in which a function appears at least once
 * (recursion is not counted twice), self those in which it is the leaf.
 * The process-name frame that folded stacks start with is not a function
 * and is left out.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "views.h"
#include "perf.h"

struct fn {
    uint64_t total, self, last;
};

struct evp_hot {
    struct evp_strset names;
    struct fn *fn; /* by name id */
    size_t fcap;
    uint64_t samples;
};

struct evp_hot *evp_hot_new(void)
{
    struct evp_hot *h = calloc(1, sizeof *h);
    if (h)
        h->names = (struct evp_strset)EVP_STRSET_INIT;
    return h;
}

void evp_hot_free(struct evp_hot *h)
{
    if (!h)
        return;
    evp_strset_free(&h->names);
    free(h->fn);
    free(h);
}

static struct fn *lookup(struct evp_hot *h, const char *name, size_t len)
{
    /* room for a new name first */
    if (evp_grow((void **)&h->fn, &h->fcap, h->names.n + 1, sizeof *h->fn,
                 1024))
        return NULL;
    int added;
    uint32_t id = evp_strset_add(&h->names, name, len, &added);
    if (id == EVP_ITAB_NONE)
        return NULL;
    if (added)
        h->fn[id] = (struct fn){0, 0, 0};
    return &h->fn[id];
}

int evp_hot_add(struct evp_hot *h, const struct evp_perf_sample *s)
{
    h->samples++;
    for (size_t i = 0; i < s->nframes; i++) {
        struct fn *f = lookup(h, s->frames[i].name, s->frames[i].len);
        if (!f)
            return -ENOMEM;
        if (f->last != h->samples) {
            f->last = h->samples;
            f->total++;
        }
        if (i + 1 == s->nframes)
            f->self++;
    }
    return 0;
}

static int cmp_self(const void *a, const void *b, void *fns)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const struct fn *x = (const struct fn *)fns + i;
    const struct fn *y = (const struct fn *)fns + j;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return i < j ? -1 : i > j; /* first seen first */
}

int evp_hot_print(const struct evp_hot *h, FILE *out, size_t limit)
{
    size_t k = h->names.n;
    uint32_t *v = malloc((k ? k : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < k; i++)
        v[i] = (uint32_t)i;
    qsort_r(v, k, sizeof *v, cmp_self, h->fn);
    if (limit && k > limit)
        k = limit;
    double all = h->samples ? (double)h->samples : 1.0;
    fprintf(out, "%-48s %24s %24s\n", "Function Name", "Total [samples, %]",
            "Self [samples, %]");
    for (size_t i = 0; i < k; i++) {
        const struct fn *f = &h->fn[v[i]];
        char tot[32], self[32], a[40], b[40];
        evp_perf_count(tot, sizeof tot, f->total);
        evp_perf_count(self, sizeof self, f->self);
        snprintf(a, sizeof a, "%s (%.2f%%)", tot, 100.0 * f->total / all);
        snprintf(b, sizeof b, "%s (%.2f%%)", self, 100.0 * f->self / all);
        size_t len;
        const char *name = evp_strset_get(&h->names, v[i], &len);
        size_t w = evp_esc_term(out, name, len, 48);
        fprintf(out, "%*s %24s %24s\n", (int)(w < 48 ? 48 - w : 0), "", a, b);
    }
    free(v);
    return ferror(out) ? -EIO : 0;
}
