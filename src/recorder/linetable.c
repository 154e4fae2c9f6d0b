/*
 * CPython 3.11-3.13 location tables (co_linetable), decoded into code
 * unit -> line ranges for a sampled function's lines.ID metadata.
 *
 * The table is a run of entries, each covering 1 to 8 code units.  An
 * entry's first byte has its top bit set, the bytes after it have it
 * clear, so the entry boundaries never depend on what the bytes mean:
 *
 *   first byte   1 CCCC LLL     C: the entry's kind, L: code units - 1
 *   kind 0-9     short form: one byte of columns; line unchanged
 *   kind 10-12   one-line form: two column bytes; line + (kind - 10)
 *   kind 13      no columns: signed varint line delta
 *   kind 14      long form: signed varint line delta, varint end-line
 *                delta, varint column + 1, varint end column + 1
 *   kind 15      no location: the line is not changed, and the entry has
 *                none
 *
 * Varints are little-endian 6-bit groups, bit 6 set on every group but
 * the last; a signed varint holds |v| << 1 with the sign in bit 0.  Line
 * deltas are from the previous entry that had a line (co_firstlineno for
 * the first).  Only lines are kept: columns are skipped.
 */
#include <stdint.h>

#include "linetable.h"

/* Units below 2^24: what an op at event can carry (docs/FORMAT.md). */
#define MAX_UNITS (1L << 24)
#define MAX_LINE 0x7fffffffL

static int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 6) {
        if (*pp >= end || (**pp & 0x80) || shift > 42)
            return -1; /* cut short, or the next entry began */
        uint8_t b = *(*pp)++;
        v |= (uint64_t)(b & 0x3f) << shift;
        if (!(b & 0x40))
            break;
    }
    *out = v;
    return 0;
}

static int get_svarint(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
    uint64_t u;
    if (get_varint(pp, end, &u) < 0)
        return -1;
    *out = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
    return 0;
}

/* Skip N column bytes. */
static int skip_bytes(const uint8_t **pp, const uint8_t *end, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (*pp >= end || (**pp & 0x80))
            return -1;
        (*pp)++;
    }
    return 0;
}

int evp_rec_lt311_decode(const uint8_t *table, size_t n, long firstline,
                         void (*range)(void *ctx, long unit, long line),
                         void *ctx)
{
    const uint8_t *p = table, *end = table + n;
    int64_t line = firstline;
    long unit = 0;
    while (p < end) {
        uint8_t b = *p++;
        if (!(b & 0x80))
            return -1;
        unsigned kind = (b >> 3) & 15, units = (b & 7) + 1u;
        int64_t delta = 0;
        uint64_t skip;
        int rc = 0, none = 0;
        if (kind <= 9) {
            rc = skip_bytes(&p, end, 1);
        } else if (kind <= 12) {
            delta = kind - 10;
            rc = skip_bytes(&p, end, 2);
        } else if (kind == 13) {
            rc = get_svarint(&p, end, &delta);
        } else if (kind == 14) {
            rc = get_svarint(&p, end, &delta);
            for (int i = 0; i < 3 && rc == 0; i++)
                rc = get_varint(&p, end, &skip);
        } else {
            none = 1;
        }
        if (rc < 0)
            return -1;
        if (!none) {
            line += delta;
            if (line < -MAX_LINE || line > MAX_LINE)
                return -1;
        }
        /* A line below 1 (generated code) is a range without one. */
        range(ctx, unit, none || line < 1 ? 0 : (long)line);
        unit += (long)units;
        if (unit > MAX_UNITS)
            return -1;
    }
    return 0;
}
