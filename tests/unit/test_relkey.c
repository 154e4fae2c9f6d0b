/*
 * The key diff and summary match two runs' functions on: a file under one
 * of the roots a trace records (root.* metadata) is keyed relative to the
 * longest of them, "<stdlib>/json/decoder.py:f"; a file under none, and
 * every file of a trace without roots, by the path's shape
 * (lib/pythonX.Y, site-packages); any other file as recorded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "evalprof/trace.h"
#include "stats.h"

#include "scratch.h"

/* A text trace with META's "# meta:" lines and one function per FILES
 * entry (ids from 1, each named "f<id>"), opened. */
static struct evp_trace *trace_with(const char *name, const char *meta,
                                    const char *const *files, size_t n)
{
    char path[256], err[256];
    scratch_path(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "# start time: 1700000000 s (since epoch)\n"
            "# start clock: 10.000000000 s (on clock)\n"
            "# end clock: 10.000010000 s (on clock)\n%s",
            meta);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "# function: %zu\t1\t%s\tf%zu\n", i + 1, files[i], i + 1);
    fprintf(f, "10.000000000 0\n10.000010000 1\n");
    assert_int_equal(fclose(f), 0);
    struct evp_trace *t = NULL;
    assert_int_equal(evp_trace_open(path, NULL, &t, err, sizeof err), 0);
    return t;
}

static void expect_keys(struct evp_trace *t, const char *const *want, size_t n)
{
    struct evp_stats_roots roots;
    char key[1100];
    evp_stats_roots_load(t, &roots);
    for (size_t i = 0; i < n; i++) {
        evp_stats_func_rel_key(t, &roots, (uint32_t)i + 1, key, sizeof key);
        assert_string_equal(key, want[i]);
    }
}

static void test_recorded_roots(void **state)
{
    (void)state;
    static const char *const files[] = {
        "/opt/py/lib/python3.12/json/decoder.py",
        "/opt/py/lib/python3.12/site-packages/pkg/mod.py",
        "/opt/py/lib/plat/_x.py",
        "/srv/a/app/lib/util.py",
        "/srv/a/app/./prog.py",
        "/srv/real/app/lib/util.py",
        "/srv/a/application/y.py",
        "/usr/lib/python3/dist-packages/six.py",
        "/home/u/env/lib/python3.12/json/x.py",
        "<frozen importlib._bootstrap>",
        "/opt/py/lib/python3.12",
    };
    static const char *const want[] = {
        "<stdlib>/json/decoder.py:f1",
        /* the longest root: site-packages is under the stdlib */
        "<site-packages>/pkg/mod.py:f2",
        "<stdlib>/_x.py:f3",
        "<script>/lib/util.py:f4",
        "<script>/./prog.py:f5",
        "<script>/lib/util.py:f6",
        /* a root is a whole directory, not a prefix of a name */
        "/srv/a/application/y.py:f7",
        /* under no recorded root: the path's shape */
        "<site-packages>/six.py:f8",
        "<stdlib>/json/x.py:f9",
        "<frozen importlib._bootstrap>:f10",
        "/opt/py/lib/python3.12:f11",
    };
    struct evp_trace *t =
        trace_with("roots.trace",
                   "# meta: root.stdlib=/opt/py/lib/python3.12\n"
                   "# meta: root.platstdlib=/opt/py/lib/plat/\n"
                   "# meta: root.purelib=/opt/py/lib/python3.12/"
                   "site-packages\n"
                   "# meta: root.script=/srv/a/app\n"
                   "# meta: root.script.real=/srv/real/app\n",
                   files, sizeof files / sizeof *files);
    expect_keys(t, want, sizeof want / sizeof *want);
    evp_trace_close(t);
}

static void test_script_under_site_packages(void **state)
{
    (void)state;
    static const char *const files[] = {
        "/v/lib/python3.13/site-packages/tool/main.py",
        "/v/lib/python3.13/site-packages/other/m.py",
    };
    static const char *const want[] = {
        "<script>/main.py:f1",
        "<site-packages>/other/m.py:f2",
    };
    struct evp_trace *t =
        trace_with("nested.trace",
                   "# meta: root.purelib=/v/lib/python3.13/site-packages\n"
                   "# meta: root.script=/v/lib/python3.13/site-packages/tool\n",
                   files, 2);
    expect_keys(t, want, 2);
    evp_trace_close(t);
}

static void test_without_roots(void **state)
{
    (void)state;
    static const char *const files[] = {
        "/opt/py/lib/python3.13t/json/decoder.py",
        "/opt/py/lib/python3.13/site-packages/pkg/mod.py",
        "/srv/a/app/prog.py",
        "",
    };
    static const char *const want[] = {
        "<stdlib>/json/decoder.py:f1",
        "<site-packages>/pkg/mod.py:f2",
        "/srv/a/app/prog.py:f3",
        "f4",
    };
    /* a relative root names no file and is not used */
    struct evp_trace *t =
        trace_with("bare.trace", "# meta: root.script=srv/a/app\n", files,
                   sizeof files / sizeof *files);
    expect_keys(t, want, sizeof want / sizeof *want);
    evp_trace_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_roots),
        cmocka_unit_test(test_script_under_site_packages),
        cmocka_unit_test(test_without_roots),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
