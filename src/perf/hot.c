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
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../views/views.h"
#include "perf.h"

struct fn {
    uint64_t hash;
    size_t off, len;
    uint64_t total, self, last;
};

struct evp_hot {
    struct fn *tab;
    size_t cap, n;
    char *arena;
    size_t alen, acap;
    uint64_t samples;
};

struct evp_hot *evp_hot_new(void)
{
    struct evp_hot *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->cap = 4096;
    h->tab = calloc(h->cap, sizeof *h->tab);
    if (!h->tab) {
        free(h);
        return NULL;
    }
    return h;
}

void evp_hot_free(struct evp_hot *h)
{
    if (!h)
        return;
    free(h->tab);
    free(h->arena);
    free(h);
}

static int grow(struct evp_hot *h)
{
    size_t ncap = h->cap * 2;
    struct fn *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -ENOMEM;
    for (size_t i = 0; i < h->cap; i++) {
        if (!h->tab[i].hash)
            continue;
        size_t j = h->tab[i].hash & (ncap - 1);
        while (nt[j].hash)
            j = (j + 1) & (ncap - 1);
        nt[j] = h->tab[i];
    }
    free(h->tab);
    h->tab = nt;
    h->cap = ncap;
    return 0;
}

static struct fn *lookup(struct evp_hot *h, const char *name, size_t len)
{
    uint64_t hv = evp_perf_hash(name, len);
    size_t j = hv & (h->cap - 1);
    while (h->tab[j].hash) {
        struct fn *f = &h->tab[j];
        if (f->hash == hv && f->len == len &&
            memcmp(h->arena + f->off, name, len) == 0)
            return f;
        j = (j + 1) & (h->cap - 1);
    }
    if (h->alen + len > h->acap) {
        size_t nc = h->acap ? h->acap * 2 : 65536;
        while (nc < h->alen + len)
            nc *= 2;
        char *na = realloc(h->arena, nc);
        if (!na)
            return NULL;
        h->arena = na;
        h->acap = nc;
    }
    memcpy(h->arena + h->alen, name, len);
    struct fn *f = &h->tab[j];
    *f = (struct fn){hv, h->alen, len, 0, 0, 0};
    h->alen += len;
    h->n++;
    if (h->n * 2 > h->cap) {
        size_t off = f->off;
        if (grow(h))
            return NULL;
        return lookup(h, h->arena + off, len);
    }
    return f;
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

static int cmp_self(const void *a, const void *b)
{
    const struct fn *x = *(const struct fn *const *)a;
    const struct fn *y = *(const struct fn *const *)b;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

int evp_hot_print(const struct evp_hot *h, FILE *out, size_t limit)
{
    const struct fn **v = malloc((h->n ? h->n : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < h->cap; i++)
        if (h->tab[i].hash)
            v[k++] = &h->tab[i];
    qsort(v, k, sizeof *v, cmp_self);
    if (limit && k > limit)
        k = limit;
    double all = h->samples ? (double)h->samples : 1.0;
    fprintf(out, "%-48s %24s %24s\n", "Function Name", "Total [samples, %]",
            "Self [samples, %]");
    for (size_t i = 0; i < k; i++) {
        char tot[32], self[32], a[40], b[40];
        evp_perf_count(tot, sizeof tot, v[i]->total);
        evp_perf_count(self, sizeof self, v[i]->self);
        snprintf(a, sizeof a, "%s (%.2f%%)", tot, 100.0 * v[i]->total / all);
        snprintf(b, sizeof b, "%s (%.2f%%)", self, 100.0 * v[i]->self / all);
        size_t w = evp_esc_term(out, h->arena + v[i]->off, v[i]->len, 48);
        fprintf(out, "%*s %24s %24s\n", (int)(w < 48 ? 48 - w : 0), "", a, b);
    }
    free(v);
    return ferror(out) ? -EIO : 0;
}
