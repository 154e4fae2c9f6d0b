/*
 * Damage tests of the text-trace reader (cmocka): the discussion's format
 * and evalprof's extension lines, broken in the ways hand-edited, cut or
 * badly copied files are.
 *
 *   - a malformed line: a warning with its line number, every other line
 *     read;
 *   - a trace (exported from a real recorded one, two threads) cut at
 *     every byte: the events read are the intact ones up to the cut, a
 *     cut inside a line is a warning naming that line, and only a file
 *     with no trace line at all fails, with a one-line reason;
 *   - numbers out of range in every field, NUL bytes, megabyte-long
 *     lines, CRLF line ends, a timestamp going backwards, annotations in
 *     odd places.
 *
 * Every trace that opens is also run through every view and both writers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dmg.h"
#include "evalprof/recorder.h"

static char *intact; /* the exported text trace */
static size_t intact_size;
static struct dmg_replay orig;

static int setup(void **state)
{
    (void)state;
    const char *bin = dmg_path("intact.evp"), *txt = dmg_path("intact.trace");
    int rc = dmg_record(bin, 2, 120);
    if (rc < 0) {
        fprintf(stderr, "recording failed: %s\n", strerror(-rc));
        return -1;
    }
    struct evp_trace *t;
    struct dmg_warn w = {0};
    char err[512];
    if (dmg_open(bin, 0, &t, err, sizeof err, &w) < 0 ||
        evp_trace_write_text(t, txt, err, sizeof err) < 0) {
        fprintf(stderr, "export: %s\n", err);
        return -1;
    }
    evp_trace_close(t);
    long n = dmg_read(txt, (uint8_t **)&intact);
    if (n <= 0)
        return -1;
    intact_size = (size_t)n;
    if (dmg_open(txt, 0, &t, err, sizeof err, &w) < 0 || w.n) {
        fprintf(stderr, "intact text: %s\n", w.n ? w.msg[0] : err);
        return -1;
    }
    dmg_replay_all(t, &orig);
    evp_trace_close(t);
    dmg_warn_free(&w);
    return orig.nstreams == 3 && dmg_total(&orig) > 200 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(intact);
    dmg_replay_free(&orig);
    return 0;
}

/* Write TEXT (LEN bytes, or strlen) to a file and open it. */
#define STR ((size_t)-1) /* length: strlen(text) */

static int open_text(const char *text, size_t len, int format,
                     struct evp_trace **t, char *err, struct dmg_warn *w)
{
    const char *path = dmg_path("case.trace");
    if (dmg_write(path, text, len == STR ? strlen(text) : len) < 0)
        return -1;
    return dmg_open(path, format, t, err, 512, w);
}

/* Open TEXT, which must succeed; fill R. */
static struct evp_trace *must_open(const char *text, size_t len,
                                   struct dmg_warn *w, struct dmg_replay *r)
{
    struct evp_trace *t;
    char err[512];
    if (open_text(text, len, 0, &t, err, w) < 0)
        fail_msg("open failed: %s", err);
    dmg_replay_all(t, r);
    assert_int_equal(r->rc, 0);
    assert_int_equal(dmg_views(t), 0);
    return t;
}

static void expect_fatal(const char *text, size_t len, int format,
                         const char *needle)
{
    struct evp_trace *t = NULL;
    struct dmg_warn w = {0};
    char err[512];
    if (open_text(text, len, format, &t, err, &w) >= 0)
        fail_msg("opened (expected \"%s\")", needle);
    assert_null(t);
    assert_true(err[0] && !strchr(err, '\n'));
    if (!strstr(err, needle))
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
    dmg_warn_free(&w);
}

#define HEADER                                                                 \
    "# python: /usr/bin/python3\n"                                             \
    "# argv: ./python -E ./setup.py build\n"                                   \
    "# start time: 1617222445 s (since epoch)\n"                               \
    "# start clock: 17137493.663947837 s (on clock)\n"                         \
    "# end clock: 17137494.467647860 s (on clock)\n"                           \
    "\n"
#define HEADER_LINES 6

/* The discussion's first events (lines 7-16 of the file). */
#define EVENTS                                                                 \
    "17137493.664739837 0\n"                                                   \
    "# func: <module>\n"                                                       \
    "17137493.666522537 3\n"                                                   \
    "17137493.666523537 5\n"                                                   \
    "17137493.666523837 6\n"                                                   \
    "17137493.666524037 7\n"                                                   \
    "17137493.666524237 8\n"                                                   \
    "17137493.666524437 9 100\n"                                               \
    "17137493.666533937 4\n"                                                   \
    "17137493.666534137 1\n"
#define NEVENTS 9

/* ---- a malformed line ---------------------------------------------------- */

static void test_malformed_line(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "garbage here",
        "17137493.666530000",         /* no kind */
        "17137493.666530000 x",       /* kind not a number */
        "17137493.666530000 8 1 2 3", /* too many fields */
        "17137493.6665300001 8",      /* ten fraction digits */
        ".5 8",                       /* no seconds */
        "17137493. 8",                /* a dot and no fraction */
        "-1.0 8",                     /* negative */
        "17137493.666530000 8 -4",    /* negative argument */
        "17137493.666530000 8 0x10",  /* hex */
        "\xff\xfe\xfd",               /* not UTF-8 */
        "# log written: soon",        /* malformed annotation */
        "# start clock: yesterday",
        "# opcode: BINARY_ADD",
        "# function: 1 2 3",
        "# function: 5",
        "# function: 5\t",
        "# function: 5\tten\tf.py\tf",
        "# thread: main",
        "# meta: no-equals-sign",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* The bad line becomes line 9, between two events. */
        char text[2048];
        snprintf(text, sizeof text,
                 HEADER "17137493.664739837 0\n"
                        "17137493.666522537 3\n"
                        "%s\n"
                        "17137493.666523537 5\n",
                 bad[i]);
        struct dmg_warn w = {0};
        struct dmg_replay r;
        struct evp_trace *t = must_open(text, STR, &w, &r);
        if (!dmg_warned(&w, "line 9:"))
            fail_msg("\"%s\": no warning naming line 9%s%s", bad[i],
                     w.n ? "; first: " : "", w.n ? w.msg[0] : "");
        for (size_t k = 0; k < w.n; k++)
            if (!strstr(w.msg[k], "line 9:") &&
                !strstr(w.msg[k], "malformed line"))
                fail_msg("\"%s\": stray warning: %s", bad[i], w.msg[k]);
        assert_int_equal(dmg_total(&r), 3);
        assert_int_equal(r.s[0].ev[0].kind, 0);
        assert_int_equal(r.s[0].ev[1].kind, 3);
        assert_int_equal(r.s[0].ev[2].kind, 5);
        dmg_replay_free(&r);
        evp_trace_close(t);
        dmg_warn_free(&w);
    }
}

/* ---- cut at every byte ------------------------------------------------------
 */

static void test_truncate_every_byte(void **state)
{
    (void)state;
    size_t first_nl = (size_t)(strchr(intact, '\n') - intact);
    struct dmg_warn w = {0};
    for (size_t cut = 0; cut < intact_size; cut++) {
        struct evp_trace *t;
        char err[512];
        int rc = open_text(intact, cut, 0, &t, err, &w);
        if (cut == 0) {
            assert_true(rc < 0 && strstr(err, "empty file"));
            continue;
        }
        if (rc < 0) {
            /* Only when not even the first header line is whole. */
            if (cut > first_nl)
                fail_msg("cut at %zu: %s", cut, err);
            assert_null(strchr(err, '\n'));
            continue;
        }
        /* Line number of the last (possibly partial) line. */
        size_t line = 1;
        for (size_t i = 0; i < cut; i++)
            line += intact[i] == '\n' && i + 1 < cut;
        int mid_line = intact[cut - 1] != '\n';
        if (mid_line && !dmg_warned(&w, dmg_fmt("line %zu:", line)))
            fail_msg("cut at %zu (inside line %zu): no warning", cut, line);
        if (!mid_line && w.n)
            fail_msg("cut at %zu (line end): warning %s", cut, w.msg[0]);
        struct dmg_replay r;
        dmg_replay_all(t, &r);
        assert_int_equal(r.rc, 0);
        for (size_t k = 0; k < r.nstreams; k++) {
            const struct dmg_stream *g = &r.s[k];
            const struct dmg_stream *o = dmg_stream(&orig, g->id);
            if (!o || g->n > o->n)
                fail_msg("cut at %zu: stream %u grew", cut, g->id);
            /* A cut inside the last line may change its event (a shorter
             * number is still a number): all others are the intact ones. */
            for (size_t i = 0; i < g->n; i++)
                if (!dmg_same_fact(&g->ev[i], &o->ev[i]) &&
                    !(mid_line && i + 1 == g->n))
                    fail_msg("cut at %zu: stream %u event %zu differs", cut,
                             g->id, i);
        }
        if (cut % 61 == 0 || cut + 1 == intact_size)
            assert_int_equal(dmg_views(t), 0);
        dmg_replay_free(&r);
        evp_trace_close(t);
    }
    dmg_warn_free(&w);
}

/* ---- numbers out of range --------------------------------------------------
 */

static void test_out_of_range(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "17137493.666530000 65536",                /* kind over 16 bits */
        "17137493.666530000 99999999999999999999", /* over 64 bits */
        "17137493.666530000 9 65536",              /* opcode */
        "17137493.666530000 9 100 4294967296",     /* oparg */
        "17137493.666530000 3 4294967296",         /* function id */
        "17137493.666530000 8 4294967296",         /* plain argument */
        "17137493.666530000 8 1 65536",            /* second argument */
        "18446744074.000000000 8",                 /* over 2^64 ns */
        "18446744073.709551616 8",                 /* 2^64 ns */
        "18446744073709551616.0 8",                /* seconds over 64 bits */
        "# log written: 5.000000000",              /* over 4.29 s */
        "# opcode: 65536 HUGE",
        "# opcode: 1 ONE 65536",
        "# function: 0\t1\tf.py\tzero",
        "# function: 67108865\t1\tf.py\thuge",
        /* In range for the format, but ids are dense: one this far
         * beyond the functions named so far is refused rather than
         * allowed to size a 1.6 GB table. */
        "# function: 67108864\t1\tf.py\tfar",
        "# function: 65537\t1\tf.py\tfirst and too far",
        "# function: 1\t4294967296\tf.py\tline",
        "# thread: 4294967296 1 t",
        "# start clock: 18446744073709551616.0 s (on clock)",
        "# start time: 99999999999999999999 s (since epoch)",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 HEADER "17137493.664739837 0\n"
                        "17137493.666522537 3\n"
                        "%s\n"
                        "17137493.666523537 5\n",
                 bad[i]);
        struct dmg_warn w = {0};
        struct dmg_replay r;
        struct evp_trace *t = must_open(text, STR, &w, &r);
        if (!dmg_warned(&w, "line 9:"))
            fail_msg("\"%s\": no warning naming line 9", bad[i]);
        assert_int_equal(dmg_total(&r), 3);
        dmg_replay_free(&r);
        evp_trace_close(t);
        dmg_warn_free(&w);
    }

    /* Sparse ids within reach of those named before them are kept; one
     * beyond that is refused (a warning) and the others still count. */
    {
        struct dmg_warn w2 = {0};
        struct dmg_replay r2;
        struct evp_trace *t2 = must_open("# function: 65536\t1\tf.py\ta\n"
                                         "# function: 65537\t1\tf.py\tb\n"
                                         "# function: 300000\t1\tf.py\tc\n"
                                         "\n1.0 3 65537\n",
                                         STR, &w2, &r2);
        assert_true(dmg_warned(&w2, "line 3:"));
        assert_string_equal(evp_trace_func(t2, 65536)->name, "a");
        assert_string_equal(evp_trace_func(t2, 65537)->name, "b");
        assert_null(evp_trace_func(t2, 300000));
        dmg_replay_free(&r2);
        evp_trace_close(t2);
        dmg_warn_free(&w2);
    }

    /* Empty names and files: the trailing tabs are trimmed with the
     * line's blanks, and the line still reads. */
    {
        struct dmg_warn w2 = {0};
        struct dmg_replay r2;
        struct evp_trace *t2 = must_open("# function: 1\t10\t\t\n"
                                         "# function: 2\t20\tf.py\t\n"
                                         "# function: 3\t0\t\tg\n"
                                         "\n1.0 3 1\n",
                                         STR, &w2, &r2);
        assert_int_equal(w2.n, 0);
        assert_string_equal(evp_trace_func(t2, 1)->name, "");
        assert_int_equal(evp_trace_func(t2, 1)->line, 10);
        assert_string_equal(evp_trace_func(t2, 2)->file, "f.py");
        assert_string_equal(evp_trace_func(t2, 3)->name, "g");
        dmg_replay_free(&r2);
        evp_trace_close(t2);
        dmg_warn_free(&w2);
    }

    /* The largest values that are in range are read exactly. */
    struct dmg_warn w = {0};
    struct dmg_replay r;
    struct evp_trace *t =
        must_open("# function: 4000\t4294967295\tf.py\tlast\n"
                  "\n"
                  "18446744073.709551615 65535 4294967295 65535\n"
                  "18446744073.709551615 9 65535 4294967295\n"
                  "18446744073.709551615 3 4000\n",
                  STR, &w, &r);
    assert_int_equal(w.n, 0);
    assert_int_equal(dmg_total(&r), 3);
    assert_int_equal(r.s[0].ev[0].kind, 65535);
    assert_int_equal(r.s[0].ev[0].arg, 4294967295u);
    assert_int_equal(r.s[0].ev[0].aux, 65535);
    assert_int_equal(r.s[0].ev[1].aux, 65535);
    assert_int_equal(r.s[0].ev[1].arg, 4294967295u);
    assert_int_equal(r.s[0].ev[2].func, 4000);
    assert_true(r.s[0].ev[0].ts == UINT64_MAX);
    assert_string_equal(evp_trace_func(t, 4000)->name, "last");
    assert_int_equal(evp_trace_func(t, 4000)->line, 4294967295u);
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

/* Times at the ends of their ranges: every view still prints them (the
 * header's end time once overflowed int64 here). */
static void test_extreme_times(void **state)
{
    (void)state;
    static const char *const traces[] = {
        "# start time: 9223372035 s (since epoch)\n"
        "# start clock: 1.800000000 s (on clock)\n"
        "# end clock: 3.800000000 s (on clock)\n\n1.9 0\n",
        "# start time: 18446744073709551615 s (since epoch)\n"
        "# start clock: 18000000000.999999999 s (on clock)\n\n"
        "0.000000000 3\n18000000000.999999999 4\n",
        "# start clock: 18000000000.999999999 s (on clock)\n"
        "# end clock: 0.0 s (on clock)\n\n5.0 8\n# log written: 4.294967295\n"
        "0.5 8\n",
        "# meta: event_cost.ticks=1e308\n# meta: start.wall_ns=-5\n\n1.0 "
        "8\n2.0 8\n",
        "# meta: event_cost.ticks=nan\n# meta: start.wall_ns="
        "99999999999999999999999\n\n1.0 8\n2.0 8\n",
    };
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        struct dmg_warn w = {0};
        struct dmg_replay r;
        struct evp_trace *t = must_open(traces[i], STR, &w, &r);
        assert_true(dmg_total(&r) >= 1);
        dmg_replay_free(&r);
        evp_trace_close(t);
        dmg_warn_free(&w);
    }
}

/* ---- NUL bytes, long lines, CRLF -------------------------------------------
 */

static void test_nul_bytes(void **state)
{
    (void)state;
    /* Far enough in that the file still looks like text. */
    char text[4096];
    size_t n = (size_t)snprintf(text, sizeof text, "%s", HEADER);
    for (int i = 0; i < 30; i++)
        n += (size_t)snprintf(text + n, sizeof text - n,
                              "17137493.6665%05d 8\n", i);
    size_t nul_line_start = n;
    n += (size_t)snprintf(text + n, sizeof text - n, "17137493.666599999 8\n");
    text[nul_line_start + 5] = '\0';
    n += (size_t)snprintf(text + n, sizeof text - n, "17137493.666600000 1\n");
    struct dmg_warn w = {0};
    struct dmg_replay r;
    struct evp_trace *t = must_open(text, n, &w, &r);
    assert_true(
        dmg_warned(&w, dmg_fmt("line %d: NUL byte", HEADER_LINES + 31)));
    assert_int_equal(dmg_total(&r), 31);
    dmg_replay_free(&r);
    evp_trace_close(t);

    /* In the first 512 bytes, after whole trace lines: still text, and
     * the warning says which line holds the NUL. */
    n = (size_t)snprintf(text, sizeof text, "%s", HEADER);
    n += (size_t)snprintf(text + n, sizeof text - n,
                          "17137493.664739837 0\n17137493.664739900 8\n"
                          "17137493.664740000 1\n");
    text[strlen(HEADER) + 25] = '\0';
    t = must_open(text, n, &w, &r);
    assert_true(dmg_warned(
        &w, dmg_fmt("line %d: NUL byte at column 5", HEADER_LINES + 2)));
    assert_int_equal(dmg_total(&r), 2);
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);

    /* Near the start: plainly not a text trace, one line says so ... */
    char early[] = HEADER "17137493.664739837 0\n";
    early[3] = '\0';
    expect_fatal(early, sizeof early - 1, 0, "NUL byte at byte 3, line 1");
    /* ... unless the caller insists on text (import): then it is a bad
     * line like any other. */
    char err[512];
    assert_int_equal(open_text(early, sizeof early - 1, 2, &t, err, &w), 0);
    assert_true(dmg_warned(&w, "line 1: NUL byte"));
    evp_trace_close(t);
    dmg_warn_free(&w);
}

/* Append LEN bytes of S (or LEN copies of FILL when S is NULL). */
static void append(char *buf, size_t *n, const char *s, size_t len, int fill)
{
    if (s)
        memcpy(buf + *n, s, len);
    else
        memset(buf + *n, fill, len);
    *n += len;
}

static void test_long_lines(void **state)
{
    (void)state;
    const size_t big = 1u << 20;
    char *text = malloc(8 * big + 4096);
    assert_non_null(text);
    size_t n = 0;
#define ADD(s) append(text, &n, s, strlen(s), 0)
#define FILL(c) append(text, &n, NULL, big, c)
    ADD("# python: ");
    FILL('p');
    ADD("\n# argv: ");
    FILL('a');
    ADD("\n# start clock: 17137493.663947837 s (on clock)\n\n");
    ADD("17137493.664739837 0\n# func: ");
    FILL('f');
    ADD("\n17137493.666522537 3\n"); /* line 7: enter <1 MiB name> */
    FILL('7');                       /* line 8: a 1 MiB number */
    ADD(" 8\n17137493.666523537 9 ");
    FILL('1'); /* line 9: a 1 MiB argument */
    ADD("\n#");
    FILL(' '); /* line 10: a 1 MiB comment of blanks */
    ADD("\n17137493.666524537 ");
    FILL(' '); /* line 11: 1 MiB of blanks inside an event line */
    ADD("8\n17137493.666525537 4\n17137493.666526537 1\n");
#undef ADD
#undef FILL
    struct dmg_warn w = {0};
    struct dmg_replay r;
    struct evp_trace *t = must_open(text, n, &w, &r);
    assert_true(dmg_warned(&w, "line 8:"));
    assert_true(dmg_warned(&w, "line 9:"));
    assert_int_equal(dmg_total(&r), 5); /* init, enter, dispatch, exit, fini */
    assert_int_equal(strlen(evp_trace_func(t, r.s[0].ev[1].func)->name), big);
    assert_int_equal(strlen(evp_trace_info(t)->argv), big);
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);
    free(text);
}

static void test_crlf(void **state)
{
    (void)state;
    /* The intact export with every "\n" made "\r\n": the same trace. */
    char *text = malloc(2 * intact_size);
    assert_non_null(text);
    size_t n = 0;
    for (size_t i = 0; i < intact_size; i++) {
        if (intact[i] == '\n')
            text[n++] = '\r';
        text[n++] = intact[i];
    }
    struct dmg_warn w = {0};
    struct dmg_replay r;
    struct evp_trace *t = must_open(text, n, &w, &r);
    assert_int_equal(w.n, 0);
    assert_int_equal(r.nstreams, orig.nstreams);
    for (size_t k = 0; k < r.nstreams; k++) {
        assert_int_equal(r.s[k].n, orig.s[k].n);
        for (size_t i = 0; i < r.s[k].n; i++) {
            assert_true(dmg_same_fact(&r.s[k].ev[i], &orig.s[k].ev[i]));
            assert_true(r.s[k].ev[i].ts == orig.s[k].ev[i].ts);
        }
    }
    for (uint32_t id = 1; id <= evp_trace_nfuncs(t); id++) {
        const struct evp_func *f = evp_trace_func(t, id);
        if (f) {
            assert_null(strchr(f->name, '\r'));
            assert_null(strchr(f->file, '\r'));
        }
    }
    for (size_t i = 0; i < evp_trace_nstreams(t); i++)
        assert_null(strchr(evp_trace_stream(t, i)->name, '\r'));
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);
    free(text);
}

/* ---- deep nesting ------------------------------------------------------ */

/* 20,000 nested calls in a 600 KB trace: the views stay linear in the
 * events (the tree once spent depth steps per line: 8e8 steps here). */
static void test_deep_nesting(void **state)
{
    (void)state;
    enum { DEPTH = 20000 };
    char *text = malloc((size_t)DEPTH * 2 * 24 + 64);
    assert_non_null(text);
    size_t n = (size_t)sprintf(text, "# python: deep\n\n");
    for (int i = 0; i < 2 * DEPTH; i++)
        n += (size_t)sprintf(text + n, "1.%09d %d %d\n", i, i < DEPTH ? 3 : 4,
                             1 + i % 7);
    struct dmg_warn w = {0};
    struct dmg_replay r;
    struct evp_trace *t = must_open(text, n, &w, &r);
    assert_int_equal(w.n, 0);
    assert_int_equal(dmg_total(&r), 2 * DEPTH);
    assert_int_equal(r.s[0].ev[DEPTH - 1].depth, DEPTH - 1);
    assert_int_equal(r.s[0].ev[DEPTH].depth, DEPTH - 1);
    assert_int_equal(r.s[0].ev[2 * DEPTH - 1].depth, 0);
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);
    free(text);
}

/* ---- time going backwards ------------------------------------------------ */

static void test_backwards(void **state)
{
    (void)state;
    struct dmg_warn w = {0};
    struct dmg_replay r;
    struct evp_trace *t =
        must_open(HEADER "17137493.664739837 0\n"
                         "17137493.666522537 3\n"
                         "17137493.666000000 5\n" /* line 9 */
                         "17137493.666523537 8\n"
                         "17137493.666523000 8\n" /* line 11 */
                         "17137493.666530000 1\n",
                  STR, &w, &r);
    assert_true(dmg_warned(&w, "line 9:"));
    assert_true(dmg_warned(&w, "earlier"));
    assert_int_equal(dmg_total(&r), 6);
    /* The event before a step back has no (negative) elapsed time. */
    assert_int_equal(r.s[0].ev[1].elapsed, 0);
    assert_int_equal(r.s[0].ev[3].elapsed, 0);
    assert_true(r.s[0].ev[2].elapsed > 0);
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

/* ---- odd but legal, and not traces --------------------------------------- */

static void test_odd_placement(void **state)
{
    (void)state;
    /* Annotations with no event after them, events before any header,
     * a "# log written:" first, blank lines and comments everywhere. */
    struct dmg_warn w = {0};
    struct dmg_replay r;
    struct evp_trace *t =
        must_open("# log written: 0.000001000\n"
                  "17137493.664739837 0\n"
                  "\n\n# just a comment\n" HEADER "# func: dangling\n"
                  "17137493.666522537 4\n" /* exit first */
                  "# thread: 7 1234 second thread\n"
                  "# func: f\n"
                  "17137493.666522537 3\n"
                  "# func: never used\n",
                  STR, &w, &r);
    assert_int_equal(w.n, 0);
    assert_int_equal(r.nstreams, 2);
    assert_int_equal(dmg_total(&r), 4); /* the log record is kept */
    assert_true(r.s[0].ev[2].flags & EVP_EVF_UNMATCHED);
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);

    /* Whole files that are not text traces at all. */
    expect_fatal("hello world\nthis is not a trace\n", STR, 0,
                 "not an evalprof trace");
    expect_fatal("\n\n\n", STR, 0, "not an evalprof trace");
    expect_fatal("# just a comment\n", STR, 0, "not an evalprof trace");
    expect_fatal("\x7f"
                 "ELF\x02\x01\x01",
                 7, 0, "not an evalprof trace");
    /* A header and no events is a (short) trace. */
    t = must_open(HEADER, STR, &w, &r);
    assert_int_equal(dmg_total(&r), 0);
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);
    /* One event, no header, no final newline. */
    t = must_open("17137493.664739837 0", STR, &w, &r);
    assert_int_equal(dmg_total(&r), 1);
    assert_true(dmg_warned(&w, "line 1:"));
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

/* Every control byte (0x01-0x1f, 0x7f) in function names and file names,
 * recorded, exported as text, imported and exported again: the names come
 * back byte for byte, and the second text equals the first (a tab once
 * split a file name into file and function). */
static void test_control_bytes_round_trip(void **state)
{
    (void)state;
    const char *bin = dmg_path("ctl.evp"), *t1 = dmg_path("ctl1.trace"),
               *mid = dmg_path("ctl2.evp"), *t2 = dmg_path("ctl2.trace");
    struct evp_rec_config cfg = {
        .path = bin,
        .producer = EVP_PRODUCER_SYNTHETIC,
        .can_emit = EVP_KINDS_CLASSIC,
        .flags = EVP_REC_NO_ATEXIT | EVP_REC_QUIET,
    };
    static const struct evp_opcode_desc ops[] = {{100, 100, "LOAD_CONST"}};
    assert_int_equal(evp_rec_open(&cfg), 0);
    evp_rec_opcodes(ops, 1);
    char names[33][16], files[33][16];
    uint32_t ids[33];
    int nb = 0;
    for (int b = 1; b <= 0x7f; b++) {
        if (b > 0x1f && b != 0x7f)
            continue;
        snprintf(names[nb], sizeof names[nb], "f%cg", b);
        snprintf(files[nb], sizeof files[nb], "dir%cx.py", b);
        ids[nb] = evp_rec_func(names[nb], files[nb], (uint32_t)b);
        nb++;
    }
    evp_rec_event(EVP_EV_INIT, 0);
    for (int i = 0; i < nb; i++) {
        evp_rec_event(EVP_EV_ENTER, ids[i]);
        evp_rec_event(EVP_EV_EXIT, ids[i]);
    }
    evp_rec_event(EVP_EV_FINI, 0);
    assert_int_equal(evp_rec_close(), 0);

    struct evp_trace *t, *u;
    struct dmg_warn w = {0};
    char err[512];
    assert_int_equal(dmg_open(bin, 0, &t, err, sizeof err, &w), 0);
    assert_int_equal(evp_trace_write_text(t, t1, err, sizeof err), 0);
    assert_int_equal(dmg_open(t1, 0, &u, err, sizeof err, &w), 0);
    assert_int_equal(w.n, 0);
    for (int i = 0; i < nb; i++) {
        const struct evp_func *f = evp_trace_func(u, ids[i]);
        assert_non_null(f);
        if (strcmp(f->name, names[i]) || strcmp(f->file, files[i]))
            fail_msg("byte 0x%02x: came back as function \"%s\" in \"%s\"",
                     (unsigned)(unsigned char)names[i][1], f->name, f->file);
    }
    assert_int_equal(evp_trace_write_evp(u, mid, 0, err, sizeof err), 0);
    evp_trace_close(u);
    evp_trace_close(t);
    assert_int_equal(dmg_open(mid, 0, &t, err, sizeof err, &w), 0);
    assert_int_equal(evp_trace_write_text(t, t2, err, sizeof err), 0);
    evp_trace_close(t);
    uint8_t *a, *b;
    long na = dmg_read(t1, &a), nb2 = dmg_read(t2, &b);
    assert_true(na > 0 && nb2 > 0);
    size_t k = 0;
    while (k < (size_t)na && k < (size_t)nb2 && a[k] == b[k])
        k++;
    if (na != nb2 || k < (size_t)na)
        fail_msg("second export differs at byte %zu: \"%.60s\" vs \"%.60s\"", k,
                 (char *)a + k, (char *)b + k);
    free(a);
    free(b);
    dmg_warn_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_line),
        cmocka_unit_test(test_truncate_every_byte),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_extreme_times),
        cmocka_unit_test(test_nul_bytes),
        cmocka_unit_test(test_long_lines),
        cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_backwards),
        cmocka_unit_test(test_odd_placement),
        cmocka_unit_test(test_control_bytes_round_trip),
    };
    return cmocka_run_group_tests_name("damage-text", tests, setup, teardown);
}
