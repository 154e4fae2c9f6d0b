/*
 * check-trace: the invariants an instrumented interpreter's trace must
 * keep, measured by evalprof's own reader and replay engine.
 *
 *   check-trace TRACE [--kinds all] [--func NAME]... [--max-depth N]
 *
 * Prints one "key value" line per figure, for the e2e-modea test scripts
 * to compare against independent counts:
 *
 *   events N            events replayed
 *   kind <name> N       events of each classic kind (0-13), resume and
 *                       suspend
 *   unmatched N         exits without an enter (must be 0)
 *   unclosed N          enters without an exit at a stream's end
 *   min_depth N         smallest depth seen (must be >= 0)
 *   ops NAME N          op events whose innermost function is NAME
 *   opcodes NAME OP:N.. the same by opcode name
 *   calls NAME N        enter and resume events of NAME (its calls, as
 *                       cProfile counts them)
 *
 * and fails (exit 1, one "FAIL: ..." line each) when enters and exits do
 * not balance per stream, when a depth goes negative, when the trace had
 * warnings, or (with --kinds all) when one of the 14 classic kinds is
 * missing.  Exit 2: the trace cannot be read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"

#define MAX_FUNCS 16

struct check {
    struct evp_trace *t;
    uint64_t kinds[EVP_EV__COUNT + 1];
    int32_t min_depth;
    int32_t depth_stack; /* enters and resumes minus exits and suspends in
                            the current stream */
    uint64_t stream_unbalanced;
    const char *names[MAX_FUNCS];
    int nnames;
    uint64_t ops[MAX_FUNCS];
    uint64_t calls[MAX_FUNCS];
    uint64_t opcodes[MAX_FUNCS][256];
};

static int func_slot(struct check *c, uint32_t func)
{
    const struct evp_func *f = evp_trace_func(c->t, func);
    if (!f)
        return -1;
    for (int i = 0; i < c->nnames; i++)
        if (strcmp(f->name, c->names[i]) == 0)
            return i;
    return -1;
}

static int on_begin(void *ctx, const struct evp_stream *s)
{
    struct check *c = ctx;
    (void)s;
    c->depth_stack = 0;
    return 0;
}

static int on_events(void *ctx, const struct evp_event *ev, size_t n)
{
    struct check *c = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct evp_event *e = &ev[i];
        c->kinds[e->kind < EVP_EV__COUNT ? e->kind : EVP_EV__COUNT]++;
        if (e->depth < c->min_depth)
            c->min_depth = e->depth;
        if (e->kind == EVP_EV_ENTER || e->kind == EVP_EV_RESUME)
            c->depth_stack++;
        else if (e->kind == EVP_EV_EXIT || e->kind == EVP_EV_SUSPEND)
            c->depth_stack--;
        if (c->depth_stack < 0 && c->min_depth > -1)
            c->min_depth = -1;
        int slot = func_slot(c, e->func);
        if (slot < 0)
            continue;
        if (e->kind == EVP_EV_OP) {
            c->ops[slot]++;
            c->opcodes[slot][evp_event_opcode(e) & 0xff]++;
        } else if (e->kind == EVP_EV_ENTER || e->kind == EVP_EV_RESUME) {
            c->calls[slot]++;
        }
    }
    return 0;
}

static int on_end(void *ctx, const struct evp_stream *s)
{
    struct check *c = ctx;
    (void)s;
    if (c->depth_stack != 0)
        c->stream_unbalanced++;
    return 0;
}

int main(int argc, char **argv)
{
    struct check c;
    const char *path = NULL;
    int want_all = 0;
    long max_depth = -1;
    char err[256];

    memset(&c, 0, sizeof c);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kinds") == 0 && i + 1 < argc) {
            want_all = strcmp(argv[++i], "all") == 0;
        } else if (strcmp(argv[i], "--func") == 0 && i + 1 < argc) {
            if (c.nnames < MAX_FUNCS)
                c.names[c.nnames++] = argv[++i];
        } else if (strcmp(argv[i], "--max-depth") == 0 && i + 1 < argc) {
            max_depth = strtol(argv[++i], NULL, 10);
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            fprintf(stderr, "usage: check-trace TRACE [--kinds all] "
                            "[--func NAME]... [--max-depth N]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "check-trace: no trace given\n");
        return 2;
    }
    if (evp_trace_open(path, NULL, &c.t, err, sizeof err) < 0) {
        fprintf(stderr, "check-trace: %s: %s\n", path, err);
        return 2;
    }

    struct evp_replay_stats st;
    struct evp_replay_opts opts = {.stream = -1, .stats = &st};
    struct evp_replay_ops ops = {on_begin, on_events, on_end, NULL};
    memset(&st, 0, sizeof st);
    if (evp_replay(c.t, &opts, &ops, &c) < 0) {
        fprintf(stderr, "check-trace: %s: replay failed\n", path);
        return 2;
    }

    int fail = 0;
    printf("events %llu\n", (unsigned long long)st.events);
    for (unsigned k = 0; k < EVP_EV__COUNT; k++) {
        if (k >= EVP_EV_CLASSIC_COUNT && k != EVP_EV_RESUME &&
            k != EVP_EV_SUSPEND)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s", evp_kind_name(k));
        for (char *p = name; *p; p++)
            if (*p == ' ')
                *p = '-';
        printf("kind %s %llu\n", name, (unsigned long long)c.kinds[k]);
        if (want_all && k < EVP_EV_CLASSIC_COUNT && c.kinds[k] == 0) {
            printf("FAIL: no '%s' event\n", evp_kind_name(k));
            fail = 1;
        }
    }
    printf("unmatched %llu\n", (unsigned long long)st.unmatched);
    printf("unclosed %llu\n", (unsigned long long)st.unclosed);
    printf("unbalanced_streams %llu\n",
           (unsigned long long)c.stream_unbalanced);
    printf("min_depth %d\n", (int)c.min_depth);
    printf("max_depth %d\n", (int)st.max_depth);
    if (st.unmatched) {
        printf("FAIL: %llu exits without an enter\n",
               (unsigned long long)st.unmatched);
        fail = 1;
    }
    if (c.stream_unbalanced || st.unclosed) {
        printf("FAIL: enters and exits do not balance (%llu streams, "
               "%llu frames left open)\n",
               (unsigned long long)c.stream_unbalanced,
               (unsigned long long)st.unclosed);
        fail = 1;
    }
    if (c.min_depth < 0) {
        printf("FAIL: depth went negative\n");
        fail = 1;
    }
    if (max_depth >= 0 && st.max_depth > max_depth) {
        printf("FAIL: depth %d exceeds %ld\n", (int)st.max_depth, max_depth);
        fail = 1;
    }
    if (evp_trace_nwarnings(c.t)) {
        for (size_t i = 0; i < evp_trace_nwarnings(c.t); i++)
            printf("FAIL: reader warning: %s\n", evp_trace_warning(c.t, i));
        fail = 1;
    }
    for (int i = 0; i < c.nnames; i++) {
        printf("calls %s %llu\n", c.names[i], (unsigned long long)c.calls[i]);
        printf("ops %s %llu\n", c.names[i], (unsigned long long)c.ops[i]);
        printf("opcodes %s", c.names[i]);
        for (unsigned op = 0; op < 256; op++) {
            if (!c.opcodes[i][op])
                continue;
            const char *nm = evp_trace_opname(c.t, op);
            printf(" %s:%llu", nm ? nm : "?",
                   (unsigned long long)c.opcodes[i][op]);
        }
        printf("\n");
    }
    evp_trace_close(c.t);
    if (ferror(stdout))
        return 2;
    return fail;
}
