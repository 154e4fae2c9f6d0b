/*
 * itab: the analyzers' shared hash index (see itab.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "itab.h"

void evp_itab_free(struct evp_itab *t)
{
    free(t->slot);
    *t = (struct evp_itab)EVP_ITAB_INIT;
}

void evp_itab_clear(struct evp_itab *t)
{
    if (t->slot)
        memset(t->slot, 0, t->cap * sizeof *t->slot);
    t->n = 0;
}

uint64_t evp_itab_hash_bytes(const void *p, size_t n)
{
    uint64_t h = XXH3_64bits(p, n);
    return h ? h : 1;
}

static int rehash(struct evp_itab *t, size_t cap)
{
    struct evp_islot *s = calloc(cap, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slot[i].hash)
            continue;
        size_t j = t->slot[i].hash & (cap - 1);
        while (s[j].hash)
            j = (j + 1) & (cap - 1);
        s[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = s;
    t->cap = cap;
    return 0;
}

int evp_itab_reserve(struct evp_itab *t, size_t n)
{
    size_t cap = t->cap ? t->cap : 16;
    while (n > cap / 2) {
        if (cap > SIZE_MAX / 2 / sizeof *t->slot)
            return -ENOMEM;
        cap *= 2;
    }
    return cap == t->cap ? 0 : rehash(t, cap);
}

int evp_itab_put(struct evp_itab *t, uint64_t h, uint32_t id)
{
    if ((t->n + 1) * 2 > t->cap && evp_itab_reserve(t, t->n + 1) < 0)
        return -ENOMEM;
    size_t mask = t->cap - 1, j = h & mask;
    while (t->slot[j].hash)
        j = (j + 1) & mask;
    t->slot[j] = (struct evp_islot){h, id};
    t->n++;
    return 0;
}

int evp_grow_(void **p, size_t *cap, size_t need, size_t size, size_t first)
{
    size_t nc = *cap ? *cap : first ? first : 1;
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return -ENOMEM;
        nc *= 2;
    }
    if (size && nc > SIZE_MAX / size)
        return -ENOMEM;
    void *np = realloc(*p, nc * size);
    if (!np)
        return -ENOMEM;
    *p = np;
    *cap = nc;
    return 0;
}

/* ---- evp_strset -------------------------------------------------------- */

void evp_strset_free(struct evp_strset *s)
{
    evp_itab_free(&s->index);
    free(s->arena);
    free(s->ref);
    *s = (struct evp_strset)EVP_STRSET_INIT;
}

struct str_key {
    const struct evp_strset *s;
    const char *p;
    size_t len;
};

static int same_str(const void *ctx, uint32_t id)
{
    const struct str_key *k = ctx;
    const struct evp_strref *r = &k->s->ref[id];
    return r->len == k->len && memcmp(k->s->arena + r->off, k->p, k->len) == 0;
}

uint32_t evp_strset_add(struct evp_strset *s, const char *p, size_t len,
                        int *added)
{
    struct str_key k = {s, p, len};
    uint64_t h = evp_itab_hash_bytes(p, len);
    uint32_t id = evp_itab_find(&s->index, h, same_str, &k);
    if (added)
        *added = id == EVP_ITAB_NONE;
    if (id != EVP_ITAB_NONE)
        return id;
    if (s->n >= EVP_ITAB_NONE - 1)
        return EVP_ITAB_NONE;
    /* (one byte more than the keys: an empty first key gets an arena) */
    if (evp_grow((void **)&s->ref, &s->cap, s->n + 1, sizeof *s->ref, 1024) ||
        evp_grow((void **)&s->arena, &s->acap, s->alen + len + 1, 1, 65536))
        return EVP_ITAB_NONE;
    id = (uint32_t)s->n;
    if (evp_itab_put(&s->index, h, id) < 0)
        return EVP_ITAB_NONE;
    memcpy(s->arena + s->alen, p, len);
    s->ref[id] = (struct evp_strref){s->alen, len};
    s->alen += len;
    s->n++;
    return id;
}
