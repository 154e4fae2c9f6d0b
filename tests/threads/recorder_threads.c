/*
 * The recorder under concurrency: many threads recording at once through
 * tiny buffers (so hand-offs to the writer thread are constant), with the
 * writer's periodic flush racing them, threads registering functions,
 * flushing, detaching and re-attaching, and the set of recorded kinds
 * switched while they run.  The trace read back must hold every event,
 * in order per thread, none dropped.
 *
 * Suite 'threads'.  It is also the program CI runs under ThreadSanitizer
 * (build-tsan, tools/sanitize-tests.sh), where any data race in the
 * recorder's lock-free hot path, hand-off or writer is a failure.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evalprof/recorder.h"
#include "evalprof/replay.h"
#include "evalprof/trace.h"

#define THREADS 6
#define ROUNDS 3       /* attach, record, detach: per thread */
#define PER_ROUND 4000 /* events per round */

static int failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL: %s:%d: ", __FILE__, __LINE__);              \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            failures++;                                                        \
        }                                                                      \
    } while (0)

struct worker {
    int index;
    uint32_t func;
};

static void *worker_main(void *p)
{
    struct worker *w = p;
    char name[32];
    for (int round = 0; round < ROUNDS; round++) {
        snprintf(name, sizeof name, "worker %d.%d", w->index, round);
        if (evp_rec_thread_attach(name) < 0)
            return NULL;
        /* A function of its own, registered while others record. */
        char fn[32];
        snprintf(fn, sizeof fn, "f%d_%d", w->index, round);
        uint32_t f = evp_rec_func(fn, "threads.c", (uint32_t)round);
        for (int i = 0; i < PER_ROUND; i += 4) {
            evp_rec_event(EVP_EV_ENTER, f);
            /* The op's oparg numbers the events of the thread, so that
             * order and completeness can be checked on reading. */
            evp_rec_op((unsigned)w->index, (uint32_t)(round * PER_ROUND + i));
            evp_rec_event(EVP_EV_DISPATCH, 0);
            evp_rec_event(EVP_EV_EXIT, f);
            if (i % 1024 == 0)
                evp_rec_flush();
        }
        evp_rec_thread_detach();
    }
    return NULL;
}

/* Another thread toggles a kind nobody records, to race the mask. */
static int stop_toggling;
static void *toggler_main(void *p)
{
    (void)p;
    uint64_t all = EVP_KINDS_CLASSIC;
    while (!__atomic_load_n(&stop_toggling, __ATOMIC_RELAXED)) {
        evp_rec_set_enabled(all & ~EVP_KIND_BIT(EVP_EV_LOOP_SLOW));
        evp_rec_set_enabled(all);
    }
    return NULL;
}

struct count {
    uint64_t per_op[THREADS];
    uint64_t next_arg[THREADS];
    uint64_t events;
    int order_ok;
    int worker, round; /* of the current stream, from its name */
    int misplaced;     /* ops in the stream of another thread or round */
};

static int c_begin(void *ctx, const struct evp_stream *s)
{
    struct count *c = ctx;
    c->worker = c->round = -1;
    sscanf(s->name, "worker %d.%d", &c->worker, &c->round);
    return 0;
}

static int c_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct count *c = ctx;
    for (size_t i = 0; i < n; i++) {
        c->events++;
        if (ev[i].kind != EVP_EV_OP || ev[i].aux >= THREADS)
            continue;
        unsigned w = ev[i].aux;
        /* Each attach is a stream of its own, named after it. */
        if ((int)w != c->worker || ev[i].arg / PER_ROUND != (uint32_t)c->round)
            c->misplaced++;
        if (ev[i].arg != c->next_arg[w])
            c->order_ok = 0;
        c->next_arg[w] = ev[i].arg + 4;
        c->per_op[w]++;
    }
    return 0;
}

static void quiet(void *ctx, const char *path, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "warning: %s: %s\n", path, msg);
    failures++;
}

int main(void)
{
    char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/evp-threads-%d.evp",
             tmp && *tmp ? tmp : "/tmp", (int)getpid());
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_CLASSIC,
                                 .flags = EVP_REC_NO_ATEXIT | EVP_REC_QUIET,
                                 .buffer_events = 64,
                                 .flush_ms = 1};
    int rc = evp_rec_open(&cfg);
    if (rc < 0) {
        fprintf(stderr, "evp_rec_open: %s\n", strerror(-rc));
        return 1;
    }
    pthread_t th[THREADS], toggler;
    struct worker w[THREADS];
    pthread_create(&toggler, NULL, toggler_main, NULL);
    for (int i = 0; i < THREADS; i++) {
        w[i].index = i;
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    __atomic_store_n(&stop_toggling, 1, __ATOMIC_RELAXED);
    pthread_join(toggler, NULL);
    rc = evp_rec_close();
    CHECK(rc == 0, "evp_rec_close: %s", strerror(-rc));
    struct evp_rec_stats st;
    evp_rec_get_stats(&st);
    CHECK(st.dropped == 0, "%llu events dropped",
          (unsigned long long)st.dropped);

    struct evp_open_opts o = {.warn = quiet};
    struct evp_trace *t;
    char err[512];
    if (evp_trace_open(path, &o, &t, err, sizeof err) < 0) {
        fprintf(stderr, "FAIL: %s: %s\n", path, err);
        unlink(path);
        return 1;
    }
    struct count c = {.order_ok = 1};
    static const struct evp_replay_ops ops = {c_begin, c_events, NULL, NULL};
    struct evp_replay_opts ro = {.stream = -1};
    CHECK(evp_replay(t, &ro, &ops, &c) == 0, "replay");
    for (int i = 0; i < THREADS; i++)
        CHECK(c.per_op[i] == ROUNDS * PER_ROUND / 4,
              "thread %d: %llu ops, expected %d", i,
              (unsigned long long)c.per_op[i], ROUNDS * PER_ROUND / 4);
    CHECK(c.order_ok, "a thread's events are out of order");
    CHECK(!c.misplaced, "%d events in another thread's stream", c.misplaced);
    CHECK(c.events == evp_trace_info(t)->events, "replayed %llu of %llu",
          (unsigned long long)c.events,
          (unsigned long long)evp_trace_info(t)->events);
    CHECK(c.events >= (uint64_t)THREADS * ROUNDS * PER_ROUND,
          "%llu events recorded", (unsigned long long)c.events);
    CHECK(evp_trace_nfuncs(t) == THREADS * ROUNDS, "%u functions",
          evp_trace_nfuncs(t));
    evp_trace_close(t);
    unlink(path);
    printf("%d threads x %d rounds x %d events: %s\n", THREADS, ROUNDS,
           PER_ROUND, failures ? "FAILED" : "all read back in order");
    return failures ? 1 : 0;
}
