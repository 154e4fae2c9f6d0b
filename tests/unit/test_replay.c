/*
 * Unit tests of the replay engine and the text format: elapsed times,
 * depth and function attribution, inclusive/self time with recursion,
 * "# log written" exclusion, compensation, unmatched and unclosed frames,
 * lossless round trips text -> evp -> text and evp -> text -> evp, and
 * samples as records of the replay: each stream's samples after its
 * events, in time order, their stacks resolved from the stack table
 * (damaged chains cut and flagged), the stream filter applied, and none
 * decoded for a view without a samples callback.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch.h"

#include "evalprof/recorder.h"
#include "evalprof/replay.h"
#include "evalprof/trace.h"

static void warn_ignore(void *ctx, const char *path, const char *msg)
{
    (void)path;
    (void)msg;
    ++*(int *)ctx;
}

static int nwarn;

static struct evp_trace *open_text(const char *name, const char *text)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    struct evp_open_opts o = {.warn = warn_ignore, .warn_ctx = &nwarn};
    struct evp_trace *t;
    char err[256];
    nwarn = 0;
    if (evp_trace_open(path, &o, &t, err, sizeof err) < 0)
        fail_msg("%s: %s", name, err);
    return t;
}

static struct evp_trace *open_path(const char *path)
{
    struct evp_open_opts o = {.warn = warn_ignore, .warn_ctx = &nwarn};
    struct evp_trace *t;
    char err[256];
    nwarn = 0;
    if (evp_trace_open(path, &o, &t, err, sizeof err) < 0)
        fail_msg("%s: %s", path, err);
    return t;
}

struct collect {
    struct evp_event ev[256];
    size_t n;
    unsigned streams;
};

static int col_begin(void *ctx, const struct evp_stream *s)
{
    (void)s;
    ((struct collect *)ctx)->streams++;
    return 0;
}

static int col_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct collect *c = ctx;
    for (size_t i = 0; i < n && c->n < 256; i++)
        c->ev[c->n++] = ev[i];
    return 0;
}

static void replay(struct evp_trace *t, struct collect *c,
                   struct evp_replay_opts *o)
{
    static const struct evp_replay_ops ops = {col_begin, col_events, NULL,
                                              NULL};
    memset(c, 0, sizeof *c);
    assert_int_equal(evp_replay(t, o, &ops, c), 0);
}

static const char nested[] = "# python: /usr/bin/python3\n"
                             "# argv: python3 prog.py\n"
                             "# start time: 1700000000 s (since epoch)\n"
                             "# start clock: 100.000000000 s (on clock)\n"
                             "# end clock: 100.000010000 s (on clock)\n"
                             "\n"
                             "100.000000000 0\n"
                             "# func: f\n"
                             "100.000001000 3\n"     /* enter f          */
                             "100.000001100 5\n"     /* loop enter       */
                             "100.000001200 9 100\n" /* op LOAD_CONST    */
                             "# func: f\n"
                             "100.000001500 3\n" /* enter f (again)  */
                             "# func: g\n"
                             "100.000002000 3\n" /* enter g          */
                             "100.000002100 9 124\n"
                             "# func: g\n"
                             "100.000003000 4\n" /* exit g  (1000)   */
                             "# func: f\n"
                             "100.000003500 4\n" /* exit inner f     */
                             "100.000003600 2\n" /* runtime other    */
                             "# func: f\n"
                             "100.000005000 4\n" /* exit outer f     */
                             "100.000006000 1\n";

static void test_depth_and_elapsed(void **state)
{
    (void)state;
    struct evp_trace *t = open_text("nested.trace", nested);
    assert_int_equal(nwarn, 0);
    struct collect c;
    struct evp_replay_opts o = {.stream = -1};
    replay(t, &c, &o);
    assert_int_equal(c.n, 12);
    static const int depth[] = {0, 0, 1, 1, 1, 2, 3, 2, 1, 1, 0, 0};
    static const uint64_t elapsed[] = {1000, 100, 100, 300,  500,  100,
                                       900,  500, 100, 1400, 1000, 0};
    for (size_t i = 0; i < c.n; i++) {
        assert_int_equal(c.ev[i].depth, depth[i]);
        assert_int_equal(c.ev[i].elapsed, elapsed[i]);
    }
    uint32_t f = c.ev[1].func, g = c.ev[5].func;
    assert_string_equal(evp_trace_func(t, f)->name, "f");
    assert_string_equal(evp_trace_func(t, g)->name, "g");
    assert_int_equal(c.ev[2].func, f); /* loop enter belongs to f */
    assert_int_equal(c.ev[6].func, g); /* op inside g */
    assert_int_equal(c.ev[6].parent, f);
    assert_int_equal(c.ev[5].parent, f); /* g's caller: the inner f */
    assert_int_equal(c.ev[4].parent, f); /* inner f's caller: outer f */
    assert_true(c.ev[11].flags & EVP_EVF_LAST);
    assert_string_equal(evp_trace_opname(t, 100), "LOAD_CONST");
    assert_int_equal(evp_trace_end_ns(t), 100000010000u);
    evp_trace_close(t);
}

static void test_function_times(void **state)
{
    (void)state;
    struct evp_trace *t = open_text("nested2.trace", nested);
    uint32_t n = evp_trace_nfuncs(t);
    assert_int_equal(n, 2);
    struct evp_func_stats fs[3] = {{0}};
    struct evp_replay_stats st;
    struct evp_replay_opts o = {.stream = -1, .func_stats = fs, .stats = &st};
    struct collect c;
    replay(t, &c, &o);
    /* f (id 1): outer call 1.0 -> 5.0 µs = 4000 ns inclusive, counted once
     * despite the recursive inner call (1.5 -> 3.5).  g: 2.0 -> 3.0. */
    assert_int_equal(fs[1].calls, 2);
    assert_int_equal(fs[1].incl_ns, 4000);
    assert_int_equal(fs[2].calls, 1);
    assert_int_equal(fs[2].incl_ns, 1000);
    assert_int_equal(fs[2].self_ns, 1000);
    /* self of f: inner 2000 - 1000 (g) + outer 4000 - 2000 (inner f) */
    assert_int_equal(fs[1].self_ns, 1000 + 2000);
    assert_int_equal(st.unmatched, 0);
    assert_int_equal(st.unclosed, 0);
    assert_int_equal(st.max_depth, 3);
    assert_int_equal(st.events, 12);
    evp_trace_close(t);
}

static void test_log_written_and_compensation(void **state)
{
    (void)state;
    struct evp_trace *t =
        open_text("log.trace", "# meta: event_cost.ticks=10\n"
                               "# start clock: 1.000000000 s (on clock)\n"
                               "\n"
                               "1.000000000 8\n"
                               "# log written: 0.000000300\n"
                               "1.000001000 9 1 5\n"
                               "1.000001100 8\n");
    assert_int_equal(nwarn, 0);
    assert_true(evp_trace_info(t)->has_oparg);
    struct collect c;
    struct evp_replay_stats st;
    struct evp_replay_opts o = {.stream = -1, .stats = &st};
    replay(t, &c, &o);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.ev[0].elapsed, 700); /* 1000 minus the log write */
    assert_true(c.ev[0].flags & EVP_EVF_LOG);
    assert_int_equal(c.ev[1].elapsed, 100);
    assert_int_equal(c.ev[1].arg, 5);
    assert_int_equal(st.log_ns, 300);
    o.compensate = 1;
    replay(t, &c, &o);
    assert_int_equal(c.ev[0].elapsed, 690);
    assert_int_equal(c.ev[1].elapsed, 90);
    assert_int_equal(c.ev[2].elapsed, 0);
    /* Writers see the annotation as a record of its own. */
    o.compensate = 0;
    o.keep_log = 1;
    replay(t, &c, &o);
    assert_int_equal(c.n, 4);
    assert_int_equal(c.ev[1].kind, EVP_EV_LOG_WRITTEN);
    assert_int_equal(c.ev[1].arg, 300);
    evp_trace_close(t);
}

/* The compensated clock runs slower by what compensation took off, so that
 * a frame drawn from it is as long as its inclusive time; the recorder's
 * own time is a callee's: in the inclusive time, not in the self time. */
static void test_compensated_clock_and_recorder_time(void **state)
{
    (void)state;
    struct evp_trace *t =
        open_text("clock.trace", "# meta: event_cost.ticks=10\n"
                                 "# function: 1\t1\ta.py\tf\n"
                                 "\n"
                                 "1.000000000 3 1\n"
                                 "1.000000100 9 1\n"
                                 "1.000000200 14\n"
                                 "1.000000700 9 1\n"
                                 "1.000001000 4 1\n"
                                 "1.000001100 1\n");
    struct evp_func_stats fs[2] = {{0}};
    struct evp_replay_stats st;
    struct evp_replay_opts o = {
        .stream = -1, .func_stats = fs, .stats = &st, .compensate = 1};
    struct collect c;
    replay(t, &c, &o);
    assert_int_equal(c.n, 6);
    for (size_t i = 0; i + 1 < c.n; i++)
        assert_int_equal(c.ev[i].at + c.ev[i].elapsed, c.ev[i + 1].at);
    /* f: 1000 ns less four events' 10 ns; the recorder's 490 ns of it
     * are not its self time */
    assert_int_equal(c.ev[4].at - c.ev[0].at, 960);
    assert_int_equal(fs[1].incl_ns, 960);
    assert_int_equal(fs[1].self_ns, 960 - 490);
    assert_int_equal(st.recorder_ns, 490);
    assert_int_equal(st.recorder_events, 1);
    /* Without compensation the clock is the trace's, the policy the same. */
    memset(fs, 0, sizeof fs);
    o.compensate = 0;
    replay(t, &c, &o);
    assert_int_equal(c.ev[4].at, c.ev[4].ts);
    assert_int_equal(fs[1].incl_ns, 1000);
    assert_int_equal(fs[1].self_ns, 500);
    evp_trace_close(t);
}

static void test_unmatched_and_unclosed(void **state)
{
    (void)state;
    struct evp_trace *t = open_text("partial.trace", "5.0 8\n"
                                                     "# func: gone\n"
                                                     "5.1 4\n"
                                                     "# func: h\n"
                                                     "5.2 3\n"
                                                     "5.3 8\n");
    struct evp_func_stats fs[3] = {{0}};
    struct evp_replay_stats st;
    struct evp_replay_opts o = {.stream = -1, .func_stats = fs, .stats = &st};
    struct collect c;
    replay(t, &c, &o);
    assert_int_equal(c.n, 4);
    assert_true(c.ev[1].flags & EVP_EVF_UNMATCHED);
    assert_int_equal(c.ev[1].depth, 0);
    assert_int_equal(c.ev[3].depth, 1);
    assert_int_equal(st.unmatched, 1);
    assert_int_equal(st.unclosed, 1);
    /* h is closed at the last event: 5.2 -> 5.3 s */
    assert_int_equal(fs[2].incl_ns, 100000000);
    evp_trace_close(t);
}

static void test_malformed_text_lines(void **state)
{
    (void)state;
    struct evp_trace *t = open_text("bad.trace", "1.0 8\n"
                                                 "not an event\n"
                                                 "1.1 99999999\n"
                                                 "1.2 9 100 5 7\n"
                                                 "1.3\n"
                                                 "1.4 8\r\n");
    /* Four bad lines, each a warning, plus the summary warning. */
    assert_int_equal(nwarn, 5);
    assert_int_equal(evp_trace_nwarnings(t), 5);
    assert_non_null(strstr(evp_trace_warning(t, 0), "line 2"));
    struct collect c;
    struct evp_replay_opts o = {.stream = -1};
    replay(t, &c, &o);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.ev[1].ts, 1400000000u);
    evp_trace_close(t);
}

static const char extended[] = "# python: /opt/py/bin/python3.13\n"
                               "# argv: python3.13 -c pass\n"
                               "# start time: 1700000000 s (since epoch)\n"
                               "# start clock: 50.000000000 s (on clock)\n"
                               "# end clock: 50.000100000 s (on clock)\n"
                               "# meta: python.version=3.13.5\n"
                               "# opcode: 1 POP_TOP 1\n"
                               "# opcode: 200 LOAD_ATTR_SLOT 82\n"
                               "# opcode: 82 LOAD_ATTR 82\n"
                               "# function: 1\t10\t/a b/m.py\t<module>\n"
                               "# function: 2\t20\t/a b/m.py\tweird\\nname\n"
                               "\n"
                               "# thread: 0 111 MainThread\n"
                               "50.000000001 0\n"
                               "# func: <module>\n"
                               "50.000000002 3 1\n"
                               "50.000000003 9 200 70000\n"
                               "# log written: 0.000000001\n"
                               "50.000000005 14 4096\n"
                               "50.000000006 777 3 9\n"
                               "# func: weird\\nname\n"
                               "50.000000007 15 2\n"
                               "# func: weird\\nname\n"
                               "50.000000008 16 2\n"
                               "# func: <module>\n"
                               "50.000000009 4 1\n"
                               "# thread: 1 222 Thread-1\n"
                               "50.000000004 8\n"
                               "50.000000010 1\n";

static void same_events(struct evp_trace *a, struct evp_trace *b)
{
    struct collect ca, cb;
    struct evp_replay_opts o = {.stream = -1, .keep_log = 1};
    replay(a, &ca, &o);
    replay(b, &cb, &o);
    assert_int_equal(ca.n, cb.n);
    assert_int_equal(ca.streams, cb.streams);
    for (size_t i = 0; i < ca.n; i++) {
        assert_int_equal(ca.ev[i].ts, cb.ev[i].ts);
        assert_int_equal(ca.ev[i].kind, cb.ev[i].kind);
        assert_int_equal(ca.ev[i].arg, cb.ev[i].arg);
        assert_int_equal(ca.ev[i].aux, cb.ev[i].aux);
        assert_int_equal(ca.ev[i].depth, cb.ev[i].depth);
        const struct evp_func *fa = evp_trace_func(a, ca.ev[i].func);
        const struct evp_func *fb = evp_trace_func(b, cb.ev[i].func);
        assert_true((fa == NULL) == (fb == NULL));
        if (fa) {
            assert_string_equal(fa->name, fb->name);
            assert_string_equal(fa->file, fb->file);
            assert_int_equal(fa->line, fb->line);
        }
    }
    for (size_t s = 0; s < evp_trace_nstreams(a); s++) {
        assert_string_equal(evp_trace_stream(a, s)->name,
                            evp_trace_stream(b, s)->name);
        assert_int_equal(evp_trace_stream(a, s)->tid,
                         evp_trace_stream(b, s)->tid);
    }
    const struct evp_trace_info *ia = evp_trace_info(a),
                                *ib = evp_trace_info(b);
    assert_string_equal(ia->executable, ib->executable);
    assert_string_equal(ia->argv, ib->argv);
    assert_string_equal(ia->python_version, ib->python_version);
    assert_int_equal(ia->start_ns, ib->start_ns);
    assert_int_equal(ia->end_ns, ib->end_ns);
    assert_int_equal(ia->start_wall_ns, ib->start_wall_ns);
    assert_int_equal(ia->has_oparg, ib->has_oparg);
    assert_string_equal(evp_trace_opname(a, 200), evp_trace_opname(b, 200));
    assert_int_equal(evp_trace_opbase(b, 200), 82);
}

static void test_round_trips(void **state)
{
    (void)state;
    struct evp_trace *a = open_text("ext.trace", extended);
    assert_int_equal(nwarn, 0);
    assert_int_equal(evp_trace_nstreams(a), 2);
    assert_string_equal(evp_trace_func(a, 2)->name, "weird\nname");
    char evp[160], txt[160], evp2[160], err[256];
    snprintf(evp, sizeof evp, "%s/ext.evp", tmpdir);
    snprintf(txt, sizeof txt, "%s/ext2.trace", tmpdir);
    snprintf(evp2, sizeof evp2, "%s/ext2.evp", tmpdir);

    /* text -> evp (zstd) -> text -> evp */
    assert_int_equal(evp_trace_write_evp(a, evp, 3, err, sizeof err), 0);
    struct evp_trace *b = open_path(evp);
    assert_int_equal(nwarn, 0);
    assert_false(evp_trace_info(b)->text);
    same_events(a, b);
    assert_int_equal(evp_trace_write_text(b, txt, err, sizeof err), 0);
    struct evp_trace *c = open_path(txt);
    assert_int_equal(nwarn, 0);
    same_events(a, c);
    assert_int_equal(evp_trace_write_evp(c, evp2, 0, err, sizeof err), 0);
    struct evp_trace *d = open_path(evp2);
    same_events(a, d);
    evp_trace_close(a);
    evp_trace_close(b);
    evp_trace_close(c);
    evp_trace_close(d);
}

static void test_builtin_opcode_tables(void **state)
{
    (void)state;
    char path[160], err[256];
    snprintf(path, sizeof path, "%s/ops.trace", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("1.0 9 100\n", f);
    fclose(f);
    struct evp_trace *t;
    struct evp_open_opts o = {.warn = warn_ignore, .warn_ctx = &nwarn};
    assert_int_equal(evp_trace_open(path, &o, &t, err, sizeof err), 0);
    assert_string_equal(evp_trace_opname(t, 100), "LOAD_CONST"); /* 3.10 */
    evp_trace_close(t);
    o.python = "3.13";
    assert_int_equal(evp_trace_open(path, &o, &t, err, sizeof err), 0);
    assert_string_equal(evp_trace_opname(t, 83), "LOAD_CONST");
    assert_string_equal(evp_trace_opname(t, 193), "LOAD_ATTR_INSTANCE_VALUE");
    assert_int_equal(evp_trace_opbase(t, 193), 82);
    assert_string_equal(evp_trace_opname(t, 82), "LOAD_ATTR");
    evp_trace_close(t);
    o.python = "2.7";
    assert_true(evp_trace_open(path, &o, &t, err, sizeof err) < 0);
    assert_non_null(strstr(err, "no built-in opcode table for Python 2.7"));
}

/* ---- the frames handed to views ---------------------------------------- */

/* A view that checks opts->frames against a stack of its own. */
struct frames_check {
    struct evp_replay_frames frames;
    uint32_t model[64];
    int32_t depth;
    size_t events, pops, bad, streams_ended;
};

static int fc_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct frames_check *c = ctx;
    for (size_t i = 0; i < n; i++, c->events++) {
        const struct evp_event *e = &ev[i];
        if (e->depth < 0 || e->depth >= 64 || c->depth < 0 || c->depth >= 64) {
            c->bad++; /* (the trace stays below 64 frames) */
            return 0;
        }
        if (evp_kind_pops(e->kind) && !(e->flags & EVP_EVF_UNMATCHED)) {
            c->depth--;
            c->pops++;
            /* the frame it closed, whatever the exit names */
            c->bad += c->frames.func[c->depth] != c->model[c->depth];
        }
        c->bad += e->depth != c->depth;
        for (int32_t d = 0; d < c->depth && d < e->depth; d++)
            c->bad += c->frames.func[d] != c->model[d];
        if (evp_kind_pushes(e->kind) && c->depth < 63) {
            c->model[c->depth++] = e->func;
            c->bad += c->frames.func[e->depth] != e->func;
        }
    }
    c->bad += n && c->frames.depth != c->depth;
    return 0;
}

static int fc_end(void *ctx, const struct evp_stream *s)
{
    struct frames_check *c = ctx;
    (void)s;
    c->bad += c->frames.depth != c->depth;
    for (int32_t d = 0; d < c->depth; d++)
        c->bad += c->frames.func[d] != c->model[d];
    c->streams_ended++;
    return 0;
}

static void test_frames_seen_by_views(void **state)
{
    (void)state;
    /* Nesting up and down across many batches of 512, with exits that
     * name another function than the frame they close and exits with
     * nothing open: each event's frames must be the ones open at it,
     * not those of the batch's end. */
    char path[160];
    scratch_path(path, sizeof path, "frames.trace");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    uint64_t x = 12345, ns = 0;
    int depth = 0;
    for (int i = 0; i < 20000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        unsigned r = (unsigned)(x >> 33) % 16;
        ns += 1 + r;
        if (r < 5 && depth < 60) {
            fprintf(f, "# func: f%u\n%u.%09u 3\n", r,
                    1 + (unsigned)(ns / 1000000000),
                    (unsigned)(ns % 1000000000));
            depth++;
        } else if (r < 10) {
            fprintf(f, "# func: f%u\n%u.%09u 4\n", r % 3,
                    1 + (unsigned)(ns / 1000000000),
                    (unsigned)(ns % 1000000000));
            depth -= depth > 0;
        } else {
            fprintf(f, "%u.%09u 9 100\n", 1 + (unsigned)(ns / 1000000000),
                    (unsigned)(ns % 1000000000));
        }
    }
    fclose(f);
    struct evp_trace *t = open_path(path);
    struct frames_check c;
    memset(&c, 0, sizeof c);
    struct evp_replay_opts o = {.stream = -1, .frames = &c.frames};
    static const struct evp_replay_ops ops = {NULL, fc_events, fc_end, NULL};
    assert_int_equal(evp_replay(t, &o, &ops, &c), 0);
    assert_int_equal(c.events, 20000);
    assert_true(c.pops > 5000);
    assert_int_equal(c.streams_ended, 1);
    assert_int_equal(c.bad, 0);
    evp_trace_close(t);
}

/* Nested calls deeper than the replay follows: counted, not followed. */
struct deep_check {
    struct evp_replay_frames frames;
    int32_t deepest;
    uint32_t deep_func; /* func of the op at the deepest point */
    int32_t end_depth;
    size_t bad;
};

static int dc_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct deep_check *c = ctx;
    for (size_t i = 0; i < n; i++)
        if (ev[i].kind == EVP_EV_OP) {
            c->deepest = ev[i].depth;
            c->deep_func = ev[i].func;
        }
    return 0;
}

static int dc_end(void *ctx, const struct evp_stream *s)
{
    struct deep_check *c = ctx;
    (void)s;
    c->end_depth = c->frames.depth;
    return 0;
}

static void test_nesting_beyond_followed_frames(void **state)
{
    (void)state;
    enum { OVER = 1000, N = EVP_REPLAY_MAX_FRAMES + OVER };
    char path[160];
    scratch_path(path, sizeof path, "deep.evp");
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_ALL,
                                 .flags = EVP_REC_QUIET | EVP_REC_NO_ATEXIT};
    assert_int_equal(evp_rec_open(&cfg), 0);
    uint32_t f = evp_rec_func("f", "x.py", 1);
    uint32_t g = evp_rec_func("g", "x.py", 2);
    uint32_t h = evp_rec_func("h", "x.py", 3);
    evp_rec_thread_attach("main");
    /* f g f g ... followed; h below them */
    for (uint32_t i = 0; i < N; i++)
        evp_rec_event(EVP_EV_ENTER, i >= EVP_REPLAY_MAX_FRAMES ? h
                                    : i % 2                    ? g
                                                               : f);
    evp_rec_op(100, 0);
    for (uint32_t i = 0; i < N - 1; i++)
        evp_rec_event(EVP_EV_EXIT, 0);
    assert_int_equal(evp_rec_close(), 0);

    struct evp_trace *t = open_path(path);
    struct evp_func_stats fs[8];
    memset(fs, 0, sizeof fs);
    struct evp_replay_stats st;
    struct deep_check c;
    memset(&c, 0, sizeof c);
    struct evp_replay_opts o = {
        .stream = -1, .func_stats = fs, .stats = &st, .frames = &c.frames};
    static const struct evp_replay_ops ops = {NULL, dc_events, dc_end, NULL};
    assert_int_equal(evp_replay(t, &o, &ops, &c), 0);
    /* Depth stays right below the followed frames... */
    assert_int_equal(c.deepest, N);
    assert_int_equal(st.max_depth, N);
    assert_int_equal(st.unclosed, 1);
    assert_int_equal(c.end_depth, 1);
    assert_int_equal(fs[h].calls, OVER);
    /* ...but the events there belong to the innermost followed frame,
     * and a warning says how deep the calls went. */
    assert_int_equal(c.deep_func, (EVP_REPLAY_MAX_FRAMES - 1) % 2 ? g : f);
    assert_int_equal(fs[h].incl_ns, 0);
    int warned = 0;
    for (size_t i = 0; i < evp_trace_nwarnings(t); i++)
        warned +=
            strstr(evp_trace_warning(t, i), "nested 1049576 deep") != NULL;
    assert_int_equal(warned, 1);
    evp_trace_close(t);
}

/* ---- samples ------------------------------------------------------------- */

/* A sampled trace written chunk by chunk: functions 1-4, a stack table
 * main <- work <- hot (nodes 1-3) and a node 5 whose caller (9) is
 * missing, and two streams, 7 then 3 in the file. */
static void put_chunk(FILE *f, unsigned type, const uint8_t *p, size_t len)
{
    uint8_t h[EVP_CHUNK_HEADER_SIZE];
    evp_chunk_header(h, type, 0, p, (uint32_t)len);
    assert_int_equal(fwrite(h, 1, sizeof h, f), sizeof h);
    assert_int_equal(fwrite(p, 1, len, f), len);
}

static void put_samples(FILE *f, uint32_t stream,
                        const struct evp_sample_rec *s, size_t n)
{
    uint8_t buf[1024];
    struct evp_events_prefix pf = {.stream = stream};
    size_t len = evp_samples_encode(buf, &pf, s, n, NULL);
    put_chunk(f, EVP_CHUNK_SAMPLES, buf, len);
}

static const char *write_sampled(void)
{
    static char path[160];
    snprintf(path, sizeof path, "%s/sampled.evp", tmpdir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint8_t buf[1024];
    evp_file_header(buf);
    assert_int_equal(fwrite(buf, 1, EVP_FILE_HEADER_SIZE, f),
                     EVP_FILE_HEADER_SIZE);
    static const char meta[] = "clock\0monotonic\0sample.rate_hz\0001000\0"
                               "sample.clock\0cpu";
    put_chunk(f, EVP_CHUNK_META, (const uint8_t *)meta, sizeof meta);
    static const char *const names[] = {"main", "work", "hot", "orphan"};
    size_t k = evp_varint_put(buf, 4);
    for (uint32_t i = 0; i < 4; i++)
        k += evp_func_entry_put(buf + k, i + 1, names[i], "x.py", i + 1);
    put_chunk(f, EVP_CHUNK_FUNCS, buf, k);
    static const uint32_t nodes[][3] = {
        {1, 0, 1}, {2, 1, 2}, {3, 2, 3}, {5, 9, 4}};
    k = evp_varint_put(buf, 4);
    for (size_t i = 0; i < 4; i++)
        k +=
            evp_stack_entry_put(buf + k, nodes[i][0], nodes[i][1], nodes[i][2]);
    put_chunk(f, EVP_CHUNK_STACKS, buf, k);
    k = evp_thread_put(buf, 7, 70, "seven");
    put_chunk(f, EVP_CHUNK_THREAD, buf, k);
    k = evp_thread_put(buf, 3, 30, "three");
    put_chunk(f, EVP_CHUNK_THREAD, buf, k);
    const struct evp_sample_rec s7[] = {
        {100, 3, 0, 0, 1}, {200, 0, 0, 0, 2}, {300, 5, 0, 0, 1}};
    const struct evp_sample_rec s3[] = {{150, 2, 0, 4, 3}, {250, 42, 0, 0, 1}};
    put_samples(f, 7, s7, 3);
    put_samples(f, 3, s3, 2);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* What a view saw: "B3 150:1,2 250:cut E3 ..." */
struct sampled_seen {
    char log[1024];
    size_t len;
};

static void seen(struct sampled_seen *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void seen(struct sampled_seen *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    c->len +=
        (size_t)vsnprintf(c->log + c->len, sizeof c->log - c->len, fmt, ap);
    va_end(ap);
    assert_true(c->len < sizeof c->log);
}

static int ss_begin(void *ctx, const struct evp_stream *s)
{
    seen(ctx, "B%u ", s->id);
    return 0;
}

static int ss_end(void *ctx, const struct evp_stream *s)
{
    seen(ctx, "E%u ", s->id);
    return 0;
}

static int ss_samples(void *ctx, const struct evp_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        seen(ctx, "%llu:w%u", (unsigned long long)s[i].ts, s[i].weight);
        for (int32_t d = 0; d < s[i].depth; d++)
            seen(ctx, "%c%u", d ? ',' : ':', s[i].func[d]);
        seen(ctx, "%s ", s[i].flags & EVP_SMPF_CUT ? ":cut" : "");
    }
    return 0;
}

static int ss_never(void *ctx, const struct evp_event *ev, size_t n)
{
    (void)ctx;
    (void)ev;
    (void)n;
    fail_msg("a sampled trace has no events");
    return -1;
}

static void test_samples_replayed(void **state)
{
    (void)state;
    struct evp_trace *t = open_path(write_sampled());
    int cut = 0; /* node 5's missing caller (and no end record) */
    for (size_t i = 0; i < evp_trace_nwarnings(t); i++)
        cut += strstr(evp_trace_warning(t, i), "1 nodes name a caller") != 0;
    assert_int_equal(cut, 1);
    assert_int_equal(evp_trace_records(t), EVP_RECORDS_SAMPLES);
    assert_int_equal(evp_trace_info(t)->stack_nodes, 4);

    /* every stream in id order, its samples in time order, their stacks
     * outermost first; node 42 is no node, node 5's chain is cut */
    struct evp_replay_ops ops = {ss_begin, ss_never, ss_end, ss_samples};
    struct evp_replay_stats st;
    struct evp_replay_opts o = {.stream = -1, .stats = &st};
    struct sampled_seen c = {{0}, 0};
    assert_int_equal(evp_replay_reads(&ops),
                     EVP_RECORDS_EVENTS | EVP_RECORDS_SAMPLES);
    assert_int_equal(evp_replay(t, &o, &ops, &c), 0);
    assert_string_equal(c.log, "B3 150:w3:1,2 250:w1:cut E3 "
                               "B7 100:w1:1,2,3 200:w2 300:w1:4:cut E7 ");
    assert_int_equal(st.samples, 5);
    assert_int_equal(st.periods, 8);

    /* one stream by index: its samples only */
    o.stream = 1;
    c.len = 0;
    c.log[0] = 0;
    assert_int_equal(evp_replay(t, &o, &ops, &c), 0);
    assert_string_equal(c.log, "B7 100:w1:1,2,3 200:w2 300:w1:4:cut E7 ");

    /* a view of events only is handed no sample */
    ops.samples = NULL;
    o.stream = -1;
    c.len = 0;
    c.log[0] = 0;
    assert_int_equal(evp_replay(t, &o, &ops, &c), 0);
    assert_string_equal(c.log, "B3 E3 B7 E7 ");
    assert_int_equal(st.samples, 0);
    evp_trace_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depth_and_elapsed),
        cmocka_unit_test(test_function_times),
        cmocka_unit_test(test_log_written_and_compensation),
        cmocka_unit_test(test_compensated_clock_and_recorder_time),
        cmocka_unit_test(test_unmatched_and_unclosed),
        cmocka_unit_test(test_malformed_text_lines),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_builtin_opcode_tables),
        cmocka_unit_test(test_frames_seen_by_views),
        cmocka_unit_test(test_nesting_beyond_followed_frames),
        cmocka_unit_test(test_samples_replayed),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
