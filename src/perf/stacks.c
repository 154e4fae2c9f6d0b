/*
 * Folded-stack accumulator: "a;b;c" keys with summed values, written out
 * as the collapsed format that flamegraph.pl, inferno and speedscope read
 * ("a;b;c 1234" per line, sorted by byte order of the key, as
 * stackcollapse-perf.pl sorts).
 *
 * The perf-script collapse and the trace's folded export both end here,
 * so their outputs follow one convention.  Keys are copied into an arena;
 * the table is open-addressed and grows by doubling.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

struct entry {
    uint64_t hash;
    uint64_t value;
    size_t off; /* key offset in the arena */
    size_t len;
};

struct evp_stacks {
    struct entry *tab; /* cap slots; len 0 and off SIZE_MAX: empty */
    size_t cap, n;
    char *arena;
    size_t alen, acap;
    uint64_t total;
};

uint64_t evp_perf_hash(const void *p, size_t n)
{
    /* FNV-1a over 8-byte words where possible: simple, fast enough and
     * stable across runs (the output never depends on it anyway). */
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    h ^= h >> 32;
    return h ? h : 1;
}

struct evp_stacks *evp_stacks_new(void)
{
    struct evp_stacks *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cap = 1024;
    s->tab = calloc(s->cap, sizeof *s->tab);
    if (!s->tab) {
        free(s);
        return NULL;
    }
    return s;
}

void evp_stacks_free(struct evp_stacks *s)
{
    if (!s)
        return;
    free(s->tab);
    free(s->arena);
    free(s);
}

static int grow(struct evp_stacks *s)
{
    size_t ncap = s->cap * 2;
    struct entry *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -ENOMEM;
    for (size_t i = 0; i < s->cap; i++) {
        struct entry *e = &s->tab[i];
        if (!e->hash)
            continue;
        size_t j = e->hash & (ncap - 1);
        while (nt[j].hash)
            j = (j + 1) & (ncap - 1);
        nt[j] = *e;
    }
    free(s->tab);
    s->tab = nt;
    s->cap = ncap;
    return 0;
}

int evp_stacks_add(struct evp_stacks *s, const char *key, size_t len,
                   uint64_t value)
{
    uint64_t h = evp_perf_hash(key, len);
    size_t j = h & (s->cap - 1);
    for (;;) {
        struct entry *e = &s->tab[j];
        if (!e->hash)
            break;
        if (e->hash == h && e->len == len &&
            memcmp(s->arena + e->off, key, len) == 0) {
            e->value += value;
            s->total += value;
            return 0;
        }
        j = (j + 1) & (s->cap - 1);
    }
    if (!s->arena || s->alen + len > s->acap) { /* an empty first key too */
        size_t ncap = s->acap ? s->acap * 2 : 65536;
        while (ncap < s->alen + len)
            ncap *= 2;
        char *na = realloc(s->arena, ncap);
        if (!na)
            return -ENOMEM;
        s->arena = na;
        s->acap = ncap;
    }
    memcpy(s->arena + s->alen, key, len);
    struct entry *e = &s->tab[j];
    e->hash = h;
    e->value = value;
    e->off = s->alen;
    e->len = len;
    s->alen += len;
    s->n++;
    s->total += value;
    if (s->n * 2 > s->cap)
        return grow(s);
    return 0;
}

size_t evp_stacks_count(const struct evp_stacks *s)
{
    return s->n;
}

uint64_t evp_stacks_total(const struct evp_stacks *s)
{
    return s->total;
}

static const char *sort_arena;

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = *(const struct entry *const *)a;
    const struct entry *y = *(const struct entry *const *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(sort_arena + x->off, sort_arena + y->off, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

int evp_stacks_each(const struct evp_stacks *s,
                    int (*fn)(void *ctx, const char *key, size_t len,
                              uint64_t value),
                    void *ctx)
{
    const struct entry **v = malloc((s->n ? s->n : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->tab[i].hash)
            v[k++] = &s->tab[i];
    sort_arena = s->arena;
    qsort(v, k, sizeof *v, cmp_entry);
    int rc = 0;
    for (size_t i = 0; i < k && !rc; i++)
        rc = fn(ctx, s->arena + v[i]->off, v[i]->len, v[i]->value);
    free(v);
    return rc;
}

static int write_one(void *ctx, const char *key, size_t len, uint64_t value)
{
    FILE *out = ctx;
    fwrite(key, 1, len, out);
    fprintf(out, " %" PRIu64 "\n", value);
    return ferror(out) ? -EIO : 0;
}

int evp_stacks_write(const struct evp_stacks *s, FILE *out)
{
    return evp_stacks_each(s, write_one, out);
}

char *evp_perf_count(char *buf, size_t len, uint64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    size_t k = 0;
    for (int i = 0; i < n && k + 1 < len; i++) {
        if (i && (n - i) % 3 == 0 && k + 2 < len)
            buf[k++] = ',';
        buf[k++] = tmp[i];
    }
    if (len)
        buf[k < len ? k : len - 1] = 0;
    return buf;
}
