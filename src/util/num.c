/*
 * Integers with thousands separators (num.h).  Written backwards into a
 * buffer of its own without printf: the tree view formats one per event.
 */
#include <string.h>

#include "num.h"

char *evp_num_group(char *buf, size_t len, uint64_t v)
{
    char tmp[32]; /* 20 digits, 6 separators, the NUL */
    char *p = tmp + sizeof tmp;
    int digits = 0;
    *--p = '\0';
    do {
        if (digits && digits % 3 == 0)
            *--p = ',';
        *--p = (char)('0' + v % 10);
        v /= 10;
        digits++;
    } while (v);
    size_t n = (size_t)(tmp + sizeof tmp - p); /* with the NUL */
    if (n <= len) {
        memcpy(buf, p, n);
    } else if (len) {
        memcpy(buf, p, len - 1);
        buf[len - 1] = '\0';
    }
    return buf;
}
