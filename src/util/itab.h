/*
 * itab: the one hash index the analyzers share.
 *
 * An open-addressed table of (hash, id) slots that maps a key to a dense
 * 32-bit id; the keys themselves stay wherever their owner keeps them (a
 * node array, a string arena, the trace's function table), and the
 * owner's SAME callback compares them.  Linear probing, at most half
 * full, grows by doubling.  Hash 0 marks an empty slot: the hash
 * functions here never return it.
 *
 *   uint64_t h = evp_itab_hash_bytes(name, len);
 *   uint32_t id = evp_itab_find(&tab, h, same_name, &key);
 *   if (id == EVP_ITAB_NONE) {
 *       id = new_entry(...);
 *       if (evp_itab_put(&tab, h, id) < 0)
 *           ... out of memory
 *   }
 *
 * Used by the text reader (function names, threads), the binary reader
 * (streams), folded stacks, the flame-graph builder and the perf side.
 */
#ifndef EVP_ITAB_H
#define EVP_ITAB_H

#include <stddef.h>
#include <stdint.h>

#define EVP_ITAB_NONE UINT32_MAX

struct evp_islot {
    uint64_t hash; /* 0: empty */
    uint32_t id;
};

struct evp_itab {
    struct evp_islot *slot;
    size_t cap; /* a power of two, or 0 before the first put */
    size_t n;
};

/* An empty table that allocates on its first evp_itab_put(). */
#define EVP_ITAB_INIT                                                          \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

void evp_itab_free(struct evp_itab *t);

/* Make room for N entries in all (0 or -ENOMEM). */
int evp_itab_reserve(struct evp_itab *t, size_t n);

/* Forget every entry, keeping the memory. */
void evp_itab_clear(struct evp_itab *t);

uint64_t evp_itab_hash_bytes(const void *p, size_t n);

static inline uint64_t evp_itab_hash_u64(uint64_t x)
{
    uint64_t h = x * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    return h ? h : 1;
}

/*
 * The id stored under hash H whose key SAME(CTX, id) accepts, or
 * EVP_ITAB_NONE.  Inline so that SAME, a static function of the caller,
 * is inlined into the probe loop.
 */
static inline uint32_t evp_itab_find(const struct evp_itab *t, uint64_t h,
                                     int (*same)(const void *ctx, uint32_t id),
                                     const void *ctx)
{
    if (!t->cap)
        return EVP_ITAB_NONE;
    size_t mask = t->cap - 1;
    for (size_t j = h & mask; t->slot[j].hash; j = (j + 1) & mask)
        if (t->slot[j].hash == h && same(ctx, t->slot[j].id))
            return t->slot[j].id;
    return EVP_ITAB_NONE;
}

/*
 * Store ID under H (a key evp_itab_find() did not find), growing the
 * table first when it would be more than half full: 0, or -ENOMEM with
 * nothing stored.
 */
int evp_itab_put(struct evp_itab *t, uint64_t h, uint32_t id);

/* ---- growing arrays ------------------------------------------------------ */

int evp_grow_(void **p, size_t *cap, size_t need, size_t size, size_t first);

/* Room for NEED elements of SIZE bytes in the array *P of *CAP elements,
 * doubling from FIRST: 0, or -ENOMEM with *P and *CAP unchanged.  Inline
 * where there is room already (the per-event case). */
static inline int evp_grow(void **p, size_t *cap, size_t need, size_t size,
                           size_t first)
{
    return need <= *cap ? 0 : evp_grow_(p, cap, need, size, first);
}

/* ---- a set of byte strings on the index --------------------------------- */

/* Byte strings (any bytes, copied into an arena), each given a dense id
 * in order of arrival: the keys of folded stacks, perf's function names. */
struct evp_strset {
    struct evp_itab index;
    char *arena;
    size_t alen, acap;
    struct evp_strref {
        size_t off, len;
    } * ref; /* by id */
    size_t n, cap;
};

#define EVP_STRSET_INIT                                                        \
    {                                                                          \
        EVP_ITAB_INIT, NULL, 0, 0, NULL, 0, 0                                  \
    }

void evp_strset_free(struct evp_strset *s);

/* The id of the LEN bytes at P, added when new (*ADDED says which; ADDED
 * may be NULL); EVP_ITAB_NONE when out of memory. */
uint32_t evp_strset_add(struct evp_strset *s, const char *p, size_t len,
                        int *added);

static inline const char *evp_strset_get(const struct evp_strset *s,
                                         uint32_t id, size_t *len)
{
    *len = s->ref[id].len;
    return s->arena + s->ref[id].off;
}

#endif /* EVP_ITAB_H */
