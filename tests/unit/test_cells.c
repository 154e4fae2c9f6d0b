/*
 * Unit tests of the function cells of `summary --funcs` and `diff --funcs`
 * (src/views/format.c): a label within the limit is kept as it is; a
 * wider one keeps its name and the end of its path, elided with "…" to
 * exactly the limit, its ":line)" never cut; a name too long for that
 * leaves half the cell to the path's end; other labels end in ".."; and
 * cells that print alike for different labels print whole.  Also the
 * unit a column of durations is printed in (evp_fmt_col_unit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "views.h"

static int cols_of(const char *s)
{
    int c = 0;
    for (; *s; s++)
        c += ((unsigned char)*s & 0xc0) != 0x80;
    return c;
}

static void test_short_kept(void **state)
{
    (void)state;
    char b[300];
    assert_int_equal(evp_view_func_cell(b, sizeof b, "main (prog.py:1)", 70),
                     16);
    assert_string_equal(b, "main (prog.py:1)");
}

/* S cut to exactly 70 columns, beginning with HEAD and ending with END. */
static void assert_cut(const char *s, const char *head, const char *end)
{
    char b[300];
    assert_int_equal(evp_view_func_cell(b, sizeof b, s, 70), 70);
    assert_int_equal(cols_of(b), 70);
    assert_memory_equal(b, head, strlen(head));
    assert_string_equal(b + strlen(b) - strlen(end), end);
}

static void test_path_elided(void **state)
{
    (void)state;
    assert_cut("loads (/home/user/venvs/project/lib/python3.12/"
               "site-packages/vendored-a/json/__init__.py:299)",
               "loads (/home/", "…/__init__.py:299)");
}

static void test_long_file_keeps_name(void **state)
{
    (void)state;
    assert_cut("f (/srv/a_module_with_a_remarkably_long_file_name_that_"
               "goes_on_and_on_and_on_and_on.py:7)",
               "f (…", ".py:7)");
}

static void test_long_name_keeps_line(void **state)
{
    (void)state;
    char name[200];
    memset(name, 'n', 120);
    strcpy(name + 120, " (/a/b/mod.py:42)");
    assert_cut(name, "nnnn", "…/mod.py:42)");
}

static void test_other_shape_dots(void **state)
{
    (void)state;
    char name[200], b[300];
    memset(name, 'x', 100);
    name[100] = '\0';
    assert_int_equal(evp_view_func_cell(b, sizeof b, name, 70), 70);
    assert_string_equal(b + 66, "xx..");
    assert_int_equal(evp_view_func_cell(b, sizeof b, name, 0), 100);
}

static void test_alike_print_whole(void **state)
{
    (void)state;
    const char *full[] = {"a (/x/1/m.py:1)", "a (/x/2/m.py:1)", "b (m.py:2)"};
    const char *shown[] = {"a (…/m.py:1)", "a (…/m.py:1)", full[2]};
    int cols[] = {12, 12, 10}, fullcols[] = {15, 15, 10};
    evp_view_cells_unique(3, shown, cols, full, fullcols);
    assert_ptr_equal(shown[0], full[0]);
    assert_ptr_equal(shown[1], full[1]);
    assert_int_equal(cols[0], 15);
    assert_int_equal(cols[1], 15);
    assert_ptr_equal(shown[2], full[2]);
}

/* A column's unit: the largest in which its smallest nonzero value is at
 * least 1; --ns and --us are kept whatever the values. */
static void test_column_unit(void **state)
{
    (void)state;
    uint64_t lo = UINT64_MAX;
    assert_int_equal(evp_fmt_col_unit(EVP_UNIT_AUTO, lo), EVP_UNIT_US);
    evp_fmt_col_see(&lo, 0); /* zeros do not count */
    assert_int_equal(lo, UINT64_MAX);
    evp_fmt_col_see(&lo, 2500000);
    assert_int_equal(evp_fmt_col_unit(EVP_UNIT_AUTO, lo), EVP_UNIT_MS);
    evp_fmt_col_see(&lo, 1000);
    assert_int_equal(evp_fmt_col_unit(EVP_UNIT_AUTO, lo), EVP_UNIT_US);
    evp_fmt_col_see(&lo, 999);
    assert_int_equal(evp_fmt_col_unit(EVP_UNIT_AUTO, lo), EVP_UNIT_NS);
    assert_int_equal(evp_fmt_col_unit(EVP_UNIT_US, 13), EVP_UNIT_US);
    assert_int_equal(evp_fmt_col_unit(EVP_UNIT_NS, 5000000), EVP_UNIT_NS);
    char b[48];
    assert_string_equal(evp_fmt_us(b, sizeof b, 2599999, EVP_UNIT_MS), "2.5");
    assert_string_equal(evp_fmt_unit(EVP_UNIT_MS), "ms");
    assert_string_equal(evp_fmt_us(b, sizeof b, 1782799, EVP_UNIT_US),
                        "1,782.7");
    assert_string_equal(evp_fmt_us(b, sizeof b, 1782799, EVP_UNIT_NS),
                        "1,782,799");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_kept),
        cmocka_unit_test(test_path_elided),
        cmocka_unit_test(test_long_file_keeps_name),
        cmocka_unit_test(test_long_name_keeps_line),
        cmocka_unit_test(test_other_shape_dots),
        cmocka_unit_test(test_alike_print_whole),
        cmocka_unit_test(test_column_unit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
