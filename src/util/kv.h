/*
 * kv: an ordered list of string pairs where a later value for a key
 * replaces the earlier one; the metadata store of the recorder (what it
 * writes in META chunks, kept for a forked child) and of the trace reader
 * (what the META chunks or "# meta:" lines said).  Few pairs (tens), so
 * lookups are linear; the pairs keep their order of first arrival.
 */
#ifndef EVP_KV_H
#define EVP_KV_H

#include <stddef.h>

struct evp_kv {
    char **kv;     /* key, value, key, value ... (owned copies) */
    size_t n, cap; /* strings, not pairs */
};

#define EVP_KV_INIT                                                            \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

/* Set KEY to VALUE (both copied): 0, or -ENOMEM with M unchanged. */
int evp_kv_set(struct evp_kv *m, const char *key, const char *value);

/* The value of KEY, or NULL. */
const char *evp_kv_get(const struct evp_kv *m, const char *key);

/* Free every pair, leaving M empty. */
void evp_kv_free(struct evp_kv *m);

#endif
