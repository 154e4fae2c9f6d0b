/*
 * The known-shares sampled trace of sampgen.h, written with the codec's
 * entry writers and samples encoder: header, metadata, opcode and
 * function tables, thread names, the stack table, each stream's samples
 * in chunks, the end record.  Deterministic: the same options give the
 * same bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "evalprof/format.h"
#include "sampgen.h"

#define START_NS UINT64_C(1000000000)

enum { F_MAIN = 1, F_WORK, F_HOT, F_COLD };
enum { N_MAIN = 1, N_WORK, N_HOT, N_COLD };
enum {
    OP_BINARY_OP = 122,
    OP_LOAD_FAST = 124,
    OP_STORE_FAST = 125,
    OP_BINARY_OP_ADD_INT = 150,
    OP_CALL = 171
};
#define PH_DISPATCH 8
#define PH_OP 9

/* One category of samples: where they are and how many periods. */
struct cat {
    uint32_t stream, stack, opcode, phase, flags, unit;
    unsigned periods[2]; /* variant a, b */
};

static const struct cat cats[] = {
    {1, N_HOT, OP_BINARY_OP_ADD_INT, PH_OP, EVP_SAMPLE_IN_EVAL, 4, {200, 0}},
    {1, N_HOT, OP_BINARY_OP, PH_OP, EVP_SAMPLE_IN_EVAL, 4, {100, 100}},
    {1, N_HOT, OP_LOAD_FAST, PH_DISPATCH, EVP_SAMPLE_IN_EVAL, 8, {200, 200}},
    {1,
     N_HOT,
     OP_CALL,
     PH_OP,
     EVP_SAMPLE_IN_EVAL | EVP_SAMPLE_C_CALL,
     12,
     {100, 100}},
    {1, N_WORK, 0, 0, 0, 0, {50, 50}},
    {2, N_COLD, OP_BINARY_OP, PH_OP, EVP_SAMPLE_IN_EVAL, 4, {100, 300}},
    {2, N_COLD, OP_STORE_FAST, PH_OP, EVP_SAMPLE_IN_EVAL, 6, {100, 100}},
    {2,
     N_COLD,
     OP_CALL,
     PH_OP,
     EVP_SAMPLE_IN_EVAL | EVP_SAMPLE_C_CALL | EVP_SAMPLE_NO_GIL,
     10,
     {100, 100}},
    {2, 0, 0, 0, EVP_SAMPLE_NO_FRAME, 0, {50, 50}},
};
#define NCATS (sizeof cats / sizeof cats[0])

struct out {
    FILE *f;
    int zstd;
    uint8_t *z;
    size_t zcap;
};

static int put_chunk(struct out *o, unsigned type, const uint8_t *p, size_t len)
{
    unsigned flags = 0;
    if (o->zstd && len > 64) {
        size_t bound = ZSTD_compressBound(len) + 4;
        if (bound > o->zcap) {
            free(o->z);
            if (!(o->z = malloc(bound)))
                return -1;
            o->zcap = bound;
        }
        size_t zn = ZSTD_compress(o->z + 4, bound - 4, p, len, 3);
        if (!ZSTD_isError(zn) && zn + 4 < len) {
            evp_put_u32(o->z, (uint32_t)len);
            p = o->z;
            len = zn + 4;
            flags = EVP_CHUNK_F_ZSTD;
        }
    }
    uint8_t h[EVP_CHUNK_HEADER_SIZE];
    evp_chunk_header(h, type, flags, p, (uint32_t)len);
    return fwrite(h, 1, sizeof h, o->f) == sizeof h &&
                   fwrite(p, 1, len, o->f) == len
               ? 0
               : -1;
}

static size_t meta_put(uint8_t *p, const char *k, const char *v)
{
    size_t kl = strlen(k) + 1, vl = strlen(v) + 1;
    memcpy(p, k, kl);
    memcpy(p + kl, v, vl);
    return kl + vl;
}

/* A stream's samples: every category's periods as samples of weight 1,
 * but one of 5 and one of 2, shuffled with a fixed seed, then timed. */
static size_t stream_samples(uint32_t stream, int variant, uint64_t period,
                             int jit, struct evp_sample_rec *out)
{
    size_t n = 0;
    for (size_t c = 0; c < NCATS; c++) {
        const struct cat *k = &cats[c];
        unsigned left = k->periods[variant];
        if (k->stream != stream)
            continue;
        uint32_t flags = k->flags;
        if (jit && k->stack == N_HOT && k->opcode == OP_BINARY_OP_ADD_INT)
            flags = EVP_SAMPLE_IN_JIT | EVP_SAMPLE_TIER2;
        else if (jit && k->stack == N_HOT && k->opcode == OP_BINARY_OP)
            flags = EVP_SAMPLE_TIER2;
        while (left) {
            unsigned w = left >= 7 && left == k->periods[variant]       ? 5
                         : left >= 2 && left == k->periods[variant] - 5 ? 2
                                                                        : 1;
            out[n++] = (struct evp_sample_rec){
                0, k->stack,
                evp_sample_state(k->opcode ? k->opcode + 1 : 0,
                                 k->phase ? k->phase + 1 : 0, flags),
                k->unit, w};
            left -= w;
        }
    }
    uint64_t seed = 0x9e3779b97f4a7c15u ^ stream;
    for (size_t i = n; i > 1; i--) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t j = (size_t)(seed >> 33) % i;
        struct evp_sample_rec tmp = out[i - 1];
        out[i - 1] = out[j];
        out[j] = tmp;
    }
    uint64_t ts = START_NS + stream * 1000u;
    for (size_t i = 0; i < n; i++) {
        ts += (uint64_t)out[i].weight * period;
        out[i].ts = ts;
    }
    return n;
}

int sampgen_write(const char *path, const struct sampgen_opts *opts)
{
    static const struct sampgen_opts defaults = {'a', 0, 0, 0, 0, NULL, 0, 0};
    if (!opts)
        opts = &defaults;
    int variant = opts->variant == 'b';
    size_t per = opts->per_chunk ? opts->per_chunk : 64;
    struct out o = {fopen(path, "wb"), opts->zstd, NULL, 0};
    if (!o.f)
        return -1;
    uint8_t buf[4096];
    size_t k;
    int rc = 0;
    evp_file_header(buf);
    rc |= fwrite(buf, 1, EVP_FILE_HEADER_SIZE, o.f) != EVP_FILE_HEADER_SIZE;

    k = 0;
    k += meta_put(buf + k, "producer", "synthetic");
    k += meta_put(buf + k, "executable", "/usr/bin/python3.12");
    k += meta_put(buf + k, "argv",
                  variant ? "python3.12 gen.py b" : "python3.12 gen.py a");
    k += meta_put(buf + k, "python.version", "3.12.0");
    k += meta_put(buf + k, "pid", "4242");
    k += meta_put(buf + k, "clock", "monotonic");
    k += meta_put(buf + k, "start.ticks", "1000000000");
    k += meta_put(buf + k, "start.clock_ns", "1000000000");
    k += meta_put(buf + k, "start.wall_ns", "1764650000000000000");
    uint64_t period = opts->wall ? 250000u : 1000000u;
    k += meta_put(buf + k, "sample.clock", opts->wall ? "wall" : "cpu");
    k += meta_put(buf + k, "sample.rate_hz", opts->wall ? "4000" : "1000");
    k += meta_put(buf + k, "sample.period_ns",
                  opts->wall ? "250000" : "1000000");
    if (opts->root)
        k += meta_put(buf + k, "root.script", opts->root);
    k += meta_put(buf + k, "sample.signal", "SIGPROF");
    k += meta_put(buf + k, "sample.sampler", "timer_create SIGEV_THREAD_ID");
    k += meta_put(buf + k, "sample.max_depth", "128");
    if (opts->no_eval)
        k += meta_put(buf + k, "sample.eval_ranges", "0");
    if (opts->jit)
        k += meta_put(buf + k, "sample.jit",
                      "current_executor and _PyJIT_AddressInJitCode");
    k += meta_put(buf + k, "sample.missed", "3");
    k += meta_put(buf + k, "lines.3", "0:10,2:11,6:12,10:13");
    k += meta_put(buf + k, "lines.4", "0:20,2:21,8:22");
    if (opts->counts) {
        k += meta_put(buf + k, "counts.op.BINARY_OP_ADD_INT", "200000");
        k += meta_put(buf + k, "counts.op.BINARY_OP", "100000");
        k += meta_put(buf + k, "counts.op.LOAD_FAST", "2000000");
        k += meta_put(buf + k, "counts.op.STORE_FAST", "5");
    }
    rc |= put_chunk(&o, EVP_CHUNK_META, buf, k);

    static const struct {
        unsigned op, base;
        const char *name;
    } ops[] = {{OP_BINARY_OP, OP_BINARY_OP, "BINARY_OP"},
               {OP_LOAD_FAST, OP_LOAD_FAST, "LOAD_FAST"},
               {OP_STORE_FAST, OP_STORE_FAST, "STORE_FAST"},
               {OP_BINARY_OP_ADD_INT, OP_BINARY_OP, "BINARY_OP_ADD_INT"},
               {OP_CALL, OP_CALL, "CALL"}};
    k = evp_varint_put(buf, sizeof ops / sizeof ops[0]);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        k += evp_opcode_entry_put(buf + k, ops[i].op, ops[i].base, ops[i].name);
    rc |= put_chunk(&o, EVP_CHUNK_OPCODES, buf, k);

    static const struct {
        const char *name;
        uint32_t line;
    } funcs[] = {{"main", 1}, {"work", 5}, {"hot", 10}, {"cold", 20}};
    char file[512];
    snprintf(file, sizeof file, "%s%sgen.py", opts->root ? opts->root : "",
             opts->root ? "/" : "");
    k = evp_varint_put(buf, 4);
    for (uint32_t i = 0; i < 4; i++)
        k += evp_func_entry_put(buf + k, i + 1, funcs[i].name, file,
                                funcs[i].line);
    rc |= put_chunk(&o, EVP_CHUNK_FUNCS, buf, k);

    k = evp_thread_put(buf, 1, 1001, "MainThread");
    rc |= put_chunk(&o, EVP_CHUNK_THREAD, buf, k);
    k = evp_thread_put(buf, 2, 1002, "worker");
    rc |= put_chunk(&o, EVP_CHUNK_THREAD, buf, k);

    k = evp_varint_put(buf, 4);
    k += evp_stack_entry_put(buf + k, N_MAIN, 0, F_MAIN);
    k += evp_stack_entry_put(buf + k, N_WORK, N_MAIN, F_WORK);
    k += evp_stack_entry_put(buf + k, N_HOT, N_WORK, F_HOT);
    k += evp_stack_entry_put(buf + k, N_COLD, N_WORK, F_COLD);
    rc |= put_chunk(&o, EVP_CHUNK_STACKS, buf, k);

    struct evp_sample_rec s[1200];
    uint8_t *enc = malloc(evp_samples_bound(per));
    uint64_t end = START_NS;
    if (!enc) {
        fclose(o.f);
        return -1;
    }
    for (uint32_t stream = 1; stream <= 2; stream++) {
        size_t n = stream_samples(stream, variant, period, opts->jit, s);
        uint32_t seq = 0;
        for (size_t i = 0; i < n; i += per) {
            size_t m = n - i < per ? n - i : per;
            struct evp_events_prefix pf = {.stream = stream, .seq = seq++};
            pf.sync_ticks = pf.sync_ns = s[i + m - 1].ts;
            size_t len = evp_samples_encode(enc, &pf, s + i, m, NULL);
            rc |= put_chunk(&o, EVP_CHUNK_SAMPLES, enc, len);
        }
        if (n && s[n - 1].ts > end)
            end = s[n - 1].ts;
    }
    free(enc);

    memset(buf, 0, 48);
    evp_put_u64(buf, end);
    evp_put_u64(buf + 8, end);
    k = 48 + evp_varint_put(buf + 48, 0);
    rc |= put_chunk(&o, EVP_CHUNK_END, buf, k);
    free(o.z);
    if (fclose(o.f) != 0)
        rc = 1;
    if (rc)
        errno = EIO;
    return rc ? -1 : 0;
}
