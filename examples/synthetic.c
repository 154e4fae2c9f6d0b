/*
 * A synthetic eval-loop workload: a small C program that drives the
 * recorder with the event pattern of a real interpreter run, without an
 * interpreter.
 *
 * It simulates frames being evaluated: each call emits enter, loop enter,
 * the eval-breaker check (loop slow, loop fast), then dispatch/op pairs;
 * some ops are calls that nest a frame, some raise (loop exception, loop
 * error, loop exiting); every frame ends with loop exit, exit and runtime
 * other.  Event counts come out in the proportions of the discussion's
 * `setup.py build` trace, and the time between events is spent in busy
 * work of realistic length (tenths of a microsecond, scaled by --work), so
 * trace sizes and timings are representative.
 *
 * Used by `make demo`, the benchmarks and the tests (threads, fork).
 *
 *   synthetic [-o FILE] [-n EVENTS] [-t THREADS] [--work SCALE]
 *             [--fork] [--seed N] [--no-trace]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "evalprof/recorder.h"

static const char *const func_names[][2] = {
    {"<module>", "setup.py"},
    {"_DeadlockError", "<frozen importlib._bootstrap>"},
    {"_ModuleLock.__init__", "<frozen importlib._bootstrap>"},
    {"_ModuleLock.acquire", "<frozen importlib._bootstrap>"},
    {"_ModuleLock.release", "<frozen importlib._bootstrap>"},
    {"_find_and_load", "<frozen importlib._bootstrap>"},
    {"_get_module_lock", "<frozen importlib._bootstrap>"},
    {"_call_with_frames_removed", "<frozen importlib._bootstrap>"},
    {"FileFinder.find_spec", "<frozen importlib._bootstrap_external>"},
    {"_path_join", "<frozen importlib._bootstrap_external>"},
    {"_path_stat", "<frozen importlib._bootstrap_external>"},
    {"exists", "Lib/genericpath.py"},
    {"isdir", "Lib/genericpath.py"},
    {"join", "Lib/posixpath.py"},
    {"normpath", "Lib/posixpath.py"},
    {"split", "Lib/posixpath.py"},
    {"Mapping.get", "Lib/_collections_abc.py"},
    {"Distribution.get_command_obj", "Lib/distutils/dist.py"},
    {"build_ext.run", "Lib/distutils/command/build_ext.py"},
    {"CCompiler._setup_compile", "Lib/distutils/ccompiler.py"},
    {"newer", "Lib/distutils/dep_util.py"},
    {"convert_path", "Lib/distutils/util.py"},
    {"close", "Lib/subprocess.py"},
    {"shutdown", "Lib/logging/__init__.py"},
};
#define NFUNCS (sizeof func_names / sizeof func_names[0])

/* Opcodes of the discussion's trace (CPython 3.10 numbering). */
static const struct evp_opcode_desc opcodes[] = {
    {1, 1, "POP_TOP"},
    {4, 4, "DUP_TOP"},
    {83, 83, "RETURN_VALUE"},
    {90, 90, "STORE_NAME"},
    {100, 100, "LOAD_CONST"},
    {101, 101, "LOAD_NAME"},
    {103, 103, "BUILD_LIST"},
    {106, 106, "LOAD_ATTR"},
    {107, 107, "COMPARE_OP"},
    {110, 110, "JUMP_FORWARD"},
    {113, 113, "JUMP_ABSOLUTE"},
    {114, 114, "POP_JUMP_IF_FALSE"},
    {115, 115, "POP_JUMP_IF_TRUE"},
    {116, 116, "LOAD_GLOBAL"},
    {122, 122, "SETUP_FINALLY"},
    {124, 124, "LOAD_FAST"},
    {125, 125, "STORE_FAST"},
    {131, 131, "CALL_FUNCTION"},
    {161, 161, "CALL_METHOD"},
    {93, 93, "FOR_ITER"},
};
/* Relative weights, shaped like the discussion's ops table. */
static const unsigned op_weights[] = {15, 13,  0,  4,   28, 5,   26, 30, 6, 5,
                                      51, 219, 25, 212, 82, 241, 30, 0,  0, 20};
#define NOPS (sizeof opcodes / sizeof opcodes[0])

struct rng {
    uint64_t s;
};

static uint32_t rnd(struct rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 16);
}

static double work_scale = 1.0;
static double ticks_per_ns = 1.0;

/* Busy work for about NS nanoseconds (scaled), like an opcode body. */
static void work(double ns)
{
    if (work_scale <= 0)
        return;
    uint64_t until = evp_rec_now() + (uint64_t)(ns * work_scale * ticks_per_ns);
    while (evp_rec_now() < until)
        ;
}

struct worker {
    uint64_t target; /* events to emit */
    uint64_t emitted;
    uint32_t seed;
    uint32_t funcs[NFUNCS];
    int trace;
};

#define EMIT(w, k, a)                                                          \
    do {                                                                       \
        if ((w)->trace)                                                        \
            evp_rec_event((k), (a));                                           \
        (w)->emitted++;                                                        \
    } while (0)

static void frame(struct worker *w, struct rng *r, int depth)
{
    uint32_t f = w->funcs[depth == 0 ? 0 : 1 + rnd(r) % (NFUNCS - 1)];
    EMIT(w, EVP_EV_ENTER, f);
    work(200);
    EMIT(w, EVP_EV_LOOP_ENTER, 0);
    work(200);
    EMIT(w, EVP_EV_LOOP_SLOW, 0);
    work(150);
    EMIT(w, EVP_EV_LOOP_FAST, 0);
    work(100);
    /* 1.57 instructions a frame on average, as in the discussion. */
    unsigned nops = 1 + (rnd(r) % 100 < 57) + (depth == 0 ? 1000000 : 0);
    for (unsigned i = 0; i < nops && w->emitted < w->target; i++) {
        EMIT(w, EVP_EV_DISPATCH, 0);
        work(80);
        unsigned pick = rnd(r) % 1011, k = 0;
        while (pick >= op_weights[k]) {
            pick -= op_weights[k];
            k++;
        }
        if (w->trace)
            evp_rec_op(opcodes[k].opcode, rnd(r) % 8);
        w->emitted++;
        unsigned roll = rnd(r) % 1000;
        if (roll < 630 && depth < 40) {
            frame(w, r, depth + 1); /* the op calls a function */
        } else if (roll < 650) {
            work(300);
            EMIT(w, EVP_EV_LOOP_ERROR, 0);
            work(300);
            EMIT(w, EVP_EV_LOOP_EXCEPTION, 0);
            work(300);
            if (roll < 655) {
                EMIT(w, EVP_EV_LOOP_EXITING, 0);
                work(150);
                break;
            }
        } else if (roll < 672) {
            work(1000);
            EMIT(w, EVP_EV_LOOP_SLOW, 0); /* a backward jump's check */
            work(150);
            EMIT(w, EVP_EV_LOOP_FAST, 0);
            work(80);
        } else {
            work(600);
        }
    }
    EMIT(w, EVP_EV_LOOP_EXIT, 0);
    work(300);
    EMIT(w, EVP_EV_EXIT, f);
    work(150);
    EMIT(w, EVP_EV_RUNTIME_OTHER, 0);
    work(depth == 0 ? 0 : 2000);
}

static void run(struct worker *w)
{
    struct rng r = {0x9e3779b97f4a7c15u ^ w->seed};
    while (w->emitted < w->target)
        frame(w, &r, 0);
}

static void *thread_main(void *p)
{
    struct worker *w = p;
    if (w->trace)
        evp_rec_thread_attach(NULL);
    run(w);
    if (w->trace)
        evp_rec_thread_detach();
    return NULL;
}

static void usage(FILE *f)
{
    fputs("usage: synthetic [-o FILE] [-n EVENTS] [-t THREADS] [--work SCALE]\n"
          "                 [--fork] [--seed N] [--no-trace]\n",
          f);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"events", required_argument, NULL, 'n'},
        {"threads", required_argument, NULL, 't'},
        {"work", required_argument, NULL, 'w'},
        {"fork", no_argument, NULL, 'f'},
        {"seed", required_argument, NULL, 's'},
        {"no-trace", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *out = "synthetic.evp";
    uint64_t events = 1000000;
    int threads = 1, do_fork = 0, trace = 1, c;
    uint32_t seed = 1;
    while ((c = getopt_long(argc, argv, "o:n:t:s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'n':
            events = strtoull(optarg, NULL, 10);
            break;
        case 't':
            threads = atoi(optarg);
            break;
        case 'w':
            work_scale = atof(optarg);
            break;
        case 'f':
            do_fork = 1;
            break;
        case 's':
            seed = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'N':
            trace = 0;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (threads < 1 || threads > 64 || !events) {
        usage(stderr);
        return 2;
    }

    if (trace) {
        struct evp_rec_config cfg = {
            .path = out,
            .producer = EVP_PRODUCER_SYNTHETIC,
            .can_emit = EVP_KINDS_CLASSIC,
            .flags = EVP_REC_FOLLOW_FORK,
        };
        int rc = evp_rec_open(&cfg);
        if (rc < 0) {
            fprintf(stderr, "synthetic: %s: %s\n", out, strerror(-rc));
            return 1;
        }
        evp_rec_meta("python.version", "synthetic");
        evp_rec_opcodes(opcodes, NOPS);
        evp_rec_event(EVP_EV_INIT, 0);
    }
    /* Busy work is measured in recorder ticks. */
    {
        uint64_t t0 = evp_rec_now();
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        do
            clock_gettime(CLOCK_MONOTONIC, &b);
        while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) <
               2000000L);
        uint64_t t1 = evp_rec_now();
        ticks_per_ns =
            (double)(t1 - t0) / (double)((b.tv_sec - a.tv_sec) * 1000000000L +
                                         (b.tv_nsec - a.tv_nsec));
    }

    struct worker *w = calloc((size_t)threads, sizeof *w);
    if (!w)
        return 1;
    for (int i = 0; i < threads; i++) {
        w[i].target = events / (uint64_t)threads;
        w[i].seed = seed + (uint32_t)i;
        w[i].trace = trace;
        for (size_t f = 0; f < NFUNCS; f++)
            w[i].funcs[f] =
                trace ? evp_rec_func(func_names[f][0], func_names[f][1],
                                     (uint32_t)(10 * f + 1))
                      : (uint32_t)f + 1;
    }
    pid_t child = -1;
    if (do_fork) {
        /* Half the work before, half after: the child records its own. */
        w[0].target /= 2;
        run(&w[0]);
        w[0].target *= 2;
        child = fork();
        if (child < 0) {
            perror("synthetic: fork");
            return 1;
        }
    }
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    for (int i = 1; i < threads; i++)
        pthread_create(&tids[i], NULL, thread_main, &w[i]);
    run(&w[0]);
    for (int i = 1; i < threads; i++)
        pthread_join(tids[i], NULL);
    free(tids);

    int status = 0;
    if (child > 0) {
        int ws;
        waitpid(child, &ws, 0);
        status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
    }
    if (trace) {
        evp_rec_event(EVP_EV_FINI, 0);
        int rc = evp_rec_close();
        if (rc < 0) {
            fprintf(stderr, "synthetic: %s: %s\n", out, strerror(-rc));
            status = 1;
        }
    }
    uint64_t total = 0;
    for (int i = 0; i < threads; i++)
        total += w[i].emitted;
    if (child != 0)
        fprintf(stderr, "synthetic: %llu events%s%s\n",
                (unsigned long long)total, trace ? " recorded in " : "",
                trace ? out : "");
    free(w);
    return status;
}
