/*
 * Damage tests of the binary `.evp` reader (cmocka).
 *
 * A small real trace (two threads, a few hundred events, nested calls,
 * opcodes, a function table) is recorded through the recorder API with
 * tiny buffers, so each stream spans several chunks.  Then every damaged
 * copy of it that a crash, a bad disk or a bad copy could leave is read
 * back, and what survives is compared with the intact trace:
 *
 *   - cut at every byte: the open fails with a one-line reason only when
 *     no chunk is whole, else it warns naming the byte offset of the cut
 *     chunk and what was lost, and every stream replays exactly the events
 *     of its whole chunks, a prefix of the intact stream;
 *   - every byte flipped (three patterns): file-header damage is a
 *     one-line error or harmless, damage in chunk k is a warning naming
 *     chunk k's offset, chunk k alone is lost and every other chunk, before
 *     and after, still reads (resynchronisation);
 *   - each chunk overwritten, given an absurd length, junk inserted
 *     between chunks, and a thousand random multi-byte corruptions;
 *   - the same cuts and flips on a zstd-compressed copy, and a compressed
 *     chunk rewritten after the open (decompressed only when replayed);
 *   - files that are not traces at all: wrong magic, wrong version, empty,
 *     a directory, a missing file, /dev/null, random bytes.
 *
 * Every damaged trace that opens is also run through every view and both
 * writers (output thrown away), so the whole read path sees the damage.  The
 * suite runs under AddressSanitizer and UBSan in CI.
 */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../sampled/sampgen.h"
#include "dmg.h"
#include "evalprof/format.h"
#include "views.h"

static uint8_t *intact; /* the recorded trace */
static size_t intact_size;
static struct dmg_map map;     /* its chunks */
static struct dmg_replay orig; /* its events */
static uint64_t intact_events;
static uint8_t *zintact; /* the same trace, zstd-compressed chunks */
static size_t zintact_size;
static struct dmg_replay zorig;

static void check_one_line(const char *err)
{
    assert_true(err[0] != '\0');
    assert_null(strchr(err, '\n'));
}

static int setup(void **state)
{
    (void)state;
    const char *path = dmg_path("intact.evp");
    int rc = dmg_record(path, 2, 160);
    if (rc < 0) {
        fprintf(stderr, "recording failed: %s\n", strerror(-rc));
        return -1;
    }
    long n = dmg_read(path, &intact);
    if (n <= 0 || dmg_map_chunks(intact, (size_t)n, &map) < 0) {
        fprintf(stderr, "recorded trace unreadable\n");
        return -1;
    }
    intact_size = (size_t)n;

    struct evp_trace *t;
    struct dmg_warn w = {0};
    char err[512];
    if (dmg_open(path, 0, &t, err, sizeof err, &w) < 0) {
        fprintf(stderr, "intact trace: %s\n", err);
        return -1;
    }
    dmg_replay_all(t, &orig);
    intact_events = evp_trace_info(t)->events;
    const char *zpath = dmg_path("intact-zstd.evp");
    rc = evp_trace_write_evp(t, zpath, 3, err, sizeof err);
    evp_trace_close(t);
    if (rc < 0 || (n = dmg_read(zpath, &zintact)) <= 0) {
        fprintf(stderr, "zstd copy: %s\n", err);
        return -1;
    }
    zintact_size = (size_t)n;
    if (dmg_open(zpath, 0, &t, err, sizeof err, &w) < 0)
        return -1;
    dmg_replay_all(t, &zorig);
    evp_trace_close(t);
    dmg_warn_free(&w);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(intact);
    free(zintact);
    dmg_replay_free(&orig);
    dmg_replay_free(&zorig);
    return 0;
}

/* Events of STREAM in the chunks wholly before byte CUT. */
static size_t events_before(uint32_t stream, size_t cut)
{
    size_t n = 0;
    for (size_t i = 0; i < map.n; i++)
        if (map.c[i].type == EVP_CHUNK_EVENTS && map.c[i].stream == stream &&
            map.c[i].off + map.c[i].size <= cut)
            n += map.c[i].count;
    return n;
}

/* Every warning of a binary trace says where: a byte offset, or which
 * chunks of a stream are missing (a consequence of another warning). */
static void check_warnings_located(const struct dmg_warn *w, const char *what)
{
    for (size_t i = 0; i < w->n; i++)
        if (!strstr(w->msg[i], "byte ") && !strstr(w->msg[i], " missing") &&
            !strstr(w->msg[i], "appears twice") &&
            !strstr(w->msg[i], "more warnings"))
            fail_msg("%s: warning without a location: %s", what, w->msg[i]);
}

/* ---- the intact trace ------------------------------------------------ */

static void test_intact(void **state)
{
    (void)state;
    struct evp_trace *t;
    struct dmg_warn w = {0};
    char err[512];
    assert_int_equal(
        dmg_open(dmg_path("intact.evp"), 0, &t, err, sizeof err, &w), 0);
    assert_int_equal(w.n, 0);
    /* The two workers, and the main thread's init and fini. */
    assert_int_equal(evp_trace_nstreams(t), 3);
    assert_int_equal(orig.rc, 0);
    assert_int_equal(orig.nstreams, 3);
    /* Several chunks per worker, or the damage tests prove little; each
     * stream's chunks are in the file in order. */
    size_t per[DMG_MAX_STREAMS] = {0}, total = 0, busy = 0;
    uint32_t seq[DMG_MAX_STREAMS] = {0};
    for (size_t i = 0; i < map.n; i++)
        if (map.c[i].type == EVP_CHUNK_EVENTS) {
            assert_int_equal(map.c[i].seq, seq[map.c[i].stream]++);
            per[map.c[i].stream]++;
            total += map.c[i].count;
        }
    for (size_t s = 0; s < DMG_MAX_STREAMS; s++)
        busy += per[s] >= 4;
    assert_int_equal(busy, 2);
    assert_int_equal(total, dmg_total(&orig));
    assert_int_equal(total, evp_trace_info(t)->events);
    assert_true(evp_trace_info(t)->has_end);
    assert_true(evp_trace_nfuncs(t) >= 6);
    assert_int_equal(dmg_views(t), 0);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

/* ---- cut at every byte -------------------------------------------------- */

static void check_prefix(const struct dmg_replay *got, size_t cut)
{
    for (size_t k = 0; k < orig.nstreams; k++) {
        const struct dmg_stream *o = &orig.s[k];
        const struct dmg_stream *g = dmg_stream(got, o->id);
        size_t want = events_before(o->id, cut);
        size_t n = g ? g->n : 0;
        if (n != want)
            fail_msg("cut at %zu: stream %u replays %zu events, expected %zu",
                     cut, o->id, n, want);
        for (size_t i = 0; i < n; i++) {
            const struct dmg_ev *a = &g->ev[i], *b = &o->ev[i];
            if (!dmg_same_fact(a, b) || a->depth != b->depth ||
                a->func != b->func)
                fail_msg("cut at %zu: stream %u event %zu differs", cut, o->id,
                         i);
        }
    }
    for (size_t k = 0; k < got->nstreams; k++)
        if (!dmg_stream(&orig, got->s[k].id))
            fail_msg("cut at %zu: stream %u appeared", cut, got->s[k].id);
}

static void test_truncate_every_byte(void **state)
{
    (void)state;
    const char *path = dmg_path("cut.evp");
    struct dmg_warn w = {0};
    char err[512];
    for (size_t cut = 0; cut < intact_size; cut++) {
        assert_int_equal(dmg_write(path, intact, cut), 0);
        struct evp_trace *t = NULL;
        int rc = dmg_open(path, 0, &t, err, sizeof err, &w);
        /* The first chunk not wholly present, and whether any is. */
        size_t first_cut = cut;
        int whole = 0;
        for (size_t i = 0; i < map.n; i++) {
            if (map.c[i].off + map.c[i].size <= cut) {
                whole++;
            } else {
                first_cut = map.c[i].off;
                break;
            }
        }
        if (!whole) {
            if (rc >= 0)
                fail_msg("cut at %zu: opened with no whole chunk", cut);
            check_one_line(err);
            continue;
        }
        if (rc < 0)
            fail_msg("cut at %zu: open failed: %s", cut, err);
        /* Nothing after the last whole chunk: the reader must say where
         * the file stops making sense and that something was lost. */
        if (!dmg_warned(&w, dmg_fmt("byte %zu", first_cut)))
            fail_msg(
                "cut at %zu: no warning naming byte %zu (%zu warnings%s%s)",
                cut, first_cut, w.n, w.n ? ", first: " : "",
                w.n ? w.msg[0] : "");
        if (!dmg_warned(&w, "lost"))
            fail_msg("cut at %zu: no warning says what was lost", cut);
        check_warnings_located(&w, dmg_fmt("cut at %zu", cut));
        struct dmg_replay r;
        dmg_replay_all(t, &r);
        assert_int_equal(r.rc, 0);
        check_prefix(&r, cut);
        assert_int_equal(dmg_total(&r), evp_trace_info(t)->events);
        if (cut % 32 == 0 || cut + 16 > intact_size ||
            dmg_chunk_at(&map, cut) != dmg_chunk_at(&map, cut - 1))
            assert_int_equal(dmg_views(t), 0);
        dmg_replay_free(&r);
        evp_trace_close(t);
    }
    dmg_warn_free(&w);
}

/* ---- one chunk damaged --------------------------------------------------- */

/*
 * Read PATH, where chunk K (or, when K < 0, no chunk) was damaged: the open
 * must succeed; when K >= 0 a warning names chunk K's offset; every stream
 * replays the intact events minus chunk K's.
 */
static void check_one_chunk_lost(const char *path, int k, const char *what,
                                 int views)
{
    struct evp_trace *t;
    struct dmg_warn w = {0};
    char err[512];
    if (dmg_open(path, 0, &t, err, sizeof err, &w) < 0)
        fail_msg("%s: open failed: %s", what, err);
    if (k >= 0 && !dmg_warned(&w, dmg_fmt("byte %zu", map.c[k].off)))
        fail_msg("%s: no warning names byte %zu (chunk %d)%s%s", what,
                 map.c[k].off, k, w.n ? "; first: " : "", w.n ? w.msg[0] : "");
    if (k < 0 && w.n)
        fail_msg("%s: unexpected warning: %s", what, w.msg[0]);
    check_warnings_located(&w, what);
    struct dmg_replay r;
    dmg_replay_all(t, &r);
    assert_int_equal(r.rc, 0);
    const struct dmg_chunk *c = k >= 0 ? &map.c[k] : NULL;
    for (size_t s = 0; s < orig.nstreams; s++) {
        const struct dmg_stream *o = &orig.s[s];
        const struct dmg_stream *g = dmg_stream(&r, o->id);
        size_t lo = o->n, hi = o->n; /* [lo, hi) is lost */
        if (c && c->type == EVP_CHUNK_EVENTS && c->stream == o->id) {
            lo = c->first;
            hi = c->first + c->count;
        }
        size_t want = o->n - (hi - lo), n = g ? g->n : 0;
        if (n != want)
            fail_msg("%s: stream %u replays %zu events, expected %zu", what,
                     o->id, n, want);
        for (size_t i = 0; i < n; i++) {
            size_t j = i < lo ? i : i + (hi - lo);
            if (!dmg_same_fact(&g->ev[i], &o->ev[j]))
                fail_msg("%s: stream %u event %zu differs", what, o->id, i);
        }
    }
    if (views)
        assert_int_equal(dmg_views(t), 0);
    dmg_replay_free(&r);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

static void test_flip_every_byte(void **state)
{
    (void)state;
    static const uint8_t patterns[] = {0xff, 0x01, 0x80};
    const char *path = dmg_path("flip.evp");
    uint8_t *d = malloc(intact_size);
    assert_non_null(d);
    for (size_t o = 0; o < intact_size; o++) {
        for (size_t p = 0; p < sizeof patterns; p++) {
            memcpy(d, intact, intact_size);
            d[o] ^= patterns[p];
            assert_int_equal(dmg_write(path, d, intact_size), 0);
            const char *what = dmg_fmt("byte %zu ^ 0x%02x", o, patterns[p]);
            if (o < 8) {
                /* A damaged magic: the chunks are read all the same, with
                 * a warning about the header. */
                struct evp_trace *t;
                struct dmg_warn w = {0};
                char err[512];
                if (dmg_open(path, 0, &t, err, sizeof err, &w) < 0)
                    fail_msg("%s: not opened: %s", what, err);
                if (w.n != 1 || !strstr(w.msg[0], "file header damaged"))
                    fail_msg("%s: no warning about the header", what);
                if (evp_trace_info(t)->events != intact_events)
                    fail_msg("%s: events lost", what);
                evp_trace_close(t);
                dmg_warn_free(&w);
                continue;
            }
            if (o == 8) {
                /* The major version: not a trace this reader knows. */
                struct evp_trace *t;
                struct dmg_warn w = {0};
                char err[512];
                if (dmg_open(path, 0, &t, err, sizeof err, &w) >= 0)
                    fail_msg("%s: opened", what);
                check_one_line(err);
                assert_true(strstr(err, "unsupported format version"));
                dmg_warn_free(&w);
                continue;
            }
            /* Minor version and reserved header bytes are not checked;
             * any byte of a chunk is covered by its checksum.  The views
             * run on every header byte's damage and a sample of the rest
             * (what they see is the same: a chunk missing). */
            char wb[64];
            snprintf(wb, sizeof wb, "%s", what);
            int k = o < EVP_FILE_HEADER_SIZE ? -1 : dmg_chunk_at(&map, o);
            int views = p == 0 && (o % 16 == 0 || k < 0 ||
                                   (o - map.c[k].off < EVP_CHUNK_HEADER_SIZE &&
                                    (o - map.c[k].off) % 4 == 0));
            check_one_chunk_lost(path, k, wb, views);
        }
    }
    free(d);
}

static void test_resync_each_chunk(void **state)
{
    (void)state;
    const char *path = dmg_path("chunk.evp");
    uint8_t *d = malloc(intact_size + 64);
    assert_non_null(d);
    for (size_t k = 0; k < map.n; k++) {
        const struct dmg_chunk *c = &map.c[k];
        char what[96];

        /* The payload zeroed. */
        memcpy(d, intact, intact_size);
        memset(d + c->off + EVP_CHUNK_HEADER_SIZE, 0,
               c->size - EVP_CHUNK_HEADER_SIZE);
        if (c->size > EVP_CHUNK_HEADER_SIZE) {
            assert_int_equal(dmg_write(path, d, intact_size), 0);
            snprintf(what, sizeof what, "chunk %zu payload zeroed", k);
            check_one_chunk_lost(path, (int)k, what, 0);
        }

        /* The whole chunk, header included, overwritten with 0xa5. */
        memcpy(d, intact, intact_size);
        memset(d + c->off, 0xa5, c->size);
        assert_int_equal(dmg_write(path, d, intact_size), 0);
        snprintf(what, sizeof what, "chunk %zu overwritten", k);
        check_one_chunk_lost(path, (int)k, what, 1);

        /* A length that runs past the end of the file (but under the
         * format's limit): the chunks after it must still be found. */
        memcpy(d, intact, intact_size);
        evp_put_u32(d + c->off + 8, 1u << 20);
        assert_int_equal(dmg_write(path, d, intact_size), 0);
        snprintf(what, sizeof what, "chunk %zu length 1 MiB", k);
        check_one_chunk_lost(path, (int)k, what, 1);

        /* A length over the format's limit. */
        evp_put_u32(d + c->off + 8, 0xfffffff0u);
        assert_int_equal(dmg_write(path, d, intact_size), 0);
        snprintf(what, sizeof what, "chunk %zu length 4 GiB", k);
        check_one_chunk_lost(path, (int)k, what, 0);

        /* 37 bytes of junk inserted before the chunk: nothing is lost,
         * and the warning names where the junk starts. */
        memcpy(d, intact, c->off);
        memset(d + c->off, 'E', 37);
        memcpy(d + c->off + 37, intact + c->off, intact_size - c->off);
        assert_int_equal(dmg_write(path, d, intact_size + 37), 0);
        struct evp_trace *t;
        struct dmg_warn w = {0};
        char err[512];
        if (dmg_open(path, 0, &t, err, sizeof err, &w) < 0)
            fail_msg("junk before chunk %zu: %s", k, err);
        if (!dmg_warned(&w, dmg_fmt("byte %zu", c->off)))
            fail_msg("junk before chunk %zu: no warning names byte %zu", k,
                     c->off);
        struct dmg_replay r;
        dmg_replay_all(t, &r);
        assert_int_equal(dmg_total(&r), dmg_total(&orig));
        dmg_replay_free(&r);
        evp_trace_close(t);
        dmg_warn_free(&w);
    }
    free(d);
}

/* ---- random damage ------------------------------------------------------- */

/*
 * Is G's event list made of whole chunks of the intact stream O, in order?
 * (Random damage may cost any set of chunks, never part of one, unless the
 * damage sits inside a chunk whose checksum still holds, which a 32-bit
 * checksum makes vanishingly rare.)
 */
static int whole_chunks_of(const struct dmg_stream *g,
                           const struct dmg_stream *o)
{
    size_t i = 0;
    for (size_t k = 0; k < map.n && i < g->n; k++) {
        const struct dmg_chunk *c = &map.c[k];
        if (c->type != EVP_CHUNK_EVENTS || c->stream != o->id ||
            i + c->count > g->n)
            continue;
        size_t j = 0;
        while (j < c->count &&
               dmg_same_fact(&g->ev[i + j], &o->ev[c->first + j]))
            j++;
        if (j == c->count)
            i += c->count;
    }
    return i == g->n;
}

static void test_random_damage(void **state)
{
    (void)state;
    const char *path = dmg_path("random.evp");
    uint8_t *d = malloc(intact_size);
    assert_non_null(d);
    uint64_t rs = 0x5eed5eed12345678u;
    int opened = 0;
    for (int iter = 0; iter < 1000; iter++) {
        memcpy(d, intact, intact_size);
        size_t size = intact_size;
        int spans = 1 + (int)(dmg_rand(&rs) % 6);
        for (int s = 0; s < spans; s++) {
            size_t off = EVP_FILE_HEADER_SIZE +
                         dmg_rand(&rs) % (intact_size - EVP_FILE_HEADER_SIZE);
            size_t len = 1 + dmg_rand(&rs) % 48;
            int mode = (int)(dmg_rand(&rs) % 3);
            for (size_t i = off; i < off + len && i < intact_size; i++)
                d[i] = mode == 0 ? (uint8_t)dmg_rand(&rs)
                       : mode == 1
                           ? 0
                           : (uint8_t)(d[i] ^ (1u << (dmg_rand(&rs) % 8)));
        }
        if (dmg_rand(&rs) % 4 == 0)
            size = EVP_FILE_HEADER_SIZE + dmg_rand(&rs) % (intact_size - 15);
        assert_int_equal(dmg_write(path, d, size), 0);
        struct evp_trace *t;
        struct dmg_warn w = {0};
        char err[512];
        const char *what = dmg_fmt("random damage %d", iter);
        if (dmg_open(path, 0, &t, err, sizeof err, &w) < 0) {
            check_one_line(err);
            continue;
        }
        opened++;
        check_warnings_located(&w, what);
        struct dmg_replay r;
        dmg_replay_all(t, &r);
        for (size_t k = 0; k < r.nstreams; k++) {
            const struct dmg_stream *o = dmg_stream(&orig, r.s[k].id);
            if (!o || !whole_chunks_of(&r.s[k], o))
                fail_msg("%s: stream %u is not made of whole intact chunks",
                         what, r.s[k].id);
        }
        if (iter % 8 == 0)
            assert_int_equal(dmg_views(t), 0);
        dmg_replay_free(&r);
        evp_trace_close(t);
        dmg_warn_free(&w);
    }
    /* Most damage leaves something readable. */
    assert_true(opened > 500);
    free(d);
}

/* ---- the compressed copy ------------------------------------------------- */

/* A stream of a damaged compressed copy: all its events or none (each
 * stream is one EVENTS chunk, so a cut or a flip costs it whole). */
static void check_z(const struct dmg_replay *r, const char *what)
{
    for (size_t k = 0; k < r->nstreams; k++) {
        const struct dmg_stream *g = &r->s[k];
        const struct dmg_stream *o = dmg_stream(&zorig, g->id);
        if (!o)
            fail_msg("%s: stream %u appeared", what, g->id);
        if (g->n && g->n != o->n)
            fail_msg("%s: stream %u partly read (%zu of %zu)", what, g->id,
                     g->n, o->n);
        if (g->n > o->n)
            fail_msg("%s: stream %u grew", what, g->id);
        for (size_t i = 0; i < g->n; i++)
            if (!dmg_same_fact(&g->ev[i], &o->ev[i]))
                fail_msg("%s: stream %u event %zu differs", what, g->id, i);
    }
}

static void test_zstd_damage(void **state)
{
    (void)state;
    const char *path = dmg_path("z.evp");
    uint8_t *d = malloc(zintact_size);
    assert_non_null(d);
    /* The copy really is compressed. */
    int compressed = 0;
    for (size_t off = EVP_FILE_HEADER_SIZE; off + 16 <= zintact_size;
         off += 16 + evp_get_u32(zintact + off + 8))
        compressed += (zintact[off + 5] & EVP_CHUNK_F_ZSTD) != 0;
    assert_true(compressed >= 2);
    for (size_t o = 0; o < zintact_size; o++) {
        for (int mode = 0; mode < 2; mode++) {
            size_t size = zintact_size;
            memcpy(d, zintact, zintact_size);
            if (mode == 0)
                size = o;
            else
                d[o] ^= 0x41;
            assert_int_equal(dmg_write(path, d, size), 0);
            struct evp_trace *t;
            struct dmg_warn w = {0};
            char err[512];
            const char *what =
                dmg_fmt("zstd copy, %s %zu", mode ? "flip at" : "cut at", o);
            if (dmg_open(path, 0, &t, err, sizeof err, &w) < 0) {
                check_one_line(err);
                dmg_warn_free(&w);
                continue;
            }
            if (o >= EVP_FILE_HEADER_SIZE && !w.n)
                fail_msg("%s: no warning", what);
            check_warnings_located(&w, what);
            struct dmg_replay r;
            dmg_replay_all(t, &r);
            check_z(&r, what);
            if (o % 32 == 0)
                assert_int_equal(dmg_views(t), 0);
            dmg_replay_free(&r);
            evp_trace_close(t);
            dmg_warn_free(&w);
        }
    }
    free(d);
}

/* Events replayed in all, over R's streams. */
static size_t replayed(const struct dmg_replay *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nstreams; i++)
        n += r->s[i].n;
    return n;
}

/* A compressed chunk whose bytes change after the open (the file is
 * rewritten in place while mapped): the replay, which decompresses each
 * chunk from the file when it reaches it, warns once that the chunk no
 * longer decompresses and goes on with the others. */
static void test_zstd_changed_after_open(void **state)
{
    (void)state;
    const char *path = dmg_path("z-changed.evp");
    assert_int_equal(dmg_write(path, zintact, zintact_size), 0);
    size_t off = EVP_FILE_HEADER_SIZE;
    while (off + 16 <= zintact_size && !(zintact[off + 4] == EVP_CHUNK_EVENTS &&
                                         zintact[off + 5] & EVP_CHUNK_F_ZSTD))
        off += 16 + evp_get_u32(zintact + off + 8);
    assert_true(off + 16 + 8 <= zintact_size);
    struct evp_trace *t;
    struct dmg_warn w = {0};
    char err[512];
    assert_true(dmg_open(path, 0, &t, err, sizeof err, &w) >= 0);
    assert_int_equal(w.n, 0);
    /* the zstd frame's magic, after the u32 decompressed size */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, (long)(off + 16 + 4), SEEK_SET), 0);
    assert_int_equal(fwrite("\0\0\0\0", 1, 4, f), 4);
    assert_int_equal(fclose(f), 0);
    for (int pass = 0; pass < 2; pass++) {
        struct dmg_replay r;
        dmg_replay_all(t, &r);
        assert_int_equal(r.rc, 0);
        size_t got = replayed(&r), want = replayed(&zorig);
        if (!(got > 0 && got < want))
            fail_msg("changed chunk: %zu of %zu events replayed", got, want);
        dmg_replay_free(&r);
    }
    size_t warned = 0;
    for (size_t i = 0; i < w.n; i++)
        warned += strstr(w.msg[i], "no longer decompresses") != NULL;
    if (warned != 1)
        fail_msg("changed chunk: warned %zu times (want once): %s", warned,
                 w.n ? w.msg[0] : "(none)");
    assert_true(dmg_warned(&w, dmg_fmt("at byte %zu", off)));
    evp_trace_close(t);
    dmg_warn_free(&w);
}

/* ---- not traces at all --------------------------------------------------- */

static void expect_fatal(const char *path, int format, const char *needle)
{
    struct evp_trace *t = NULL;
    struct dmg_warn w = {0};
    char err[512];
    int rc = dmg_open(path, format, &t, err, sizeof err, &w);
    if (rc >= 0)
        fail_msg("%s: opened (expected \"%s\")", path, needle);
    assert_null(t);
    check_one_line(err);
    if (!strstr(err, needle))
        fail_msg("%s: error \"%s\" lacks \"%s\"", path, err, needle);
    dmg_warn_free(&w);
}

static void test_not_traces(void **state)
{
    (void)state;
    uint8_t *d = malloc(intact_size);
    assert_non_null(d);

    memcpy(d, intact, intact_size);
    d[7] = 'X'; /* "EVPTRACX" */
    dmg_write(dmg_path("magic.evp"), d, intact_size);
    /* with chunks after it, read (test_flip_every_byte); without: */
    dmg_write(dmg_path("magic.evp"), d, EVP_FILE_HEADER_SIZE + 40);
    expect_fatal(dmg_path("magic.evp"), 0, "bad magic at byte 0");
    expect_fatal(dmg_path("magic.evp"), 1, "bad magic at byte 0");

    memcpy(d, intact, intact_size);
    d[8] = EVP_FORMAT_MAJOR + 1;
    dmg_write(dmg_path("v2.evp"), d, intact_size);
    expect_fatal(dmg_path("v2.evp"), 0, "unsupported format version 2.");
    d[8] = 0;
    dmg_write(dmg_path("v0.evp"), d, intact_size);
    expect_fatal(dmg_path("v0.evp"), 0, "unsupported format version 0.");

    dmg_write(dmg_path("empty.evp"), "", 0);
    expect_fatal(dmg_path("empty.evp"), 0, "empty file");
    if (dmg_have_dev_null())
        expect_fatal("/dev/null", 0, "character device");
    else
        print_message("note: /dev/null is not the null device here; "
                      "its check is left out\n");
    expect_fatal(dmg_tmpdir(), 0, "directory");
    expect_fatal(dmg_path("no-such-file.evp"), 0, "No such file");

    dmg_write(dmg_path("header.evp"), intact, EVP_FILE_HEADER_SIZE);
    expect_fatal(dmg_path("header.evp"), 0, "no readable chunk");
    dmg_write(dmg_path("short-header.evp"), intact, 12);
    expect_fatal(dmg_path("short-header.evp"), 0, "truncated file header");

    /* A header and then nothing but junk: the one-line error says what
     * the reader met first. */
    memcpy(d, intact, EVP_FILE_HEADER_SIZE);
    memset(d + EVP_FILE_HEADER_SIZE, 0x5a, 200);
    dmg_write(dmg_path("junk.evp"), d, EVP_FILE_HEADER_SIZE + 200);
    expect_fatal(dmg_path("junk.evp"), 0, "no readable chunk");
    expect_fatal(dmg_path("junk.evp"), 0, "byte 16");

    /* Random bytes, with and without the magic in front. */
    uint64_t rs = 42;
    for (int i = 0; i < 64; i++) {
        size_t n = 1 + dmg_rand(&rs) % intact_size;
        for (size_t k = 0; k < n; k++)
            d[k] = (uint8_t)dmg_rand(&rs);
        d[0] = d[0] ? d[0] : 1; /* a NUL first byte is text-looking data too */
        d[1] = 0;               /* and make it plainly binary */
        dmg_write(dmg_path("random.bin"), d, n);
        expect_fatal(dmg_path("random.bin"), 0, "not an evalprof trace");
        if (n > EVP_FILE_HEADER_SIZE) {
            memcpy(d, intact, EVP_FILE_HEADER_SIZE);
            dmg_write(dmg_path("random.evp"), d, n);
            expect_fatal(dmg_path("random.evp"), 0, "no readable chunk");
        }
    }
    /* A text trace forced through the binary reader. */
    dmg_write(dmg_path("text.trace"), "0.000000001 0\n", 14);
    expect_fatal(dmg_path("text.trace"), 1, "bad magic at byte 0");
    free(d);
}

/* ---- sampled traces (tests/sampled/sampgen.h) --------------------------- */

/* Samples of the trace at T, walked: their count and weights, and how
 * many name a stack node the table does not know. */
struct sample_walk {
    const struct evp_trace *t;
    uint64_t n, weight, unknown;
};

static int walk_batch(void *ctx, const struct evp_sample *s, size_t n)
{
    struct sample_walk *w = ctx;
    for (size_t i = 0; i < n; i++) {
        w->n++;
        w->weight += s[i].weight;
        w->unknown += s[i].stack && !evp_trace_stack(w->t, s[i].stack);
        /* the engine's frames: none where the leaf is unknown */
        assert_true(!(s[i].stack && !evp_trace_stack(w->t, s[i].stack)) ||
                    (s[i].depth == 0 && (s[i].flags & EVP_SMPF_CUT)));
    }
    return 0;
}

static struct sample_walk walk_samples(struct evp_trace *t)
{
    struct sample_walk w = {t, 0, 0, 0};
    static const struct evp_replay_ops ops = {.samples = walk_batch};
    assert_int_equal(evp_replay(t, NULL, &ops, &w), 0);
    assert_int_equal(w.n, evp_trace_nsamples(t));
    return w;
}

/* The sampled views, output thrown away: folded with each leaf, lines,
 * speedscope, diff against itself, the profiles.  Returns the failures. */
static int sampled_views(struct evp_trace *t)
{
    FILE *out =
        fopen(dmg_have_dev_null() ? "/dev/null" : dmg_path("sink"), "w");
    if (!out)
        return 1;
    int bad = 0;
    for (int k = 0; k < 4; k++) {
        struct evp_folded_opts fo = {
            .ops = k == 1, .phases = k == 2, .lines = k == 3, .stream = -1};
        bad += evp_view_folded(t, out, &fo) < 0;
    }
    struct evp_chrome_opts co = {.ops = 1, .phases = 1};
    bad += evp_view_speedscope(t, out, &co) < 0;
    bad += evp_view_chrome(t, out, &co) < 0;
    struct evp_diff_opts d = {.funcs = 1};
    bad += evp_view_diff(t, t, out, &d) < 0;
    struct evp_profile_opts po = {.ops = 1, .phases = 1, .max_depth = 2};
    bad += evp_view_pprof(t, out, &po) < 0;
    po = (struct evp_profile_opts){0};
    bad += evp_view_pstats(t, out, &po) < 0;
    bad += evp_view_callgrind(t, out, &po) < 0;
    if (evp_trace_meta(t, "lines.3"))
        bad += evp_view_lines_table(t, out, 0, -1, EVP_UNIT_AUTO, NULL) < 0;
    fclose(out);
    return bad + dmg_views(t);
}

/* Samples in the SAMPLES chunks of D wholly before byte CUT. */
static uint64_t samples_before(const uint8_t *d, const struct dmg_map *m,
                               size_t cut)
{
    uint64_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i].type == EVP_CHUNK_SAMPLES &&
            m->c[i].off + m->c[i].size <= cut)
            n += evp_get_u32(d + m->c[i].off + EVP_CHUNK_HEADER_SIZE + 32);
    return n;
}

/* mksampled's trace with options O: its bytes (*D, malloc'ed) and their
 * chunks; returns the size. */
static long sampled_bytes(const struct sampgen_opts *o, uint8_t **d,
                          struct dmg_map *m)
{
    const char *src = dmg_path("sampled-src.evp");
    assert_int_equal(sampgen_write(src, o), 0);
    long size = dmg_read(src, d);
    assert_true(size > 0);
    assert_int_equal(dmg_map_chunks(*d, (size_t)size, m), 0);
    return size;
}

static void test_samples_intact(void **state)
{
    (void)state;
    const char *path = dmg_path("sampled.evp");
    assert_int_equal(sampgen_write(path, NULL), 0);
    struct evp_trace *t;
    struct dmg_warn w = {0};
    char err[512];
    assert_int_equal(dmg_open(path, 0, &t, err, sizeof err, &w), 0);
    assert_int_equal(w.n, 0);
    const struct evp_trace_info *in = evp_trace_info(t);
    assert_true(in->sampled);
    assert_int_equal(in->samples, 955);
    assert_int_equal(in->sample_weight, 1000);
    assert_int_equal(in->sample_missed, 3);
    assert_true(in->sample_period_ns == 1e6 && in->sample_rate_hz == 1000);
    assert_string_equal(in->sample_clock, "cpu");
    assert_int_equal(evp_trace_nstacks(t), 4);
    const struct evp_stack_node *hot = evp_trace_stack(t, 3);
    assert_non_null(hot);
    assert_int_equal(hot->parent, 2);
    assert_int_equal(hot->func, 3);
    assert_int_equal(hot->depth, 3);
    assert_null(evp_trace_stack(t, 5));
    assert_int_equal(evp_trace_stream(t, 0)->samples, 625);
    assert_int_equal(evp_trace_stream(t, 1)->sample_weight, 350);
    struct sample_walk sw = walk_samples(t);
    assert_int_equal(sw.weight, 1000);
    assert_int_equal(sw.unknown, 0);
    assert_int_equal(sampled_views(t), 0);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

/* Cut at every byte, uncompressed and compressed: a one-line error when
 * no chunk is whole, else every sample of the whole SAMPLES chunks. */
static void test_samples_cut_every_byte(void **state)
{
    (void)state;
    for (int z = 0; z < 2; z++) {
        struct sampgen_opts so = {'a', z, 48, 0, 0, NULL, 0, 0};
        uint8_t *d;
        struct dmg_map m;
        long size = sampled_bytes(&so, &d, &m);
        const char *path = dmg_path("sampled-cut.evp");
        struct dmg_warn w = {0};
        char err[512];
        for (size_t cut = 0; cut < (size_t)size; cut++) {
            assert_int_equal(dmg_write(path, d, cut), 0);
            struct evp_trace *t = NULL;
            int rc = dmg_open(path, 0, &t, err, sizeof err, &w);
            if (cut < m.c[0].off + m.c[0].size) {
                if (rc >= 0)
                    fail_msg("cut at %zu: opened with no whole chunk", cut);
                check_one_line(err);
                continue;
            }
            if (rc < 0)
                fail_msg("cut at %zu: open failed: %s", cut, err);
            for (size_t i = 0; i < w.n; i++)
                assert_null(strchr(w.msg[i], '\n'));
            if (!z && evp_trace_nsamples(t) != samples_before(d, &m, cut))
                fail_msg("cut at %zu: %llu samples, expected %llu", cut,
                         (unsigned long long)evp_trace_nsamples(t),
                         (unsigned long long)samples_before(d, &m, cut));
            struct sample_walk sw = walk_samples(t);
            assert_int_equal(sw.unknown, 0);
            if (cut % 64 == 0 ||
                dmg_chunk_at(&m, cut) != dmg_chunk_at(&m, cut - 1))
                assert_int_equal(sampled_views(t), 0);
            evp_trace_close(t);
        }
        dmg_warn_free(&w);
        free(d);
    }
}

/* Every byte of the STACKS and SAMPLES chunks flipped: a warning naming
 * the chunk's byte, only that chunk lost; without the stack table every
 * sample's stack is unknown, and the views say "<unknown stack>". */
static int folded_unknown(void *ctx, const char *stack, size_t len, uint64_t ns)
{
    uint64_t *n = ctx;
    if (len >= strlen(EVP_STACK_UNKNOWN_NAME) &&
        memmem(stack, len, EVP_STACK_UNKNOWN_NAME,
               strlen(EVP_STACK_UNKNOWN_NAME)))
        *n += ns;
    return 0;
}

static void test_samples_flip(void **state)
{
    (void)state;
    uint8_t *d;
    struct dmg_map m;
    long size = sampled_bytes(NULL, &d, &m);
    const char *path = dmg_path("sampled-flip.evp");
    struct dmg_warn w = {0};
    char err[512];
    size_t tested = 0;
    for (size_t k = 0; k < m.n; k++) {
        const struct dmg_chunk *c = &m.c[k];
        if (c->type != EVP_CHUNK_STACKS && c->type != EVP_CHUNK_SAMPLES)
            continue;
        /* the first SAMPLES chunks wholly, the others sparsely */
        size_t step = c->type == EVP_CHUNK_STACKS || tested < 2 ? 1 : 37;
        uint32_t count =
            c->type == EVP_CHUNK_SAMPLES
                ? evp_get_u32(d + c->off + EVP_CHUNK_HEADER_SIZE + 32)
                : 0;
        tested++;
        for (size_t b = c->off; b < c->off + c->size; b += step) {
            d[b] ^= 0xff;
            assert_int_equal(dmg_write(path, d, (size_t)size), 0);
            d[b] ^= 0xff;
            struct evp_trace *t;
            if (dmg_open(path, 0, &t, err, sizeof err, &w) < 0)
                fail_msg("flip at %zu: open failed: %s", b, err);
            if (!dmg_warned(&w, dmg_fmt("byte %zu", c->off)))
                fail_msg("flip at %zu: no warning names byte %zu", b, c->off);
            for (size_t i = 0; i < w.n; i++)
                assert_null(strchr(w.msg[i], '\n'));
            struct sample_walk sw = walk_samples(t);
            if (c->type == EVP_CHUNK_SAMPLES) {
                assert_int_equal(sw.n, 955 - count);
                assert_int_equal(sw.unknown, 0);
            } else {
                assert_int_equal(sw.n, 955);
                /* all but the frameless (50 periods in 45 samples) */
                assert_int_equal(sw.unknown, 955 - 45);
                uint64_t ns = 0;
                struct evp_folded_opts fo = {.stream = -1};
                assert_int_equal(
                    evp_view_folded_each(t, &fo, folded_unknown, &ns), 0);
                assert_int_equal(ns, (uint64_t)950 * 1000000);
            }
            if (b % 16 == 0)
                assert_int_equal(sampled_views(t), 0);
            evp_trace_close(t);
        }
    }
    dmg_warn_free(&w);
    free(d);
}

/* One chunk of TYPE with payload P into F. */
static void put(FILE *f, unsigned type, const uint8_t *p, size_t len)
{
    uint8_t h[EVP_CHUNK_HEADER_SIZE];
    evp_chunk_header(h, type, 0, p, (uint32_t)len);
    assert_int_equal(fwrite(h, 1, sizeof h, f), sizeof h);
    assert_int_equal(fwrite(p, 1, len, f), len);
}

/* A sampled trace being written by hand to PATH: its header and the
 * metadata of a 1 µs timer period written. */
static FILE *sampled_file(const char *path)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint8_t h[EVP_FILE_HEADER_SIZE];
    evp_file_header(h);
    assert_int_equal(fwrite(h, 1, sizeof h, f), sizeof h);
    static const char meta[] = "clock\0monotonic\0sample.period_ns\0001000\0";
    put(f, EVP_CHUNK_META, (const uint8_t *)meta, sizeof meta - 1);
    return f;
}

/* A stack table damaged entry by entry (a duplicate, a missing caller, a
 * loop, an id far out of range) and samples naming a node never defined:
 * each a warning, the first definition kept, the cut stacks under
 * "<unknown stack>", nothing lost. */
static void test_stacks_damaged_entries(void **state)
{
    (void)state;
    const char *path = dmg_path("stacks.evp");
    FILE *f = sampled_file(path);
    uint8_t buf[1024];
    size_t k = evp_varint_put(buf, 3);
    k += evp_func_entry_put(buf + k, 1, "f", "m.py", 1);
    k += evp_func_entry_put(buf + k, 2, "g", "m.py", 2);
    k += evp_func_entry_put(buf + k, 3, "h", "m.py", 3);
    put(f, EVP_CHUNK_FUNCS, buf, k);
    static const uint32_t e[][3] = {{1, 0, 1},     {2, 1, 2}, {2, 0, 3},
                                    {3, 9, 2},     {4, 5, 1}, {5, 4, 2},
                                    {999999, 0, 1}};
    k = evp_varint_put(buf, sizeof e / sizeof e[0]);
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
        k += evp_stack_entry_put(buf + k, e[i][0], e[i][1], e[i][2]);
    put(f, EVP_CHUNK_STACKS, buf, k);
    struct evp_sample_rec s[] = {{10, 2, EVP_SAMPLE_IN_EVAL, 0, 1},
                                 {20, 3, EVP_SAMPLE_IN_EVAL, 0, 2},
                                 {30, 4, EVP_SAMPLE_IN_EVAL, 0, 3},
                                 {40, 7, EVP_SAMPLE_IN_EVAL, 0, 4},
                                 {50, 0, EVP_SAMPLE_NO_FRAME, 0, 5}};
    struct evp_events_prefix pf = {.stream = 0};
    uint8_t enc[512];
    k = evp_samples_encode(enc, &pf, s, 5, NULL);
    put(f, EVP_CHUNK_SAMPLES, enc, k);
    assert_int_equal(fclose(f), 0);

    struct evp_trace *t;
    struct dmg_warn w = {0};
    char err[512];
    assert_int_equal(dmg_open(path, 0, &t, err, sizeof err, &w), 0);
    assert_true(dmg_warned(&w, "already defined (the first for node 2)"));
    assert_true(dmg_warned(&w, "entries refused"));
    assert_true(dmg_warned(&w, "missing or damaged"));
    for (size_t i = 0; i < w.n; i++)
        assert_null(strchr(w.msg[i], '\n'));
    assert_int_equal(evp_trace_stack(t, 2)->func, 2); /* the first kept */
    assert_int_equal(evp_trace_stack(t, 2)->depth, 2);
    assert_int_equal(evp_trace_stack(t, 3)->parent, EVP_STACK_UNKNOWN);
    assert_true(evp_trace_stack(t, 4)->parent == EVP_STACK_UNKNOWN ||
                evp_trace_stack(t, 5)->parent == EVP_STACK_UNKNOWN);
    assert_null(evp_trace_stack(t, 7));
    struct sample_walk sw = walk_samples(t);
    assert_int_equal(sw.n, 5);
    assert_int_equal(sw.weight, 15);
    assert_int_equal(sw.unknown, 1);
    /* stacks 3, 4 (cut) and 7 (unknown): 2 + 3 + 4 periods of 1 µs */
    uint64_t ns = 0;
    struct evp_folded_opts fo = {.stream = -1};
    assert_int_equal(evp_view_folded_each(t, &fo, folded_unknown, &ns), 0);
    assert_int_equal(ns, 9000);
    assert_int_equal(sampled_views(t), 0);
    evp_trace_close(t);
    dmg_warn_free(&w);
}

/* A stack table of 70,000 nodes, one of them with a caller never
 * defined: read with a warning, and its copy (export --format evp), in
 * which that node hangs under a "<unknown stack>" node numbered after the
 * table, read without any, with the same stacks.  (The copy's node lay
 * 70,001 ids past the first entries, and a caller that far was refused.) */
static int folded_sum(void *ctx, const char *stack, size_t len, uint64_t ns)
{
    uint64_t *n = ctx;
    (void)stack;
    (void)len;
    *n += ns;
    return 0;
}

static void test_stacks_broken_copy_large(void **state)
{
    (void)state;
    enum { NODES = 70000, BROKEN = 100 };
    const char *path = dmg_path("stacks-large.evp");
    const char *copy = dmg_path("stacks-large-copy.evp");
    FILE *f = sampled_file(path);
    uint8_t *buf = malloc(16 + (size_t)NODES * 3 * EVP_VARINT_MAX);
    assert_non_null(buf);
    size_t k = evp_varint_put(buf, 1);
    k += evp_func_entry_put(buf + k, 1, "f", "m.py", 1);
    put(f, EVP_CHUNK_FUNCS, buf, k);
    /* a chain 1 <- 2 <- ... but node BROKEN's caller is 2 * NODES */
    k = evp_varint_put(buf, NODES);
    for (uint32_t id = 1; id <= NODES; id++)
        k += evp_stack_entry_put(buf + k, id, id == BROKEN ? 2 * NODES : id - 1,
                                 1);
    put(f, EVP_CHUNK_STACKS, buf, k);
    struct evp_sample_rec s[] = {{10, BROKEN - 1, EVP_SAMPLE_IN_EVAL, 0, 1},
                                 {20, BROKEN, EVP_SAMPLE_IN_EVAL, 0, 2},
                                 {30, NODES, EVP_SAMPLE_IN_EVAL, 0, 3}};
    struct evp_events_prefix pf = {.stream = 0};
    uint8_t enc[512];
    k = evp_samples_encode(enc, &pf, s, 3, NULL);
    put(f, EVP_CHUNK_SAMPLES, enc, k);
    assert_int_equal(fclose(f), 0);
    free(buf);

    struct evp_trace *t;
    struct dmg_warn w = {0};
    char err[512];
    assert_int_equal(dmg_open(path, 0, &t, err, sizeof err, &w), 0);
    assert_true(dmg_warned(&w, "missing"));
    assert_false(dmg_warned(&w, "refused"));
    assert_int_equal(evp_trace_stack(t, BROKEN)->parent, EVP_STACK_UNKNOWN);
    uint64_t unknown = 0, all = 0;
    struct evp_folded_opts fo = {.stream = -1};
    assert_int_equal(evp_view_folded_each(t, &fo, folded_unknown, &unknown), 0);
    assert_int_equal(evp_view_folded_each(t, &fo, folded_sum, &all), 0);
    assert_int_equal(unknown, 5000); /* the samples of BROKEN and NODES */
    assert_int_equal(all, 6000);
    assert_int_equal(evp_trace_write_evp(t, copy, 0, err, sizeof err), 0);
    evp_trace_close(t);
    dmg_warn_free(&w);

    struct dmg_warn w2 = {0};
    assert_int_equal(dmg_open(copy, 0, &t, err, sizeof err, &w2), 0);
    for (size_t i = 0; i < w2.n; i++)
        fprintf(stderr, "copy warns: %s\n", w2.msg[i]);
    assert_int_equal(w2.n, 0);
    uint64_t unknown2 = 0, all2 = 0;
    assert_int_equal(evp_view_folded_each(t, &fo, folded_unknown, &unknown2),
                     0);
    assert_int_equal(evp_view_folded_each(t, &fo, folded_sum, &all2), 0);
    assert_int_equal(unknown2, unknown);
    assert_int_equal(all2, all);
    assert_int_equal(evp_trace_stack(t, BROKEN)->depth, 2);
    evp_trace_close(t);
    dmg_warn_free(&w2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intact),
        cmocka_unit_test(test_truncate_every_byte),
        cmocka_unit_test(test_flip_every_byte),
        cmocka_unit_test(test_resync_each_chunk),
        cmocka_unit_test(test_random_damage),
        cmocka_unit_test(test_zstd_damage),
        cmocka_unit_test(test_zstd_changed_after_open),
        cmocka_unit_test(test_not_traces),
        cmocka_unit_test(test_samples_intact),
        cmocka_unit_test(test_samples_cut_every_byte),
        cmocka_unit_test(test_samples_flip),
        cmocka_unit_test(test_stacks_damaged_entries),
        cmocka_unit_test(test_stacks_broken_copy_large),
    };
    return cmocka_run_group_tests_name("damage-binary", tests, setup, teardown);
}
