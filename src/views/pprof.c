/*
 * The pprof view (`evalprof export --format pprof`): the trace as a
 * gzip-compressed profile.proto (github.com/google/pprof), for `go tool
 * pprof`, pprof's web UI and the tools that read its format.
 *
 * One sample per node of the call tree (calltree.h): its stack of
 * locations, leaf first, and three values: "wall" (compensated
 * nanoseconds, the default), "calls" (frames entered on that path) and
 * "events" (events on it: with --ops, instructions).  So pprof's flat
 * wall time of a function is its self time in `evalprof summary --funcs`,
 * its cum time the summary's inclusive time (pprof counts a function once
 * per stack, as the summary counts a recursive function's time once), and
 * its flat calls the summary's calls.  A location is a function (name,
 * file and first line; the trace has no line per instruction); time
 * outside any frame is in "[init]", "[runtime other]", "[fini]" ... at
 * the root; --ops and --phases add leaves as folded stacks do, and stacks
 * are cut at --max-depth the same way.  Each sample carries its thread as
 * a label; the trace's metadata is in the profile's comments.
 *
 * A sampled trace's profile is pprof's own kind, a CPU (or wall-clock)
 * profile: two values a node, "samples" (its timer periods) and "cpu" or
 * "wall" (their estimated nanoseconds, periods x the period, the
 * default), the period type that clock's nanoseconds and the period the
 * timer's; flat and cum are then the estimated self and inclusive times
 * of `summary --funcs`.
 *
 * The message is encoded by libprotobuf-c from the schema compiled at
 * build time (profile.proto) and streamed through zlib: a protobuf
 * message may arrive in pieces (concatenated encodings merge, repeated
 * fields append), so the samples are packed a batch at a time instead of
 * all being held as messages at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "calltree.h"
#include "itab.h"
#include "profile.pb-c.h"
#include "views.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

/* Samples packed per piece of the message. */
#define BATCH 256

/* ---- the gzip stream protobuf-c packs into ------------------------------ */

struct gz_out {
    ProtobufCBuffer base; /* first: protobuf-c calls base.append */
    FILE *out;
    z_stream z;
    int err;
    /* protobuf-c appends a few bytes at a time: gathered here before
     * deflate sees them */
    size_t n;
    uint8_t in[65536];
};

/* Compress what is gathered (FLUSH: Z_FINISH at the end). */
static void gz_write(struct gz_out *g, int flush)
{
    unsigned char buf[65536];
    g->z.next_in = g->in;
    g->z.avail_in = (uInt)g->n;
    do {
        g->z.next_out = buf;
        g->z.avail_out = sizeof buf;
        if (deflate(&g->z, flush) == Z_STREAM_ERROR) {
            g->err = -EIO;
            return;
        }
        size_t have = sizeof buf - g->z.avail_out;
        if (have && fwrite(buf, 1, have, g->out) != have)
            g->err = -EIO;
    } while (g->z.avail_out == 0 && !g->err);
    g->n = 0;
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    struct gz_out *g = (struct gz_out *)b;
    while (len && !g->err) {
        size_t k = sizeof g->in - g->n < len ? sizeof g->in - g->n : len;
        memcpy(g->in + g->n, data, k);
        g->n += k;
        data += k;
        len -= k;
        if (g->n == sizeof g->in)
            gz_write(g, Z_NO_FLUSH);
    }
}

/* ---- strings ------------------------------------------------------------ */

struct pprof {
    struct evp_trace *t;
    struct evp_ctree ct;
    struct evp_strset str; /* the string table: index = id */
    uint32_t *loc;         /* by node: location id (0: none) */
    struct evp_itab lkeys; /* location key -> index in lkey */
    uint32_t *lkey;        /* by location id - 1: its key */
    size_t nloc, lcap;
    int64_t thread_key, tid_key;
    int64_t *stream_name; /* by stream index */
};

/* The string table index of S (N bytes), escaped (a proto3 string must
 * be UTF-8); -1 when out of memory. */
static int64_t str_id(struct pprof *p, const char *s, size_t n)
{
    size_t len;
    char *c = evp_ctree_name(s, n, &len);
    uint32_t id = c ? evp_strset_add(&p->str, c, len, NULL) : EVP_ITAB_NONE;
    free(c);
    return id == EVP_ITAB_NONE ? -1 : (int64_t)id;
}

static int64_t str_of(struct pprof *p, const char *s)
{
    return str_id(p, s, strlen(s));
}

/* ---- locations: one per function or leaf -------------------------------- */

/* The identity of node I's location: its key, a deep frame by its count. */
static uint32_t loc_key(const struct evp_ctree *ct, uint32_t i)
{
    uint32_t key = ct->node[i].key;
    if ((key & EVP_KEY_TAG) == EVP_KEY_DEEP)
        return EVP_KEY_DEEP | evp_ctree_deep(ct, i);
    return key;
}

struct lkey_probe {
    const struct pprof *p;
    uint32_t key;
};

static int same_lkey(const void *ctx, uint32_t i)
{
    const struct lkey_probe *q = ctx;
    return q->p->lkey[i] == q->key;
}

static int make_locations(struct pprof *p)
{
    const struct evp_ctree *ct = &p->ct;
    p->loc = calloc(ct->n ? ct->n : 1, sizeof *p->loc);
    if (!p->loc)
        return -ENOMEM;
    for (size_t i = 1; i < ct->n; i++) {
        const struct evp_ctree_node *nd = &ct->node[i];
        if ((nd->key & EVP_KEY_TAG) == EVP_KEY_STREAM)
            continue;
        uint32_t key = loc_key(ct, (uint32_t)i);
        struct lkey_probe q = {p, key};
        uint64_t h = evp_itab_hash_u64(key);
        uint32_t l = evp_itab_find(&p->lkeys, h, same_lkey, &q);
        if (l == EVP_ITAB_NONE) {
            l = (uint32_t)p->nloc;
            if (evp_grow((void **)&p->lkey, &p->lcap, p->nloc + 1,
                         sizeof *p->lkey, 256) ||
                evp_itab_put(&p->lkeys, h, l) < 0)
                return -ENOMEM;
            p->lkey[l] = key;
            p->nloc++;
        }
        p->loc[i] = l + 1;
    }
    return 0;
}

/* Pack the functions and locations, one of each per location id. */
static int pack_locations(struct pprof *p, ProtobufCBuffer *out)
{
    size_t n = p->nloc;
    Function *fn = calloc(n ? n : 1, sizeof *fn);
    Function **fnp = calloc(n ? n : 1, sizeof *fnp);
    Location *lo = calloc(n ? n : 1, sizeof *lo);
    Location **lop = calloc(n ? n : 1, sizeof *lop);
    Line *li = calloc(n ? n : 1, sizeof *li);
    Line **lip = calloc(n ? n : 1, sizeof *lip);
    int rc = -ENOMEM;
    if (!fn || !fnp || !lo || !lop || !li || !lip)
        goto done;
    for (size_t i = 0; i < n; i++) {
        uint32_t key = p->lkey[i];
        char leaf[288];
        const char *name = leaf, *file = "";
        uint32_t line = 0;
        if ((key & EVP_KEY_TAG) == EVP_KEY_DEEP) {
            uint32_t k = key & EVP_KEY_VAL;
            snprintf(leaf, sizeof leaf, "[%" PRIu32 " deeper frame%s]", k,
                     k == 1 ? "" : "s");
        } else if (key & EVP_KEY_TAG) {
            evp_view_leaf_name(p->t, key, leaf, sizeof leaf);
        } else {
            const struct evp_func *f = evp_trace_func(p->t, key);
            if (f) {
                name = f->name;
                file = f->file;
                line = f->line;
            } else {
                snprintf(leaf, sizeof leaf, "func %" PRIu32, key);
            }
        }
        perftools__profiles__function__init(&fn[i]);
        fn[i].id = i + 1;
        /* No system name: pprof takes a function whose system name is
         * its name for a demangled C++ one, and strips "<...>" off
         * "<module>" and "<lambda>". */
        fn[i].name = str_of(p, name);
        fn[i].filename = str_of(p, file);
        fn[i].start_line = line;
        if (fn[i].name < 0 || fn[i].filename < 0)
            goto done;
        fnp[i] = &fn[i];
        perftools__profiles__line__init(&li[i]);
        li[i].function_id = i + 1;
        li[i].line = line;
        lip[i] = &li[i];
        perftools__profiles__location__init(&lo[i]);
        lo[i].id = i + 1;
        lo[i].mapping_id = 1;
        lo[i].n_line = 1;
        lo[i].line = &lip[i];
        lop[i] = &lo[i];
    }
    /* One mapping, the interpreter, whose functions are all known (so
     * that pprof does not look for a binary to symbolize). */
    Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT;
    Perftools__Profiles__Mapping *mapp = &map;
    map.id = 1;
    map.filename = str_of(p, evp_trace_info(p->t)->executable);
    map.has_functions = map.has_filenames = map.has_line_numbers = 1;
    if (map.filename < 0)
        goto done;
    Profile piece = PERFTOOLS__PROFILES__PROFILE__INIT;
    piece.n_mapping = 1;
    piece.mapping = &mapp;
    piece.n_function = n;
    piece.function = fnp;
    piece.n_location = n;
    piece.location = lop;
    perftools__profiles__profile__pack_to_buffer(&piece, out);
    rc = 0;
done:
    free(fn);
    free(fnp);
    free(lo);
    free(lop);
    free(li);
    free(lip);
    return rc;
}

/* ---- the header: sample types, times, comments --------------------------- */

static int add_comment(struct pprof *p, int64_t **c, size_t *n, size_t *cap,
                       const char *key, const char *value)
{
    if (!value || !*value)
        return 0;
    char line[4096];
    snprintf(line, sizeof line, "%s: %s", key, value);
    int64_t id = str_of(p, line);
    if (id < 0 || evp_grow((void **)c, cap, *n + 1, sizeof **c, 32))
        return -ENOMEM;
    (*c)[(*n)++] = id;
    return 0;
}

/* A sampled trace's time: "cpu" or "wall", as its timer counted. */
static const char *sample_time(const struct evp_trace_info *in)
{
    return strcmp(in->sample_clock, "cpu") == 0 ? "cpu" : "wall";
}

static int pack_header(struct pprof *p, ProtobufCBuffer *out, int compensate)
{
    const struct evp_trace_info *in = evp_trace_info(p->t);
    int sampled = p->ct.sampled;
    ValueType vt[3], period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    ValueType *vtp[3];
    static const char *const types[3][2] = {
        {"wall", "nanoseconds"}, {"calls", "count"}, {"events", "count"}};
    /* samples: the timer periods, and their estimated time (the time the
     * default, as of events) */
    const char *const stypes[2][2] = {{"samples", "count"},
                                      {sample_time(in), "nanoseconds"}};
    int nt = sampled ? 2 : 3, tix = sampled ? 1 : 0;
    for (int i = 0; i < nt; i++) {
        perftools__profiles__value_type__init(&vt[i]);
        vt[i].type = str_of(p, sampled ? stypes[i][0] : types[i][0]);
        vt[i].unit = str_of(p, sampled ? stypes[i][1] : types[i][1]);
        if (vt[i].type < 0 || vt[i].unit < 0)
            return -ENOMEM;
        vtp[i] = &vt[i];
    }
    period = vt[tix];
    Profile piece = PERFTOOLS__PROFILES__PROFILE__INIT;
    piece.n_sample_type = (size_t)nt;
    piece.sample_type = vtp;
    piece.period_type = &period;
    piece.period = 1;
    if (sampled && in->sample_period_ns >= 1)
        piece.period = (int64_t)(in->sample_period_ns + 0.5);
    piece.default_sample_type = vt[tix].type;
    if (in->start_wall_ns > 0)
        piece.time_nanos = in->start_wall_ns;
    uint64_t end = evp_trace_end_ns(p->t);
    if (end > in->start_ns && end - in->start_ns < INT64_MAX)
        piece.duration_nanos = (int64_t)(end - in->start_ns);

    int64_t *c = NULL;
    size_t nc = 0, cap = 0;
    char note[768];
    int rc = add_comment(p, &c, &nc, &cap, "trace", in->path);
    rc |= add_comment(p, &c, &nc, &cap, "python", in->executable);
    rc |= add_comment(p, &c, &nc, &cap, "argv", in->argv);
    rc |= add_comment(p, &c, &nc, &cap, "producer",
                      evp_view_producer_note(p->t, note, sizeof note));
    if (in->has_kind_cost) {
        evp_view_kind_costs(p->t, note, sizeof note);
        size_t l = strlen(note);
        snprintf(note + l, sizeof note - l, "; %s",
                 compensate ? "subtracted from wall times" : "not subtracted");
        rc |= add_comment(p, &c, &nc, &cap, "overhead", note);
    }
    if (sampled) {
        char c1[32], c2[32];
        snprintf(note, sizeof note,
                 "%s samples standing for %s timer periods of %.0f ns of %s "
                 "time (%.0f Hz)",
                 evp_num_group(c1, sizeof c1, in->samples),
                 evp_num_group(c2, sizeof c2, in->sample_weight),
                 in->sample_period_ns, sample_time(in), in->sample_rate_hz);
        rc |= add_comment(p, &c, &nc, &cap, "sampled", note);
        rc |= add_comment(p, &c, &nc, &cap, sample_time(in),
                          "nanoseconds estimated, each sample's timer periods "
                          "x the period; flat and cum are the self and "
                          "inclusive times of `evalprof summary --funcs`, "
                          "whose shares come with their 95% confidence "
                          "intervals (the sampling error only, not the "
                          "sampler's bias)");
    } else {
        rc |= add_comment(p, &c, &nc, &cap, "wall",
                          "nanoseconds of the compensated elapsed times; flat "
                          "and cum are the self and inclusive times of "
                          "`evalprof summary --funcs`");
    }
    char pid[32] = "";
    if (in->pid >= 0)
        snprintf(pid, sizeof pid, "%ld", in->pid);
    rc |= add_comment(p, &c, &nc, &cap, "pid", pid);
    rc |= add_comment(p, &c, &nc, &cap, "start",
                      in->start_wall_ns >= 0
                          ? evp_fmt_wall(note, sizeof note, in->start_wall_ns)
                          : "");
    if (!rc) {
        piece.n_comment = nc;
        piece.comment = c;
        perftools__profiles__profile__pack_to_buffer(&piece, out);
    }
    free(c);
    return rc ? -ENOMEM : 0;
}

/* ---- samples ------------------------------------------------------------- */

static int pack_samples(struct pprof *p, ProtobufCBuffer *out)
{
    const struct evp_ctree *ct = &p->ct;
    Sample s[BATCH];
    Sample *sp[BATCH];
    int64_t val[BATCH][3];
    Label lab[BATCH][2];
    Label *labp[BATCH][2];
    uint64_t *ids = NULL; /* the batch's stacks, end to end */
    size_t nids = 0, icap = 0, off[BATCH], ns = 0;
    int rc = 0;
    for (size_t i = 1; i <= ct->n && !rc; i++) {
        if (i < ct->n) {
            const struct evp_ctree_node *nd = &ct->node[i];
            const struct evp_ctree_count *c = &ct->count[i];
            if (!p->loc[i] || (!nd->value && !c->calls && !c->events) ||
                (ct->sampled && !nd->value))
                continue;
            off[ns] = nids;
            for (uint32_t k = (uint32_t)i; p->loc[k]; k = ct->node[k].parent) {
                if (evp_grow((void **)&ids, &icap, nids + 1, sizeof *ids,
                             4096)) {
                    rc = -ENOMEM;
                    break;
                }
                ids[nids++] = p->loc[k];
            }
            Sample *x = &s[ns];
            perftools__profiles__sample__init(x);
            x->n_location_id = nids - off[ns];
            if (ct->sampled) {
                val[ns][0] = (int64_t)nd->value;
                val[ns][1] = (int64_t)evp_sample_ns(p->t, nd->value);
                x->n_value = 2;
            } else {
                val[ns][0] = (int64_t)nd->value;
                val[ns][1] = (int64_t)c->calls;
                val[ns][2] = (int64_t)c->events;
                x->n_value = 3;
            }
            x->value = val[ns];
            long st = evp_ctree_stream_of(ct, (uint32_t)i);
            const struct evp_stream *str = evp_trace_stream(p->t, (size_t)st);
            perftools__profiles__label__init(&lab[ns][0]);
            lab[ns][0].key = p->thread_key;
            lab[ns][0].str = p->stream_name[st];
            labp[ns][0] = &lab[ns][0];
            x->n_label = 1;
            if (str && str->tid) {
                perftools__profiles__label__init(&lab[ns][1]);
                lab[ns][1].key = p->tid_key;
                lab[ns][1].num = (int64_t)str->tid;
                labp[ns][1] = &lab[ns][1];
                x->n_label = 2;
            }
            x->label = labp[ns];
            sp[ns] = x;
            ns++;
        }
        if (ns == BATCH || (i == ct->n && ns)) {
            for (size_t j = 0; j < ns; j++)
                s[j].location_id = ids + off[j];
            Profile piece = PERFTOOLS__PROFILES__PROFILE__INIT;
            piece.n_sample = ns;
            piece.sample = sp;
            perftools__profiles__profile__pack_to_buffer(&piece, out);
            ns = nids = 0;
        }
    }
    free(ids);
    return rc;
}

static int pack_strings(struct pprof *p, ProtobufCBuffer *out)
{
    size_t n = p->str.n;
    char **v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        size_t len;
        const char *s = evp_strset_get(&p->str, (uint32_t)i, &len);
        if (!(v[i] = malloc(len + 1)))
            rc = -ENOMEM;
        else
            memcpy(v[i], s, len), v[i][len] = '\0';
    }
    if (!rc) {
        Profile piece = PERFTOOLS__PROFILES__PROFILE__INIT;
        piece.n_string_table = n;
        piece.string_table = v;
        perftools__profiles__profile__pack_to_buffer(&piece, out);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return rc;
}

int evp_view_pprof(struct evp_trace *t, FILE *out,
                   const struct evp_profile_opts *o)
{
    struct pprof p = {.t = t, .str = EVP_STRSET_INIT, .lkeys = EVP_ITAB_INIT};
    struct evp_ctree_opts co = {.ops = o->ops,
                                .phases = o->phases,
                                .compensate = o->compensate,
                                .stream = -1,
                                .max_depth = o->max_depth,
                                .stream_roots = 1,
                                .full_intervals = 1,
                                .counts = 1,
                                .diag = o->diag};
    int rc = evp_ctree_build(t, &co, &p.ct);
    if (rc < 0)
        return rc;
    evp_ctree_note_cut(&p.ct, o->max_depth, "frame", o->diag);
    struct gz_out *gp = calloc(1, sizeof *gp);
    if (!gp) {
        evp_ctree_free(&p.ct);
        evp_diag_fail(o->diag, "pprof: out of memory");
        return -ENOMEM;
    }
    gp->base.append = gz_append;
    gp->out = out;
    int zok = 0;
    size_t nst = evp_trace_nstreams(t);
    rc = -ENOMEM;
    p.stream_name = calloc(nst ? nst : 1, sizeof *p.stream_name);
    /* String 0 is "" (the format's rule). */
    if (!p.stream_name || str_id(&p, "", 0) != 0 ||
        (p.thread_key = str_of(&p, "thread")) < 0 ||
        (p.tid_key = str_of(&p, "tid")) < 0 || make_locations(&p))
        goto done;
    for (size_t i = 0; i < nst; i++) {
        const struct evp_stream *s = evp_trace_stream(t, i);
        if ((p.stream_name[i] =
                 str_of(&p, s && s->name && *s->name ? s->name : "thread")) < 0)
            goto done;
    }
    if (deflateInit2(&gp->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        goto done;
    zok = 1;
    if ((rc = pack_header(&p, &gp->base, o->compensate)) ||
        (rc = pack_locations(&p, &gp->base)) ||
        (rc = pack_strings(&p, &gp->base)) ||
        (rc = pack_samples(&p, &gp->base)))
        goto done;
    gz_write(gp, Z_FINISH);
    rc = gp->err ? gp->err : ferror(out) ? -EIO : 0;
done:
    if (zok)
        deflateEnd(&gp->z);
    if (rc == -ENOMEM)
        evp_diag_fail(o->diag, "pprof: out of memory");
    free(gp);
    evp_ctree_free(&p.ct);
    evp_strset_free(&p.str);
    evp_itab_free(&p.lkeys);
    free(p.loc);
    free(p.lkey);
    free(p.stream_name);
    return rc;
}
