/*
 * Unit tests of the analyzers' hash index (src/util/itab.c): ids found
 * again after the table grows, colliding hashes told apart by the
 * owner's comparison, the empty table, and the string set over it
 * (binary keys, the empty key, ids in order of arrival).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "itab.h"

struct keys {
    const uint64_t *v;
    uint64_t want;
};

static int same_u64(const void *ctx, uint32_t id)
{
    const struct keys *k = ctx;
    return k->v[id] == k->want;
}

/* Insert KEYS[0..n) under HASH(key), then find every one again. */
static void fill_and_find(uint64_t (*hash)(uint64_t), size_t n)
{
    uint64_t *v = malloc(n * sizeof *v);
    assert_non_null(v);
    struct evp_itab t = EVP_ITAB_INIT;
    for (size_t i = 0; i < n; i++) {
        v[i] = i * 7919 + 3;
        struct keys k = {v, v[i]};
        assert_int_equal(evp_itab_find(&t, hash(v[i]), same_u64, &k),
                         EVP_ITAB_NONE);
        assert_int_equal(evp_itab_put(&t, hash(v[i]), (uint32_t)i), 0);
        assert_true(t.n * 2 <= t.cap); /* never more than half full */
    }
    assert_int_equal(t.n, n);
    for (size_t i = 0; i < n; i++) {
        struct keys k = {v, v[i]};
        assert_int_equal(evp_itab_find(&t, hash(v[i]), same_u64, &k), i);
    }
    struct keys k = {v, 1}; /* never inserted (keys are 3 mod 7919) */
    assert_int_equal(evp_itab_find(&t, hash(1), same_u64, &k), EVP_ITAB_NONE);
    evp_itab_free(&t);
    assert_null(t.slot);
    assert_int_equal(t.cap, 0);
    free(v);
}

static uint64_t good_hash(uint64_t x)
{
    return evp_itab_hash_u64(x);
}

static uint64_t bad_hash(uint64_t x)
{
    return 1 + (x & 3); /* four hashes for every key: all collide */
}

static void test_grow_and_find(void **state)
{
    (void)state;
    fill_and_find(good_hash, 100000);
}

static void test_collisions(void **state)
{
    (void)state;
    fill_and_find(bad_hash, 2000);
}

static void test_empty_and_clear(void **state)
{
    (void)state;
    struct evp_itab t = EVP_ITAB_INIT;
    uint64_t v[1] = {42};
    struct keys k = {v, 42};
    assert_int_equal(evp_itab_find(&t, 5, same_u64, &k), EVP_ITAB_NONE);
    assert_int_equal(evp_itab_put(&t, 5, 0), 0);
    assert_int_equal(evp_itab_find(&t, 5, same_u64, &k), 0);
    evp_itab_clear(&t);
    assert_int_equal(t.n, 0);
    assert_true(t.cap > 0);
    assert_int_equal(evp_itab_find(&t, 5, same_u64, &k), EVP_ITAB_NONE);
    assert_int_equal(evp_itab_reserve(&t, 1000), 0);
    assert_true(t.cap >= 2000);
    evp_itab_free(&t);
}

/* Between a find and its put the table may change (it grows, another key
 * of the same hash comes first): the put still stores where a find looks. */
static void test_put_after_changes(void **state)
{
    (void)state;
    struct evp_itab t = EVP_ITAB_INIT;
    uint64_t v[3] = {7, 8, 9};
    struct keys k = {v, 7};
    assert_int_equal(evp_itab_find(&t, good_hash(7), same_u64, &k),
                     EVP_ITAB_NONE);
    assert_int_equal(evp_itab_reserve(&t, 5000), 0); /* grows */
    assert_int_equal(evp_itab_put(&t, good_hash(7), 0), 0);
    assert_int_equal(evp_itab_find(&t, good_hash(7), same_u64, &k), 0);
    struct keys k8 = {v, 8}, k9 = {v, 9};
    assert_int_equal(evp_itab_find(&t, 42, same_u64, &k8), EVP_ITAB_NONE);
    assert_int_equal(evp_itab_find(&t, 42, same_u64, &k9), EVP_ITAB_NONE);
    assert_int_equal(evp_itab_put(&t, 42, 1), 0);
    assert_int_equal(evp_itab_put(&t, 42, 2), 0);
    assert_int_equal(evp_itab_find(&t, 42, same_u64, &k8), 1);
    assert_int_equal(evp_itab_find(&t, 42, same_u64, &k9), 2);
    evp_itab_free(&t);
}

static void test_grow(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0;
    assert_int_equal(evp_grow((void **)&v, &cap, 1, sizeof *v, 8), 0);
    assert_int_equal(cap, 8);
    for (int i = 0; i < 8; i++)
        v[i] = i;
    assert_int_equal(evp_grow((void **)&v, &cap, 8, sizeof *v, 8), 0);
    assert_int_equal(cap, 8); /* room already */
    assert_int_equal(evp_grow((void **)&v, &cap, 100, sizeof *v, 8), 0);
    assert_int_equal(cap, 128); /* doubled until it fits */
    for (int i = 0; i < 8; i++)
        assert_int_equal(v[i], i);
    int *keep = v;
    assert_int_equal(evp_grow((void **)&v, &cap, SIZE_MAX / 2, sizeof *v, 8),
                     -ENOMEM); /* would overflow: refused, nothing lost */
    assert_ptr_equal(v, keep);
    assert_int_equal(cap, 128);
    free(v);
}

static void test_hashes_never_zero(void **state)
{
    (void)state;
    assert_true(evp_itab_hash_u64(0) != 0);
    assert_true(evp_itab_hash_bytes("", 0) != 0);
    for (uint64_t x = 0; x < 100000; x++)
        assert_true(evp_itab_hash_u64(x) != 0);
}

static void test_strset(void **state)
{
    (void)state;
    struct evp_strset s = EVP_STRSET_INIT;
    int added;
    /* the empty key, and keys with NUL bytes and high bytes */
    assert_int_equal(evp_strset_add(&s, "", 0, &added), 0);
    assert_true(added);
    assert_int_equal(evp_strset_add(&s, "a\0b", 3, &added), 1);
    assert_true(added);
    assert_int_equal(evp_strset_add(&s, "a\0c", 3, &added), 2);
    assert_int_equal(evp_strset_add(&s, "a", 1, &added), 3);
    assert_int_equal(evp_strset_add(&s, "\xff\xfe", 2, &added), 4);
    assert_int_equal(evp_strset_add(&s, "a\0b", 3, &added), 1);
    assert_false(added);
    assert_int_equal(evp_strset_add(&s, "", 0, NULL), 0);
    /* many keys: ids in order of arrival, arena and index growing */
    char buf[32];
    for (int i = 0; i < 50000; i++) {
        int n = snprintf(buf, sizeof buf, "main;f%d;g", i);
        assert_int_equal(evp_strset_add(&s, buf, (size_t)n, &added),
                         (uint32_t)(5 + i));
        assert_true(added);
    }
    for (int i = 0; i < 50000; i += 997) {
        int n = snprintf(buf, sizeof buf, "main;f%d;g", i);
        size_t len;
        const char *p = evp_strset_get(&s, (uint32_t)(5 + i), &len);
        assert_int_equal(len, (size_t)n);
        assert_memory_equal(p, buf, len);
        assert_int_equal(evp_strset_add(&s, buf, (size_t)n, &added),
                         (uint32_t)(5 + i));
        assert_false(added);
    }
    size_t len;
    const char *p = evp_strset_get(&s, 2, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(p, "a\0c", 3);
    assert_int_equal(s.n, 50005);
    evp_strset_free(&s);
    assert_int_equal(s.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_and_find),
        cmocka_unit_test(test_collisions),
        cmocka_unit_test(test_empty_and_clear),
        cmocka_unit_test(test_put_after_changes),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_hashes_never_zero),
        cmocka_unit_test(test_strset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
