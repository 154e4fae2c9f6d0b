/*
 * The tree view (`evalprof tree`): the discussion's trace listing.
 *
 *     1,782.7 µs      init
 *         1.0 µs      enter                                 # func: <module>
 *         0.3 µs      |  loop enter
 *         7.2 µs      |  op                     LOAD_CONST (100)
 *
 * Elapsed time (until the next event of the thread) in a 16-column field,
 * then "|  " per depth, the event name, and for enter/exit a "# func:"
 * annotation at column 66; ops name their instruction at column 42.  The
 * last event of a thread has no elapsed time.  One section per thread.
 *
 * Events drawn deeper than max_depth are elided: each run of them is one
 * line at the cap, "[N events deeper than M frames elided, down to depth
 * D]" with their summed elapsed time, and a note says so (DIAG).  A
 * trace of a million nested calls would otherwise print gigabytes of
 * indentation.
 *
 * Filtered (--from/--to, --func), only the events kept are listed, at
 * their own depth; the frames open where a run of them starts, that the
 * filter cut, are listed first as untimed "enter" lines marked "(begun
 * before)".
 *
 * A sampled trace has no events to list: its samples are, in time order,
 * each a line with the time it stands for (its timer periods x the
 * period) where an event has its elapsed time, "sample", its instruction
 * in the opcode column and what the thread was doing at the "# func:"
 * column, then its stack, a frame a line, outermost first, indented as
 * the frames of events are:
 *
 *     1,000.0 µs      sample                    LOAD_FAST (124)
 *                                       # at 0.012000000 s: in the eval loop
 *                     main                                    # x.py:1
 *                     |  hot                                  # x.py:5, line 7
 *
 * (the "# at" part on the sample's line).  A note in the header says the
 * time between samples was not traced; --from/--to keep the samples of
 * the window, --func those with the function on their stack, and
 * max_depth cuts a stack to one "[N frames deeper than M elided]" line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "views.h"

#define NAME_COL 16 /* where the indented event name starts */
#define FUNC_COL 50 /* "# func:" column, relative to NAME_COL */
#define OP_COL 26   /* opcode name column, relative to NAME_COL */

struct tree {
    struct evp_trace *t;
    FILE *out;
    const struct evp_tree_opts *o;
    size_t nstreams, done;
    /* the run of elided events being gathered, and the totals */
    uint64_t elided, elided_ns;
    int32_t elided_deepest, deepest;
    size_t places;
    struct evp_filter_run fr; /* when o->filter */
    struct evp_replay_frames frames;
    int32_t shown;           /* frames listed and open (filtered) */
    struct evp_lines *lines; /* a sampled trace's line tables */
    char line[4096];
};

/* Text stops LINE_SLACK bytes before the end of the line buffer: room
 * for the last escape or character (4 bytes) and the newline. */
#define LINE_SLACK 8

static size_t room(const struct tree *tr, size_t pos)
{
    return pos < sizeof tr->line - LINE_SLACK
               ? sizeof tr->line - LINE_SLACK - pos
               : 0;
}

/* Append S to the line at *POS, escaping what would break a line or a
 * terminal: control characters and bytes that are not UTF-8 are shown as
 * "\xNN" (a newline as "\n"), as every view writes names (src/util/esc.c).
 * A line too long for the buffer is cut. */
static void put(struct tree *tr, size_t *pos, const char *s)
{
    for (;;) {
        const char *p = s;
        while ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f)
            p++;
        size_t n = (size_t)(p - s), left = room(tr, *pos);
        if (n > left)
            n = left;
        memcpy(tr->line + *pos, s, n);
        *pos += n;
        if (!*p || n == left)
            break;
        unsigned char c = (unsigned char)*p;
        /* evp_utf8_len stops at the NUL that ends a short sequence. */
        int k = c >= 0x80 ? evp_utf8_len((const unsigned char *)p, 4) : 0;
        if (k) {
            memcpy(tr->line + *pos, p, (size_t)k);
            *pos += (size_t)k;
            s = p + k;
        } else {
            *pos += (size_t)snprintf(tr->line + *pos, sizeof tr->line - *pos,
                                     c == '\n' ? "\\n" : "\\x%02x", c);
            s = p + 1;
        }
    }
    tr->line[*pos] = '\0';
}

/* Append N bytes of text known to be plain ASCII (evalprof's own). */
static void put_plain(struct tree *tr, size_t *pos, const char *s, size_t n)
{
    size_t left = room(tr, *pos);
    if (n > left)
        n = left;
    memcpy(tr->line + *pos, s, n);
    *pos += n;
    tr->line[*pos] = '\0';
}

/* Pad with spaces to display column COL (at least one space). */
static void pad(struct tree *tr, size_t *pos, size_t *cols, size_t col)
{
    size_t n = *cols < col ? col - *cols : 1;
    if (n > room(tr, *pos))
        n = room(tr, *pos);
    memset(tr->line + *pos, ' ', n);
    *pos += n;
    *cols += n;
    tr->line[*pos] = '\0';
}

/* Display width of UTF-8 text: count everything but continuation bytes. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void funcname(const struct evp_trace *t, uint32_t id, char *buf,
                     size_t len)
{
    const struct evp_func *f = evp_trace_func(t, id);
    if (f && strlen(f->name) >= len) {
        /* Longer than the line has room for: cut at a character
         * boundary, and say so. */
        size_t cut = len - 3;
        while (cut && ((unsigned char)f->name[cut] & 0xc0) == 0x80)
            cut--;
        snprintf(buf, len, "%.*s..", (int)cut, f->name);
    } else if (f)
        snprintf(buf, len, "%s", f->name);
    else if (id)
        snprintf(buf, len, "<func %u>", id);
    else
        snprintf(buf, len, "?");
}

/* Start a line: the elapsed time (unless HAS_TIME is 0), then "|  " for
 * each of DEPTH levels when INDENT; returns the column of the name. */
static size_t line_start(struct tree *tr, size_t *pos, size_t *cols,
                         uint64_t elapsed, int has_time, int indent,
                         int32_t depth)
{
    int in_ns = tr->o->ns;
    if (has_time) {
        char buf[64], us[48];
        snprintf(buf, sizeof buf, "%7s %s",
                 evp_fmt_us(us, sizeof us, elapsed, in_ns),
                 evp_fmt_unit(in_ns));
        put(tr, pos, buf);
        *cols = width(tr->line);
    }
    pad(tr, pos, cols, NAME_COL);
    size_t start = *cols;
    if (indent && depth > 0) {
        /* "|  " per level, up to a full line: a deep stack must not cost
         * depth steps per event once nothing more fits */
        static const char bars[] =
            "|  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  "
            "|  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  ";
        size_t levels = (size_t)depth, fit = room(tr, *pos) / 3 + 1;
        if (levels > fit)
            levels = fit;
        for (size_t d = 0; d < levels;) {
            size_t k = levels - d < (sizeof bars - 1) / 3
                           ? levels - d
                           : (sizeof bars - 1) / 3;
            put_plain(tr, pos, bars, 3 * k);
            d += k;
        }
        *cols += 3 * levels;
    }
    return start;
}

/* End the line: no trailing blanks (the discussion's listing has none). */
static void line_end(struct tree *tr, size_t pos)
{
    while (pos && tr->line[pos - 1] == ' ')
        tr->line[--pos] = '\0';
    tr->line[pos++] = '\n';
    fwrite(tr->line, 1, pos, tr->out);
}

static void print_indented(struct tree *tr, const struct evp_event *e,
                           int indent, const char *note)
{
    const struct evp_trace *t = tr->t;
    size_t pos = 0, cols = 0;
    char buf[512];
    size_t start = line_start(tr, &pos, &cols, e->elapsed,
                              !(e->flags & (EVP_EVF_LAST | EVP_EVF_GAP)),
                              indent, e->depth);
    const char *kn = evp_kind_name(e->kind);
    size_t kl = strlen(kn);
    put_plain(tr, &pos, kn, kl);
    cols += kl;

    const struct evp_kind_info *ki = evp_kind_info(e->kind);
    if (ki && ki->arg == EVP_ARG_FUNC) {
        pad(tr, &pos, &cols, start + FUNC_COL);
        funcname(t, e->func, buf, sizeof buf);
        put(tr, &pos, "# func: ");
        put(tr, &pos, buf);
    } else if (ki && ki->arg == EVP_ARG_OP) {
        pad(tr, &pos, &cols, start + OP_COL);
        evp_view_op_name(t, e->aux, buf, sizeof buf);
        put(tr, &pos, buf);
        snprintf(buf, sizeof buf, " (%u)", e->aux);
        put(tr, &pos, buf);
        if (evp_trace_info(t)->has_oparg) {
            snprintf(buf, sizeof buf, " arg=%u", e->arg);
            put(tr, &pos, buf);
        }
    } else if (!ki || e->arg || e->aux) {
        if (e->arg || e->aux) {
            snprintf(buf, sizeof buf, " %u", e->arg);
            put(tr, &pos, buf);
            if (e->aux) {
                snprintf(buf, sizeof buf, " %u", e->aux);
                put(tr, &pos, buf);
            }
        }
    }
    if (e->flags & EVP_EVF_UNMATCHED)
        put(tr, &pos, "  (no matching enter)");
    if (e->flags & EVP_EVF_GAP)
        put(tr, &pos, "  (events lost after this one)");
    if (note)
        put(tr, &pos, note);
    line_end(tr, pos);
}

/* The line standing for a run of elided events, at the cap. */
static void print_elided(struct tree *tr)
{
    char n[32], d[32], m[32], buf[160];
    snprintf(buf, sizeof buf,
             "[%s events deeper than %s frames elided, down to depth %s]",
             evp_num_group(n, sizeof n, tr->elided),
             evp_num_group(m, sizeof m, tr->o->max_depth),
             evp_num_group(d, sizeof d, (uint64_t)tr->elided_deepest));
    size_t pos = 0, cols = 0;
    if (tr->o->format == EVP_TREE_RAW) {
        snprintf(tr->line, sizeof tr->line, "# %s (%" PRIu64 " ns)\n", buf,
                 tr->elided_ns);
        fputs(tr->line, tr->out);
    } else {
        line_start(tr, &pos, &cols, tr->elided_ns, 1,
                   tr->o->format == EVP_TREE_SIMPLE_INDENT,
                   (int32_t)tr->o->max_depth + 1);
        put_plain(tr, &pos, buf, strlen(buf));
        line_end(tr, pos);
    }
    tr->places++;
    tr->elided = tr->elided_ns = 0;
    tr->elided_deepest = 0;
}

/* An event below the cap: into the run being gathered. */
static void elide(struct tree *tr, const struct evp_event *e)
{
    tr->elided++;
    tr->elided_ns += e->elapsed;
    if (e->depth > tr->elided_deepest)
        tr->elided_deepest = e->depth;
    if (e->depth > tr->deepest)
        tr->deepest = e->depth;
}

static void print_raw(struct tree *tr, const struct evp_event *e)
{
    const struct evp_trace *t = tr->t;
    char buf[512];
    size_t pos = 0;
    tr->line[0] = '\0';
    snprintf(buf, sizeof buf,
             "%" PRIu64 ".%09" PRIu64 " %" PRIu64 " %d %u %-14s ",
             e->ts / 1000000000u, e->ts % 1000000000u, e->elapsed, e->depth,
             e->kind, evp_kind_name(e->kind));
    put(tr, &pos, buf);
    const struct evp_kind_info *ki = evp_kind_info(e->kind);
    if (ki && ki->arg == EVP_ARG_OP) {
        evp_view_op_name(t, e->aux, buf, sizeof buf);
        put(tr, &pos, buf);
        snprintf(buf, sizeof buf, " %u %u", e->aux, e->arg);
        put(tr, &pos, buf);
    } else if (ki && ki->arg == EVP_ARG_FUNC) {
        funcname(t, e->func, buf, sizeof buf);
        put(tr, &pos, buf);
        const struct evp_func *f = evp_trace_func(t, e->func);
        if (f && (*f->file || f->line)) {
            snprintf(buf, sizeof buf, " %s:%u", f->file, f->line);
            put(tr, &pos, buf);
        }
    } else {
        snprintf(buf, sizeof buf, "%u %u", e->arg, e->aux);
        put(tr, &pos, buf);
    }
    fputs(tr->line, tr->out);
    putc('\n', tr->out);
}

/* Filtered: whether E is listed, after listing the frames around it the
 * filter cut. */
static int keep(struct tree *tr, const struct evp_event *e)
{
    if (evp_filter_event(&tr->fr, e) != EVP_FILTER_KEEP)
        return 0;
    int32_t lo, hi = evp_filter_shown(&tr->fr, e, &lo);
    if (tr->o->max_depth && (size_t)hi > tr->o->max_depth)
        hi = (int32_t)tr->o->max_depth;
    for (int32_t l = lo + tr->shown + 1; l <= hi; l++, tr->shown++) {
        if (tr->o->format == EVP_TREE_RAW)
            continue;
        struct evp_event open = {.kind = EVP_EV_ENTER,
                                 .flags = EVP_EVF_LAST,
                                 .depth = l - 1,
                                 .func = tr->frames.func[l - 1]};
        print_indented(tr, &open, tr->o->format == EVP_TREE_SIMPLE_INDENT,
                       "  (begun before)");
    }
    if (evp_kind_pushes(e->kind))
        tr->shown = e->depth + 1 - lo;
    else if (evp_kind_pops(e->kind) || e->depth - lo < tr->shown)
        tr->shown = e->depth - lo;
    return 1;
}

static int tree_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct tree *tr = ctx;
    for (size_t i = 0; i < n; i++) {
        if (tr->o->filter && !keep(tr, &ev[i]))
            continue;
        if (tr->o->max_depth && (size_t)ev[i].depth > tr->o->max_depth) {
            elide(tr, &ev[i]);
            continue;
        }
        if (tr->elided)
            print_elided(tr);
        if (tr->o->format == EVP_TREE_RAW)
            print_raw(tr, &ev[i]);
        else
            print_indented(tr, &ev[i], tr->o->format == EVP_TREE_SIMPLE_INDENT,
                           NULL);
    }
    return ferror(tr->out) ? -EIO : 0;
}

/* ---- a sampled trace --------------------------------------------------------
 */

/* One frame of a sample's stack at LEVEL (0: the outermost): its name,
 * then "# file:line" at the "# func:" column, the leaf's line after it. */
static void frame_line(struct tree *tr, int32_t level, const char *name,
                       uint32_t func, uint32_t line)
{
    const struct evp_func *f = evp_trace_func(tr->t, func);
    size_t pos = 0, cols = 0;
    char buf[512];
    size_t start = line_start(tr, &pos, &cols, 0, 0,
                              tr->o->format == EVP_TREE_SIMPLE_INDENT, level);
    if (name) {
        put_plain(tr, &pos, name, strlen(name));
    } else {
        funcname(tr->t, func, buf, sizeof buf);
        put(tr, &pos, buf);
    }
    cols = width(tr->line);
    if (f && (*f->file || line)) {
        pad(tr, &pos, &cols, start + FUNC_COL);
        put(tr, &pos, "# ");
        put(tr, &pos, *f->file ? f->file : "?");
        snprintf(buf, sizeof buf, ":%u", f->line);
        put(tr, &pos, buf);
        if (line) {
            snprintf(buf, sizeof buf, ", line %u", line);
            put(tr, &pos, buf);
        }
    }
    line_end(tr, pos);
}

/* A sample in the raw format: its time (trace clock), weight, frames,
 * "sample", state word, opcode (name and number, "-" for none), code
 * unit, then its stack, outermost first, ';' between frames. */
static void sample_raw(struct tree *tr, const struct evp_sample *s)
{
    char buf[512];
    size_t pos = 0;
    int op = evp_sample_opcode(s->state);
    tr->line[0] = '\0';
    snprintf(buf, sizeof buf, "%" PRIu64 ".%09" PRIu64 " %u %d sample 0x%x ",
             s->ts / 1000000000u, s->ts % 1000000000u, s->weight, s->depth,
             s->state);
    put(tr, &pos, buf);
    if (op >= 0) {
        evp_view_op_name(tr->t, (unsigned)op, buf, sizeof buf);
        put(tr, &pos, buf);
        snprintf(buf, sizeof buf, " %d %u ", op, s->unit);
    } else {
        snprintf(buf, sizeof buf, "- - %u ", s->unit);
    }
    put(tr, &pos, buf);
    if (s->flags & EVP_SMPF_CUT)
        put(tr, &pos,
            s->depth ? EVP_STACK_UNKNOWN_NAME ";" : EVP_STACK_UNKNOWN_NAME);
    for (int32_t i = 0; i < s->depth; i++) {
        funcname(tr->t, s->func[i], buf, sizeof buf);
        put(tr, &pos, buf);
        if (i + 1 < s->depth)
            put(tr, &pos, ";");
    }
    if (!s->depth && !(s->flags & EVP_SMPF_CUT))
        put(tr, &pos, "-");
    fputs(tr->line, tr->out);
    putc('\n', tr->out);
}

/* A sample: a line with the time it stands for (its periods x the
 * period), its instruction and what the thread was doing, then its stack
 * a frame a line, outermost first, as deep as the tree draws (the frames
 * below max_depth one line). */
static void print_sample(struct tree *tr, const struct evp_sample *s)
{
    if (tr->o->format == EVP_TREE_RAW) {
        sample_raw(tr, s);
        return;
    }
    const struct evp_trace *t = tr->t;
    size_t pos = 0, cols = 0;
    char buf[512];
    size_t start =
        line_start(tr, &pos, &cols, evp_sample_ns(t, s->weight), 1, 0, 0);
    put_plain(tr, &pos, "sample", 6);
    cols += 6;
    int op = evp_sample_opcode(s->state);
    if (op >= 0 && evp_sample_ip_current(t, s->state)) {
        pad(tr, &pos, &cols, start + OP_COL);
        evp_view_op_name(t, (unsigned)op, buf, sizeof buf);
        put(tr, &pos, buf);
        snprintf(buf, sizeof buf, " (%d)", op);
        put(tr, &pos, buf);
        cols = width(tr->line);
    }
    pad(tr, &pos, &cols, start + FUNC_COL);
    uint64_t at = s->ts > evp_trace_info(t)->start_ns
                      ? s->ts - evp_trace_info(t)->start_ns
                      : 0;
    snprintf(buf, sizeof buf, "# at %" PRIu64 ".%09" PRIu64 " s: %s",
             at / 1000000000u, at % 1000000000u,
             evp_sample_cat_name(evp_sample_cat(s->state, s->stack)));
    put(tr, &pos, buf);
    if (s->weight > 1) {
        snprintf(buf, sizeof buf, " (%u periods)", s->weight);
        put(tr, &pos, buf);
    }
    line_end(tr, pos);
    int32_t level = 0, cap = (int32_t)tr->o->max_depth;
    if (s->flags & EVP_SMPF_CUT)
        frame_line(tr, level++, EVP_STACK_UNKNOWN_NAME, 0, 0);
    for (int32_t i = 0; i < s->depth; i++, level++) {
        if (cap && level >= cap) {
            snprintf(buf, sizeof buf, "[%d frame%s deeper than %d elided]",
                     s->depth - i, s->depth - i == 1 ? "" : "s", cap);
            frame_line(tr, level, buf, 0, 0);
            tr->places++;
            if (s->depth + (level - i) > tr->deepest)
                tr->deepest = s->depth + (level - i);
            break;
        }
        uint32_t line = 0;
        if (i + 1 == s->depth && tr->lines &&
            evp_sample_ip_current(t, s->state))
            line = evp_lines_line(tr->lines, s->func[i], s->unit);
        frame_line(tr, level, NULL, s->func[i], line);
    }
}

static int tree_samples(void *ctx, const struct evp_sample *s, size_t n)
{
    struct tree *tr = ctx;
    for (size_t i = 0; i < n; i++) {
        if (tr->o->filter &&
            evp_filter_sample(&tr->fr, &s[i]) != EVP_FILTER_KEEP)
            continue;
        print_sample(tr, &s[i]);
    }
    return ferror(tr->out) ? -EIO : 0;
}

static void banner(FILE *out, const char *what)
{
    fprintf(out, "####################\n# %s\n####################\n", what);
}

static int tree_begin(void *ctx, const struct evp_stream *s)
{
    struct tree *tr = ctx;
    if (tr->nstreams > 1) {
        /* The thread's name comes from the trace: escaped like names. */
        char what[64];
        size_t pos = 0;
        put(tr, &pos, "BEGIN TRACE: ");
        put(tr, &pos, s->name);
        snprintf(what, sizeof what, " (stream %u, tid %" PRIu64 ")", s->id,
                 s->tid);
        put(tr, &pos, what);
        banner(tr->out, tr->line);
    } else {
        banner(tr->out, "BEGIN TRACE");
    }
    fputc('\n', tr->out);
    return 0;
}

static int tree_end(void *ctx, const struct evp_stream *s)
{
    struct tree *tr = ctx;
    if (tr->elided)
        print_elided(tr);
    evp_filter_stream(&tr->fr);
    tr->shown = 0;
    fputc('\n', tr->out);
    if (tr->nstreams > 1) {
        size_t pos = 0;
        put(tr, &pos, "END TRACE: ");
        put(tr, &pos, s->name);
        banner(tr->out, tr->line);
        if (++tr->done < tr->nstreams)
            fputc('\n', tr->out);
    } else {
        banner(tr->out, "END TRACE");
    }
    return 0;
}

int evp_view_tree(struct evp_trace *t, FILE *out, const struct evp_tree_opts *o)
{
    struct tree tr = {.t = t, .out = out, .o = o};
    int sampled = evp_sampled_only(t);
    if (evp_filter_open(&tr.fr, t, o->filter, o->diag) < 0)
        return -EINVAL;
    if (sampled && !(tr.lines = evp_lines_open(t))) {
        evp_filter_close(&tr.fr);
        evp_diag_fail(o->diag, "tree: out of memory");
        return -ENOMEM;
    }
    tr.nstreams = o->stream >= 0 ? 1 : evp_trace_nstreams(t);
    static const char *const names[] = {"simple-indent", "simple", "raw"};
    fprintf(out, "reading from %s\n(showing results in '%s' format)\n\n",
            evp_trace_info(t)->path, names[o->format]);
    evp_view_header(out, t, "# ", 18, o->compensate, o->ns);
    if (sampled)
        fprintf(out,
                "%-18sa sampled trace: each sample at its time, with its "
                "stack, the time on its left the timer periods it stands "
                "for (estimated); what ran between samples was not "
                "traced\n",
                "# note:");
    fputc('\n', out);
    static const struct evp_replay_ops ops = {tree_begin, tree_events, tree_end,
                                              NULL};
    static const struct evp_replay_ops sops = {tree_begin, NULL, tree_end,
                                               tree_samples};
    struct evp_replay_opts ro = {
        .compensate = o->compensate, .stream = o->stream, .frames = &tr.frames};
    int rc = evp_replay(t, &ro, sampled ? &sops : &ops, &tr);
    evp_filter_close(&tr.fr);
    evp_lines_close(tr.lines);
    if (evp_trace_nstreams(t) == 0) {
        banner(out, "BEGIN TRACE");
        fputc('\n', out);
        banner(out, "END TRACE");
    }
    if (tr.places && sampled)
        evp_diag_note(o->diag,
                      "tree: stacks deeper than %zu frames (the deepest "
                      "%" PRId32 ") are cut in %zu place%s, each to one line "
                      "(--max-depth 0 shows every frame)",
                      o->max_depth, tr.deepest, tr.places,
                      tr.places == 1 ? "" : "s");
    else if (tr.places)
        evp_diag_note(o->diag,
                      "tree: events deeper than %zu frames (the deepest at "
                      "depth %" PRId32 ") are elided in %zu place%s, each "
                      "shown as one line (--max-depth 0 shows every event)",
                      o->max_depth, tr.deepest, tr.places,
                      tr.places == 1 ? "" : "s");
    if (rc == -ENOMEM)
        evp_diag_fail(o->diag, "tree: out of memory");
    return rc < 0 ? rc : 0;
}
