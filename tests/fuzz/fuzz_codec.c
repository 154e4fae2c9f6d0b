/*
 * Fuzz target: the event codec's decoder (evp_events_decode), fed any
 * bytes as an EVENTS chunk payload (40-byte prefix, then events).
 *
 * Properties checked:
 *   - the decoder never reads outside the payload (ASan) and never hands
 *     out more events than the prefix promises or the bytes can hold;
 *   - decoding in batches of any size gives the same events as decoding
 *     in one go, and a malformed event ends both at the same place;
 *   - what decodes, re-encoded by evp_events_encode, decodes to the same
 *     events (when its times can be encoded: never decreasing, steps
 *     below 2^59).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evalprof/format.h"
#include "fuzz.h"

/* Decode everything in batches of BATCH; returns the count, *BAD set when
 * the data ended in a malformed event. */
static size_t decode_all(const uint8_t *p, size_t len,
                         const struct evp_events_prefix *pf,
                         struct evp_rec_record *out, size_t cap, size_t batch,
                         int *bad)
{
    struct evp_events_cursor c;
    evp_events_cursor_init(&c, p, len, pf);
    size_t n = 0;
    *bad = 0;
    for (;;) {
        size_t want = batch < cap - n ? batch : cap - n;
        long got = evp_events_decode(&c, out + n, want);
        if (got < 0) {
            *bad = 1;
            break;
        }
        FUZZ_CHECK((size_t)got <= want, "decoded %ld of %zu asked", got, want);
        if (got == 0)
            break;
        n += (size_t)got;
        FUZZ_CHECK(c.p >= p + EVP_EVENTS_PREFIX_SIZE && c.p <= p + len,
                   "cursor outside the payload");
        if (n == cap)
            break;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct evp_events_prefix pf;
    if (evp_events_prefix_read(data, size, &pf) < 0)
        return 0;
    /* Every event takes at least one byte. */
    size_t cap = size - EVP_EVENTS_PREFIX_SIZE;
    if (cap > pf.count)
        cap = pf.count;
    struct evp_rec_record *a = malloc((cap + 1) * sizeof *a);
    struct evp_rec_record *b = malloc((cap + 1) * sizeof *b);
    FUZZ_CHECK(a && b, "out of memory");
    int bad_a, bad_b;
    size_t na = decode_all(data, size, &pf, a, cap + 1, 4096, &bad_a);
    FUZZ_CHECK(na <= cap, "%zu events from %zu bytes (prefix: %u)", na,
               size - EVP_EVENTS_PREFIX_SIZE, pf.count);
    size_t batch = 1 + (pf.seq % 7);
    size_t nb = decode_all(data, size, &pf, b, cap + 1, batch, &bad_b);
    FUZZ_CHECK(na == nb && bad_a == bad_b,
               "batches of %zu: %zu events (bad %d), one go: %zu (bad %d)",
               batch, nb, bad_b, na, bad_a);
    FUZZ_CHECK(memcmp(a, b, na * sizeof *a) == 0, "batches change events");

    /* Re-encode what decoded and decode it again. */
    int encodable = 1;
    for (size_t i = 1; i < na && encodable; i++)
        encodable = a[i].ts >= a[i - 1].ts &&
                    a[i].ts - a[i - 1].ts <= (UINT64_C(1) << 59);
    if (na && encodable) {
        uint8_t *enc = malloc(evp_events_bound(na));
        FUZZ_CHECK(enc != NULL, "out of memory");
        struct evp_events_prefix pf2 = {.stream = pf.stream, .seq = pf.seq};
        uint64_t back = 0;
        size_t len = evp_events_encode(enc, &pf2, a, na, &back);
        FUZZ_CHECK(back == 0 && len <= evp_events_bound(na),
                   "re-encoding: %llu backwards, %zu bytes",
                   (unsigned long long)back, len);
        struct evp_events_prefix pf3;
        FUZZ_CHECK(evp_events_prefix_read(enc, len, &pf3) == 0 &&
                       pf3.count == na,
                   "re-encoded prefix");
        int bad_c;
        size_t nc = decode_all(enc, len, &pf3, b, na, 4096, &bad_c);
        FUZZ_CHECK(nc == na && !bad_c, "re-encoded: %zu of %zu events", nc, na);
        for (size_t i = 0; i < na; i++)
            FUZZ_CHECK(a[i].ts == b[i].ts && a[i].kind == b[i].kind &&
                           a[i].aux == b[i].aux && a[i].arg == b[i].arg,
                       "event %zu changed in the round trip", i);
        free(enc);
    }
    free(a);
    free(b);
    return 0;
}
