/*
 * Unit tests of the recorder (src/recorder/recorder.c), checked through
 * the reader: what was recorded is what is read back, from one thread and
 * many, through buffer hand-offs, across sessions, in a forked child, in
 * a killed process and after a write error (the end record still counting
 * what is missing); two processes given one path, a path removed while
 * recording, a flush that is on disk when it returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch.h"

#include "evalprof/recorder.h"
#include "evalprof/replay.h"
#include "evalprof/trace.h"

static int quiet_warn_count;

static void quiet_warn(void *ctx, const char *path, const char *msg)
{
    (void)ctx;
    (void)path;
    (void)msg;
    quiet_warn_count++;
}

static struct evp_trace *open_trace(const char *path)
{
    struct evp_open_opts o = {.warn = quiet_warn};
    struct evp_trace *t = NULL;
    char err[256];
    quiet_warn_count = 0;
    int rc = evp_trace_open(path, &o, &t, err, sizeof err);
    if (rc < 0)
        fail_msg("open %s: %s", path, err);
    return t;
}

/* Collects every replayed event of every stream. */
struct collect {
    struct evp_event *ev;
    size_t n, cap;
    size_t streams;
    uint32_t stream_of[64];
    size_t first_of[64];
};

static int col_begin(void *ctx, const struct evp_stream *s)
{
    struct collect *c = ctx;
    if (c->streams < 64) {
        c->stream_of[c->streams] = s->id;
        c->first_of[c->streams] = c->n;
    }
    c->streams++;
    return 0;
}

static int col_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct collect *c = ctx;
    if (c->n + n > c->cap) {
        c->cap = (c->n + n) * 2;
        c->ev = realloc(c->ev, c->cap * sizeof *c->ev);
    }
    memcpy(c->ev + c->n, ev, n * sizeof *ev);
    c->n += n;
    return 0;
}

static void collect(struct evp_trace *t, struct collect *c)
{
    static const struct evp_replay_ops ops = {col_begin, col_events, NULL,
                                              NULL};
    struct evp_replay_opts o = {.stream = -1};
    memset(c, 0, sizeof *c);
    assert_int_equal(evp_replay(t, &o, &ops, c), 0);
}

/* The events a trace being written holds so far: 0 where it cannot be
 * read yet (no header flushed). */
static size_t flushed_events(const char *path)
{
    static const struct evp_replay_ops ops = {col_begin, col_events, NULL,
                                              NULL};
    struct evp_open_opts oo = {.warn = quiet_warn};
    struct evp_replay_opts o = {.stream = -1};
    struct evp_trace *t = NULL;
    struct collect c;
    char err[256];
    memset(&c, 0, sizeof c);
    if (evp_trace_open(path, &oo, &t, err, sizeof err) < 0)
        return 0;
    size_t n = evp_replay(t, &o, &ops, &c) == 0 ? c.n : 0;
    free(c.ev);
    evp_trace_close(t);
    return n;
}

static size_t count_kind(const struct collect *c, unsigned kind)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        n += c->ev[i].kind == kind;
    return n;
}

static struct evp_rec_config config(const char *path)
{
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_CLASSIC,
                                 .flags = EVP_REC_QUIET};
    return cfg;
}

static void test_roundtrip(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "basic.evp");
    struct evp_rec_config cfg = config(path);
    assert_int_equal(evp_rec_open(&cfg), 0);
    assert_true(evp_rec_is_open());
    assert_int_equal(evp_rec_open(&cfg), -EBUSY);
    assert_int_equal(evp_rec_meta("python.version", "3.13.5"), 0);
    static const struct evp_opcode_desc ops[] = {{100, 100, "LOAD_CONST"},
                                                 {201, 100, "LOAD_CONST_X"}};
    assert_int_equal(evp_rec_opcodes(ops, 2), 0);
    uint32_t f1 = evp_rec_func("main", "prog.py", 1);
    uint32_t f2 = evp_rec_func("Klass.method", "lib/k.py", 42);
    assert_true(f1 >= 1 && f2 == f1 + 1);
    assert_int_equal(evp_rec_thread_attach("main"), 0);

    evp_rec_event(EVP_EV_INIT, 0);
    evp_rec_event(EVP_EV_ENTER, f1);
    evp_rec_event(EVP_EV_LOOP_ENTER, 0);
    evp_rec_op(100, 7);
    evp_rec_event(EVP_EV_ENTER, f2);
    evp_rec_op(201, 70000);
    evp_rec_event(EVP_EV_EXIT, f2);
    evp_rec_event(EVP_EV_RUNTIME_OTHER, 0);
    evp_rec_event(EVP_EV_EXIT, f1);
    evp_rec_event(EVP_EV_C_CALL, f1); /* not in can_emit: not recorded */
    evp_rec_event(EVP_EV_FINI, 0);
    struct evp_rec_stats st;
    assert_int_equal(evp_rec_close(), 0);
    assert_int_equal(evp_rec_close(), -ENOTCONN);
    evp_rec_get_stats(&st);
    assert_int_equal(st.events, 10);
    assert_int_equal(st.dropped, 0);
    assert_true(st.event_cost_ns > 0 && st.event_cost_ns < 10000);

    struct evp_trace *t = open_trace(path);
    assert_int_equal(quiet_warn_count, 0);
    const struct evp_trace_info *in = evp_trace_info(t);
    assert_string_equal(in->producer, "synthetic");
    assert_string_equal(in->python_version, "3.13.5");
    assert_int_equal(in->pid, getpid());
    assert_true(in->has_end);
    assert_true(in->event_cost_ns > 0);
    assert_true(in->can_emit & EVP_KIND_BIT(EVP_EV_OP));
    assert_false(in->can_emit & EVP_KIND_BIT(EVP_EV_C_CALL));
    assert_string_equal(evp_trace_opname(t, 201), "LOAD_CONST_X");
    assert_int_equal(evp_trace_opbase(t, 201), 100);
    assert_string_equal(evp_trace_func(t, f2)->name, "Klass.method");
    assert_string_equal(evp_trace_func(t, f2)->file, "lib/k.py");
    assert_int_equal(evp_trace_func(t, f2)->line, 42);
    assert_int_equal(evp_trace_nstreams(t), 1);
    assert_string_equal(evp_trace_stream(t, 0)->name, "main");

    struct collect c;
    collect(t, &c);
    static const unsigned kinds[] = {
        EVP_EV_INIT,  EVP_EV_ENTER, EVP_EV_LOOP_ENTER, EVP_EV_OP,
        EVP_EV_ENTER, EVP_EV_OP,    EVP_EV_EXIT,       EVP_EV_RUNTIME_OTHER,
        EVP_EV_EXIT,  EVP_EV_FINI};
    static const int depth[] = {0, 0, 1, 1, 1, 2, 1, 1, 0, 0};
    assert_int_equal(c.n, 10);
    for (size_t i = 0; i < c.n; i++) {
        assert_int_equal(c.ev[i].kind, kinds[i]);
        assert_int_equal(c.ev[i].depth, depth[i]);
        if (i)
            assert_true(c.ev[i].ts >= c.ev[i - 1].ts);
    }
    assert_int_equal(c.ev[3].aux, 100);
    assert_int_equal(c.ev[3].arg, 7);
    assert_int_equal(c.ev[5].aux, 201);
    assert_int_equal(c.ev[5].arg, 70000);
    assert_int_equal(c.ev[5].func, f2);
    assert_int_equal(c.ev[5].parent, f1);
    assert_true(c.ev[9].flags & EVP_EVF_LAST);
    free(c.ev);
    evp_trace_close(t);
}

static void test_clock_matches_monotonic(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "clock.evp");
    struct evp_rec_config cfg = config(path);
    assert_int_equal(evp_rec_open(&cfg), 0);
    uint64_t before[5], after[5];
    for (int i = 0; i < 5; i++) {
        before[i] = evp_clock_mono_ns();
        evp_rec_event(EVP_EV_DISPATCH, 0);
        after[i] = evp_clock_mono_ns();
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(evp_rec_close(), 0);
    struct evp_trace *t = open_trace(path);
    struct collect c;
    collect(t, &c);
    assert_int_equal(c.n, 5);
    for (int i = 0; i < 5; i++) {
        /* Calibrated ticks land within 20 µs of the monotonic clock. */
        assert_true(c.ev[i].ts + 20000 >= before[i]);
        assert_true(c.ev[i].ts <= after[i] + 20000);
    }
    free(c.ev);
    evp_trace_close(t);
}

struct thread_arg {
    unsigned id;
    unsigned n;
    uint32_t func;
};

static void *thread_main(void *p)
{
    struct thread_arg *a = p;
    char name[32];
    snprintf(name, sizeof name, "worker-%u", a->id);
    evp_rec_thread_attach(name);
    for (unsigned i = 0; i < a->n; i++) {
        evp_rec_event(EVP_EV_ENTER, a->func);
        evp_rec_op(a->id, i);
        evp_rec_event(EVP_EV_EXIT, a->func);
    }
    evp_rec_thread_detach();
    return NULL;
}

static void test_threads_and_handoffs(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "threads.evp");
    struct evp_rec_config cfg = config(path);
    cfg.buffer_events = 1000; /* many hand-offs and chunks */
    cfg.flush_ms = 5;
    assert_int_equal(evp_rec_open(&cfg), 0);
    enum { T = 4, N = 20000 };
    pthread_t th[T];
    struct thread_arg args[T];
    for (unsigned i = 0; i < T; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "f%u", i);
        args[i] = (struct thread_arg){i + 1, N, evp_rec_func(nm, "t.py", i)};
        pthread_create(&th[i], NULL, thread_main, &args[i]);
    }
    for (unsigned i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(evp_rec_close(), 0);

    struct evp_trace *t = open_trace(path);
    assert_int_equal(quiet_warn_count, 0);
    assert_int_equal(evp_trace_nstreams(t), T);
    struct collect c;
    collect(t, &c);
    assert_int_equal(count_kind(&c, EVP_EV_OP), T * N);
    assert_true(count_kind(&c, EVP_EV_RECORDER) >= T * (3 * N / 1000 - 1));
    /* Each stream is one thread's events, in its own order. */
    for (size_t s = 0; s < c.streams; s++) {
        size_t end = s + 1 < c.streams ? c.first_of[s + 1] : c.n;
        unsigned who = 0, next = 0;
        for (size_t i = c.first_of[s]; i < end; i++) {
            const struct evp_event *e = &c.ev[i];
            if (i > c.first_of[s])
                assert_true(e->ts >= c.ev[i - 1].ts);
            if (e->kind != EVP_EV_OP)
                continue;
            if (!who)
                who = e->aux;
            assert_int_equal(e->aux, who);
            assert_int_equal(e->arg, next++);
            assert_int_equal(e->depth, 1);
        }
        assert_int_equal(next, N);
        const struct evp_stream *st = evp_trace_stream(t, s);
        char want[32];
        snprintf(want, sizeof want, "worker-%u", who);
        assert_string_equal(st->name, want);
    }
    free(c.ev);
    evp_trace_close(t);
}

static void test_sessions_restart(void **state)
{
    (void)state;
    char p1[128], p2[128];
    scratch_path(p1, sizeof p1, "s1.evp");
    scratch_path(p2, sizeof p2, "s2.evp");
    for (int round = 0; round < 2; round++) {
        struct evp_rec_config cfg = config(round ? p2 : p1);
        assert_int_equal(evp_rec_open(&cfg), 0);
        uint32_t f = evp_rec_func(round ? "second" : "first", "", 0);
        assert_int_equal(f, 1); /* a fresh function table per session */
        for (int i = 0; i < 100 + round; i++)
            evp_rec_event(EVP_EV_ENTER, f);
        assert_int_equal(evp_rec_close(), 0);
        evp_rec_event(EVP_EV_ENTER, f); /* between sessions: ignored */
    }
    assert_int_equal(evp_rec_func("late", "", 0), 0);
    for (int round = 0; round < 2; round++) {
        struct evp_trace *t = open_trace(round ? p2 : p1);
        struct collect c;
        collect(t, &c);
        assert_int_equal(c.n, 100 + round);
        assert_string_equal(evp_trace_func(t, 1)->name,
                            round ? "second" : "first");
        free(c.ev);
        evp_trace_close(t);
    }
}

static void test_open_errors(void **state)
{
    (void)state;
    struct evp_rec_config cfg = config("/nonexistent-dir/x.evp");
    assert_int_equal(evp_rec_open(&cfg), -ENOENT);
    assert_false(evp_rec_is_open());
    cfg.path = NULL;
    assert_int_equal(evp_rec_open(&cfg), -EINVAL);
    assert_int_equal(evp_rec_meta("k", "v"), -ENOTCONN);
    assert_int_equal(evp_rec_close(), -ENOTCONN);
    /* Not a regular file: refused, a FIFO without blocking. */
    cfg = config("/dev/full");
    assert_int_equal(evp_rec_open(&cfg), -EINVAL);
    assert_false(evp_rec_is_open());
    char fifo[128];
    scratch_path(fifo, sizeof fifo, "fifo.evp");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    cfg = config(fifo);
    assert_int_equal(evp_rec_open(&cfg), -EINVAL);
    cfg = config(tmpdir);
    assert_int_equal(evp_rec_open(&cfg), -EISDIR);
    /* /dev/null is written, to measure without a disk. */
    struct stat st;
    if (stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode)) {
        cfg = config("/dev/null");
        assert_int_equal(evp_rec_open(&cfg), 0);
        evp_rec_op(1, 1);
        assert_int_equal(evp_rec_close(), 0);
        assert_int_equal(stat("/dev/null", &st), 0);
        assert_true(S_ISCHR(st.st_mode));
    }
    /* The header cannot be written: a file-size limit of 8 bytes. */
    char tiny[128];
    scratch_path(tiny, sizeof tiny, "tiny.evp");
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {8, 8};
        setrlimit(RLIMIT_FSIZE, &rl);
        cfg = config(tiny);
        _exit(evp_rec_open(&cfg) == -EFBIG && !evp_rec_is_open() ? 0 : 4);
    }
    int ws;
    waitpid(pid, &ws, 0);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
}

/* Send stderr to PATH until stderr_back(); returns the saved stderr. */
static int stderr_to(const char *path)
{
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    return saved;
}

static void stderr_back(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

static char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Events of kind OP with AUX, numbered 0.. in their arg, and nothing
 * else: what one writer recorded, whole and in order. */
static void assert_ops(const char *path, unsigned aux, size_t n, pid_t pid)
{
    struct evp_trace *t = open_trace(path);
    assert_int_equal(quiet_warn_count, 0);
    assert_int_equal(evp_trace_info(t)->pid, pid);
    struct collect c;
    collect(t, &c);
    assert_int_equal(c.n, n);
    for (size_t i = 0; i < c.n; i++) {
        assert_int_equal(c.ev[i].aux, aux);
        assert_int_equal(c.ev[i].arg, i);
    }
    free(c.ev);
    evp_trace_close(t);
}

static void test_two_writers_one_path(void **state)
{
    (void)state;
    char path[128], alt[160], errp[128];
    scratch_path(path, sizeof path, "shared.evp");
    scratch_path(errp, sizeof errp, "shared.err");
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* The first writer: records before and after the second starts. */
        struct evp_rec_config cfg = config(path);
        char c;
        if (evp_rec_open(&cfg) < 0)
            _exit(3);
        for (int i = 0; i < 1000; i++)
            evp_rec_op(1, (uint32_t)i);
        evp_rec_flush();
        if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(5);
        for (int i = 1000; i < 2000; i++)
            evp_rec_op(1, (uint32_t)i);
        _exit(evp_rec_close() == 0 && strcmp(evp_rec_path(), path) == 0 ? 0
                                                                        : 4);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    /* The second writer, while the first records: a file of its own. */
    struct evp_rec_config cfg = config(path);
    cfg.flags &= ~EVP_REC_QUIET;
    int saved = stderr_to(errp);
    int rc = evp_rec_open(&cfg);
    stderr_back(saved);
    assert_int_equal(rc, 0);
    snprintf(alt, sizeof alt, "%s.%d", path, (int)getpid());
    assert_string_equal(evp_rec_path(), alt);
    char want[512];
    snprintf(want, sizeof want,
             "evalprof: %s is being written by another process: this one "
             "writes %s\n",
             path, alt);
    assert_string_equal(slurp(errp), want);
    for (int i = 0; i < 500; i++)
        evp_rec_op(2, (uint32_t)i);
    assert_int_equal(write(go[1], "g", 1), 1);
    for (int i = 500; i < 1000; i++)
        evp_rec_op(2, (uint32_t)i);
    assert_int_equal(evp_rec_close(), 0);
    int ws;
    waitpid(pid, &ws, 0);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    /* Neither trace holds the other's events, nor lost its own. */
    assert_ops(path, 1, 2000, pid);
    assert_ops(alt, 2, 1000, getpid());

    /* Once the first writer is done, the path is free again. */
    cfg = config(path);
    assert_int_equal(evp_rec_open(&cfg), 0);
    assert_string_equal(evp_rec_path(), path);
    evp_rec_op(3, 0);
    assert_int_equal(evp_rec_close(), 0);
    assert_ops(path, 3, 1, getpid());
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
}

static void test_path_removed_while_recording(void **state)
{
    (void)state;
    char dir[128], path[160], errp[128];
    scratch_path(dir, sizeof dir, "doomed");
    scratch_path(errp, sizeof errp, "doomed.err");
    snprintf(path, sizeof path, "%s/x.evp", dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    struct evp_rec_config cfg = config(path);
    cfg.flags &= ~EVP_REC_QUIET;
    assert_int_equal(evp_rec_open(&cfg), 0);
    for (int i = 0; i < 100; i++)
        evp_rec_op(1, (uint32_t)i);
    assert_int_equal(evp_rec_flush(), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
    int saved = stderr_to(errp);
    int rc = evp_rec_close();
    stderr_back(saved);
    assert_int_equal(rc, -ENOENT);
    struct evp_rec_stats st;
    evp_rec_get_stats(&st);
    assert_int_equal(st.error, -ENOENT);
    char want[512];
    snprintf(want, sizeof want,
             "evalprof: %s: the trace file was removed or replaced while "
             "recording: the %llu events written to it are lost\n",
             path, (unsigned long long)st.events);
    assert_string_equal(slurp(errp), want);

    /* Replaced: another file renamed over it. */
    char other[128];
    scratch_path(path, sizeof path, "replaced.evp");
    scratch_path(other, sizeof other, "other.txt");
    cfg = config(path);
    assert_int_equal(evp_rec_open(&cfg), 0);
    evp_rec_op(1, 1);
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(rename(other, path), 0);
    assert_int_equal(evp_rec_close(), -ENOENT);

    /* A relative path stays right when the program changes directory. */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(tmpdir), 0);
    cfg = config("relative.evp");
    assert_int_equal(evp_rec_open(&cfg), 0);
    evp_rec_op(4, 0);
    assert_int_equal(chdir("/"), 0);
    rc = evp_rec_close();
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    scratch_path(path, sizeof path, "relative.evp");
    assert_ops(path, 4, 1, getpid());
}

static void test_flush_writes_now(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "flush.evp");
    struct evp_rec_config cfg = config(path);
    cfg.flush_ms = 60000; /* no periodic flush during the test */
    assert_int_equal(evp_rec_open(&cfg), 0);
    for (int i = 0; i < 100; i++)
        evp_rec_op(5, (uint32_t)i);
    assert_int_equal(evp_rec_flush(), 0);
    /* On disk when flush returns: readable while still recording. */
    struct evp_trace *t = open_trace(path);
    struct collect c;
    collect(t, &c);
    assert_int_equal(c.n, 100);
    free(c.ev);
    evp_trace_close(t);
    assert_int_equal(evp_rec_close(), 0);
}

static void test_fork(void **state)
{
    (void)state;
    for (int follow = 0; follow < 2; follow++) {
        char path[128], child_path[160];
        scratch_path(path, sizeof path,
                     follow ? "fork-follow.evp" : "fork.evp");
        struct evp_rec_config cfg = config(path);
        if (follow)
            cfg.flags |= EVP_REC_FOLLOW_FORK;
        assert_int_equal(evp_rec_open(&cfg), 0);
        uint32_t f = evp_rec_func("parent", "", 0);
        for (int i = 0; i < 1000; i++)
            evp_rec_op(1, (uint32_t)i);
        /* time before the fork, which the child's trace does not span */
        struct timespec before = {0, 100 * 1000 * 1000};
        nanosleep(&before, NULL);
        pid_t pid = fork();
        if (pid == 0) {
            /* The child: events of its own, then a normal exit. */
            for (int i = 0; i < 500; i++)
                evp_rec_op(2, (uint32_t)i);
            evp_rec_event(EVP_EV_EXIT, f);
            _exit(evp_rec_close() == (follow ? 0 : -ENOTCONN) ? 0 : 3);
        }
        for (int i = 0; i < 1000; i++)
            evp_rec_op(3, (uint32_t)i);
        int ws;
        waitpid(pid, &ws, 0);
        assert_true(WIFEXITED(ws));
        assert_int_equal(WEXITSTATUS(ws), 0);
        assert_int_equal(evp_rec_close(), 0);

        struct evp_trace *t = open_trace(path);
        assert_int_equal(quiet_warn_count, 0);
        struct collect c;
        collect(t, &c);
        /* The parent's trace holds only the parent's events. */
        assert_int_equal(c.n, 2000);
        for (size_t i = 0; i < c.n; i++)
            assert_int_equal(c.ev[i].aux, i < 1000 ? 1 : 3);
        free(c.ev);
        assert_int_equal(evp_trace_info(t)->parent_pid, -1);
        uint64_t parent_start = evp_trace_info(t)->start_ns;
        int64_t parent_wall = evp_trace_info(t)->start_wall_ns;
        evp_trace_close(t);

        snprintf(child_path, sizeof child_path, "%s.%d", path, (int)pid);
        if (!follow) {
            assert_int_equal(access(child_path, F_OK), -1);
            continue;
        }
        t = open_trace(child_path);
        assert_int_equal(quiet_warn_count, 0);
        char ppid[24];
        snprintf(ppid, sizeof ppid, "%d", (int)getpid());
        assert_string_equal(evp_trace_meta(t, "parent.pid"), ppid);
        assert_int_equal(evp_trace_info(t)->parent_pid, getpid());
        assert_int_equal(evp_trace_info(t)->pid, pid);
        assert_string_equal(evp_trace_func(t, f)->name, "parent");
        /* It starts at the fork, not at its parent's start. */
        uint64_t start = evp_trace_info(t)->start_ns;
        assert_true(start >= parent_start + 100 * 1000 * 1000);
        assert_true(evp_trace_info(t)->start_wall_ns >=
                    parent_wall + 100 * 1000 * 1000);
        assert_true(evp_trace_info(t)->end_ns >= start);
        collect(t, &c);
        assert_int_equal(c.n, 501);
        assert_true(c.ev[0].ts >= start);
        for (size_t i = 0; i < 500; i++)
            assert_int_equal(c.ev[i].aux, 2);
        assert_int_equal(c.ev[500].kind, EVP_EV_EXIT);
        assert_true(c.ev[500].flags & EVP_EVF_UNMATCHED);
        free(c.ev);
        evp_trace_close(t);
    }
}

/* The child's flusher: asks the writer for a round now, which creates
 * the child's file and writes its function table. */
static void *flush_now(void *arg)
{
    (void)arg;
    evp_rec_flush();
    return NULL;
}

/*
 * A forked child's writer writes its file's beginning (the metadata and
 * the whole function table) while the child's own thread registers
 * functions, which grows the table and moves it: the writer reads it
 * under the session lock, never a table the other thread has freed.  The
 * table holds 2^17 functions at the fork (a full one: the next
 * registration moves it, and reading it takes the writer a millisecond
 * or more), and the child registers as soon as its file appears.  With
 * the table read unlocked, the child died of SIGSEGV in the first fork
 * of each run.
 */
static void test_fork_child_reads_functions_locked(void **state)
{
    (void)state;
    enum { NFUNCS = 1 << 17, FORKS = 4 };
    char path[128], child_path[160], name[32];
    scratch_path(path, sizeof path, "fork-funcs.evp");
    struct evp_rec_config cfg = config(path);
    cfg.flags |= EVP_REC_FOLLOW_FORK;
    assert_int_equal(evp_rec_open(&cfg), 0);
    for (int i = 0; i < NFUNCS; i++) {
        snprintf(name, sizeof name, "parent_%d", i);
        assert_int_equal(evp_rec_func(name, "p.py", (uint32_t)i), i + 1);
    }
    for (int k = 0; k < FORKS; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* freed memory overwritten, as MALLOC_PERTURB_ does: a table
             * read after it moved names nothing any more */
            mallopt(M_PERTURB, 0xa5);
            snprintf(child_path, sizeof child_path, "%s.%d", path,
                     (int)getpid());
            evp_rec_op(2, 0);
            pthread_t th;
            if (pthread_create(&th, NULL, flush_now, NULL) != 0)
                _exit(3);
            time_t give_up = time(NULL) + 60;
            while (access(child_path, F_OK) != 0)
                if (time(NULL) > give_up)
                    _exit(6);
            for (int i = 0; i < 64; i++) {
                snprintf(name, sizeof name, "child_%d", i);
                if (evp_rec_func(name, "c.py", (uint32_t)i) !=
                    (uint32_t)(NFUNCS + i + 1))
                    _exit(4);
            }
            pthread_join(th, NULL);
            _exit(evp_rec_close() == 0 ? 0 : 5);
        }
        int ws;
        waitpid(pid, &ws, 0);
        assert_true(WIFEXITED(ws));
        assert_int_equal(WEXITSTATUS(ws), 0);
        snprintf(child_path, sizeof child_path, "%s.%d", path, (int)pid);
        struct evp_trace *t = open_trace(child_path);
        assert_int_equal(quiet_warn_count, 0);
        const struct evp_func *f = evp_trace_func(t, NFUNCS);
        assert_non_null(f);
        snprintf(name, sizeof name, "parent_%d", NFUNCS - 1);
        assert_string_equal(f->name, name);
        assert_non_null(f = evp_trace_func(t, NFUNCS + 64));
        assert_string_equal(f->name, "child_63");
        evp_trace_close(t);
        unlink(child_path);
    }
    assert_int_equal(evp_rec_close(), 0);
}

static void test_fork_exec_leaves_no_file(void **state)
{
    (void)state;
    char path[128], child_path[160];
    scratch_path(path, sizeof path, "fork-exec.evp");
    struct evp_rec_config cfg = config(path);
    cfg.flags |= EVP_REC_FOLLOW_FORK;
    assert_int_equal(evp_rec_open(&cfg), 0);
    evp_rec_op(1, 1);
    pid_t pid = fork();
    if (pid == 0) {
        /* What subprocess does: a few events, then exec. */
        evp_rec_op(2, 2);
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int ws;
    waitpid(pid, &ws, 0);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    assert_int_equal(evp_rec_close(), 0);
    snprintf(child_path, sizeof child_path, "%s.%d", path, (int)pid);
    assert_int_equal(access(child_path, F_OK), -1);
    assert_int_equal(errno, ENOENT);
}

static void test_killed_process_keeps_flushed_events(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "killed.evp");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct evp_rec_config cfg = config(path);
        cfg.flush_ms = 10;
        if (evp_rec_open(&cfg) < 0)
            _exit(3);
        for (int i = 0; i < 3000; i++)
            evp_rec_op(5, (uint32_t)i);
        if (write(fds[1], "r", 1) != 1)
            _exit(4);
        for (;;)
            pause(); /* killed here, never closing */
    }
    close(fds[1]);
    char r;
    assert_int_equal(read(fds[0], &r, 1), 1);
    close(fds[0]);
    /* Killed once its writer has flushed them (a round every 10 ms; a
     * loaded machine may delay it by much more, so the trace is read
     * until it holds them all, up to 30 s), never closing. */
    size_t seen = 0;
    for (int i = 0; i < 3000 && seen < 3000; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        seen = flushed_events(path);
    }
    assert_int_equal(seen, 3000);
    kill(pid, SIGKILL);
    int ws;
    waitpid(pid, &ws, 0);
    assert_true(WIFSIGNALED(ws));
    struct evp_trace *t = open_trace(path);
    assert_false(evp_trace_info(t)->has_end);
    struct collect c;
    collect(t, &c);
    assert_int_equal(c.n, 3000);
    free(c.ev);
    evp_trace_close(t);
}

/*
 * In a child under a file-size limit of LIMIT bytes (set once the session
 * is open when LATE), record N ops and close; returns the child's figures
 * and the close's return code.  Its stderr goes to ERRP.
 */
static char lim_path[128], lim_err[128]; /* of the last record_limited() */

static int record_limited(const char *name, rlim_t limit, int late,
                          uint32_t buffer_events, int n,
                          struct evp_rec_stats *st)
{
    snprintf(lim_path, sizeof lim_path, "%s/%s.evp", tmpdir, name);
    snprintf(lim_err, sizeof lim_err, "%s/%s.err", tmpdir, name);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* A file size limit makes writes fail part-way, like a full disk. */
        signal(SIGXFSZ, SIG_IGN);
        int saved = stderr_to(lim_err);
        (void)saved;
        struct rlimit rl = {limit, limit};
        if (!late)
            setrlimit(RLIMIT_FSIZE, &rl);
        struct evp_rec_config cfg = config(lim_path);
        cfg.flags &= ~EVP_REC_QUIET;
        cfg.buffer_events = buffer_events;
        if (evp_rec_open(&cfg) < 0)
            _exit(3);
        struct evp_rec_stats s;
        evp_rec_get_stats(&s);
        rl.rlim_cur = rl.rlim_max = s.bytes + limit;
        if (late)
            setrlimit(RLIMIT_FSIZE, &rl);
        for (int i = 0; i < n; i++)
            evp_rec_op((unsigned)(i & 0xff), (uint32_t)i * 2654435761u);
        int rc = evp_rec_close();
        evp_rec_get_stats(&s);
        if (write(fds[1], &rc, sizeof rc) != sizeof rc ||
            write(fds[1], &s, sizeof s) != sizeof s)
            _exit(5);
        _exit(0);
    }
    close(fds[1]);
    int rc = 0;
    assert_int_equal(read(fds[0], &rc, sizeof rc), sizeof rc);
    assert_int_equal(read(fds[0], st, sizeof *st), sizeof *st);
    close(fds[0]);
    int ws;
    waitpid(pid, &ws, 0);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    return rc;
}

/* The trace at PATH, which ends with its end record counting what ST
 * says was dropped. */
static struct evp_trace *open_counted(const char *path,
                                      const struct evp_rec_stats *st)
{
    struct evp_trace *t = open_trace(path);
    assert_int_equal(quiet_warn_count, 0);
    assert_true(evp_trace_info(t)->has_end);
    assert_int_equal(evp_trace_info(t)->dropped, st->dropped);
    assert_int_equal(st->end_error, 0);
    return t;
}

static void test_write_error_stops_cleanly(void **state)
{
    (void)state;
    struct evp_rec_stats st;
    int rc = record_limited("efbig", 64 * 1024, 0, 4096, 200000, &st);
    assert_int_equal(rc, -EFBIG);
    assert_int_equal(st.error, -EFBIG);
    assert_true(st.dropped > 0);
    /* What was written before the error reads back: a prefix, and the
     * end record after it counts what is missing. */
    struct evp_trace *t = open_counted(lim_path, &st);
    struct collect c;
    collect(t, &c);
    assert_int_equal(c.n, st.events);
    assert_true(c.n > 1000 && c.n < 200000);
    for (size_t i = 0, k = 0; i < c.n; i++) {
        if (c.ev[i].kind != EVP_EV_OP)
            continue;
        assert_int_equal(c.ev[i].arg, (uint32_t)k * 2654435761u);
        k++;
    }
    free(c.ev);
    evp_trace_close(t);
}

static void test_file_limit_below_one_chunk(void **state)
{
    (void)state;
    /* 16 KiB: the beginning fits, the first chunk (65,536 records)
     * does not. */
    struct evp_rec_stats st;
    int rc = record_limited("below-chunk", 16 * 1024, 0, 0, 200000, &st);
    assert_int_equal(rc, -EFBIG);
    assert_int_equal(st.events, 0);
    assert_true(st.dropped >= 200000);
    struct evp_trace *t = open_counted(lim_path, &st);
    assert_int_equal(evp_trace_info(t)->events, 0);
    evp_trace_close(t);
    char want[512];
    snprintf(want, sizeof want,
             "evalprof: %s: %llu events could not be written\n", lim_path,
             (unsigned long long)st.dropped);
    assert_non_null(strstr(slurp(lim_err), want));

    /* 20 bytes past the beginning: not even the end record fits. */
    rc = record_limited("no-end", 20, 1, 0, 100000, &st);
    assert_int_equal(rc, -EFBIG);
    assert_int_equal(st.end_error, -EFBIG);
    snprintf(want, sizeof want,
             "evalprof: %s: %llu events could not be written, nor the end "
             "record that counts them (%s)\n",
             lim_path, (unsigned long long)st.dropped, strerror(EFBIG));
    assert_non_null(strstr(slurp(lim_err), want));
    t = open_trace(lim_path);
    assert_false(evp_trace_info(t)->has_end);
    evp_trace_close(t);
}

static void test_enabled_mask(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "mask.evp");
    struct evp_rec_config cfg = config(path);
    cfg.enabled = EVP_KIND_BIT(EVP_EV_OP);
    assert_int_equal(evp_rec_open(&cfg), 0);
    evp_rec_event(EVP_EV_DISPATCH, 0);
    evp_rec_op(1, 1);
    evp_rec_set_enabled(EVP_KIND_BIT(EVP_EV_DISPATCH));
    evp_rec_event(EVP_EV_DISPATCH, 0);
    evp_rec_op(1, 2);
    assert_int_equal(evp_rec_close(), 0);
    struct evp_trace *t = open_trace(path);
    struct collect c;
    collect(t, &c);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.ev[0].kind, EVP_EV_OP);
    assert_int_equal(c.ev[1].kind, EVP_EV_DISPATCH);
    free(c.ev);
    evp_trace_close(t);
}

/* --on-overflow=drop with a writer slower than the thread: whole buffers
 * are dropped, never waited for, and the trace counts exactly the records
 * it lacks. */
static void test_overflow_drop_counts_exactly(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "drop.evp");
    setenv("EVALPROF_ON_OVERFLOW", "drop", 1);
    setenv("EVALPROF_BUFFERS", "2", 1);
    setenv("EVALPROF_TEST_WRITER_DELAY_MS", "20", 1);
    struct evp_rec_config cfg = config(path);
    cfg.buffer_events = 256;
    cfg.enabled = EVP_KIND_BIT(EVP_EV_OP); /* no hand-off events */
    assert_int_equal(evp_rec_open(&cfg), 0);
    enum { N = 200000 };
    for (uint32_t i = 0; i < N; i++)
        evp_rec_op(1, i);
    assert_int_equal(evp_rec_close(), 0);
    unsetenv("EVALPROF_ON_OVERFLOW");
    unsetenv("EVALPROF_BUFFERS");
    unsetenv("EVALPROF_TEST_WRITER_DELAY_MS");

    struct evp_trace *t = open_trace(path);
    struct collect c;
    collect(t, &c);
    const struct evp_trace_info *in = evp_trace_info(t);
    assert_true(in->dropped > 0);
    assert_int_equal(c.n + in->dropped, N);
    assert_int_equal(in->dropped % 256, N % 256); /* whole buffers, and
                                                     the last one's part */
    assert_string_equal(evp_trace_meta(t, "recorder.on_overflow"), "drop");
    free(c.ev);
    evp_trace_close(t);
}

/* --max-size and --duration stop recording, say so, and the program's
 * later events are simply not recorded. */
static void test_limits_stop_recording(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "limit.evp");
    setenv("EVALPROF_MAX_SIZE", "64K", 1);
    struct evp_rec_config cfg = config(path);
    cfg.buffer_events = 1024;
    cfg.flush_ms = 2;
    assert_int_equal(evp_rec_open(&cfg), 0);
    for (uint32_t i = 0; i < 2000000; i++)
        evp_rec_op(1, i);
    assert_int_equal(evp_rec_close(), 0);
    unsetenv("EVALPROF_MAX_SIZE");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size < 4 * 1024 * 1024);
    struct evp_trace *t = open_trace(path);
    assert_string_equal(evp_trace_meta(t, "recorder.stopped"), "max-size");
    assert_int_equal(evp_trace_info(t)->dropped, 0);
    evp_trace_close(t);

    setenv("EVALPROF_DURATION", "0.05", 1);
    assert_int_equal(evp_rec_open(&cfg), 0);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t i = 0;
    do {
        evp_rec_op(1, i++);
        clock_gettime(CLOCK_MONOTONIC, &now);
        /* (long enough for the writer's round to land on a loaded
           machine: the stop must come within half of it) */
    } while (now.tv_sec - t0.tv_sec < 4);
    assert_int_equal(evp_rec_close(), 0);
    unsetenv("EVALPROF_DURATION");
    t = open_trace(path);
    assert_string_equal(evp_trace_meta(t, "recorder.stopped"), "duration");
    struct collect c;
    collect(t, &c);
    assert_true(c.n > 0 && c.n < i / 2);
    free(c.ev);
    evp_trace_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_clock_matches_monotonic),
        cmocka_unit_test(test_threads_and_handoffs),
        cmocka_unit_test(test_sessions_restart),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_fork),
        cmocka_unit_test(test_fork_child_reads_functions_locked),
        cmocka_unit_test(test_fork_exec_leaves_no_file),
        cmocka_unit_test(test_killed_process_keeps_flushed_events),
        cmocka_unit_test(test_write_error_stops_cleanly),
        cmocka_unit_test(test_file_limit_below_one_chunk),
        cmocka_unit_test(test_two_writers_one_path),
        cmocka_unit_test(test_path_removed_while_recording),
        cmocka_unit_test(test_flush_writes_now),
        cmocka_unit_test(test_enabled_mask),
        cmocka_unit_test(test_overflow_drop_counts_exactly),
        cmocka_unit_test(test_limits_stop_recording),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
