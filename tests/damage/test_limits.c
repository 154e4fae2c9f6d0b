/*
 * Limits of the trace readers (cmocka): files of ordinary size whose shape
 * once cost time or memory out of all proportion.
 *
 *   - many streams: a trace of 50,000 threads, as text and as the same
 *     trace written as `.evp`, opens in well under a second and replays
 *     every stream, sorted by id (looking a stream up by id was a linear
 *     search, so opening was quadratic in the threads);
 *   - a zstd bomb: a 40 KB file of chunks that each declare 16 MiB
 *     decompressed.  The reader inflates up to its bound (1000 times the
 *     file's size plus 64 MiB) and refuses every chunk past it with a
 *     warning naming the chunk and its byte offset, instead of
 *     allocating a gigabyte;
 *   - a chunk whose declared size is not its zstd frame's is malformed,
 *     refused before anything is allocated;
 *   - an opcode name as long as a binary trace may carry (255 bytes)
 *     comes out whole in the folded stacks and the timeline exports (the
 *     folded view once read it through a 160-byte buffer and past it).
 *
 * Runs in suite 'damage' (also under AddressSanitizer, build-asan).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "dmg.h"
#include "evalprof/format.h"
#include "evalprof/recorder.h"
#include "file.h"
#include "views.h"

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
    struct walk w = {
        .last_id = -1,
        .expect = {EVP_EV_INIT, EVP_EV_ENTER, EVP_EV_EXIT, EVP_EV_FINI}};
    struct evp_replay_ops ops = {w_begin, w_events, w_end, NULL};
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
                id, 100000u + id, id, 4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3);
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

/* An EVENTS chunk of RAW zero bytes (stream 0, no events), compressed. */
static uint8_t *bomb_chunk(uint32_t raw, size_t *len)
{
    uint8_t *plain = calloc(raw, 1);
    size_t bound = ZSTD_compressBound(raw);
    uint8_t *c = malloc(EVP_CHUNK_HEADER_SIZE + 4 + bound);
    assert_non_null(plain);
    assert_non_null(c);
    size_t zn =
        ZSTD_compress(c + EVP_CHUNK_HEADER_SIZE + 4, bound, plain, raw, 19);
    assert_false(ZSTD_isError(zn));
    free(plain);
    uint8_t *payload = c + EVP_CHUNK_HEADER_SIZE;
    evp_put_u32(payload, raw);
    evp_chunk_header(c, EVP_CHUNK_EVENTS, EVP_CHUNK_F_ZSTD, payload,
                     (uint32_t)(4 + zn));
    *len = EVP_CHUNK_HEADER_SIZE + 4 + zn;
    return c;
}

static void test_zstd_bomb(void **state)
{
    (void)state;
    enum { CHUNKS = 64 };
    const uint32_t raw = 16u << 20;
    size_t clen;
    uint8_t *chunk = bomb_chunk(raw, &clen);
    size_t size = EVP_FILE_HEADER_SIZE + CHUNKS * clen;
    uint8_t *file = malloc(size);
    assert_non_null(file);
    evp_file_header(file);
    for (size_t i = 0; i < CHUNKS; i++)
        memcpy(file + EVP_FILE_HEADER_SIZE + i * clen, chunk, clen);
    free(chunk);
    const char *path = dmg_path("bomb.evp");
    assert_int_equal(dmg_write(path, file, size), 0);
    free(file);
    printf("  %d chunks of %zu bytes, each declaring %u: a %zu-byte file "
           "declaring %llu\n",
           CHUNKS, clen, raw, size, (unsigned long long)CHUNKS * raw);

    uint64_t limit = (64u << 20) + 1000 * (uint64_t)size;
    size_t fit = (size_t)(limit / raw);
    assert_true(fit >= 1 && fit < CHUNKS / 2);

    struct dmg_warn w = {0};
    struct evp_trace *t;
    char err[512];
    assert_int_equal(dmg_open(path, 0, &t, err, sizeof err, &w), 0);
    /* The chunks within the bound are read, the rest refused. */
    assert_int_equal(evp_trace_nstreams(t), 1);
    assert_int_equal(evp_trace_stream(t, 0)->chunks, fit);
    size_t refused = 0, last = 0; /* (the trace keeps every warning) */
    for (size_t i = 0; i < evp_trace_nwarnings(t); i++)
        if (strstr(evp_trace_warning(t, i), "past the limit for this file")) {
            refused++;
            last = i;
        }
    assert_int_equal(refused, CHUNKS - fit);
    /* Each refusal names its chunk and byte offset. */
    char want[128];
    snprintf(want, sizeof want, "chunk %zu at byte %zu (events): ", fit,
             EVP_FILE_HEADER_SIZE + fit * clen);
    assert_true(dmg_warned(&w, want));
    snprintf(want, sizeof want, "chunk %d at byte %zu (events): ", CHUNKS - 1,
             EVP_FILE_HEADER_SIZE + (CHUNKS - 1) * clen);
    assert_non_null(strstr(evp_trace_warning(t, last), want));
    assert_true(dmg_warned(&w, "1000 times its size plus 64 MiB"));
    /* What was read replays (no events: only zeros). */
    assert_int_equal(dmg_views(t), 0);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

static void test_zstd_size_mismatch(void **state)
{
    (void)state;
    size_t clen;
    uint8_t *chunk = bomb_chunk(4096, &clen);
    /* Declare 64 MiB for a frame that says 4096 bytes. */
    uint8_t *payload = chunk + EVP_CHUNK_HEADER_SIZE;
    evp_put_u32(payload, EVP_CHUNK_MAX_PAYLOAD);
    evp_chunk_header(chunk, EVP_CHUNK_EVENTS, EVP_CHUNK_F_ZSTD, payload,
                     (uint32_t)(clen - EVP_CHUNK_HEADER_SIZE));
    size_t size = EVP_FILE_HEADER_SIZE + 2 * clen;
    uint8_t *file = malloc(size);
    assert_non_null(file);
    evp_file_header(file);
    memcpy(file + EVP_FILE_HEADER_SIZE, chunk, clen);
    uint8_t *good = bomb_chunk(4096, &clen);
    memcpy(file + EVP_FILE_HEADER_SIZE + clen, good, clen);
    free(good);
    free(chunk);
    const char *path = dmg_path("mismatch.evp");
    assert_int_equal(dmg_write(path, file, size), 0);
    free(file);

    struct dmg_warn w = {0};
    struct evp_trace *t;
    char err[512];
    assert_int_equal(dmg_open(path, 0, &t, err, sizeof err, &w), 0);
    char want[128];
    snprintf(want, sizeof want,
             "chunk 0 at byte %d (events): malformed payload",
             EVP_FILE_HEADER_SIZE);
    assert_true(dmg_warned(&w, want));
    assert_int_equal(evp_trace_stream(t, 0)->chunks, 1);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

struct found {
    const char *want;
    size_t hits;
};

static int find_line(void *ctx, const char *stack, size_t len, uint64_t ns)
{
    struct found *f = ctx;
    size_t n = strlen(f->want);
    (void)ns;
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(stack + i, f->want, n) == 0) {
            f->hits++;
            break;
        }
    return 0;
}

static void test_long_opcode_name(void **state)
{
    (void)state;
    char path[512], name[256], want[260];
    snprintf(path, sizeof path, "%s/longop.evp", dmg_tmpdir());
    memset(name, 'Z', 255);
    name[255] = '\0';
    snprintf(want, sizeof want, "op:%s", name);
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_ALL,
                                 .flags = EVP_REC_QUIET | EVP_REC_NO_ATEXIT};
    assert_int_equal(evp_rec_open(&cfg), 0);
    struct evp_opcode_desc d = {100, 100, name};
    assert_int_equal(evp_rec_opcodes(&d, 1), 0);
    uint32_t f = evp_rec_func("main", "x.py", 1);
    evp_rec_thread_attach("main");
    evp_rec_event(EVP_EV_ENTER, f);
    evp_rec_op(100, 0);
    evp_rec_event(EVP_EV_EXIT, f);
    assert_int_equal(evp_rec_close(), 0);

    char err[256];
    struct evp_trace *t = NULL;
    assert_int_equal(evp_trace_open(path, NULL, &t, err, sizeof err), 0);
    assert_string_equal(evp_trace_opname(t, 100), name);
    struct evp_folded_opts fo = {.ops = 1, .stream = -1};
    struct found fd = {want, 0};
    assert_int_equal(evp_view_folded_each(t, &fo, find_line, &fd), 0);
    assert_int_equal(fd.hits, 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    struct evp_chrome_opts co = {.ops = 1};
    assert_int_equal(evp_view_speedscope(t, m, &co), 0);
    fclose(m);
    assert_non_null(strstr(buf, want));
    free(buf);
    evp_trace_close(t);
}

/* What reads a mapped file: the page at its old end. */
struct probe {
    const volatile uint8_t *p;
    size_t n;
};

static int read_last(void *ctx)
{
    struct probe *pr = ctx;
    return pr->p[pr->n - 1];
}

/* A mapped file truncated under the reader: inside evp_file_guard the
 * SIGBUS is an error return; outside, one line naming the file and exit
 * status 1, never the signal. */
static void test_file_shrinks_while_mapped(void **state)
{
    (void)state;
    const char *path = dmg_path("shrink.bin");
    static uint8_t page[1 << 16];
    memset(page, 'x', sizeof page);
    assert_int_equal(dmg_write(path, page, sizeof page), 0);
    struct evp_input in;
    char err[256];
    const void *data;
    size_t size;
    assert_int_equal(evp_file_open(path, &in, err, sizeof err), 0);
    assert_int_equal(evp_file_map(&in, path, &data, &size), 0);
    struct probe pr = {data, size};
    assert_int_equal(evp_file_guard(read_last, &pr, err, sizeof err), 'x');
    assert_int_equal(truncate(path, 0), 0);
    assert_int_equal(evp_file_guard(read_last, &pr, err, sizeof err), -EIO);
    assert_non_null(strstr(err, "file shrank while being read"));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        _exit(read_last(&pr) == 'x' ? 0 : 3);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    evp_file_unmap(data, size);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_streams),
        cmocka_unit_test(test_zstd_bomb),
        cmocka_unit_test(test_zstd_size_mismatch),
        cmocka_unit_test(test_long_opcode_name),
        cmocka_unit_test(test_file_shrinks_while_mapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
