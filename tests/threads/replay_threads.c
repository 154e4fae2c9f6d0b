/*
 * Replays in several threads at once: a program may analyse traces from
 * worker threads, so the engine's own set-up (the kinds' nesting table it
 * fills on first use) must be safe when the first replays of the process
 * start together.  Each thread opens the same small trace, all start
 * their replay at one barrier, and each must see every event at its
 * depth.
 *
 * Suite 'threads'; also run under ThreadSanitizer (build-tsan,
 * tools/sanitize-tests.sh), where an unsynchronised first use is a race.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evalprof/recorder.h"
#include "evalprof/replay.h"
#include "evalprof/trace.h"

#define THREADS 4
#define NEST 50 /* frames of the recursion */

static pthread_barrier_t start;
static char path[256];

struct check {
    int32_t want; /* depth the next event must be drawn at */
    size_t events, bad;
};

static int on_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct check *c = ctx;
    for (size_t i = 0; i < n; i++, c->events++) {
        const struct evp_event *e = &ev[i];
        if (e->kind == EVP_EV_EXIT)
            c->want--;
        c->bad += e->depth != c->want;
        if (e->kind == EVP_EV_ENTER)
            c->want++;
    }
    return 0;
}

static void *replayer(void *arg)
{
    struct check *c = arg;
    struct evp_trace *t;
    char err[256];
    if (evp_trace_open(path, NULL, &t, err, sizeof err) < 0) {
        fprintf(stderr, "FAIL: %s: %s\n", path, err);
        c->bad++;
        pthread_barrier_wait(&start);
        return NULL;
    }
    static const struct evp_replay_ops ops = {NULL, on_events, NULL, NULL};
    pthread_barrier_wait(&start);
    if (evp_replay(t, NULL, &ops, c) != 0)
        c->bad++;
    evp_trace_close(t);
    return NULL;
}

static int record(void)
{
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_ALL,
                                 .flags = EVP_REC_QUIET | EVP_REC_NO_ATEXIT};
    if (evp_rec_open(&cfg) < 0)
        return -1;
    uint32_t f = evp_rec_func("f", "x.py", 1);
    evp_rec_thread_attach("main");
    for (int i = 0; i < NEST; i++) {
        evp_rec_event(EVP_EV_ENTER, f);
        evp_rec_op(100, 0);
    }
    for (int i = 0; i < NEST; i++)
        evp_rec_event(EVP_EV_EXIT, f);
    return evp_rec_close();
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/evp-replay-threads-%d.evp",
             tmp && *tmp ? tmp : "/tmp", (int)getpid());
    if (record() < 0) {
        fprintf(stderr, "FAIL: could not record %s\n", path);
        return 1;
    }
    pthread_barrier_init(&start, NULL, THREADS);
    pthread_t th[THREADS];
    struct check c[THREADS];
    memset(c, 0, sizeof c);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, replayer, &c[i]);
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        if (c[i].bad || c[i].events != 3 * NEST) {
            fprintf(stderr,
                    "FAIL: thread %d: %zu events, %zu at a wrong depth\n", i,
                    c[i].events, c[i].bad);
            failures++;
        }
    }
    pthread_barrier_destroy(&start);
    unlink(path);
    printf("%d passed, %d failed\n", THREADS - failures, failures);
    return failures != 0;
}
