/*
 * Number and time formatting shared by the views, matching the
 * discussion's reports: counts with thousands separators ("94,807"),
 * times in microseconds with one truncated decimal ("1,782.7"), wall-clock
 * times as
 * "2021-03-31 20:27:25.663947 UTC" (truncated to the microsecond, as the
 * discussion's analyzer prints them).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "views.h"

const char *evp_fmt_unit(int in_ns)
{
    return in_ns ? "ns" : "µs";
}

/* Tenths of a microsecond are truncated, not rounded: the discussion's
 * reports show 22,118,598 ns as "22,118.5 µs". */
char *evp_fmt_us(char *buf, size_t len, uint64_t ns, int in_ns)
{
    if (in_ns)
        return evp_num_group(buf, len, ns);
    uint64_t tenths = ns / 100;
    evp_num_group(buf, len, tenths / 10);
    size_t n = strlen(buf);
    if (n + 2 < len) {
        buf[n++] = '.';
        buf[n++] = (char)('0' + tenths % 10);
        buf[n] = '\0';
    }
    return buf;
}

char *evp_fmt_us_double(char *buf, size_t len, double us, int in_ns)
{
    if (!(us > 0))
        us = 0;
    if (us > 1.8e15)
        us = 1.8e15;
    return evp_fmt_us(buf, len, (uint64_t)(us * 1000.0 + (in_ns ? 0.5 : 0)),
                      in_ns);
}

char *evp_fmt_wall(char *buf, size_t len, int64_t epoch_ns)
{
    if (epoch_ns < 0) {
        snprintf(buf, len, "(unknown)");
        return buf;
    }
    time_t s = (time_t)(epoch_ns / 1000000000);
    long us = (long)(epoch_ns % 1000000000 / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char d[32];
    strftime(d, sizeof d, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, len, "%s.%06ld UTC", d, us);
    return buf;
}

void evp_fmt_dashes(FILE *out, int n)
{
    putc(' ', out);
    for (int i = 0; i < n; i++)
        putc('-', out);
}

size_t evp_view_leaf_name(const struct evp_trace *t, uint32_t key, char *buf,
                          size_t len)
{
    unsigned v = key & EVP_KEY_VAL;
    int n;
    if ((key & EVP_KEY_TAG) == EVP_KEY_PHASE) {
        n = snprintf(buf, len, "[%s]", evp_kind_name(v));
    } else {
        const char *op = evp_trace_opname(t, v);
        n = op ? snprintf(buf, len, "op:%s", op)
               : snprintf(buf, len, "op:%u", v);
    }
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

void evp_view_func_key(const struct evp_trace *t, uint32_t id, char *buf,
                       size_t len)
{
    const struct evp_func *f = evp_trace_func(t, id);
    if (!f)
        snprintf(buf, len, "<func %u>", id);
    else if (*f->file)
        snprintf(buf, len, "%s (%s:%u)", f->name, f->file, f->line);
    else
        snprintf(buf, len, "%s", f->name);
}

void evp_view_op_name(const struct evp_trace *t, unsigned op, char *buf,
                      size_t len)
{
    const char *nm = evp_trace_opname(t, op);
    if (nm)
        snprintf(buf, len, "%s", nm);
    else
        snprintf(buf, len, "<%u>", op);
}
