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
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "num.h"
#include "perf.h"

struct evp_stacks {
    struct evp_strset keys;
    uint64_t *value; /* by key id */
    size_t vcap;
};

struct evp_stacks *evp_stacks_new(void)
{
    struct evp_stacks *s = calloc(1, sizeof *s);
    if (s)
        s->keys = (struct evp_strset)EVP_STRSET_INIT;
    return s;
}

void evp_stacks_free(struct evp_stacks *s)
{
    if (!s)
        return;
    evp_strset_free(&s->keys);
    free(s->value);
    free(s);
}

int evp_stacks_add(struct evp_stacks *s, const char *key, size_t len,
                   uint64_t value)
{
    /* room for a new key's value first */
    if (evp_grow((void **)&s->value, &s->vcap, s->keys.n + 1, sizeof *s->value,
                 1024))
        return -ENOMEM;
    int added;
    uint32_t id = evp_strset_add(&s->keys, key, len, &added);
    if (id == EVP_ITAB_NONE)
        return -ENOMEM;
    if (added)
        s->value[id] = 0;
    s->value[id] += value;
    return 0;
}

static int cmp_key(const void *a, const void *b, void *keys)
{
    size_t xl, yl;
    const char *x = evp_strset_get(keys, *(const uint32_t *)a, &xl);
    const char *y = evp_strset_get(keys, *(const uint32_t *)b, &yl);
    int c = memcmp(x, y, xl < yl ? xl : yl);
    if (c)
        return c;
    return xl < yl ? -1 : xl > yl;
}

int evp_stacks_each(const struct evp_stacks *s,
                    int (*fn)(void *ctx, const char *key, size_t len,
                              uint64_t value),
                    void *ctx)
{
    size_t n = s->keys.n;
    uint32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)i;
    qsort_r(v, n, sizeof *v, cmp_key, (void *)&s->keys);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        size_t len;
        const char *key = evp_strset_get(&s->keys, v[i], &len);
        rc = fn(ctx, key, len, s->value[v[i]]);
    }
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
    return evp_num_group(buf, len, v);
}
