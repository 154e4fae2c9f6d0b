/*
 * kv: the metadata store shared by the recorder and the reader (kv.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "kv.h"

/*
 * KEY and VALUE may lie in a mapped file that another process truncates
 * under the reader (evp_file_guard then jumps out of the read on the
 * SIGBUS): every block allocated here is in the table before any byte is
 * copied into it, so that a jump out of a copy leaves nothing the
 * table's owner does not free.  (strdup, a jump between its malloc and
 * its copy, leaked the block: seen under LeakSanitizer.)
 */
int evp_kv_set(struct evp_kv *m, const char *key, const char *value)
{
    size_t vn = strlen(value) + 1;
    for (size_t i = 0; i < m->n; i += 2) {
        if (strcmp(m->kv[i], key) == 0) {
            char *v, *old = m->kv[i + 1];
            if (value == old)
                return 0;
            if (!(v = malloc(vn)))
                return -ENOMEM;
            v[0] = '\0'; /* a string until the copy below */
            m->kv[i + 1] = v;
            free(old);
            memcpy(v, value, vn);
            return 0;
        }
    }
    size_t kn = strlen(key) + 1;
    if (evp_grow((void **)&m->kv, &m->cap, m->n + 2, sizeof *m->kv, 32))
        return -ENOMEM;
    char *k = malloc(kn), *v = malloc(vn);
    if (!k || !v) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    k[0] = v[0] = '\0';
    m->kv[m->n++] = k;
    m->kv[m->n++] = v;
    memcpy(k, key, kn);
    memcpy(v, value, vn);
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
