/*
 * Text traces: the format of the eval-loop profiling discussion, read and
 * written.
 *
 *   # python: /path/to/python          header lines (any order)
 *   # argv: ./python -E ./setup.py build
 *   # start time: 1617222445 s (since epoch)
 *   # start clock: 17137493.663947837 s (on clock)
 *   # end clock: 17137494.467647860 s (on clock)
 *                                      blank line
 *   17137493.664739837 0               <sec>.<nsec> <id> [arg]
 *   # func: <module>                   names the next enter/exit
 *   17137493.666522537 3
 *   17137493.666524437 9 100           op: the opcode
 *   # log written: 0.000120000         time spent writing the log,
 *                                      left out of the elapsed figures
 *
 * evalprof adds lines the discussion's format cannot express, all of them
 * comments to an older reader (docs/FORMAT.md): "# opcode: N NAME BASE",
 * "# meta: key=value", "# function: ID<TAB>LINE<TAB>FILE<TAB>NAME" (then
 * enter/exit lines carry the id), "# thread: ID TID NAME" (the following
 * events belong to that thread), a second op argument, the oparg, and for
 * a sampled trace "# stack: ID PARENT FUNC" (its stack table) and
 * "# sample: <sec>.<nsec> STACK STATE WEIGHT UNIT" (a sample of the
 * current thread, docs/FORMAT.md "Samples"), read back into the samples
 * a binary trace holds.
 *
 * The reader is a hand-written scanner over the file in memory, or over a
 * stream (a pipe, standard input) a window at a time, keeping the records
 * and not the text: a 30 MB trace is read in well under a tenth of a
 * second.  A malformed line is a
 * warning with its line number, never the end of the read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evalprof/replay.h"
#include "file.h"
#include "internal.h"

/* ---- name interning --------------------------------------------------- */

struct name_key {
    const struct evp_trace *t;
    const char *name;
    size_t n;
};

static int same_name(const void *ctx, uint32_t id)
{
    const struct name_key *k = ctx;
    const char *nm = k->t->funcs[id].name;
    return strncmp(nm, k->name, k->n) == 0 && nm[k->n] == '\0';
}

/* The id of function NAME, adding it when new; 0 when out of memory. */
static uint32_t intern_func(struct evp_trace *t, struct evp_itab *names,
                            const char *name, size_t n)
{
    struct name_key k = {t, name, n};
    uint64_t h = evp_itab_hash_bytes(name, n);
    /* room first, so that the put cannot fail once the name is stored */
    if (evp_itab_reserve(names, names->n + 1) < 0)
        return 0;
    uint32_t id = evp_itab_find(names, h, same_name, &k);
    if (id != EVP_ITAB_NONE)
        return id;
    id = (uint32_t)t->nfuncs;
    if (evp_trace_set_func(t, id, name, n, "", 0, 0) < 0 ||
        evp_itab_put(names, h, id) < 0)
        return 0;
    return id;
}

/* ---- reading ------------------------------------------------------------- */

/* A stream's records waiting to be encoded: text traces are kept as the
 * binary ones are, EVENTS payloads of the codec (2-3 bytes an event
 * instead of a 16-byte record, and less than the text), and replayed by
 * the same loop. */
#define RUN 4096
/* A jump forward larger than this starts a new run (the codec's deltas
 * hold 59 bits). */
#define RUN_MAX_DELTA ((uint64_t)1 << 58)

struct run {
    struct evp_rec_record *v;
    size_t n, cap;
    uint64_t last_ts; /* of the stream's last record */
    uint32_t seq;     /* runs encoded so far */
    uint64_t events;  /* events (not "log written" records) */
    /* the stream's samples, encoded as SAMPLES payloads likewise */
    struct evp_sample_rec *sv;
    size_t sn, scap;
    uint64_t slast_ts;
    uint32_t sseq;
    uint64_t samples;
};

struct text_reader {
    struct evp_trace *t;
    struct evp_itab names; /* function names -> ids */
    /* each stream's run, by the stream's index in the trace (which finds
     * streams by id) */
    struct run *runs;
    size_t nruns, runs_cap;
    size_t cur;    /* index + 1 of the stream events go to, 0: none yet */
    char *pending; /* "# func:" name for the next event (have_pending) */
    size_t pending_len, pending_cap;
    int have_pending;
    int explicit_ids; /* a "# function:" table was given */
    uint64_t line;
    uint64_t end_line; /* of the "# end clock:" header */
    uint64_t events, headers, bad_lines, backwards;
};

/* Encode stream I's waiting records as one more segment; 0 or -1. */
static int flush_run(struct text_reader *rd, size_t i)
{
    struct run *r = &rd->runs[i];
    if (!r->n)
        return 0;
    struct segment seg = {0};
    uint8_t *p = malloc(evp_events_bound(r->n));
    if (!p)
        return -1;
    seg.pf.stream = rd->t->streams[i].pub.id;
    seg.pf.seq = r->seq++;
    seg.len = evp_events_encode(p, &seg.pf, r->v, r->n, NULL);
    uint8_t *fit = realloc(p, seg.len);
    seg.payload = evp_trace_own(rd->t, fit ? fit : p);
    r->n = 0;
    if (!seg.payload || evp_stream_add_segment(&rd->t->streams[i], &seg) < 0)
        return -1;
    return 0;
}

/* Encode stream I's waiting samples as one more SAMPLES segment, indexed
 * as a binary trace's (samples.c); 0 or -1. */
static int flush_samples(struct text_reader *rd, size_t i)
{
    struct run *r = &rd->runs[i];
    if (!r->sn)
        return 0;
    struct segment seg = {0};
    uint8_t *p = malloc(evp_samples_bound(r->sn));
    if (!p)
        return -1;
    seg.pf.stream = rd->t->streams[i].pub.id;
    seg.pf.seq = r->sseq++;
    seg.len = evp_samples_encode(p, &seg.pf, r->sv, r->sn, NULL);
    uint8_t *fit = realloc(p, seg.len);
    seg.payload = evp_trace_own(rd->t, fit ? fit : p);
    r->sn = 0;
    if (!seg.payload ||
        evp_samples_index(rd->t, &rd->t->streams[i], &seg, seg.payload) < 0)
        return -1;
    return 0;
}

/* Add REC to stream I (a run is encoded when full, or when REC goes
 * back in time: runs keep the exact timestamps the codec could not). */
static int push(struct text_reader *rd, size_t i,
                const struct evp_rec_record *rec)
{
    struct run *r = &rd->runs[i];
    if (r->n &&
        (rec->ts < r->last_ts || rec->ts - r->last_ts > RUN_MAX_DELTA) &&
        flush_run(rd, i) < 0)
        return -1;
    /* small at first: a trace may have tens of thousands of threads with
     * a handful of events each */
    if (evp_grow((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v, 16))
        return -1;
    r->v[r->n++] = *rec;
    r->last_ts = rec->ts;
    r->events += rec->kind != EVP_EV_LOG_WRITTEN;
    return r->n == RUN ? flush_run(rd, i) : 0;
}

/* Make the stream with id ID the current one (made when new); 0, or -1
 * when out of memory. */
static int switch_stream(struct text_reader *rd, uint32_t id)
{
    struct stream *s = evp_trace_get_stream(rd->t, id);
    if (!s)
        return -1;
    size_t i = (size_t)(s - rd->t->streams);
    if (i >= rd->nruns) {
        if (evp_grow((void **)&rd->runs, &rd->runs_cap, i + 1, sizeof *rd->runs,
                     8))
            return -1;
        memset(rd->runs + rd->nruns, 0, (i + 1 - rd->nruns) * sizeof *rd->runs);
        rd->nruns = i + 1;
    }
    rd->cur = i + 1;
    return 0;
}

/* The index of the current stream (stream 0 when no "# thread:" line
 * came first); -1 when out of memory. */
static long current(struct text_reader *rd)
{
    if (!rd->cur && switch_stream(rd, 0) < 0)
        return -1;
    return (long)rd->cur - 1;
}

/* Parse an unsigned decimal; returns the end or NULL. */
static const char *parse_u64(const char *p, const char *end, uint64_t *v)
{
    if (p >= end || *p < '0' || *p > '9')
        return NULL;
    uint64_t x = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return NULL;
        x = x * 10 + d;
        p++;
    }
    *v = x;
    return p;
}

/* "<sec>[.<up to 9 digits>]" as ns, up to 2^64-1 ns (the range of the
 * binary format's clock); returns the end or NULL. */
static const char *parse_time(const char *p, const char *end, uint64_t *ns)
{
    uint64_t sec, frac = 0;
    p = parse_u64(p, end, &sec);
    if (!p || sec > UINT64_MAX / 1000000000u)
        return NULL;
    if (p < end && *p == '.') {
        p++;
        unsigned digits = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits == 9)
                return NULL;
            frac = frac * 10 + (uint64_t)(*p - '0');
            digits++;
            p++;
        }
        if (!digits)
            return NULL;
        while (digits++ < 9)
            frac *= 10;
    }
    if (frac > UINT64_MAX - sec * 1000000000u)
        return NULL;
    *ns = sec * 1000000000u + frac;
    return p;
}

static const char *skip_spaces(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Undo the writer's escapes (\n, \r, \t, \\) in place; returns the
 * length. */
static size_t unescape(char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char c = s[i + 1];
            if (c == 'n' || c == 'r' || c == 't' || c == '\\') {
                s[o++] = c == 'n'   ? '\n'
                         : c == 'r' ? '\r'
                         : c == 't' ? '\t'
                                    : '\\';
                i++;
                continue;
            }
        }
        s[o++] = s[i];
    }
    return o;
}

static int has_prefix(const char *p, const char *end, const char *pre,
                      const char **rest)
{
    size_t n = strlen(pre);
    if ((size_t)(end - p) < n || memcmp(p, pre, n) != 0)
        return 0;
    *rest = p + n;
    return 1;
}

static char *dup_range(struct evp_trace *t, const char *p, const char *end)
{
    return evp_trace_strdup(t, p, (size_t)(end - p));
}

static void bad_line(struct text_reader *rd, const char *what)
{
    rd->bad_lines++;
    evp_trace_warnf(rd->t, "line %" PRIu64 ": %s; line skipped", rd->line,
                    what);
}

static int meta_range(struct evp_trace *t, const char *key, const char *p,
                      const char *end)
{
    char *v = dup_range(t, p, end);
    return v ? evp_trace_set_meta(t, key, v) : -1;
}

/* ---- "# ..." lines: one handler per prefix --------------------------------
 */

/* "# func: NAME": names the next enter/exit (kept until then: the line
 * it points into may be gone by the time a stream's event line comes). */
static void c_func(struct text_reader *rd, const char *r, const char *end)
{
    r = skip_spaces(r, end);
    size_t n = (size_t)(end - r);
    if (evp_grow((void **)&rd->pending, &rd->pending_cap, n + 1, 1, 64)) {
        bad_line(rd, "out of memory");
        return;
    }
    memcpy(rd->pending, r, n);
    rd->pending_len = n;
    rd->have_pending = 1;
}

/* "# log written: SECONDS": time the tracer spent writing its log. */
static void c_log_written(struct text_reader *rd, const char *r,
                          const char *end)
{
    uint64_t ns;
    const char *e = parse_time(skip_spaces(r, end), end, &ns);
    if (!e || ns > UINT32_MAX) {
        bad_line(rd, "malformed '# log written:' annotation (expected "
                     "seconds below 4.29)");
        return;
    }
    long i = current(rd);
    if (i < 0)
        return;
    struct evp_rec_record rec = {rd->runs[i].last_ts, EVP_EV_LOG_WRITTEN, 0,
                                 (uint32_t)ns};
    if (push(rd, (size_t)i, &rec) < 0)
        bad_line(rd, "out of memory");
}

static void c_python(struct text_reader *rd, const char *r, const char *end)
{
    meta_range(rd->t, "executable", skip_spaces(r, end), end);
}

static void c_argv(struct text_reader *rd, const char *r, const char *end)
{
    meta_range(rd->t, "argv", skip_spaces(r, end), end);
}

static void c_start_time(struct text_reader *rd, const char *r, const char *end)
{
    uint64_t v;
    const char *e = parse_u64(skip_spaces(r, end), end, &v);
    if (!e)
        bad_line(rd, "malformed '# start time:' header");
    else
        meta_range(rd->t, "start.time_s", skip_spaces(r, end), e);
}

static void clock_line(struct text_reader *rd, const char *r, const char *end,
                       const char *key, const char *what)
{
    uint64_t ns;
    if (!parse_time(skip_spaces(r, end), end, &ns)) {
        char msg[64];
        snprintf(msg, sizeof msg, "malformed '# %s' header", what);
        bad_line(rd, msg);
        return;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, ns);
    evp_trace_set_meta(rd->t, key, buf);
}

static void c_start_clock(struct text_reader *rd, const char *r,
                          const char *end)
{
    clock_line(rd, r, end, "start.clock_ns", "start clock:");
}

static void c_end_clock(struct text_reader *rd, const char *r, const char *end)
{
    clock_line(rd, r, end, "end.clock_ns", "end clock:");
    rd->end_line = rd->line;
}

/* "# opcode: N NAME [BASE]" */
static void c_opcode(struct text_reader *rd, const char *r, const char *end)
{
    struct evp_trace *t = rd->t;
    uint64_t op, base;
    const char *e = parse_u64(skip_spaces(r, end), end, &op);
    const char *n0 = e ? skip_spaces(e, end) : NULL, *n1 = n0;
    while (n1 && n1 < end && *n1 != ' ' && *n1 != '\t')
        n1++;
    if (!e || op > 0xffff || n0 == n1) {
        bad_line(rd, "malformed '# opcode:' line");
        return;
    }
    base = op;
    const char *b = skip_spaces(n1, end);
    if (b < end && (!parse_u64(b, end, &base) || base > 0xffff)) {
        bad_line(rd, "malformed '# opcode:' base");
        return;
    }
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(n1 - n0), n0);
    name[unescape(name, strlen(name))] = '\0';
    evp_trace_set_opcode(t, (unsigned)op, name, (unsigned)base);
    t->ops_from_trace = 1;
    t->info.opcode_source = "recorded in the trace";
}

/* "# meta: KEY=VALUE", both sides escaped by the writer (put_escaped). */
static void c_meta(struct text_reader *rd, const char *r, const char *end)
{
    struct evp_trace *t = rd->t;
    r = skip_spaces(r, end);
    const char *eq = memchr(r, '=', (size_t)(end - r));
    if (!eq || eq == r) {
        bad_line(rd, "malformed '# meta:' line (expected key=value)");
        return;
    }
    char *key = dup_range(t, r, eq), *val = dup_range(t, eq + 1, end);
    if (key && val) {
        key[unescape(key, strlen(key))] = '\0';
        val[unescape(val, strlen(val))] = '\0';
        evp_trace_set_meta(t, key, val);
    }
}

/* "# function: ID<TAB>LINE<TAB>FILE<TAB>NAME" */
static void c_function(struct text_reader *rd, const char *r, const char *end)
{
    struct evp_trace *t = rd->t;
    uint64_t id, line;
    const char *e = parse_u64(skip_spaces(r, end), end, &id), *f, *n;
    if (!e || e == end || *e != '\t' || !(e = parse_u64(e + 1, end, &line)) ||
        (e < end && *e != '\t') || id == 0 || id > MAX_FUNC_ID ||
        line > UINT32_MAX) {
        bad_line(rd, "malformed '# function:' line");
        return;
    }
    /* An empty NAME (and FILE) leaves no tab: the line's trailing blanks
     * were trimmed, and the tabs before them with them. */
    const char *fs = e < end ? e + 1 : end;
    if (!(f = memchr(fs, '\t', (size_t)(end - fs))))
        f = end;
    n = f < end ? f + 1 : end;
    char *file = dup_range(t, fs, f), *name = dup_range(t, n, end);
    if (!file || !name)
        return;
    size_t nl = unescape(name, strlen(name));
    size_t fl = unescape(file, strlen(file));
    if (evp_trace_set_func(t, (uint32_t)id, name, nl, file, fl,
                           (uint32_t)line) < 0) {
        bad_line(rd, "'# function:' id out of range for this file");
        return;
    }
    rd->explicit_ids = 1;
}

/* "# stack: ID PARENT FUNC": a node of the stack table (its caller's
 * node, 0 for none, and its function's id). */
static void c_stack(struct text_reader *rd, const char *r, const char *end)
{
    uint64_t id, parent, func;
    const char *e = parse_u64(skip_spaces(r, end), end, &id);
    if (e)
        e = parse_u64(skip_spaces(e, end), end, &parent);
    if (e)
        e = parse_u64(skip_spaces(e, end), end, &func);
    if (!e || skip_spaces(e, end) != end) {
        bad_line(rd, "malformed '# stack:' line");
        return;
    }
    if (evp_stack_add(rd->t, id, parent, func) == -EINVAL)
        bad_line(rd, "'# stack:' line out of range");
}

/* "# sample: <sec>.<nsec> STACK STATE WEIGHT UNIT": a sample of the
 * current thread (docs/FORMAT.md "Samples"). */
static void c_sample(struct text_reader *rd, const char *r, const char *end)
{
    uint64_t ts, v[4];
    const char *e = parse_time(skip_spaces(r, end), end, &ts);
    for (int k = 0; k < 4 && e; k++) {
        e = parse_u64(skip_spaces(e, end), end, &v[k]);
        if (e && v[k] > UINT32_MAX)
            e = NULL;
    }
    if (!e || skip_spaces(e, end) != end) {
        bad_line(rd, "malformed '# sample:' line");
        return;
    }
    long i = current(rd);
    if (i < 0)
        return;
    struct run *run = &rd->runs[i];
    if ((run->sn && ts < run->slast_ts && flush_samples(rd, (size_t)i) < 0) ||
        evp_grow((void **)&run->sv, &run->scap, run->sn + 1, sizeof *run->sv,
                 16))
        return;
    run->sv[run->sn++] = (struct evp_sample_rec){
        ts, (uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[3], (uint32_t)v[2]};
    run->slast_ts = ts;
    run->samples++;
    if (run->sn == RUN)
        flush_samples(rd, (size_t)i);
}

/* "# thread: ID TID [NAME]": the following events are that thread's. */
static void c_thread(struct text_reader *rd, const char *r, const char *end)
{
    struct evp_trace *t = rd->t;
    uint64_t id, tid;
    const char *e = parse_u64(skip_spaces(r, end), end, &id), *e2;
    if (!e || id > UINT32_MAX ||
        !(e2 = parse_u64(skip_spaces(e, end), end, &tid))) {
        bad_line(rd, "malformed '# thread:' line");
        return;
    }
    if (switch_stream(rd, (uint32_t)id) < 0)
        return;
    struct stream *s = &t->streams[rd->cur - 1];
    s->pub.tid = tid;
    const char *nm = skip_spaces(e2, end);
    if (nm < end) {
        s->name = dup_range(t, nm, end);
        if (s->name)
            s->name[unescape(s->name, strlen(s->name))] = '\0';
    }
}

static const struct comment_kind {
    const char *prefix;
    void (*handle)(struct text_reader *rd, const char *rest, const char *end);
    int header; /* counts as a header (a file of these is a trace) */
} comment_kinds[] = {
    {"func:", c_func, 0},
    {"log written:", c_log_written, 0},
    {"python:", c_python, 1},
    {"argv:", c_argv, 1},
    {"start time:", c_start_time, 1},
    {"start clock:", c_start_clock, 1},
    {"end clock:", c_end_clock, 1},
    {"opcode:", c_opcode, 1},
    {"meta:", c_meta, 1},
    {"function:", c_function, 1},
    {"thread:", c_thread, 1},
    {"stack:", c_stack, 1},
    {"sample:", c_sample, 1},
};

/* A "# ..." line (without the leading "#"); any other is a plain
 * comment. */
static void comment_line(struct text_reader *rd, const char *p, const char *end)
{
    const char *r;
    p = skip_spaces(p, end);
    for (size_t i = 0; i < sizeof comment_kinds / sizeof *comment_kinds; i++)
        if (has_prefix(p, end, comment_kinds[i].prefix, &r)) {
            rd->headers += (uint64_t)comment_kinds[i].header;
            comment_kinds[i].handle(rd, r, end);
            return;
        }
}

static void event_line(struct text_reader *rd, const char *p, const char *end)
{
    uint64_t ts, kind, a = 0, b = 0;
    int na = 0;
    const char *e = parse_time(p, end, &ts);
    if (!e || e == end || (*e != ' ' && *e != '\t')) {
        bad_line(rd, "malformed event line (expected '<sec>.<nsec> <id> "
                     "[arg]')");
        return;
    }
    e = parse_u64(skip_spaces(e, end), end, &kind);
    if (!e || kind > 0xffff) {
        bad_line(rd, "malformed event id");
        return;
    }
    e = skip_spaces(e, end);
    if (e < end) {
        if (!(e = parse_u64(e, end, &a)) || a > UINT32_MAX) {
            bad_line(rd, "malformed event argument");
            return;
        }
        na = 1;
        e = skip_spaces(e, end);
        if (e < end) {
            if (!(e = parse_u64(e, end, &b)) || b > UINT32_MAX) {
                bad_line(rd, "malformed second event argument");
                return;
            }
            na = 2;
            e = skip_spaces(e, end);
        }
        if (e < end) {
            bad_line(rd, "trailing text after the event");
            return;
        }
    }

    struct evp_rec_record rec = {ts, (uint16_t)kind, 0, 0};
    const struct evp_kind_info *ki = evp_kind_info((unsigned)kind);
    if (ki && ki->arg == EVP_ARG_FUNC) {
        uint32_t id = 0;
        if (na >= 1 && rd->explicit_ids) {
            id = (uint32_t)a;
        } else if (rd->have_pending) {
            id = intern_func(rd->t, &rd->names, rd->pending,
                             unescape(rd->pending, rd->pending_len));
        } else if (na >= 1) {
            id = (uint32_t)a;
        }
        rec.arg = id;
    } else if (ki && ki->arg == EVP_ARG_OP) {
        if (a > 0xffff) {
            bad_line(rd, "opcode out of range");
            return;
        }
        rec.aux = (uint16_t)a;
        rec.arg = (uint32_t)b;
        if (na == 2)
            evp_trace_set_meta(rd->t, "oparg", "1");
    } else {
        if (b > 0xffff) {
            bad_line(rd, "second argument out of range");
            return;
        }
        rec.arg = (uint32_t)a;
        rec.aux = (uint16_t)b;
    }
    rd->have_pending = 0;

    long i = current(rd);
    if (i < 0)
        return;
    struct run *r = &rd->runs[i];
    if ((r->n || r->seq) && ts < r->last_ts && rd->backwards++ == 0)
        evp_trace_warnf(rd->t,
                        "line %" PRIu64 ": timestamp earlier than the "
                        "previous event (elapsed times there count as 0)",
                        rd->line);
    if (push(rd, (size_t)i, &rec) < 0) {
        bad_line(rd, "out of memory");
        return;
    }
    rd->events++;
}

/* One line (without its newline), as the discussion's format has it. */
static void one_line(struct text_reader *rd, const char *p, const char *le,
                     int has_nl)
{
    rd->line++;
    const char *e = le;
    if (e > p && e[-1] == '\r')
        e--;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    const char *nul = memchr(p, '\0', (size_t)(e - p));
    if (nul) {
        char msg[96];
        snprintf(msg, sizeof msg, "NUL byte at column %zu",
                 (size_t)(nul - p) + 1);
        bad_line(rd, msg);
    } else if (e > p && *p == '#') {
        comment_line(rd, p + 1, e);
    } else if (e > p) {
        event_line(rd, p, e);
    }
    /* Every line a writer writes ends in a newline: without one, the
     * file was probably cut inside this line. */
    if (!has_nl && e > p)
        evp_trace_warnf(rd->t,
                        "line %" PRIu64 ": no newline at the end of the "
                        "file (cut short?); the line was read as it "
                        "stands",
                        rd->line);
}

/* The whole lines of [P, END) (and, at EOF, the last one without its
 * newline); returns the bytes consumed. */
static size_t lines(struct text_reader *rd, const char *p, const char *end,
                    int eof)
{
    const char *start = p;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl && !eof)
            break;
        one_line(rd, p, nl ? nl : end, nl != NULL);
        p = nl ? nl + 1 : end;
    }
    return (size_t)(p - start);
}

/* A stream's window: room for this many bytes of lines at a time, and a
 * line longer than LINE_MAX is skipped (a regular file's are not: it is
 * in memory anyway). */
#define WINDOW ((size_t)1 << 20)
#define LINE_MAX_STREAM ((size_t)64 << 20)
/* A stream with nothing of a trace in this many bytes is not one. */
#define JUNK_MAX ((size_t)16 << 20)

/* The rest of the stream FD after the N bytes at DATA, line by line:
 * 0, or -1 (ERR set) when reading fails or the stream is junk. */
static int read_stream(struct text_reader *rd, const char *data, size_t n,
                       int fd, char *err, size_t errlen)
{
    size_t cap = n > WINDOW ? n : WINDOW, len = n, seen = 0;
    char *buf = malloc(cap);
    int skipping = 0, rc = 0;
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(buf, data, n);
    for (int eof = 0; !eof;) {
        if (len < cap) {
            ssize_t r = evp_file_read(fd, buf + len, cap - len);
            if (r < 0) {
                snprintf(err, errlen, "%s", strerror((int)-r));
                rc = -1;
                break;
            }
            eof = (size_t)r < cap - len;
            len += (size_t)r;
        }
        size_t used = 0;
        if (skipping) {
            /* the rest of an over-long line */
            const char *nl = memchr(buf, '\n', len);
            used = nl ? (size_t)(nl - buf) + 1 : len;
            skipping = !nl;
        }
        used += lines(rd, buf + used, buf + len, eof);
        seen += used;
        memmove(buf, buf + used, len - used);
        len -= used;
        if (len == cap) {
            /* one line fills the window */
            char *nb = cap < LINE_MAX_STREAM ? realloc(buf, 2 * cap) : NULL;
            if (nb) {
                buf = nb;
                cap *= 2;
            } else {
                rd->line++;
                bad_line(rd, "line longer than 64 MiB");
                seen += len;
                len = 0;
                skipping = 1;
            }
        }
        if (!rd->events && !rd->headers && seen > JUNK_MAX) {
            snprintf(err, errlen,
                     "not an evalprof trace: no event line and no header "
                     "in its first %zu MiB",
                     JUNK_MAX >> 20);
            rc = -1;
            break;
        }
    }
    free(buf);
    return rc;
}

/* Free the text reader's state: once read, or from evp_trace_close when
 * a mapped file cut under the read jumped out of it (evp_file_guard). */
void evp_text_reader_free(struct evp_trace *t)
{
    struct text_reader *rd = t->open_text;
    if (!rd)
        return;
    for (size_t i = 0; i < rd->nruns; i++) {
        free(rd->runs[i].v);
        free(rd->runs[i].sv);
    }
    free(rd->runs);
    free(rd->pending);
    evp_itab_free(&rd->names);
    free(rd);
    t->open_text = NULL;
}

int evp_text_read(struct evp_trace *t, const char *data, size_t n, int fd,
                  char *err, size_t errlen)
{
    struct text_reader *rd = calloc(1, sizeof *rd);
    if (!rd) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    rd->t = t;
    t->open_text = rd;
    if (fd < 0) {
        lines(rd, data, data + n, 1);
    } else if (read_stream(rd, data, n, fd, err, errlen) < 0) {
        evp_text_reader_free(t);
        return -EPROTO;
    }

    if (!rd->events && !rd->headers) {
        snprintf(err, errlen,
                 "not an evalprof trace: no event lines and no headers%s",
                 rd->bad_lines ? " (line 1 is not a trace line)" : "");
        evp_text_reader_free(t);
        return -EPROTO;
    }
    if (rd->bad_lines)
        evp_trace_warnf(t, "%" PRIu64 " malformed line%s skipped",
                        rd->bad_lines, rd->bad_lines > 1 ? "s" : "");

    for (size_t i = 0; i < rd->nruns; i++) {
        if (flush_run(rd, i) < 0 || flush_samples(rd, i) < 0) {
            evp_text_reader_free(t);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        t->streams[i].pub.events += rd->runs[i].events;
        /* (a stream of samples has their chunks, counted apart) */
        if (rd->runs[i].events || !rd->runs[i].samples)
            t->streams[i].pub.chunks++;
    }
    uint64_t end_line = rd->end_line;
    evp_text_reader_free(t);

    /* The clock is the trace's own: ticks are nanoseconds. */
    const char *v;
    if (!evp_trace_meta(t, "producer"))
        evp_trace_set_meta(t, "producer", EVP_PRODUCER_TEXT);
    /* Older exports copied the recording's clock metadata, so their
     * per-event cost is in the recording's ticks: converted here. */
    const char *hz = evp_trace_meta(t, "clock.hz");
    if (hz && atof(hz) > 0 && (v = evp_trace_meta(t, "event_cost.ticks"))) {
        char buf[40];
        snprintf(buf, sizeof buf, "%.17g", atof(v) * 1e9 / atof(hz));
        evp_trace_set_meta(t, "event_cost.ticks", buf);
    }
    if (hz)
        evp_trace_set_meta(t, "clock.hz", "1000000000");
    evp_trace_set_meta(t, "clock", "text");
    t->info.clock_hz = 1e9;
    t->mult = UINT64_C(1) << 32;
    t->anchor_ticks = t->anchor_ns = 0;
    if ((v = evp_trace_meta(t, "start.clock_ns")))
        t->info.start_ns = strtoull(v, NULL, 10);
    else if (t->nstreams && t->streams[0].nsegs)
        t->info.start_ns = t->streams[0].segs[0].pf.base_ticks;
    if ((v = evp_trace_meta(t, "end.clock_ns"))) {
        uint64_t end = strtoull(v, NULL, 10);
        if (end >= t->info.start_ns) {
            t->info.end_ns = end;
            t->info.has_end = 1;
        } else {
            evp_trace_warnf(t,
                            "line %" PRIu64 ": end clock %" PRIu64
                            " ns is before the start (%" PRIu64
                            " ns); the end is taken from the last event",
                            end_line, end, t->info.start_ns);
        }
    }
    /* Wall time as the discussion's analyzer shows it: the whole seconds
     * of "start time" plus the fraction of "start clock". */
    if (!evp_trace_meta(t, "start.wall_ns") &&
        (v = evp_trace_meta(t, "start.time_s"))) {
        uint64_t s = strtoull(v, NULL, 10);
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64,
                 s * 1000000000u + t->info.start_ns % 1000000000u);
        evp_trace_set_meta(t, "start.wall_ns", buf);
    }
    if (!evp_trace_meta(t, "oparg"))
        evp_trace_set_meta(t, "oparg", "0");
    return 0;
}

/* ---- writing ------------------------------------------------------------- */

/* Write S with newlines and carriage returns escaped but backslashes
 * kept: for the discussion's own header lines, whose readers do not
 * unescape, yet which must stay one line each. */
static void put_oneline(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n')
            fputs("\\n", f);
        else if (*s == '\r')
            fputs("\\r", f);
        else
            putc(*s, f);
    }
}

/* Write S with newlines, carriage returns, tabs (the field separator of
 * "# function:" lines, and trimmed at a line's end) and backslashes
 * escaped. */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n')
            fputs("\\n", f);
        else if (*s == '\r')
            fputs("\\r", f);
        else if (*s == '\t')
            fputs("\\t", f);
        else if (*s == '\\')
            fputs("\\\\", f);
        else
            putc(*s, f);
    }
}

static void put_time(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

/* Metadata with a header line of its own, or derived on reading. */
static int meta_is_header(const char *key)
{
    static const char *const keys[] = {
        "executable", "argv", "start.time_s", "start.clock_ns", "end.clock_ns",
        "oparg",      NULL};
    for (int i = 0; keys[i]; i++)
        if (strcmp(key, keys[i]) == 0)
            return 1;
    return 0;
}

struct text_writer {
    struct evp_trace *t;
    FILE *f;
    int ids;     /* write function ids (a "# function:" table exists) */
    int oparg;   /* write opargs */
    int threads; /* write "# thread:" lines */
};

static int tw_begin(void *ctx, const struct evp_stream *s)
{
    struct text_writer *w = ctx;
    if (w->threads) {
        fprintf(w->f, "# thread: %u %" PRIu64 " ", s->id, s->tid);
        put_escaped(w->f, s->name);
        putc('\n', w->f);
    }
    return 0;
}

/* A stream's samples follow its events, one "# sample:" line each. */
static int tw_samples(void *ctx, const struct evp_sample *smp, size_t n)
{
    struct text_writer *w = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_sample *s = &smp[i];
        fputs("# sample: ", w->f);
        put_time(w->f, s->ts);
        fprintf(w->f, " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 "\n",
                s->stack, s->state, s->weight, s->unit);
    }
    return ferror(w->f) ? -EIO : 0;
}

static int tw_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct text_writer *w = ctx;
    FILE *f = w->f;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        const struct evp_kind_info *ki = evp_kind_info(e->kind);
        if (e->kind == EVP_EV_LOG_WRITTEN) {
            fputs("# log written: ", f);
            put_time(f, e->arg);
            putc('\n', f);
            continue;
        }
        if (ki && ki->arg == EVP_ARG_FUNC) {
            const struct evp_func *fn = evp_trace_func(w->t, e->arg);
            if (fn) {
                fputs("# func: ", f);
                put_escaped(f, fn->name);
                putc('\n', f);
            }
        }
        put_time(f, e->ts);
        fprintf(f, " %u", e->kind);
        if (ki && ki->arg == EVP_ARG_FUNC) {
            if (w->ids || !evp_trace_func(w->t, e->arg))
                if (e->arg)
                    fprintf(f, " %u", e->arg);
        } else if (ki && ki->arg == EVP_ARG_OP) {
            fprintf(f, " %u", e->aux);
            if (w->oparg)
                fprintf(f, " %u", e->arg);
        } else if (e->arg || e->aux) {
            fprintf(f, " %u", e->arg);
            if (e->aux)
                fprintf(f, " %u", e->aux);
        }
        putc('\n', f);
    }
    return ferror(f) ? -EIO : 0;
}

int evp_trace_write_text(struct evp_trace *t, const char *path, char *err,
                         size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    /* a large buffer of the call's own (the writer keeps no state) */
    char *buf = f != stdout ? malloc(1 << 16) : NULL;
    if (buf)
        setvbuf(f, buf, _IOFBF, 1 << 16);
    int rc = evp_trace_write_text_to(
        t, f, f == stdout ? "standard output" : path, err, errlen);
    if (f != stdout && fclose(f) != 0 && rc == 0) {
        rc = -(errno ? errno : EIO);
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
    }
    free(buf);
    return rc;
}

int evp_trace_write_text_to(struct evp_trace *t, FILE *f, const char *name,
                            char *err, size_t errlen)
{
    const struct evp_trace_info *in = &t->info;
    const char *v;

    fputs("# python: ", f);
    put_oneline(f, in->executable);
    fputs("\n# argv: ", f);
    put_oneline(f, in->argv);
    putc('\n', f);
    if ((v = evp_trace_meta(t, "start.time_s"))) {
        fputs("# start time: ", f);
        put_oneline(f, v);
        fputs(" s (since epoch)\n", f);
    } else if (in->start_wall_ns >= 0) {
        fprintf(f, "# start time: %" PRIu64 " s (since epoch)\n",
                (uint64_t)in->start_wall_ns / 1000000000u);
    }
    fputs("# start clock: ", f);
    put_time(f, in->start_ns);
    fputs(" s (on clock)\n", f);
    if (in->has_end) {
        fputs("# end clock: ", f);
        put_time(f, in->end_ns);
        fputs(" s (on clock)\n", f);
    }

    struct text_writer w = {.t = t, .f = f, .oparg = in->has_oparg};
    /* The text's clock is nanoseconds: the source's clock metadata would
     * misdescribe it, and its per-event cost is written in nanoseconds
     * (the text's ticks), exactly. */
    for (size_t i = 0; i < t->meta.n; i += 2) {
        if (meta_is_header(t->meta.kv[i]) || evp_meta_is_clock(t->meta.kv[i]) ||
            (in->text && strcmp(t->meta.kv[i], "producer") == 0))
            continue;
        fputs("# meta: ", f);
        put_escaped(f, t->meta.kv[i]);
        putc('=', f);
        put_escaped(f, t->meta.kv[i + 1]);
        putc('\n', f);
    }
    if (in->event_cost_ns > 0) {
        char cost[40];
        fprintf(f, "# meta: event_cost.ticks=%s\n",
                evp_fmt_exact(cost, sizeof cost, in->event_cost_ns));
    }
    fprintf(f, "# meta: oparg=%d\n", in->has_oparg);
    if (t->ops_from_trace)
        for (unsigned op = 0; op < t->nops; op++)
            if (t->ops[op].name) {
                fprintf(f, "# opcode: %u ", op);
                put_escaped(f, t->ops[op].name);
                fprintf(f, " %u\n", t->ops[op].base);
            }
    /* (a stack table names functions by id) */
    w.ids = t->nstacks > 0;
    for (size_t id = 1; id < t->nfuncs; id++) {
        const struct evp_func *fn = &t->funcs[id];
        /* Files and lines need the table; so does a gap in the ids: names
         * alone would be renumbered on reading, and an event's bare id
         * could then name another function. */
        if (!fn->name || fn->file[0] || fn->line)
            w.ids = 1;
    }
    if (w.ids)
        for (size_t id = 1; id < t->nfuncs; id++) {
            const struct evp_func *fn = &t->funcs[id];
            if (!fn->name)
                continue;
            fprintf(f, "# function: %zu\t%u\t", id, fn->line);
            put_escaped(f, fn->file);
            putc('\t', f);
            put_escaped(f, fn->name);
            putc('\n', f);
        }
    /* The stack table of a sampled trace, its nodes in id order (a cut
     * chain's node keeps its missing caller: the copy is cut as the
     * original is). */
    for (uint32_t id = 1; id <= t->nstacks; id++)
        if (t->stacks[id].depth)
            fprintf(f, "# stack: %" PRIu32 " %" PRIu32 " %" PRIu32 "\n", id,
                    t->stacks[id].parent, t->stacks[id].func);
    /* One stream needs no "# thread:" line when it is what reading
     * without one gives back: stream 0, no tid, the default name, some
     * events. */
    w.threads = t->nstreams > 1 ||
                (t->nstreams == 1 &&
                 (t->streams[0].pub.id != 0 || t->streams[0].pub.tid != 0 ||
                  !t->streams[0].nsegs ||
                  strcmp(t->streams[0].pub.name, "stream 0") != 0));
    putc('\n', f);

    static const struct evp_replay_ops ops = {tw_begin, tw_events, NULL,
                                              tw_samples};
    struct evp_replay_opts o = {.stream = -1, .keep_log = 1};
    int rc = evp_replay(t, &o, &ops, &w);
    if (rc == 0 && (fflush(f) != 0 || ferror(f))) {
        int e = errno ? errno : EIO;
        snprintf(err, errlen, "%s: write failed: %s", name, strerror(e));
        return -e;
    }
    if (rc < 0) {
        int e = ferror(f) && errno ? errno : -rc;
        snprintf(err, errlen, "%s: write failed: %s", name, strerror(e));
        return rc;
    }
    return 0;
}
