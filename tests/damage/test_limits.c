/*
 * Limits of the trace readers (cmocka): files of ordinary size whose shape
 * once cost time or memory out of all proportion.
 *
 *   - many streams: a trace of 50,000 threads, as text and as the same
 *     trace written as `.evp`, opens in well under a second and replays
 *     every stream, sorted by id (looking a stream up by id was a linear
 *     search, so opening was quadratic in the threads).
 *
 * Runs in suite 'damage' (also under AddressSanitizer, build-asan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "dmg.h"
#include "evalprof/format.h"

#define NSTREAMS 50000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Per-stream replay check: every stream holds exactly init, enter, exit,
 * fini, and streams come in increasing id order. */
struct walk {
    size_t streams, events, bad;
    int64_t last_id;
    uint32_t expect[4];
    size_t k;
};

static int w_begin(void *ctx, const struct evp_stream *s)
{
    struct walk *w = ctx;
    if ((int64_t)s->id <= w->last_id || s->tid != 100000u + s->id)
        w->bad++;
    w->last_id = s->id;
    w->streams++;
    w->k = 0;
    return 0;
}

static int w_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct walk *w = ctx;
    for (size_t i = 0; i < n; i++, w->k++) {
        if (w->k >= 4 || ev[i].kind != w->expect[w->k])
            w->bad++;
        w->events++;
    }
    return 0;
}

static int w_end(void *ctx, const struct evp_stream *s)
{
    struct walk *w = ctx;
    (void)s;
    if (w->k != 4)
        w->bad++;
    return 0;
}

static void check_streams(struct evp_trace *t, const char *what)
{
    assert_int_equal(evp_trace_nstreams(t), NSTREAMS);
    struct walk w = {.last_id = -1,
                     .expect = {EVP_EV_INIT, EVP_EV_ENTER, EVP_EV_EXIT,
                                EVP_EV_FINI}};
    struct evp_replay_ops ops = {w_begin, w_events, w_end};
    struct evp_replay_opts ro = {.stream = -1};
    double t0 = now();
    assert_int_equal(evp_replay(t, &ro, &ops, &w), 0);
    printf("  %s: replayed %zu streams, %zu events in %.3f s\n", what,
           w.streams, w.events, now() - t0);
    assert_int_equal(w.streams, NSTREAMS);
    assert_int_equal(w.events, 4 * NSTREAMS);
    assert_int_equal(w.bad, 0);
    /* The name written for each thread is found again by id. */
    const struct evp_stream *s = evp_trace_stream(t, 12345);
    assert_non_null(s);
    assert_int_equal(s->id, 12345);
    assert_string_equal(s->name, "worker-12345");
}

static void test_many_streams(void **state)
{
    (void)state;
    /* Thread ids in decreasing order, each named, each with four events:
     * a lookup per thread switch and a new stream every time. */
    const char *text = dmg_path("threads.trace");
    FILE *f = fopen(text, "w");
    assert_non_null(f);
    fputs("# start clock: 100.000000000 s (on clock)\n", f);
    for (uint32_t i = 0; i < NSTREAMS; i++) {
        uint32_t id = NSTREAMS - 1 - i;
        fprintf(f,
                "# thread: %u %u worker-%u\n"
                "100.%09u 0\n# func: f\n100.%09u 3\n100.%09u 4\n"
                "100.%09u 1\n",
                id, 100000u + id, id, 4 * i, 4 * i + 1, 4 * i + 2,
                4 * i + 3);
    }
    assert_int_equal(fclose(f), 0);

    struct dmg_warn w = {0};
    struct evp_trace *t;
    char err[512];
    double t0 = now();
    assert_int_equal(dmg_open(text, 0, &t, err, sizeof err, &w), 0);
    double text_open = now() - t0;
    printf("  text trace of %d threads: opened in %.3f s\n", NSTREAMS,
           text_open);
    check_streams(t, "text");
    const char *bin = dmg_path("threads.evp");
    assert_int_equal(evp_trace_write_evp(t, bin, 0, err, sizeof err), 0);
    evp_trace_close(t);

    t0 = now();
    assert_int_equal(dmg_open(bin, 0, &t, err, sizeof err, &w), 0);
    double bin_open = now() - t0;
    printf("  .evp trace of %d threads: opened in %.3f s\n", NSTREAMS,
           bin_open);
    assert_int_equal(w.n, 0);
    check_streams(t, ".evp");
    evp_trace_close(t);
    dmg_warn_free(&w);
    /* Linear time is a few hundredths of a second here (a few tenths
     * under AddressSanitizer); the quadratic search took seconds. */
    assert_true(text_open < 2.0);
    assert_true(bin_open < 2.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
