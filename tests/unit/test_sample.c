/*
 * Unit tests of the recorder's sampled mode (src/recorder/sample.c) and
 * its location-table decoder (linetable.c): the decoder on tables built
 * by hand from the format's description and on tables CPython 3.11, 3.12
 * and 3.13 compiled; the ring filled until it drops, its drops counted
 * exactly, wrapped around with records of every size; a function record
 * lost to a full ring (its key's samples go to "<unknown>", not to the
 * function the key named before); the lines.ID metadata of a sampled
 * function; the CPU clock's throttle (which lost signals raise the
 * period and which do not); the configuration's errors; and the cost of
 * one put.
 *
 * The samples here are mostly stored by the test thread itself with the
 * sampler's signal blocked, so that it is the ring's only producer, as
 * its handler would be.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>

#include <cmocka.h>

#include "scratch.h"

#include "../sampled_chunks.h"
#include "evalprof/recorder.h"
#include "evalprof/trace.h"
#include "linetable.h"
#include "sanitizer.h"
#include "sampler.h"
#include "session.h"

/* ---- the location-table decoder ---------------------------------------- */

static void add_range(void *ctx, long unit, long line)
{
    evp_rec_lines_add(ctx, unit, line);
}

/* The lines.ID text of TABLE, or NULL when it is malformed. */
static char *decode(const uint8_t *table, size_t n, long firstline)
{
    struct evp_rec_lines l = EVP_REC_LINES_INIT;
    if (evp_rec_lt311_decode(table, n, firstline, add_range, &l) < 0) {
        free(l.buf);
        return NULL;
    }
    return l.buf ? l.buf : strdup("");
}

/* The text evp_rec_lines_add writes: ",unit:line" per new line, in
 * decimal, negative and extreme values included; a repeated line adds
 * nothing. */
static void test_lines_text(void **state)
{
    (void)state;
    struct evp_rec_lines l = EVP_REC_LINES_INIT;
    evp_rec_lines_add(&l, 0, 7);
    evp_rec_lines_add(&l, 3, 7);
    evp_rec_lines_add(&l, 10, -1);
    evp_rec_lines_add(&l, 123456789, 1000000);
    evp_rec_lines_add(&l, LONG_MAX, LONG_MIN);
    char want[160];
    snprintf(want, sizeof want, "0:7,10:-1,123456789:1000000,%ld:%ld", LONG_MAX,
             LONG_MIN);
    assert_non_null(l.buf);
    assert_string_equal(l.buf, want);
    assert_int_equal(l.len, strlen(want));
    free(l.buf);
}

static void assert_decodes(const uint8_t *table, size_t n, long firstline,
                           const char *want)
{
    char *got = decode(table, n, firstline);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* Entry first byte: 1, kind (4 bits), code units - 1 (3 bits). */
#define E(kind, units) (uint8_t)(0x80 | (kind) << 3 | ((units)-1))

static void test_lt_forms(void **state)
{
    (void)state;
    const uint8_t t[] = {
        E(2, 3),  0x13,              /* short form: line 10, units 0-2 */
        E(11, 2), 4,           10,   /* one-line form, +1: line 11 */
        E(13, 1), 0x03,              /* no columns, svarint -1: line 10 */
        E(14, 4), 0x58,        0x09, /* long form, svarint +300: line 310 */
        0x02,     0x05,        0x48,
        0x03,                        /* end line +2, column 4, end col 199 */
        E(15, 1),                    /* no location */
        E(0, 8),  0x00,              /* short: line 310 again, 8 units */
        E(12, 1), 0,           0,    /* one-line +2: 312 */
        E(13, 2), 0x40 | 0x3e, 0x3f, /* svarint 4094: +2047 */
    };
    /* each entry gives a range; the same line twice in a row is one */
    assert_decodes(t, sizeof t, 10,
                   "0:10,3:11,5:10,6:310,10:0,11:310,19:312,20:2359");

    /* every short form kind 0-9 keeps the line */
    uint8_t s[20];
    for (int k = 0; k < 10; k++) {
        s[2 * k] = E(k, 1);
        s[2 * k + 1] = (uint8_t)(k * 7 & 0x7f);
    }
    assert_decodes(s, sizeof s, 5, "0:5");
    /* empty table: no ranges */
    assert_decodes(s, 0, 5, "");
    /* a line below 1 is a range without one */
    const uint8_t neg[] = {E(13, 1), 0x07, E(13, 1), 0x08};
    assert_decodes(neg, sizeof neg, 2, "0:0,1:3");
}

static void test_lt_malformed(void **state)
{
    (void)state;
    const uint8_t no_top_bit[] = {0x12, 0x00};
    const uint8_t cut_short[] = {E(2, 1)};
    const uint8_t cut_oneline[] = {E(10, 1), 4};
    const uint8_t cut_long[] = {E(14, 1), 0x02, 0x00, 0x01};
    const uint8_t varint_runs_on[] = {E(13, 1), 0x41, E(0, 1), 0x00};
    const uint8_t col_top_bit[] = {E(10, 1), 0x81, 0x01};
    uint8_t huge_line[8] = {E(13, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f};
    assert_null(decode(no_top_bit, sizeof no_top_bit, 1));
    assert_null(decode(cut_short, sizeof cut_short, 1));
    assert_null(decode(cut_oneline, sizeof cut_oneline, 1));
    assert_null(decode(cut_long, sizeof cut_long, 1));
    assert_null(decode(varint_runs_on, sizeof varint_runs_on, 1));
    assert_null(decode(col_top_bit, sizeof col_top_bit, 1));
    assert_null(decode(huge_line, sizeof huge_line, 1));
    /* more code units than an op at event can name */
    size_t n = (1u << 21) + 2;
    uint8_t *big = malloc(n * 2);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++) {
        big[2 * i] = E(0, 8);
        big[2 * i + 1] = 0;
    }
    assert_null(decode(big, n * 2, 1));
    free(big);
}

/*
 * co_linetable of one function as CPython compiled it, with what
 * code.co_lines() says of it (merged: a range continuing the line before
 * adds nothing):
 *
 *   def f(n):                       # line 1
 *       total = 0
 *       for i in range(n):
 *           if i % 3 == 0:
 *               total += i * 2
 *           else:
 *               total -= (i +
 *                         1)
 *       return total
 */
static const uint8_t lt311[] = {
    0x80, 0x00, 0xd8, 0x0c, 0x0d, 0x80, 0x45, 0xdd, 0x0d, 0x12, 0x90, 0x31,
    0x89, 0x58, 0x8c, 0x58, 0xf0, 0x00, 0x05, 0x05, 0x19, 0xf0, 0x00, 0x05,
    0x05, 0x19, 0x88, 0x01, 0xd8, 0x0b, 0x0c, 0x88, 0x71, 0x89, 0x35, 0x90,
    0x41, 0x8a, 0x3a, 0x88, 0x3a, 0xd8, 0x0c, 0x11, 0x90, 0x51, 0x98, 0x11,
    0x91, 0x55, 0x89, 0x4e, 0x88, 0x45, 0x88, 0x45, 0xe0, 0x0c, 0x11, 0x90,
    0x61, 0xd8, 0x16, 0x17, 0xf1, 0x03, 0x01, 0x17, 0x18, 0xf1, 0x00, 0x01,
    0x0d, 0x19, 0x88, 0x45, 0x88, 0x45, 0xe0, 0x0b, 0x10, 0x80, 0x4c};
static const uint8_t lt312[] = {
    0x80, 0x00, 0xd8, 0x0c, 0x0d, 0x80, 0x45, 0xdc, 0x0d, 0x12, 0x90,
    0x31, 0x8b, 0x58, 0xf2, 0x00, 0x05, 0x05, 0x19, 0x88, 0x01, 0xd8,
    0x0b, 0x0c, 0x88, 0x71, 0x89, 0x35, 0x90, 0x41, 0x8a, 0x3a, 0xd8,
    0x0c, 0x11, 0x90, 0x51, 0x98, 0x11, 0x91, 0x55, 0x89, 0x4e, 0x89,
    0x45, 0xe0, 0x0c, 0x11, 0x90, 0x61, 0xd8, 0x16, 0x17, 0xf1, 0x03,
    0x01, 0x17, 0x18, 0xf1, 0x00, 0x01, 0x0d, 0x19, 0x89, 0x45, 0xf0,
    0x09, 0x05, 0x05, 0x19, 0xf0, 0x0c, 0x00, 0x0c, 0x11, 0x80, 0x4c};
static const uint8_t lt313[] = {
    0x80, 0x00, 0xd8, 0x0c, 0x0d, 0x80, 0x45, 0xdc, 0x0d, 0x12, 0x90, 0x31,
    0x8e, 0x58, 0x88, 0x01, 0xd8, 0x0b, 0x0c, 0x88, 0x71, 0x89, 0x35, 0x90,
    0x41, 0x8b, 0x3a, 0xd8, 0x0c, 0x11, 0x98, 0x11, 0x91, 0x55, 0x89, 0x4e,
    0x8a, 0x45, 0xe0, 0x0c, 0x11, 0xd8, 0x16, 0x17, 0xf1, 0x03, 0x01, 0x17,
    0x18, 0xf1, 0x00, 0x01, 0x0d, 0x19, 0x8a, 0x45, 0xf1, 0x09, 0x00, 0x0e,
    0x16, 0xf0, 0x0c, 0x00, 0x0c, 0x11, 0x80, 0x4c};

static void test_lt_cpython(void **state)
{
    (void)state;
    assert_decodes(lt311, sizeof lt311, 1,
                   "0:1,1:2,3:3,20:4,29:5,38:7,40:8,41:7,47:9");
    assert_decodes(lt312, sizeof lt312, 1,
                   "0:1,1:2,3:3,17:4,25:5,34:7,36:8,37:7,43:3,44:9");
    assert_decodes(lt313, sizeof lt313, 1,
                   "0:1,1:2,3:3,17:4,26:5,35:7,36:8,37:7,44:3,46:9");
}

/* ---- sessions ------------------------------------------------------------ */

static void quiet_warn(void *ctx, const char *path, const char *msg)
{
    (void)path;
    (void)msg;
    ++*(int *)ctx;
}

static struct evp_trace *open_trace(const char *path, int *warnings)
{
    struct evp_open_opts o = {.warn = quiet_warn, .warn_ctx = warnings};
    struct evp_trace *t = NULL;
    char err[256];
    *warnings = 0;
    if (evp_trace_open(path, &o, &t, err, sizeof err) < 0)
        fail_msg("open %s: %s", path, err);
    return t;
}

/* A session on the scratch file NAME (its path in PATH), with FLAGS
 * besides quiet and no atexit. */
static void open_session_flags(const char *name, char *path, size_t len,
                               unsigned flags)
{
    scratch_path(path, len, name);
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_CLASSIC,
                                 .flags =
                                     EVP_REC_QUIET | EVP_REC_NO_ATEXIT | flags};
    assert_int_equal(evp_rec_open(&cfg), 0);
}

static void open_session(const char *name, char *path, size_t len)
{
    open_session_flags(name, path, len, 0);
}

static int handler_calls;

static void on_sample_count(void *uc, uint32_t weight)
{
    (void)uc;
    (void)weight;
    __atomic_add_fetch(&handler_calls, 1, __ATOMIC_RELAXED);
}

/* Block (HOW: SIG_BLOCK) or unblock the sampler's signals in this thread:
 * the real-time one, and SIGTRAP, which the CPU clock's perf event sends
 * where the kernel can. */
static void mask_signal(int how)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 4);
    sigaddset(&set, SIGTRAP);
    pthread_sigmask(how, &set, NULL);
}

/* Start sampling with a tiny RING_KB ring, the signal blocked in this
 * thread: the test stores its own samples.  ON_FORK_CHILD: the config's. */
static void start_blocked_fork(unsigned ring_kb, void (*on_fork_child)(void))
{
    struct evp_rec_sample_config sc = {.rate_hz = 1000,
                                       .cpu_clock = 1,
                                       .ring_kb = ring_kb,
                                       .on_sample = on_sample_count,
                                       .on_fork_child = on_fork_child};
    mask_signal(SIG_BLOCK);
    assert_int_equal(evp_rec_sampler_start(&sc), 0);
    assert_int_equal(evp_rec_sample_thread_start("ring"), 0);
}

static void start_blocked(unsigned ring_kb)
{
    start_blocked_fork(ring_kb, NULL);
}

static void unblock(void)
{
    mask_signal(SIG_UNBLOCK);
}

/* Stop this thread's sampling, close the session, unblock the signal. */
static void end_session(void)
{
    evp_rec_sample_thread_stop();
    assert_int_equal(evp_rec_close(), 0);
    unblock();
}

static void read_samples(const char *path, struct sc_trace *t)
{
    if (sc_read(path, t) < 0)
        fail_msg("%s", t->err);
}

static uint32_t func_named(struct evp_trace *t, const char *name)
{
    uint32_t found = 0;
    for (uint32_t i = 1; i <= evp_trace_nfuncs(t); i++) {
        if (strcmp(evp_trace_func(t, i)->name, name) == 0) {
            assert_int_equal(found, 0); /* one function per name */
            found = i;
        }
    }
    return found;
}

static void key_funcs(void)
{
    const char *names[] = {"f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"};
    for (uint32_t k = 1; k <= 8; k++)
        assert_int_equal(evp_rec_sample_func(k, names[k - 1], 2, "ring.py", 7,
                                             k * 10, NULL, 0, EVP_LT_NONE),
                         0);
}

/*
 * A 4 KiB ring: filled until it drops (every drop counted once), drained
 * by a flush, filled again with stacks of 1 to 8 frames so that records
 * of every size straddle the ring's end; what is read back is exactly
 * what was stored, in order, and the dropped counts add up.
 */
static void test_ring_fill_drop_wrap(void **state)
{
    (void)state;
    char path[128];
    open_session("ring.evp", path, sizeof path);
    start_blocked(4);
    key_funcs();
    uint32_t keys[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint64_t ts = 1000, stored = 0, drops = 0;
    uint64_t want_depth_sum = 0;
    int full = 0;
    /* fill: 8-frame samples (64 bytes) until the ring refuses one */
    while (!full) {
        int rc = evp_rec_sample_put(ts, 0, 7, 1, keys, 8);
        if (rc == -ENOSPC) {
            full = 1;
            drops++;
        } else {
            assert_int_equal(rc, 0);
            stored++;
            want_depth_sum += 8;
            ts += 10;
        }
    }
    assert_true(stored >= 4096 / 64 - 8 && stored <= 4096 / 64);
    for (int i = 0; i < 99; i++)
        assert_int_equal(evp_rec_sample_put(ts, 0, 7, 1, keys, 8), -ENOSPC);
    drops += 99;
    /* a 1-frame sample may still fit in what is left, or not: count */
    assert_int_equal(evp_rec_flush(), 0);
    /* rounds of every size, each drained by a flush: wraps many times */
    for (int round = 0; round < 40; round++) {
        for (unsigned i = 0; i < 50; i++) {
            unsigned depth = 1 + (i + (unsigned)round) % 8;
            int rc = evp_rec_sample_put(ts, (uint32_t)round, i + 1, 1 + i % 3,
                                        keys + 8 - depth, depth);
            if (rc == 0) {
                stored++;
                want_depth_sum += depth;
                ts += 10;
            } else {
                assert_int_equal(rc, -ENOSPC);
                drops++;
            }
        }
        assert_int_equal(evp_rec_flush(), 0);
    }
    struct evp_rec_sample_stats st;
    evp_rec_sample_get_stats(&st);
    assert_int_equal(st.samples, stored);
    assert_int_equal(st.dropped, drops);
    end_session();
    /* the closed session's figures */
    evp_rec_sample_get_stats(&st);
    assert_int_equal(st.samples, stored);
    assert_int_equal(st.dropped, drops);
    assert_int_equal(st.stacks, 8);
    assert_int_equal(st.threads, 1);

    struct sc_trace t;
    read_samples(path, &t);
    assert_true(t.order_ok);
    assert_true(t.seq_ok);
    assert_int_equal(t.nsamples, stored);
    assert_int_equal(t.dropped, drops);
    uint64_t depth_sum = 0, prev = 0;
    for (size_t i = 0; i < t.nsamples; i++) {
        const struct sc_sample *s = &t.samples[i];
        unsigned d = sc_depth(&t, s);
        depth_sum += d;
        assert_true(s->s.ts > prev); /* in order, none twice */
        prev = s->s.ts;
        assert_int_equal(s->s.state & EVP_SAMPLE_NO_FRAME, 0);
    }
    assert_int_equal(depth_sum, want_depth_sum);
    /* the stacks are the suffixes of 1..8: 8 nodes, a single chain */
    assert_int_equal(t.nnodes, 8);

    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    for (size_t i = 0; i < t.nsamples; i++) {
        /* keys + 8 - depth: the leaf is f(9 - depth), the root f8 */
        const struct sc_sample *s = &t.samples[i];
        unsigned d = sc_depth(&t, s);
        char want[8];
        snprintf(want, sizeof want, "f%u", 9 - d);
        const struct evp_func *leaf = evp_trace_func(tr, sc_func_at(&t, s, 0));
        assert_non_null(leaf);
        assert_string_equal(leaf->name, want);
        assert_string_equal(evp_trace_func(tr, sc_func_at(&t, s, d - 1))->name,
                            "f8");
    }
    assert_string_equal(evp_trace_meta(tr, "sample.missed"), "0");
    assert_string_equal(evp_trace_meta(tr, "sample.ring_kb"), "4");
    evp_trace_close(tr);
    sc_free(&t);
}

/*
 * A key re-keyed to another function while the ring is full: the new
 * function record is lost, and the key's next samples are "<unknown>",
 * never the function it named before.
 */
static void test_ring_lost_func(void **state)
{
    (void)state;
    char path[128];
    open_session("lost.evp", path, sizeof path);
    start_blocked(4);
    uint32_t k1 = 1, k2 = 2;
    assert_int_equal(
        evp_rec_sample_func(1, "old", 3, "x.py", 4, 1, NULL, 0, EVP_LT_NONE),
        0);
    assert_int_equal(
        evp_rec_sample_func(2, "other", 5, "x.py", 4, 9, NULL, 0, EVP_LT_NONE),
        0);
    assert_int_equal(evp_rec_sample_put(1, 0, 0, 1, &k1, 1), 0);
    uint64_t ts = 2, stored = 1;
    while (evp_rec_sample_put(ts, 0, 0, 1, &k2, 1) == 0) {
        ts++;
        stored++;
    }
    /* full: the re-keying is lost */
    assert_int_equal(
        evp_rec_sample_func(1, "new", 3, "x.py", 4, 5, NULL, 0, EVP_LT_NONE),
        -ENOSPC);
    assert_int_equal(evp_rec_flush(), 0);
    assert_int_equal(evp_rec_sample_put(1000, 0, 0, 1, &k1, 1), 0);
    assert_int_equal(evp_rec_sample_put(1001, 0, 0, 1, &k2, 1), 0);
    /* keyed again: known again */
    assert_int_equal(
        evp_rec_sample_func(1, "new", 3, "x.py", 4, 5, NULL, 0, EVP_LT_NONE),
        0);
    assert_int_equal(evp_rec_sample_put(1002, 0, 0, 1, &k1, 1), 0);
    stored += 3;
    end_session();

    struct sc_trace t;
    read_samples(path, &t);
    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    assert_int_equal(t.nsamples, stored);
    const char *want_last[3] = {"<unknown>", "other", "new"};
    assert_string_equal(
        evp_trace_func(tr, sc_func_at(&t, &t.samples[0], 0))->name, "old");
    for (int i = 0; i < 3; i++)
        assert_string_equal(
            evp_trace_func(tr, sc_func_at(&t, &t.samples[stored - 3 + i], 0))
                ->name,
            want_last[i]);
    assert_string_equal(evp_trace_meta(tr, "sample.funcs_lost"), "1");
    evp_trace_close(tr);
    sc_free(&t);
}

/* A sampled function's line table becomes its lines.ID, once, and one
 * function across threads and keys. */
static void *second_thread(void *arg)
{
    (void)arg;
    mask_signal(SIG_BLOCK);
    assert_int_equal(evp_rec_sample_thread_start("second"), 0);
    uint32_t k = 77;
    assert_int_equal(evp_rec_sample_func(k, "f", 1, "lt.py", 5, 1, lt312,
                                         sizeof lt312, EVP_LT_CPYTHON311),
                     0);
    assert_int_equal(evp_rec_sample_put(5, 0, 38, 1, &k, 1), 0);
    evp_rec_sample_thread_stop();
    return NULL;
}

static void test_lines_meta(void **state)
{
    (void)state;
    char path[128];
    open_session("lines.evp", path, sizeof path);
    start_blocked(0);
    uint32_t k = 3;
    assert_int_equal(evp_rec_sample_func(k, "f", 1, "lt.py", 5, 1, lt312,
                                         sizeof lt312, EVP_LT_CPYTHON311),
                     0);
    assert_int_equal(evp_rec_sample_put(4, 0, 18, 1, &k, 1), 0);
    /* a malformed table of another function gives it no lines */
    uint32_t k2 = 4;
    const uint8_t bad[] = {0x12};
    assert_int_equal(evp_rec_sample_func(k2, "g", 1, "lt.py", 5, 20, bad,
                                         sizeof bad, EVP_LT_CPYTHON311),
                     0);
    assert_int_equal(evp_rec_sample_put(5, 0, 1, 1, &k2, 1), 0);
    assert_int_equal(evp_rec_flush(), 0); /* this thread's chunk first */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, second_thread, NULL), 0);
    pthread_join(th, NULL);
    end_session();

    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    uint32_t f = func_named(tr, "f"), g = func_named(tr, "g");
    assert_true(f && g);
    char key[32];
    snprintf(key, sizeof key, "lines.%u", f);
    assert_string_equal(evp_trace_meta(tr, key),
                        "0:1,1:2,3:3,17:4,25:5,34:7,36:8,37:7,43:3,44:9");
    snprintf(key, sizeof key, "lines.%u", g);
    assert_null(evp_trace_meta(tr, key));
    assert_int_equal(evp_trace_nstreams(tr), 2);
    evp_trace_close(tr);
    struct sc_trace t;
    read_samples(path, &t);
    assert_int_equal(t.nsamples, 3);
    assert_int_equal(t.samples[2].s.unit, 38);
    assert_int_equal(t.samples[0].s.unit, 18);
    assert_int_equal(t.nnodes, 2); /* f's node shared by both threads */
    assert_int_equal(sc_func_at(&t, &t.samples[0], 0),
                     sc_func_at(&t, &t.samples[2], 0));
    assert_int_not_equal(t.samples[0].stream, t.samples[2].stream);
    sc_free(&t);
}

/* A thread that records events and samples has one stream, whichever
 * it does first. */
static void *samples_then_events(void *arg)
{
    uint32_t f = *(uint32_t *)arg, k = 1;
    mask_signal(SIG_BLOCK);
    if (evp_rec_sample_thread_start("second") == 0 &&
        evp_rec_sample_func(k, "s", 1, "", 0, 1, NULL, 0, 0) == 0 &&
        evp_rec_sample_put(evp_rec_now(), 0, 0, 1, &k, 1) == 0) {
        evp_rec_event(EVP_EV_ENTER, f);
        evp_rec_event(EVP_EV_EXIT, f);
    }
    evp_rec_sample_thread_stop();
    evp_rec_thread_detach();
    return NULL;
}

static void test_one_stream(void **state)
{
    (void)state;
    char path[128];
    open_session("streams.evp", path, sizeof path);
    uint32_t f = evp_rec_func("ev", "e.py", 1);
    evp_rec_event(EVP_EV_ENTER, f); /* events first */
    start_blocked(0);
    uint32_t k = 1;
    assert_int_equal(evp_rec_sample_func(k, "s", 1, "", 0, 1, NULL, 0, 0), 0);
    assert_int_equal(evp_rec_sample_put(evp_rec_now(), 0, 0, 1, &k, 1), 0);
    evp_rec_event(EVP_EV_EXIT, f);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, samples_then_events, &f), 0);
    pthread_join(th, NULL);
    end_session();

    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    assert_int_equal(evp_trace_nstreams(tr), 2);
    struct sc_trace t;
    read_samples(path, &t);
    assert_int_equal(t.nsamples, 2);
    for (size_t i = 0; i < 2; i++) {
        const struct evp_stream *s = evp_trace_stream(tr, i);
        assert_int_equal(s->events, 2); /* enter and exit */
        size_t n = 0;
        for (size_t j = 0; j < t.nsamples; j++)
            n += t.samples[j].stream == s->id;
        assert_int_equal(n, 1);
    }
    evp_trace_close(tr);
    sc_free(&t);
}

/* A thread that stops and starts again, and a sampler stopped and
 * started again, go on in the same stream, its SAMPLES chunks numbered
 * on and in time order, whether or not the writer came in between. */
static void test_restart(void **state)
{
    (void)state;
    char path[128];
    open_session("restart.evp", path, sizeof path);
    start_blocked(0);
    uint32_t k = 1;
    uint64_t ts = 1;
    for (int round = 0; round < 6; round++) {
        assert_int_equal(evp_rec_sample_func(k, "r", 1, "", 0, 1, NULL, 0, 0),
                         0);
        for (int i = 0; i < 3; i++)
            assert_int_equal(evp_rec_sample_put(ts++, 0, 0, 1, &k, 1), 0);
        if (round % 2)
            assert_int_equal(evp_rec_flush(), 0);
        if (round == 3) {
            evp_rec_sampler_stop();
            struct evp_rec_sample_config sc = {.rate_hz = 1000,
                                               .cpu_clock = 1,
                                               .ring_kb = 64,
                                               .on_sample = on_sample_count};
            assert_int_equal(evp_rec_sampler_start(&sc), 0);
        } else {
            evp_rec_sample_thread_stop();
        }
        assert_int_equal(evp_rec_sample_thread_start("again"), 0);
    }
    end_session();
    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    assert_int_equal(warnings, 0);
    assert_int_equal(evp_trace_nstreams(tr), 1);
    evp_trace_close(tr);
    struct sc_trace t;
    read_samples(path, &t);
    assert_true(t.seq_ok);
    assert_int_equal(t.nsamples, 18);
    for (size_t i = 0; i < t.nsamples; i++)
        assert_int_equal(t.samples[i].s.ts, i + 1);
    assert_int_equal(t.nnodes, 1);
    sc_free(&t);
}

/* In a forked child of a session that follows forks, on_fork_child runs
 * once, on the forking thread, before the sampler starts again there (a
 * cache of the parent's keys emptied later could name keys the child's
 * trace lacks); not in the parent, nor without following. */
static int fork_calls, fork_poll_ms = -1;

static void on_fork_child_note(void)
{
    fork_calls++;
    fork_poll_ms = (int)evp_rec_sample_poll_ms_();
}

static int fork_child_report(int follow)
{
    char path[128], child[160];
    open_session_flags(follow ? "fork-follow.evp" : "fork.evp", path,
                       sizeof path, follow ? EVP_REC_FOLLOW_FORK : 0);
    start_blocked_fork(64, on_fork_child_note);
    fork_calls = 0;
    fork_poll_ms = -1;
    pid_t pid = fork();
    if (pid == 0) {
        /* bit 0: calls other than expected; bit 1: the sampler was
         * running at the call; bit 2: it runs after (follow) or not */
        int running = evp_rec_sample_poll_ms_() != 0;
        _exit((fork_calls != follow) | (follow && fork_poll_ms != 0) << 1 |
              (running != follow) << 2);
    }
    assert_true(pid > 0);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_int_equal(fork_calls, 0); /* not in the parent */
    end_session();
    snprintf(child, sizeof child, "%s.%d", path, (int)pid);
    unlink(child);
    assert_true(WIFEXITED(ws));
    return WEXITSTATUS(ws);
}

/* ThreadSanitizer kills a child that starts a thread after a fork of a
 * threaded process (die_after_fork), and a following child starts the
 * writer again. */

static void test_fork_child_forgets_first(void **state)
{
    (void)state;
    if (EVP_UNDER_TSAN) {
        skip(); /* (the plain and ASan builds run it) */
        return;
    }
    assert_int_equal(fork_child_report(1), 0);
    assert_int_equal(fork_child_report(0), 0);
}

/* The writer drains every 50 ms while sampling, every 10 ms while a ring
 * fills by a quarter from one round to the next, and every 200 ms once the
 * sampler has run a second with nothing asking for more (poll_pace). */
static void test_writer_pace(void **state)
{
    (void)state;
    char path[128];
    assert_int_equal(evp_rec_sample_poll_ms_(), 0);
    open_session("pace.evp", path, sizeof path);
    start_blocked(4);
    assert_int_equal(evp_rec_sample_poll_ms_(), 50);
    uint32_t k = 1;
    assert_int_equal(evp_rec_sample_func(k, "p", 1, "", 0, 1, NULL, 0, 0), 0);
    /* 40 x 32 bytes: 31% of 4 KiB (again, should the writer's own round
     * have come in the middle) */
    for (int tries = 0; tries < 5 && evp_rec_sample_poll_ms_() != 10; tries++) {
        for (int i = 0; i < 40; i++)
            assert_int_equal(evp_rec_sample_put(1 + i, 0, 0, 1, &k, 1), 0);
        assert_int_equal(evp_rec_flush(), 0);
    }
    assert_int_equal(evp_rec_sample_poll_ms_(), 10);
    assert_int_equal(evp_rec_sample_put(100, 0, 0, 1, &k, 1), 0);
    assert_int_equal(evp_rec_flush(), 0);
    assert_int_equal(evp_rec_sample_poll_ms_(), 50);
    struct timespec second = {1, 50000000};
    nanosleep(&second, NULL);
    assert_int_equal(evp_rec_sample_put(101, 0, 0, 1, &k, 1), 0);
    assert_int_equal(evp_rec_flush(), 0);
    assert_int_equal(evp_rec_sample_poll_ms_(), 200);
    evp_rec_sampler_stop();
    assert_int_equal(evp_rec_sample_poll_ms_(), 0);
    assert_int_equal(evp_rec_close(), 0);
    unblock();
}

/* A ring not yet faulted in whole keeps the 50 ms pace while a round's
 * samples would outrun the pages faulted in ahead of them (half of
 * POPULATE_AHEAD, 64 KiB, a round), and goes to 200 ms once they fill it
 * slowly. */
static void test_writer_pace_populate(void **state)
{
    (void)state;
    char path[128];
    open_session("pace-pop.evp", path, sizeof path);
    start_blocked(2048);
    uint32_t k = 1;
    assert_int_equal(evp_rec_sample_func(k, "p", 1, "", 0, 1, NULL, 0, 0), 0);
    struct timespec second = {1, 50000000}, nap = {0, 100000000};
    nanosleep(&second, NULL);
    assert_int_equal(evp_rec_flush(), 0);
    nanosleep(&nap, NULL);
    assert_int_equal(evp_rec_sample_put(1, 0, 0, 1, &k, 1), 0);
    assert_int_equal(evp_rec_flush(), 0);
    assert_int_equal(evp_rec_sample_poll_ms_(), 200);
    /* 1,200 x 32 bytes (37.5 KiB) at once: more than 32 KiB a round at
     * any pace */
    for (int i = 0; i < 1200; i++)
        assert_int_equal(evp_rec_sample_put(2 + i, 0, 0, 1, &k, 1), 0);
    assert_int_equal(evp_rec_flush(), 0);
    assert_int_equal(evp_rec_sample_poll_ms_(), 50);
    evp_rec_sampler_stop();
    assert_int_equal(evp_rec_close(), 0);
    unblock();
}

/* The writer's pace follows what the threads queue between two of its
 * rounds, the sleep included: a thread that fills a buffer every 2 ms
 * (25 of the ring's 32 in the first 50 ms) brings it from 50 ms down to
 * 25 ms or less.  Counted over the round alone, which takes a fraction of
 * a millisecond, the same thread queued nothing and the pace slowed to
 * flush_ms (200 ms), where a thread that fills the ring faster than that
 * waits for the writer at every round. */
static void test_writer_pace_events(void **state)
{
    (void)state;
    char path[128];
    scratch_path(path, sizeof path, "pace-events.evp");
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_CLASSIC,
                                 .enabled = EVP_KIND_BIT(EVP_EV_OP),
                                 .buffer_events = 1024,
                                 .flags = EVP_REC_QUIET};
    assert_int_equal(evp_rec_open(&cfg), 0);
    struct timespec t0, now, nap = {0, 2000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned pace = 0;
    do {
        for (uint32_t i = 0; i < 1024; i++)
            evp_rec_op(1, i);
        nanosleep(&nap, NULL);
        pace = evp_rec_writer_poll_ms_();
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((pace == 0 || pace > 25) && now.tv_sec - t0.tv_sec < 3);
    assert_int_equal(evp_rec_close(), 0);
    assert_int_not_equal(pace, 0);
    assert_true(pace <= 25);
}

/* A producer's on_sample: one frame. */
static void on_sample_put(void *uc, uint32_t weight)
{
    (void)uc;
    uint32_t k = 1;
    evp_rec_sample_put(evp_rec_now(), 0, 0, weight, &k, 1);
}

/* A thread that blocks the signal for 60 ms at 1 kHz, of wall time
 * (asleep) or of CPU time (spinning: the CPU clock's perf event, or its
 * timer), gets one sample when it unblocks it, standing for the periods
 * it missed; sample.missed counts them. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin for NS of the thread's CPU time. */
static void spin_cpu(uint64_t ns)
{
    uint64_t t0 = thread_cpu_ns();
    while (thread_cpu_ns() - t0 < ns)
        ;
}

static void blocked_signal_weight(int cpu_clock)
{
    char path[128];
    open_session(cpu_clock ? "blocked-cpu.evp" : "blocked.evp", path,
                 sizeof path);
    struct evp_rec_sample_config sc = {
        .rate_hz = 1000, .cpu_clock = cpu_clock, .on_sample = on_sample_put};
    assert_int_equal(evp_rec_sampler_start(&sc), 0);
    /* blocked before the thread is sampled: a sample taken in between (a
     * tick while a loaded machine kept this thread off its CPU) would
     * let the wall clock's sampler thread sample the sleep on its
     * behalf, a period at a time, and no signal would carry the sleep */
    mask_signal(SIG_BLOCK);
    assert_int_equal(evp_rec_sample_thread_start("blocking"), 0);
    assert_int_equal(evp_rec_sample_func(1, "b", 1, "", 0, 1, NULL, 0, 0), 0);
    if (cpu_clock) {
        spin_cpu(60000000u);
    } else {
        struct timespec ts = {0, 60000000}, rem;
        while (nanosleep(&ts, &rem) < 0)
            ts = rem;
    }
    mask_signal(SIG_UNBLOCK); /* the pending signal is handled here */
    evp_rec_sample_thread_stop();
    assert_int_equal(evp_rec_close(), 0);
    struct sc_trace t;
    read_samples(path, &t);
    uint32_t most = 0;
    for (size_t i = 0; i < t.nsamples; i++)
        most = t.samples[i].s.weight > most ? t.samples[i].s.weight : most;
    assert_true(most >= 40 && most <= 400); /* (a loaded machine oversleeps) */
    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    assert_true(atoi(evp_trace_meta(tr, "sample.missed")) >= 39);
    evp_trace_close(tr);
    sc_free(&t);
}

/* A producer that takes a sample in every other signal only (as one
 * does while evalprof's own code runs, or when its walk faults). */
static unsigned every_other;

static void on_sample_every_other(void *uc, uint32_t weight)
{
    if (every_other++ & 1)
        on_sample_put(uc, weight);
}

/* Every period of the thread's CPU time is in a stored sample's weight
 * (its first, or a missed one past it) or unsampled: the periods of the
 * signals the producer took no sample in (sample.unsampled). */
static void test_unsampled_periods(void **state)
{
    (void)state;
    char path[128];
    open_session("unsampled.evp", path, sizeof path);
    every_other = 0;
    struct evp_rec_sample_config sc = {
        .rate_hz = 1000, .cpu_clock = 1, .on_sample = on_sample_every_other};
    assert_int_equal(evp_rec_sampler_start(&sc), 0);
    assert_int_equal(evp_rec_sample_thread_start("half"), 0);
    assert_int_equal(evp_rec_sample_func(1, "h", 1, "", 0, 1, NULL, 0, 0), 0);
    spin_cpu(100000000u);
    evp_rec_sample_thread_stop();
    assert_int_equal(evp_rec_close(), 0);
    struct sc_trace t;
    read_samples(path, &t);
    uint64_t weight = 0;
    for (size_t i = 0; i < t.nsamples; i++)
        weight += t.samples[i].s.weight;
    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    uint64_t missed = strtoull(evp_trace_meta(tr, "sample.missed"), NULL, 10);
    const char *un = evp_trace_meta(tr, "sample.unsampled");
    assert_non_null(un);
    uint64_t unsampled = strtoull(un, NULL, 10);
    assert_true(t.nsamples >= 20);
    assert_int_equal(weight - t.nsamples, missed);
    /* half the signals took no sample */
    assert_true(unsampled * 3 >= t.nsamples * 2 &&
                unsampled <= t.nsamples * 3 / 2 + 2);
    /* and the periods of both halves are the CPU time spun (100 ms at
     * 1 kHz, with a period or so of start and stop) */
    assert_true(weight + unsampled >= 95 && weight + unsampled <= 110);
    evp_trace_close(tr);
    sc_free(&t);
}

/* The CPU clock's sampler thread (EVALPROF_SAMPLE_TIMER=thread): the
 * producer's on_peek runs on the recorder's thread, never on the sampled
 * one, with the cookie that thread registered, and stores into that
 * thread's ring (a function and its samples); no signal reaches
 * on_sample; every period of the thread's CPU time is in a weight or
 * unsampled, and a thread asleep is owed none. */
static struct {
    int cookie;            /* its address is the sampled thread's cookie */
    pid_t sampled_tid;     /* the sampled thread */
    unsigned calls, wrong; /* on_peek's calls; those on the wrong thread or
                             with the wrong cookie */
    unsigned signals;      /* on_sample's calls (none expected) */
} peek;

static int on_peek_put(void *cookie, uint32_t weight)
{
    unsigned n = __atomic_add_fetch(&peek.calls, 1, __ATOMIC_RELAXED);
    if (cookie != &peek.cookie ||
        (pid_t)syscall(SYS_gettid) == peek.sampled_tid)
        __atomic_add_fetch(&peek.wrong, 1, __ATOMIC_RELAXED);
    if (n == 1)
        evp_rec_sample_func(1, "peeked", 6, "", 0, 1, NULL, 0, 0);
    uint32_t k = 1;
    evp_rec_sample_put(evp_rec_now(), EVP_SAMPLE_NO_PC, 0, weight, &k, 1);
    return 0;
}

static void on_sample_signal(void *uc, uint32_t weight)
{
    (void)uc;
    (void)weight;
    __atomic_add_fetch(&peek.signals, 1, __ATOMIC_RELAXED);
}

/* A producer that cannot read the thread from outside (its guard
 * replaced): every peek asks for the signal, and the thread's handler
 * samples it, on the thread itself, with the periods owed. */
static int on_peek_refuse(void *cookie, uint32_t weight)
{
    (void)cookie;
    (void)weight;
    __atomic_add_fetch(&peek.calls, 1, __ATOMIC_RELAXED);
    return 1;
}

static void on_sample_self(void *uc, uint32_t weight)
{
    if ((pid_t)syscall(SYS_gettid) != peek.sampled_tid)
        __atomic_add_fetch(&peek.wrong, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&peek.signals, 1, __ATOMIC_RELAXED);
    on_sample_put(uc, weight);
}

/* A session into FILE (its path into PATH) sampled at 1 kHz of CPU time
 * by the sampler thread (EVALPROF_SAMPLE_TIMER=thread), through ON_PEEK,
 * and ON_SAMPLE for the signals; the calling thread is the sampled one. */
static void peek_start(const char *file, char *path, size_t len,
                       void (*on_sample)(void *, uint32_t),
                       int (*on_peek)(void *, uint32_t))
{
    open_session(file, path, len);
    memset(&peek, 0, sizeof peek);
    peek.sampled_tid = (pid_t)syscall(SYS_gettid);
    setenv("EVALPROF_SAMPLE_TIMER", "thread", 1);
    struct evp_rec_sample_config sc = {.rate_hz = 1000,
                                       .cpu_clock = 1,
                                       .on_sample = on_sample,
                                       .on_peek = on_peek};
    int rc = evp_rec_sampler_start(&sc);
    unsetenv("EVALPROF_SAMPLE_TIMER");
    assert_int_equal(rc, 0);
}

/* The periods T's samples stand for. */
static uint64_t samples_weight(const struct sc_trace *t)
{
    uint64_t weight = 0;
    for (size_t i = 0; i < t->nsamples; i++)
        weight += t->samples[i].s.weight;
    return weight;
}

static void test_peek_signal_fallback(void **state)
{
    (void)state;
    char path[128];
    peek_start("peek-signal.evp", path, sizeof path, on_sample_self,
               on_peek_refuse);
    assert_int_equal(evp_rec_sample_thread_start("signalled"), 0);
    assert_int_equal(evp_rec_sample_thread_peek(&peek.cookie), 0);
    assert_int_equal(evp_rec_sample_func(1, "s", 1, "", 0, 1, NULL, 0, 0), 0);
    spin_cpu(100000000u);
    evp_rec_sample_thread_stop();
    assert_int_equal(evp_rec_close(), 0);
    assert_int_equal(peek.wrong, 0);
    assert_true(peek.signals >= 20);
    struct sc_trace t;
    read_samples(path, &t);
    uint64_t weight = samples_weight(&t);
    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    const char *ps = evp_trace_meta(tr, "sample.peek_signals");
    assert_non_null(ps);
    assert_true(strtoull(ps, NULL, 10) >= 20);
    assert_int_equal(t.nsamples, peek.signals);
    /* every period of the 100 ms spun, through the signals */
    assert_true(weight >= 90 && weight <= 110);
    evp_trace_close(tr);
    sc_free(&t);
}

static void test_peek_sampler(void **state)
{
    (void)state;
    char path[128];
    peek_start("peek.evp", path, sizeof path, on_sample_signal, on_peek_put);
    /* the recorder's own threads, which an interpreter leaves out of the
     * process's count before a fork: the writer and the sampler thread,
     * none while they are paused for one */
    assert_int_equal(evp_rec_threads(), 2);
    assert_int_equal(evp_rec_writer_pause(), 1);
    assert_int_equal(evp_rec_threads(), 0);
    assert_int_equal(evp_rec_writer_resume(), 0);
    assert_int_equal(evp_rec_threads(), 2);
    assert_int_equal(evp_rec_sample_thread_peek(&peek.cookie), -ENOTCONN);
    assert_int_equal(evp_rec_sample_thread_start("peeked"), 0);
    assert_int_equal(evp_rec_sample_thread_peek(&peek.cookie), 0);
    spin_cpu(100000000u);
    struct timespec nap = {0, 50000000}, rem;
    unsigned before = __atomic_load_n(&peek.calls, __ATOMIC_RELAXED);
    while (nanosleep(&nap, &rem) < 0)
        nap = rem;
    /* (one may have begun before the sleep) */
    unsigned asleep = __atomic_load_n(&peek.calls, __ATOMIC_RELAXED) - before;
    /* without a cookie: walked by nobody, the periods unsampled */
    assert_int_equal(evp_rec_sample_thread_peek(NULL), 0);
    before = __atomic_load_n(&peek.calls, __ATOMIC_RELAXED);
    spin_cpu(30000000u);
    unsigned uncookied =
        __atomic_load_n(&peek.calls, __ATOMIC_RELAXED) - before;
    evp_rec_sample_thread_stop();
    assert_int_equal(evp_rec_close(), 0);
    assert_int_equal(evp_rec_threads(), 0);
    assert_int_equal(peek.signals, 0);
    assert_int_equal(peek.wrong, 0);
    assert_true(asleep <= 1);
    assert_true(uncookied <= 1); /* (one in flight as it was cleared) */
    struct sc_trace t;
    read_samples(path, &t);
    uint64_t weight = 0;
    for (size_t i = 0; i < t.nsamples; i++) {
        weight += t.samples[i].s.weight;
        assert_true(t.samples[i].s.state & EVP_SAMPLE_NO_PC);
    }
    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    const char *sampler = evp_trace_meta(tr, "sample.sampler");
    assert_non_null(sampler);
    assert_non_null(strstr(sampler, "sampler thread: each running thread"));
    assert_string_equal(evp_trace_meta(tr, "sample.signal"), "none");
    assert_non_null(evp_trace_meta(tr, "sample.sampler_cpu_ns"));
    assert_int_equal(strtoull(evp_trace_meta(tr, "sample.peeks"), NULL, 10),
                     peek.calls);
    const char *un = evp_trace_meta(tr, "sample.unsampled");
    uint64_t unsampled = un ? strtoull(un, NULL, 10) : 0;
    assert_true(t.nsamples >= 20);
    assert_true(t.nsamples <= peek.calls);
    /* 100 ms peeked and 30 ms not, at 1 kHz: a period or so of start and
     * stop, the last period's tail not owed yet */
    assert_true(weight >= 90 && weight <= 110);
    assert_true(unsampled >= 20 && unsampled <= 40);
    evp_trace_close(tr);
    sc_free(&t);
}

/* A handler that costs SLOW_NS of the thread's CPU time: the signals
 * then cost more than a period, as they do at a rate the machine cannot
 * take. */
static uint64_t slow_ns;

static void on_sample_slow(void *uc, uint32_t weight)
{
    on_sample_put(uc, weight);
    spin_cpu(slow_ns);
}

/* The CPU clock's throttle (perf_throttle), from a thread that spins
 * SPIN_NS of its CPU time, at RATE_HZ, its handler costing HANDLER_NS
 * more, the signal blocked by the program for BLOCK_NS of each 4 ms
 * (0: never): the trace's throttle figures and missed periods.  Skips
 * where the CPU clock is no perf event (a timer has no period to
 * raise). */
static void throttle_case(unsigned rate_hz, uint64_t handler_ns,
                          uint64_t block_ns, uint64_t spin_ns, const char *name,
                          uint64_t *throttled, uint64_t *max_ns,
                          uint64_t *missed)
{
    char path[128];
    open_session(name, path, sizeof path);
    slow_ns = handler_ns;
    struct evp_rec_sample_config sc = {
        .rate_hz = rate_hz, .cpu_clock = 1, .on_sample = on_sample_slow};
    assert_int_equal(evp_rec_sampler_start(&sc), 0);
    assert_int_equal(evp_rec_sample_thread_start("slow"), 0);
    assert_int_equal(evp_rec_sample_func(1, "s", 1, "", 0, 1, NULL, 0, 0), 0);
    for (uint64_t t = 0; t < spin_ns; t += 4000000u) {
        if (block_ns) {
            mask_signal(SIG_BLOCK);
            spin_cpu(block_ns);
            mask_signal(SIG_UNBLOCK);
        }
        spin_cpu(4000000u - block_ns);
    }
    evp_rec_sample_thread_stop();
    assert_int_equal(evp_rec_close(), 0);
    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    const char *how = evp_trace_meta(tr, "sample.sampler");
    if (!how || strncmp(how, "perf_event_open", 15) != 0) {
        evp_trace_close(tr);
        print_message("no perf event for the CPU clock here (%s)\n",
                      how ? how : "no sampler");
        skip();
    }
    const char *n = evp_trace_meta(tr, "sample.throttled");
    const char *ns = evp_trace_meta(tr, "sample.throttled_max_ns");
    assert_true((n == NULL) == (ns == NULL));
    *throttled = n ? strtoull(n, NULL, 10) : 0;
    *max_ns = ns ? strtoull(ns, NULL, 10) : 0;
    *missed = strtoull(evp_trace_meta(tr, "sample.missed"), NULL, 10);
    evp_trace_close(tr);
}

/* A thread at RATE_HZ whose handler costs HANDLER_NS: throttled once or
 * twice, to two or four times its period, or a third time on a machine
 * whose host took the CPU from it while it kept up (eight times). */
static void expect_doubled(unsigned rate_hz, uint64_t handler_ns,
                           const char *name)
{
    uint64_t n, max_ns, missed, period = 1000000000u / rate_hz;
    throttle_case(rate_hz, handler_ns, 0, 300000000u, name, &n, &max_ns,
                  &missed);
    assert_true(n >= 1 && n <= 3);
    assert_true(max_ns == 2 * period || max_ns == 4 * period ||
                max_ns == 8 * period);
}

/* 10 kHz (100 us) with a 150 us handler: the signals' cost loses
 * periods, and the period is doubled until the thread keeps up (200 us,
 * perhaps 400). */
static void test_throttle_fast_rate(void **state)
{
    (void)state;
    expect_doubled(10000, 150000, "throttle-fast.evp");
}

/* 1 kHz with a 1.5 ms handler: past the periods raised for the kernel's
 * cost, but the handlers take most of the thread's time (unthrottled,
 * it would run nothing but them): doubled to 2 ms, perhaps 4. */
static void test_throttle_costly_handler(void **state)
{
    (void)state;
    expect_doubled(1000, 1500000, "throttle-costly.evp");
}

/* 1 kHz, a cheap handler, the signal blocked 3 ms of every 4 while the
 * thread spins: the first period of a block leaves its signal pending
 * and the next two fold into it, so that of every four periods two have
 * a signal (the pending one, at the unblock, and the unblocked period's)
 * and two are missed: 150 of some 300, measured 149-151 (the bound was
 * once 150 itself, and failed one run in eight).  The writer finds the
 * signal unblocked at some of its looks, and the loss is not the
 * signals' cost: never throttled, the lost periods missed (in the
 * weights). */
static void test_throttle_cheap_signals_lost(void **state)
{
    (void)state;
    uint64_t n, max_ns, missed;
    throttle_case(1000, 0, 3000000u, 300000000u, "throttle-lost.evp", &n,
                  &max_ns, &missed);
    print_message("periods missed: %llu of some 300\n",
                  (unsigned long long)missed);
    assert_int_equal(n, 0);
    assert_int_equal(max_ns, 0);
    assert_true(missed >= 100 && missed <= 225);
}

static void test_blocked_signal_weight(void **state)
{
    (void)state;
    blocked_signal_weight(0);
}

static void test_blocked_signal_weight_cpu(void **state)
{
    (void)state;
    blocked_signal_weight(1);
}

/* EVALPROF_ZSTD: STACKS and SAMPLES chunks compressed as EVENTS chunks
 * are, and read back the same. */
static void test_zstd_chunks(void **state)
{
    (void)state;
    char path[128];
    setenv("EVALPROF_ZSTD", "3", 1);
    open_session("zstd.evp", path, sizeof path);
    unsetenv("EVALPROF_ZSTD");
    start_blocked(0);
    key_funcs();
    uint32_t keys[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (unsigned i = 0; i < 3000; i++)
        assert_int_equal(evp_rec_sample_put(100 + 7 * i, 0, i % 50, 1,
                                            keys + i % 8, 8 - i % 8),
                         0);
    end_session();
    struct sc_trace t;
    read_samples(path, &t);
    assert_true(t.compressed >= 1); /* the samples (a small table stays raw) */
    assert_int_equal(t.nsamples, 3000);
    for (unsigned i = 0; i < 3000; i++) {
        assert_int_equal(t.samples[i].s.ts, 100 + 7 * i);
        assert_int_equal(t.samples[i].s.unit, i % 50);
        assert_int_equal(sc_depth(&t, &t.samples[i]), 8 - i % 8);
    }
    sc_free(&t);
}

static void test_config_errors(void **state)
{
    (void)state;
    struct evp_rec_sample_config sc = {.on_sample = on_sample_count};
    assert_int_equal(evp_rec_sampler_start(&sc), -ENOTCONN);
    assert_int_equal(evp_rec_sample_thread_start(NULL), -ENOTCONN);
    assert_int_equal(evp_rec_sample_thread_gil(&sc, sizeof sc), -ENOTCONN);
    uint32_t k = 1;
    assert_int_equal(evp_rec_sample_put(1, 0, 0, 1, &k, 1), -ENOTCONN);
    char path[128];
    open_session("config.evp", path, sizeof path);
    struct evp_rec_sample_config bad = sc;
    bad.on_sample = NULL;
    assert_int_equal(evp_rec_sampler_start(&bad), -EINVAL);
    bad = sc;
    bad.rate_hz = EVP_SAMPLE_RATE_MAX + 1;
    assert_int_equal(evp_rec_sampler_start(&bad), -EINVAL);
    bad = sc;
    bad.signo = SIGKILL;
    assert_int_equal(evp_rec_sampler_start(&bad), -EINVAL);
    bad = sc;
    bad.max_depth = EVP_SAMPLE_DEPTH_LIMIT + 1;
    assert_int_equal(evp_rec_sampler_start(&bad), -EINVAL);
    assert_int_equal(evp_rec_sampler_start(NULL), -EINVAL);
    assert_int_equal(evp_rec_sample_thread_start(NULL), -ENOTCONN);

    struct sigaction before, after;
    sigaction(SIGRTMIN + 4, NULL, &before);
    sc.rate_hz = 250;
    assert_int_equal(evp_rec_sampler_start(&sc), 0);
    assert_int_equal(evp_rec_sampler_start(&sc), -EBUSY);
    assert_int_equal(evp_rec_sample_thread_start("main"), 0);
    assert_int_equal(evp_rec_sample_thread_start("main"), 0); /* no-op */
    assert_int_equal(evp_rec_sample_func(0, "z", 1, "", 0, 0, NULL, 0, 0),
                     -EINVAL);
    evp_rec_sampler_stop();
    /* stopped: the thread's ring takes nothing, the disposition is back */
    assert_int_equal(evp_rec_sample_put(1, 0, 0, 1, &k, 1), -ENOTCONN);
    sigaction(SIGRTMIN + 4, NULL, &after);
    assert_ptr_equal((void *)after.sa_handler, (void *)before.sa_handler);
    evp_rec_sampler_stop(); /* twice: nothing */
    assert_int_equal(evp_rec_close(), 0);

    int warnings;
    struct evp_trace *tr = open_trace(path, &warnings);
    assert_string_equal(evp_trace_meta(tr, "sample.rate_hz"), "250");
    assert_string_equal(evp_trace_meta(tr, "sample.period_ns"), "4000000");
    assert_string_equal(evp_trace_meta(tr, "sample.clock"), "wall");
    assert_string_equal(evp_trace_meta(tr, "sample.signal"), "SIGRTMIN+4");
    /* the wall clock: the sampler thread, a CPU budget of a tenth of a
     * period (at least 100 us) */
    assert_non_null(evp_trace_meta(tr, "sample.sampler"));
    assert_true(strncmp(evp_trace_meta(tr, "sample.sampler"),
                        "sampler thread:", 15) == 0);
    assert_string_equal(evp_trace_meta(tr, "sample.cpu_budget_ns"), "400000");
    assert_string_equal(evp_trace_meta(tr, "sample.max_depth"), "512");
    assert_string_equal(evp_trace_meta(tr, "sample.ring_kb"), "2048");
    assert_non_null(evp_trace_meta(tr, "sample.missed"));
    assert_int_equal(evp_trace_nstreams(tr), 1);
    evp_trace_close(tr);
}

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What a put of a 30-frame stack costs, as the handler pays it (printed,
 * never checked: a figure, not a pass or fail). */
static void test_put_cost(void **state)
{
    (void)state;
    char path[128];
    open_session("cost.evp", path, sizeof path);
    start_blocked(0);
    uint32_t keys[30];
    for (uint32_t i = 0; i < 30; i++) {
        keys[i] = i + 1;
        assert_int_equal(evp_rec_sample_func(i + 1, "frame", 5, "cost.py", 7, i,
                                             NULL, 0, EVP_LT_NONE),
                         0);
    }
    enum { N = 8000 }; /* 8000 x 152 bytes fit a 2 MiB ring */
    double best = 1e9;
    for (int round = 0; round < 7; round++) {
        uint64_t t0 = mono();
        for (int i = 0; i < N; i++)
            assert_int_equal(evp_rec_sample_put((uint64_t)i, 0, 3, 1, keys, 30),
                             0);
        double ns = (double)(mono() - t0) / N;
        best = ns < best ? ns : best;
        assert_int_equal(evp_rec_flush(), 0);
    }
    printf("sample put, 30-frame stack: %.1f ns (best of 7 rounds of %d)\n",
           best, N);
    end_session();
}

#if defined(__x86_64__) && defined(__linux__)
/* A ucontext whose thread stood at IP, with RAX and RDI. */
static uint32_t blocked_at(const unsigned char *ip, long ax, uintptr_t di)
{
    ucontext_t uc;
    memset(&uc, 0, sizeof uc);
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)ip;
    uc.uc_mcontext.gregs[REG_RAX] = (greg_t)ax;
    uc.uc_mcontext.gregs[REG_RDI] = (greg_t)di;
    return evp_rec_sample_blocked(&uc);
}

/* The registers say where a thread without the GIL was: blocked taking
 * it (a futex on a word of the lock the thread registered), in another
 * call, or in neither. */
static void test_blocked_registers(void **state)
{
    (void)state;
    static unsigned char page[8192] __attribute__((aligned(4096)));
    static const unsigned char syscall_insn[2] = {0x0f, 0x05};
    static long gil[8];
    uintptr_t in = (uintptr_t)&gil[3], out = (uintptr_t)&gil[8];
    unsigned char *code = page + 100;
    memcpy(code, syscall_insn, 2);
    /* not sampled: no range registered, any call is another call */
    assert_int_equal(blocked_at(code, SYS_futex, in), EVP_SAMPLE_SYSCALL);
    char path[128];
    open_session("blocked-regs.evp", path, sizeof path);
    start_blocked(0);
    /* sampled, no range registered yet */
    assert_int_equal(blocked_at(code + 2, -EINTR, in), EVP_SAMPLE_SYSCALL);
    assert_int_equal(evp_rec_sample_thread_gil(gil, sizeof gil), 0);
    /* past the instruction (returning -EINTR, or woken): any call */
    assert_int_equal(blocked_at(code + 2, -EINTR, in), EVP_SAMPLE_GIL_WAIT);
    assert_int_equal(blocked_at(code + 2, 0, in), EVP_SAMPLE_GIL_WAIT);
    assert_int_equal(blocked_at(code + 2, -EINTR, (uintptr_t)gil),
                     EVP_SAMPLE_GIL_WAIT);
    assert_int_equal(blocked_at(code + 2, -EINTR, out), EVP_SAMPLE_SYSCALL);
    assert_int_equal(blocked_at(code + 2, -EINTR, 1), EVP_SAMPLE_SYSCALL);
    /* set back onto it to restart: RAX is the call's number */
    assert_int_equal(blocked_at(code, SYS_futex, in), EVP_SAMPLE_GIL_WAIT);
    assert_int_equal(blocked_at(code, SYS_read, in), EVP_SAMPLE_SYSCALL);
    /* not at a system call */
    assert_int_equal(blocked_at(code + 1, -EINTR, in), 0);
    assert_int_equal(blocked_at(code + 10, SYS_futex, in), 0);
    assert_int_equal(evp_rec_sample_blocked(NULL), 0);
    /* the bytes read stay on IP's own page: an instruction split across
     * pages is not looked at */
    memcpy(page + 4095, syscall_insn, 2);
    assert_int_equal(blocked_at(page + 4095, SYS_futex, in), 0);
    assert_int_equal(blocked_at(page + 4097, SYS_futex, in), 0);
    /* a range registered again replaces the first; NULL clears it */
    assert_int_equal(evp_rec_sample_thread_gil(&gil[4], 2 * sizeof(long)), 0);
    assert_int_equal(blocked_at(code, SYS_futex, in), EVP_SAMPLE_SYSCALL);
    assert_int_equal(blocked_at(code, SYS_futex, (uintptr_t)&gil[5]),
                     EVP_SAMPLE_GIL_WAIT);
    assert_int_equal(blocked_at(code, SYS_futex, (uintptr_t)&gil[6]),
                     EVP_SAMPLE_SYSCALL);
    assert_int_equal(evp_rec_sample_thread_gil(NULL, sizeof gil), 0);
    assert_int_equal(blocked_at(code, SYS_futex, (uintptr_t)&gil[5]),
                     EVP_SAMPLE_SYSCALL);
    /* a thread stopped: its range is no longer read */
    assert_int_equal(evp_rec_sample_thread_gil(gil, sizeof gil), 0);
    evp_rec_sample_thread_stop();
    assert_int_equal(blocked_at(code, SYS_futex, in), EVP_SAMPLE_SYSCALL);
    assert_int_equal(evp_rec_close(), 0);
    unblock();
}
#else
static void test_blocked_registers(void **state)
{
    (void)state;
    skip();
}
#endif

static void other_segv(int sig)
{
    (void)sig;
}

/*
 * The walks' fault guard (recorder.h): a read of memory that is not
 * there, under an armed guard, jumps back to the arming frame; a SIGSEGV
 * sent (not a walk's) goes to the disposition that was there before, the
 * default ending the process; a handler the program puts in front is
 * seen, and left in place at removal; alone, removal puts back the one
 * before.  (Under TSan, which runs signal handlers its own way, only the
 * bookkeeping.)
 */
static void test_fault_guard(void **state)
{
    (void)state;
    struct sigaction before, now;
    assert_int_equal(sigaction(SIGSEGV, NULL, &before), 0);
    assert_int_equal(evp_rec_fault_guard_install(), 0);
    assert_int_equal(evp_rec_fault_guard_install(), 0); /* again: no-op */
    assert_true(evp_rec_fault_guard_ours());
    assert_null(evp_rec_fault_guard_armed());
    if (!EVP_UNDER_TSAN) {
        static volatile int faults;
        evp_jmp_buf jb;
        const char *volatile bad = (const char *)16;
        faults = 0;
        for (int i = 0; i < 3; i++) {
            if (EVP_SETJMP(jb) == 0) {
                evp_rec_fault_guard_arm(&jb);
                volatile char c = *bad;
                (void)c;
                evp_rec_fault_guard_arm(NULL);
                fail_msg("address 16 read without a fault");
            } else {
                faults++;
            }
        }
        assert_int_equal(faults, 3);
        assert_null(evp_rec_fault_guard_armed()); /* the jump disarmed it */
        assert_true(evp_rec_fault_guard_ours());
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            struct rlimit rl = {0, 0};
            setrlimit(RLIMIT_CORE, &rl);
            evp_rec_fault_guard_remove();
            signal(SIGSEGV, SIG_DFL);
            if (evp_rec_fault_guard_install() != 0)
                _exit(3);
            raise(SIGSEGV);
            _exit(0); /* dropped by the guard */
        }
        int ws;
        assert_int_equal(waitpid(pid, &ws, 0), pid);
        assert_true(WIFSIGNALED(ws));
        assert_int_equal(WTERMSIG(ws), SIGSEGV);
    }
    struct sigaction other;
    memset(&other, 0, sizeof other);
    other.sa_handler = other_segv;
    sigemptyset(&other.sa_mask);
    assert_int_equal(sigaction(SIGSEGV, &other, NULL), 0);
    assert_false(evp_rec_fault_guard_ours());
    assert_int_equal(evp_rec_fault_guard_remove(), 0);
    assert_int_equal(sigaction(SIGSEGV, NULL, &now), 0);
    assert_true(now.sa_handler == other_segv);
    assert_int_equal(sigaction(SIGSEGV, &before, NULL), 0);
    assert_int_equal(evp_rec_fault_guard_install(), 0);
    assert_int_equal(evp_rec_fault_guard_remove(), 1);
    assert_false(evp_rec_fault_guard_ours());
    assert_int_equal(sigaction(SIGSEGV, NULL, &now), 0);
    assert_true((now.sa_flags & SA_SIGINFO) == (before.sa_flags & SA_SIGINFO));
    assert_true(now.sa_handler == before.sa_handler);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lt_forms),
        cmocka_unit_test(test_lt_malformed),
        cmocka_unit_test(test_lt_cpython),
        cmocka_unit_test(test_ring_fill_drop_wrap),
        cmocka_unit_test(test_ring_lost_func),
        cmocka_unit_test(test_lines_meta),
        cmocka_unit_test(test_one_stream),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_fork_child_forgets_first),
        cmocka_unit_test(test_writer_pace),
        cmocka_unit_test(test_writer_pace_populate),
        cmocka_unit_test(test_writer_pace_events),
        cmocka_unit_test(test_blocked_signal_weight),
        cmocka_unit_test(test_blocked_signal_weight_cpu),
        cmocka_unit_test(test_unsampled_periods),
        cmocka_unit_test(test_peek_sampler),
        cmocka_unit_test(test_peek_signal_fallback),
        cmocka_unit_test(test_throttle_fast_rate),
        cmocka_unit_test(test_throttle_costly_handler),
        cmocka_unit_test(test_throttle_cheap_signals_lost),
        cmocka_unit_test(test_zstd_chunks),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_put_cost),
        cmocka_unit_test(test_blocked_registers),
        cmocka_unit_test(test_lines_text),
        cmocka_unit_test(test_fault_guard),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
