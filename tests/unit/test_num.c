/*
 * Unit tests of the one thousands-separator formatter (src/util/num.c)
 * every report's counts and times go through: groups of three from the
 * right, the largest 64-bit value, and buffers too short (cut, always
 * terminated, nothing written past them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "num.h"

static void test_groups(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(evp_num_group(b, sizeof b, 0), "0");
    assert_string_equal(evp_num_group(b, sizeof b, 999), "999");
    assert_string_equal(evp_num_group(b, sizeof b, 1000), "1,000");
    assert_string_equal(evp_num_group(b, sizeof b, 94807), "94,807");
    assert_string_equal(evp_num_group(b, sizeof b, 1234567), "1,234,567");
    assert_string_equal(evp_num_group(b, sizeof b, UINT64_MAX),
                        "18,446,744,073,709,551,615");
}

static void test_short_buffers(void **state)
{
    (void)state;
    char b[8];
    memset(b, 'x', sizeof b);
    assert_string_equal(evp_num_group(b, 4, 1234567), "1,2");
    assert_int_equal(b[4], 'x');
    assert_string_equal(evp_num_group(b, 6, 12345), "12,34");
    assert_string_equal(evp_num_group(b, 7, 12345), "12,345");
    assert_string_equal(evp_num_group(b, 1, 5), "");
    b[0] = 'x';
    evp_num_group(b, 0, 5); /* nothing written */
    assert_int_equal(b[0], 'x');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_short_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
