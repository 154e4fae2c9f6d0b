/*
 * Offsets to lines: a synthetic trace with op at events and a function's
 * line table ("lines.ID" metadata) is read back; the replay gives each op
 * its code unit, and the views' map gives the line of the range the unit
 * falls in (0 where the table says none, or there is no table).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "evalprof/recorder.h"
#include "evalprof/replay.h"
#include "evalprof/trace.h"
#include "views.h"

#include "scratch.h"

struct seen {
    uint32_t at[16], func[16];
    size_t n;
};

static int collect(void *ctx, const struct evp_event *ev, size_t n)
{
    struct seen *s = ctx;
    for (size_t i = 0; i < n; i++)
        if (ev[i].kind == EVP_EV_OP && s->n < 16) {
            s->at[s->n] = ev[i].unit;
            s->func[s->n++] = ev[i].func;
        }
    return 0;
}

/* Start recording into scratch file NAME, op at events wanted. */
static void start(char *path, size_t len, const char *name)
{
    scratch_path(path, len, name);
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_CLASSIC |
                                             EVP_KIND_BIT(EVP_EV_OP_AT),
                                 .flags = EVP_REC_QUIET};
    assert_int_equal(evp_rec_open(&cfg), 0);
}

static struct evp_trace *reopen(const char *path)
{
    struct evp_trace *t = NULL;
    char err[256];
    assert_int_equal(evp_trace_open(path, NULL, &t, err, sizeof err), 0);
    return t;
}

static void test_offsets_to_lines(void **state)
{
    (void)state;
    char path[128];
    start(path, sizeof path, "lines.evp");
    uint32_t f = evp_rec_func("work", "prog.py", 10);
    uint32_t g = evp_rec_func("other", "prog.py", 30);
    /* units 0-2 are line 10, 3-6 line 11, 7-8 none, 9- line 12 */
    assert_int_equal(evp_rec_meta("lines.1", "0:10,3:11,7:0,9:12"), 0);
    assert_int_equal(evp_rec_thread_attach("main"), 0);
    evp_rec_event(EVP_EV_ENTER, f);
    static const uint32_t units[] = {0, 2, 3, 6, 7, 9, 300};
    for (size_t i = 0; i < 7; i++)
        evp_rec_emit(EVP_EV_OP_AT, 100, units[i] << 8 | 7);
    evp_rec_op(100, 7); /* a plain op: no offset */
    evp_rec_event(EVP_EV_ENTER, g);
    evp_rec_emit(EVP_EV_OP_AT, 100, 1u << 8); /* g has no table */
    evp_rec_event(EVP_EV_EXIT, g);
    evp_rec_event(EVP_EV_EXIT, f);
    assert_int_equal(evp_rec_close(), 0);
    assert_int_equal(f, 1);

    struct evp_trace *t = reopen(path);
    assert_true(evp_lines_present(t));
    struct seen s = {0};
    struct evp_replay_opts ro = {.stream = -1};
    struct evp_replay_ops ops = {.events = collect};
    assert_int_equal(evp_replay(t, &ro, &ops, &s), 0);
    assert_int_equal(s.n, 9);
    static const uint32_t want_line[] = {10, 10, 11, 11, 0, 12, 12, 0, 0};
    struct evp_lines *l = evp_lines_open(t);
    assert_non_null(l);
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(s.at[i], units[i] + 1);
    assert_int_equal(s.at[7], 0);
    assert_int_equal(s.func[8], g);
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(evp_lines_line(l, s.func[i], s.at[i]), want_line[i]);
    evp_lines_close(l);
    evp_trace_close(t);
}

static void test_bad_table(void **state)
{
    (void)state;
    char path[128];
    start(path, sizeof path, "badlines.evp");
    evp_rec_func("a", "p.py", 1);
    evp_rec_func("b", "p.py", 2);
    /* not ascending; not numbers: no line for any of their ops */
    assert_int_equal(evp_rec_meta("lines.1", "0:1,5:2,3:3"), 0);
    assert_int_equal(evp_rec_meta("lines.2", "0:x"), 0);
    assert_int_equal(evp_rec_close(), 0);
    struct evp_trace *t = reopen(path);
    struct evp_lines *l = evp_lines_open(t);
    assert_int_equal(evp_lines_line(l, 1, 1), 0);
    assert_int_equal(evp_lines_line(l, 2, 1), 0);
    assert_int_equal(evp_lines_line(l, 3, 1), 0); /* no such function */
    evp_lines_close(l);
    evp_trace_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offsets_to_lines),
        cmocka_unit_test(test_bad_table),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
