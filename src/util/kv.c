/*
 * kv: the metadata store shared by the recorder and the reader (kv.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "kv.h"

int evp_kv_set(struct evp_kv *m, const char *key, const char *value)
{
    for (size_t i = 0; i < m->n; i += 2) {
        if (strcmp(m->kv[i], key) == 0) {
            char *v = strdup(value);
            if (!v)
                return -ENOMEM;
            free(m->kv[i + 1]);
            m->kv[i + 1] = v;
            return 0;
        }
    }
    if (evp_grow((void **)&m->kv, &m->cap, m->n + 2, sizeof *m->kv, 32))
        return -ENOMEM;
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    m->kv[m->n++] = k;
    m->kv[m->n++] = v;
    return 0;
}

const char *evp_kv_get(const struct evp_kv *m, const char *key)
{
    for (size_t i = 0; i < m->n; i += 2)
        if (strcmp(m->kv[i], key) == 0)
            return m->kv[i + 1];
    return NULL;
}

void evp_kv_free(struct evp_kv *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->kv[i]);
    free(m->kv);
    *m = (struct evp_kv)EVP_KV_INIT;
}
