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
#include <stdio.h>
#include <stdlib.h>
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

/* The rule evp_view_cells_unique keeps, written out plainly (cubic): each
 * pass, every cut cell that prints like another cell of a different
 * label, or like two cells whose labels differ, prints whole; passes
 * until none changes.  The reference for the test below. */
static void cells_unique_plain(size_t n, const char **shown, int *cols,
                               const char *const *full, const int *fullcols)
{
    int moved = 1;
    static int mark[64];
    while (moved) {
        moved = 0;
        for (size_t i = 0; i < n; i++) {
            mark[i] = 0;
            if (shown[i] == full[i])
                continue;
            for (size_t j = 0; j < n && !mark[i]; j++)
                for (size_t k = 0; k < n && !mark[i]; k++)
                    mark[i] = !strcmp(shown[i], shown[j]) &&
                              !strcmp(shown[i], shown[k]) &&
                              strcmp(full[j], full[k]);
        }
        for (size_t i = 0; i < n; i++)
            if (mark[i]) {
                shown[i] = full[i], cols[i] = fullcols[i];
                moved = 1;
            }
    }
}

/* Random labels over a small alphabet, each shown whole or cut to a
 * prefix (so that cut cells meet whole labels and one another, and a
 * label made whole can print as another's cut cell): the same cells as
 * the plain rule, label for label, and no two different labels print
 * alike. */
static void test_alike_matches_pairwise(void **state)
{
    (void)state;
    enum { N = 60, ROUNDS = 400 };
    static char fullbuf[N][8], cutbuf[N][8];
    const char *full[N], *a[N], *b[N];
    int fullcols[N], ca[N], cb[N];
    unsigned seed = 12345;
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = 1 + (size_t)(r % N);
        for (size_t i = 0; i < n; i++) {
            int len = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 4;
            for (int k = 0; k < len; k++)
                fullbuf[i][k] =
                    "ab"[((seed = seed * 1103515245u + 12345u) >> 16) & 1];
            fullbuf[i][len] = '\0';
            int keep =
                (int)((seed = seed * 1103515245u + 12345u) >> 16) % (len + 1);
            memcpy(cutbuf[i], fullbuf[i], (size_t)keep);
            cutbuf[i][keep] = '\0';
            full[i] = fullbuf[i];
            fullcols[i] = len;
            int cut = keep < len;
            a[i] = b[i] = cut ? cutbuf[i] : full[i];
            ca[i] = cb[i] = cut ? keep : len;
        }
        evp_view_cells_unique(n, a, ca, full, fullcols);
        cells_unique_plain(n, b, cb, full, fullcols);
        for (size_t i = 0; i < n; i++) {
            assert_ptr_equal(a[i], b[i]);
            assert_int_equal(ca[i], cb[i]);
            for (size_t j = 0; j < n; j++)
                assert_true(strcmp(a[i], a[j]) || !strcmp(full[i], full[j]));
        }
    }
}

/* A table of 200,000 functions, every one cut to the same cell: labels
 * that differ (each named twice) all print whole; the same table of one
 * label stays cut.  (Pairwise, a pass was 4 * 10^10 comparisons; a trace
 * may well name that many functions.) */
static void test_alike_many(void **state)
{
    (void)state;
    enum { N = 200000 };
    char(*fullbuf)[16] = malloc(N * sizeof *fullbuf);
    const char **full = malloc(N * sizeof *full),
               **shown = malloc(N * sizeof *shown);
    int *cols = malloc(N * sizeof *cols), *fullcols = malloc(N * sizeof *cols);
    assert_non_null(fullbuf);
    assert_non_null(full);
    assert_non_null(shown);
    assert_non_null(cols);
    assert_non_null(fullcols);
    for (size_t i = 0; i < N; i++) {
        size_t label = i / 2;
        snprintf(fullbuf[i], sizeof fullbuf[i], "f%zu", label);
        full[i] = fullbuf[i];
        fullcols[i] = (int)strlen(full[i]);
        shown[i] = "f…";
        cols[i] = 2;
    }
    evp_view_cells_unique(N, shown, cols, full, fullcols);
    for (size_t i = 0; i < N; i++) {
        assert_ptr_equal(shown[i], full[i]);
        assert_int_equal(cols[i], fullcols[i]);
    }
    /* all alike: nothing to tell apart, all stay cut */
    for (size_t i = 0; i < N; i++) {
        full[i] = "f000";
        shown[i] = "f…";
        cols[i] = 2;
    }
    evp_view_cells_unique(N, shown, cols, full, fullcols);
    for (size_t i = 0; i < N; i++)
        assert_string_equal(shown[i], "f…");
    free(fullbuf);
    free(full);
    free(shown);
    free(cols);
    free(fullcols);
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
        cmocka_unit_test(test_alike_matches_pairwise),
        cmocka_unit_test(test_alike_many),
        cmocka_unit_test(test_column_unit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
