/*
 * Unit tests of the chunk codec (src/format/codec.c): varints, zigzag,
 * the compact event encoding in every form (plain kinds, function deltas,
 * op bytes, extended and raw escapes), clock-backwards handling, chunk
 * headers and checksums, and decoding of malformed input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evalprof/format.h"

static void test_varint_roundtrip(void **state)
{
    (void)state;
    static const uint64_t vals[] = {0,
                                    1,
                                    127,
                                    128,
                                    255,
                                    16383,
                                    16384,
                                    UINT32_MAX,
                                    (uint64_t)1 << 56,
                                    UINT64_MAX - 1,
                                    UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t buf[EVP_VARINT_MAX];
        size_t n = evp_varint_put(buf, vals[i]);
        assert_true(n >= 1 && n <= EVP_VARINT_MAX);
        const uint8_t *p = buf;
        uint64_t v;
        assert_int_equal(evp_varint_get(&p, buf + n, &v), 0);
        assert_true(v == vals[i]);
        assert_ptr_equal(p, buf + n);
        /* Every shorter input is an error, and does not move the cursor. */
        for (size_t cut = 0; cut < n; cut++) {
            p = buf;
            assert_int_equal(evp_varint_get(&p, buf + cut, &v), -1);
            assert_ptr_equal(p, buf);
        }
    }
    /* Eleven continuation bytes are never a valid varint. */
    uint8_t bad[11];
    memset(bad, 0x80, sizeof bad);
    const uint8_t *p = bad;
    uint64_t v;
    assert_int_equal(evp_varint_get(&p, bad + sizeof bad, &v), -1);
}

static void test_zigzag(void **state)
{
    (void)state;
    static const int64_t vals[] = {
        0, 1, -1, 2, -2, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        assert_true(evp_unzigzag(evp_zigzag(vals[i])) == vals[i]);
    assert_int_equal(evp_zigzag(-1), 1);
    assert_int_equal(evp_zigzag(1), 2);
}

static size_t encode(uint8_t **out, const struct evp_rec_record *r, size_t n,
                     uint64_t *backwards)
{
    *out = malloc(evp_events_bound(n));
    struct evp_events_prefix pf = {.stream = 7, .seq = 3, .dropped = 2};
    size_t len = evp_events_encode(*out, &pf, r, n, backwards);
    assert_true(len <= evp_events_bound(n));
    return len;
}

static void decode_all(const uint8_t *buf, size_t len,
                       struct evp_rec_record *out, size_t n)
{
    struct evp_events_prefix pf;
    assert_int_equal(evp_events_prefix_read(buf, len, &pf), 0);
    assert_int_equal(pf.stream, 7);
    assert_int_equal(pf.seq, 3);
    assert_int_equal(pf.dropped, 2);
    assert_int_equal(pf.count, n);
    struct evp_events_cursor c;
    evp_events_cursor_init(&c, buf, len, &pf);
    size_t got = 0;
    long k;
    /* Odd batch sizes cross every boundary. */
    while ((k = evp_events_decode(&c, out + got, 7)) > 0)
        got += (size_t)k;
    assert_int_equal(k, 0);
    assert_int_equal(got, n);
    assert_ptr_equal(c.p, c.end);
}

static void test_every_form(void **state)
{
    (void)state;
    struct evp_rec_record r[] = {
        {1000, EVP_EV_INIT, 0, 0},
        {1010, EVP_EV_ENTER, 0, 5},
        {1020, EVP_EV_LOOP_ENTER, 0, 0},
        {1030, EVP_EV_OP, 100, 3},      /* op byte + oparg */
        {1030, EVP_EV_OP, 0xfe, 70000}, /* largest plain op byte */
        {1040, EVP_EV_OP, 300, 1},      /* opcode beyond a byte */
        {1050, EVP_EV_ENTER, 0, 2},     /* negative function delta */
        {1060, EVP_EV_EXIT, 0, 2},
        {1070, EVP_EV_EXIT, 0, 0xffffffffu}, /* huge delta */
        {2000000, EVP_EV_RECORDER, 0, 4096}, /* extended kind, with arg */
        {2000001, EVP_EV_C_CALL, 0, 9},      /* extended kind, func form */
        {2000002, EVP_EV_LOOP_SLOW, 3, 0},   /* no-arg kind with aux: raw */
        {2000003, 999, 17, 23},              /* unknown kind: raw */
        {2000004, EVP_EV_ENTER, 1, 1},       /* func kind with aux: raw */
        {UINT64_C(1) << 50, EVP_EV_FINI, 0, 0},
    };
    size_t n = sizeof r / sizeof r[0];
    uint8_t *buf;
    uint64_t back = 0;
    size_t len = encode(&buf, r, n, &back);
    assert_int_equal(back, 0);
    struct evp_rec_record out[sizeof r / sizeof r[0]];
    decode_all(buf, len, out, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(out[i].ts == r[i].ts);
        assert_int_equal(out[i].kind, r[i].kind);
        assert_int_equal(out[i].aux, r[i].aux);
        assert_int_equal(out[i].arg, r[i].arg);
    }
    free(buf);
}

static void test_random_roundtrip(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct evp_rec_record *r = malloc(N * sizeof *r);
    struct evp_rec_record *out = malloc(N * sizeof *out);
    uint64_t x = 88172645463325252u, ts = 12345;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ts += x % 5000;
        unsigned kind = (unsigned)(x >> 20) % (EVP_EV__COUNT + 3);
        r[i].ts = ts;
        r[i].kind = (uint16_t)kind;
        const struct evp_kind_info *ki = evp_kind_info(kind);
        r[i].aux =
            (uint16_t)((!ki || ki->arg == EVP_ARG_OP) ? (x >> 8) % 400 : 0);
        r[i].arg = (uint32_t)((!ki || ki->arg != EVP_ARG_NONE) ? x >> 33 : 0);
    }
    uint8_t *buf;
    size_t len = encode(&buf, r, N, NULL);
    decode_all(buf, len, out, N);
    assert_memory_equal(out, r, N * sizeof *r);
    free(buf);
    free(r);
    free(out);
}

static void test_realistic_size(void **state)
{
    (void)state;
    /* Plain events 100-500 ticks apart cost two bytes each. */
    enum { N = 1000 };
    struct evp_rec_record r[N];
    for (size_t i = 0; i < N; i++)
        r[i] = (struct evp_rec_record){1000 + i * 400, EVP_EV_DISPATCH, 0, 0};
    uint8_t *buf;
    size_t len = encode(&buf, r, N, NULL);
    assert_int_equal(len, EVP_EVENTS_PREFIX_SIZE + 1 + 2 * (N - 1));
    free(buf);
}

static void test_backwards_clock(void **state)
{
    (void)state;
    struct evp_rec_record r[] = {{500, EVP_EV_DISPATCH, 0, 0},
                                 {400, EVP_EV_DISPATCH, 0, 0},
                                 {600, EVP_EV_DISPATCH, 0, 0}};
    uint8_t *buf;
    uint64_t back = 0;
    size_t len = encode(&buf, r, 3, &back);
    assert_int_equal(back, 1);
    struct evp_rec_record out[3];
    decode_all(buf, len, out, 3);
    assert_int_equal(out[0].ts, 500);
    assert_int_equal(out[1].ts, 500); /* held, never decreasing */
    assert_int_equal(out[2].ts, 600);
    free(buf);
}

static void test_truncated_and_garbage(void **state)
{
    (void)state;
    struct evp_rec_record r[64];
    for (size_t i = 0; i < 64; i++)
        r[i] = (struct evp_rec_record){i * 1000, (uint16_t)(i % 20),
                                       (uint16_t)(i % 20 == EVP_EV_OP ? i : 0),
                                       (uint32_t)(i % 3)};
    uint8_t *buf;
    size_t len = encode(&buf, r, 64, NULL);
    struct evp_events_prefix pf;
    assert_int_equal(evp_events_prefix_read(buf, len, &pf), 0);
    assert_int_equal(
        evp_events_prefix_read(buf, EVP_EVENTS_PREFIX_SIZE - 1, &pf), -1);
    for (size_t cut = EVP_EVENTS_PREFIX_SIZE; cut < len; cut++) {
        struct evp_events_cursor c;
        evp_events_cursor_init(&c, buf, cut, &pf);
        struct evp_rec_record out[64];
        long got = 0, k;
        while ((k = evp_events_decode(&c, out + got, 64 - (size_t)got)) > 0)
            got += k;
        /* A cut body ends in an error after a prefix of the events. */
        assert_int_equal(k, -1);
        assert_true(got < 64);
        assert_memory_equal(out, r, (size_t)got * sizeof *r);
    }
    /* A body claiming more events than it holds. */
    pf.count = 65;
    struct evp_events_cursor c;
    evp_events_cursor_init(&c, buf, len, &pf);
    struct evp_rec_record out[65];
    long k = evp_events_decode(&c, out, 65);
    assert_int_equal(k, 64);
    assert_int_equal(evp_events_decode(&c, out, 65), -1);
    /* An extended code naming a kind below the extended range. */
    uint8_t bogus[EVP_EVENTS_PREFIX_SIZE + 4] = {0};
    pf.count = 1;
    pf.base_ticks = 0;
    bogus[EVP_EVENTS_PREFIX_SIZE] = EVP_CODE_EXTENDED;
    bogus[EVP_EVENTS_PREFIX_SIZE + 1] = EVP_EV_ENTER;
    evp_events_cursor_init(&c, bogus, sizeof bogus, &pf);
    assert_int_equal(evp_events_decode(&c, out, 1), -1);
    free(buf);
}

static void test_chunk_header(void **state)
{
    (void)state;
    uint8_t payload[100];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)i;
    uint8_t h[EVP_CHUNK_HEADER_SIZE];
    evp_chunk_header(h, EVP_CHUNK_EVENTS, 0, payload, sizeof payload);
    assert_int_equal(evp_get_u32(h), EVP_CHUNK_MAGIC);
    assert_memory_equal(h, "EVPC", 4);
    assert_int_equal(h[4], EVP_CHUNK_EVENTS);
    assert_int_equal(evp_get_u32(h + 8), sizeof payload);
    uint32_t sum = evp_get_u32(h + 12);
    assert_int_equal(sum, evp_chunk_checksum(h, payload, sizeof payload));
    /* Any changed payload byte or header field changes the checksum. */
    for (size_t i = 0; i < sizeof payload; i++) {
        payload[i] ^= 0x10;
        assert_int_not_equal(sum,
                             evp_chunk_checksum(h, payload, sizeof payload));
        payload[i] ^= 0x10;
    }
    h[4] = EVP_CHUNK_META;
    assert_int_not_equal(sum, evp_chunk_checksum(h, payload, sizeof payload));
    uint8_t fh[EVP_FILE_HEADER_SIZE];
    evp_file_header(fh);
    assert_memory_equal(fh, EVP_FILE_MAGIC, 8);
    assert_int_equal(fh[8], EVP_FORMAT_MAJOR);
}

static void test_kind_table(void **state)
{
    (void)state;
    assert_string_equal(evp_kind_name(EVP_EV_LOOP_EXCEPTION), "loop exception");
    assert_string_equal(evp_kind_name(EVP_EV_RUNTIME_OTHER), "runtime other");
    assert_string_equal(evp_kind_name(4242), "kind 4242");
    assert_null(evp_kind_info(EVP_EV__COUNT));
    assert_int_equal(evp_kind_info(EVP_EV_ENTER)->nest, EVP_NEST_PUSH);
    assert_int_equal(evp_kind_info(EVP_EV_SUSPEND)->nest, EVP_NEST_POP);
    assert_int_equal(evp_kind_info(EVP_EV_OP)->arg, EVP_ARG_OP);
    for (unsigned k = 0; k < EVP_EV__COUNT; k++)
        assert_non_null(evp_kind_info(k)->name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_roundtrip),
        cmocka_unit_test(test_zigzag),
        cmocka_unit_test(test_every_form),
        cmocka_unit_test(test_random_roundtrip),
        cmocka_unit_test(test_realistic_size),
        cmocka_unit_test(test_backwards_clock),
        cmocka_unit_test(test_truncated_and_garbage),
        cmocka_unit_test(test_chunk_header),
        cmocka_unit_test(test_kind_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
