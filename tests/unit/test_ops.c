/*
 * Unit tests of `evalprof perf --ops`'s two text readers (src/perf/ops.c):
 * the TARGET(NAME) scanner that turns an interpreter's handler source
 * into line ranges, on a small file written here in the shapes of 3.11's
 * ceval.c and 3.12+'s generated_cases.c.h (braces nested, in comments,
 * strings and character constants, a #define of TARGET, a handler without
 * a brace on its line), and the leaf reader of
 * `perf script -F ip,sym,symoff,dso -G` text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perf.h"
#include "views.h"
#include "scratch.h"

/* Line numbers are in the comments at the end of each line. */
static const char fixture[] =
    "#define TARGET(op) TARGET_##op:\n"          /* 1 */
    "static int dispatch(void) {\n"              /* 2 */
    "    switch (opcode) {\n"                    /* 3 */
    "        TARGET(NOP) {\n"                    /* 4 */
    "            DISPATCH();\n"                  /* 5 */
    "        }\n"                                /* 6 */
    "\n"                                         /* 7 */
    "        TARGET(BINARY_OP) {\n"              /* 8 */
    "            /* } not the end */\n"          /* 9 */
    "            if (x) { y = '}'; }\n"          /* 10 */
    "            s = \"}}\"; // }\n"             /* 11 */
    "            /* a comment\n"                 /* 12 */
    "               } spanning lines */\n"       /* 13 */
    "            DISPATCH();\n"                  /* 14 */
    "        }\n"                                /* 15 */
    "        dispatch_other:\n"                  /* 16 */
    "        TARGET(LOAD_FAST)\n"                /* 17 */
    "        {\n"                                /* 18 */
    "            DISPATCH();\n"                  /* 19 */
    "        }\n"                                /* 20 */
    "        TARGET(CACHE)\n"                    /* 21 */
    "        TARGET(BINARY_OP_MULTIPLY_INT) {\n" /* 22 */
    "            DISPATCH(); }\n"                /* 23 */
    "    }\n"                                    /* 24 */
    "}\n";                                       /* 25 */

static void test_scan(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "generated_cases.c.h");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(fixture, 1, sizeof fixture - 1, f),
                     sizeof fixture - 1);
    assert_int_equal(fclose(f), 0);
    char *text;
    size_t len;
    assert_int_equal(evp_flame_slurp(path, &text, &len), 0);
    struct evp_ops_handler *h;
    size_t n;
    assert_int_equal(evp_ops_scan_targets(text, len, &h, &n), 0);
    free(text);
    assert_int_equal(n, 5);
    static const struct {
        const char *name;
        unsigned first, last;
    } want[] = {{"NOP", 4, 6},
                {"BINARY_OP", 8, 15},
                {"LOAD_FAST", 17, 20},
                {"CACHE", 21, 21},
                {"BINARY_OP_MULTIPLY_INT", 22, 23}};
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(h[i].name, want[i].name);
        assert_int_equal(h[i].first, want[i].first);
        assert_int_equal(h[i].last, want[i].last);
    }
    assert_null(evp_ops_handler_at(h, n, 1));
    assert_null(evp_ops_handler_at(h, n, 3));
    assert_string_equal(evp_ops_handler_at(h, n, 5), "NOP");
    assert_null(evp_ops_handler_at(h, n, 7));
    assert_string_equal(evp_ops_handler_at(h, n, 13), "BINARY_OP");
    assert_string_equal(evp_ops_handler_at(h, n, 15), "BINARY_OP");
    assert_null(evp_ops_handler_at(h, n, 16));
    assert_string_equal(evp_ops_handler_at(h, n, 19), "LOAD_FAST");
    assert_string_equal(evp_ops_handler_at(h, n, 23), "BINARY_OP_MULTIPLY_INT");
    assert_null(evp_ops_handler_at(h, n, 24));
    assert_null(evp_ops_handler_at(h, n, 1000));
    free(h);
}

static void test_empty(void **state)
{
    (void)state;
    struct evp_ops_handler *h = NULL;
    size_t n = 1;
    assert_int_equal(evp_ops_scan_targets("", 0, &h, &n), 0);
    assert_int_equal(n, 0);
    assert_null(evp_ops_handler_at(h, n, 1));
    free(h);
}

static void test_leaves(void **state)
{
    (void)state;
    static const char text[] =
        "     55615b09157f _PyEval_EvalFrameDefault+0x25cf (/x/python)\n"
        " ffffffff82203a31 _raw_spin_unlock_irq+0x11 ([kernel.kallsyms])\n"
        "     55615b09157f _PyEval_EvalFrameDefault+0x25cf (/x/python)\n"
        "     7f0000001000 _PyEval_EvalFrameDefault.cold+0x10 (/x/libpy.so)\n"
        "     7f0000002000 _PyEval_EvalFrameDefaultX+0x10 (/x/libpy.so)\n"
        "     7f0000003000 [unknown] (/x/python)\n"
        "not a sample line\n"
        "\n";
    struct evp_ops *o = evp_ops_new();
    assert_non_null(o);
    assert_int_equal(evp_ops_read_script(o, text, sizeof text - 1), 0);
    uint64_t eval;
    assert_int_equal(evp_ops_samples(o, &eval), 6);
    assert_int_equal(eval, 3);
    evp_ops_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_leaves),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
