/*
 * evalprof replay engine: the one walk over a trace that every view uses.
 *
 * Events and samples are two kinds of record of one walk, as perf's
 * perf_tool drives every record type through one session.  For each
 * stream (thread) in turn, the engine decodes its events in order and
 * hands the view batches of replayed events: timestamp, elapsed time
 * (until the next event of the same stream), the depth at which the event
 * is drawn and the function it belongs to; then the stream's samples, in
 * time order, each with its stack resolved from the trace's stack table.
 * It keeps the call stack and hands it to the views that ask (struct
 * evp_replay_frames), so views never track nesting themselves, and
 * optionally sums inclusive and self time per function.  Views are
 * callback tables, in the manner of uftrace's dump ops: the tree, the
 * summary, folded stacks, SVG and the timelines are peers behind the same
 * callbacks, and a view says which records it reads by the callbacks it
 * fills in (events, samples, or both).
 *
 * Nesting: enter, resume and c call push; exit, suspend, c return and
 * c raise pop.  A pushing event is drawn at the caller's depth and the
 * events after it one deeper; a popping event is drawn at the caller's
 * depth again (the discussion's tree layout).  A pop with nothing to pop
 * (a trace that starts mid-call) is drawn at depth 0 and counted in
 * evp_replay_stats.unmatched.
 *
 * The recorder's own time (EVP_EV_RECORDER: a buffer handed over) is
 * never a function's: every view shows it as an "[evalprof]" frame of its
 * own, a callee of the function it interrupted (or at the top level
 * outside any frame).  func_stats counts it in that function's inclusive
 * time and not in its self time, whether compensating or not, and
 * evp_replay_stats.recorder_ns sums it.
 *
 * Depth: the engine follows the outermost EVP_REPLAY_MAX_FRAMES frames of
 * a stream, whatever its nesting; deeper ones are counted (depth stays
 * right) but not followed: events inside them belong to the innermost
 * followed frame, whose self time holds theirs, and a warning says so.
 * A trace of a few kilobytes can declare millions of nested calls; the
 * replay's memory stays within 4 bytes a followed frame, 28 with
 * func_stats.
 */
#ifndef EVALPROF_REPLAY_H
#define EVALPROF_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/trace.h"

/* One replayed event. */
struct evp_event {
    uint64_t ts;      /* trace-clock ns */
    uint64_t elapsed; /* ns until the next event of the stream (after
                         compensation when asked); 0 for the last */
    uint32_t kind;    /* enum evp_kind (or an unknown number) */
    uint32_t arg;     /* function id, oparg, or raw argument */
    uint16_t aux;     /* opcode for op events */
    uint16_t flags;   /* EVP_EVF_* */
    int32_t depth;    /* depth at which the event is drawn */
    uint32_t func;    /* function the event belongs to: its own for
                         pushes and pops, else the innermost open frame
                         (0 outside any frame) */
    uint32_t parent;  /* for pushes and pops: the caller (0 if none) */
    uint64_t at;      /* the compensated clock: TS less what compensation
                         took off the stream's earlier events, so that
                         timelines drawn from it hold the same times as
                         func_stats (TS when not compensating) */
    uint32_t unit;    /* op events: code unit + 1 of the instruction in
                         its function, 0 when the trace does not say */
};

#define EVP_EVF_LAST 0x1u      /* last event of the stream: no elapsed */
#define EVP_EVF_UNMATCHED 0x2u /* a pop with no matching push */
#define EVP_EVF_LOG 0x4u       /* elapsed reduced by "# log written" time */
/* Events were lost after this one: its elapsed time is unknown (0). */
#define EVP_EVF_GAP 0x8u

static inline unsigned evp_event_opcode(const struct evp_event *e)
{
    return e->aux;
}

static inline uint32_t evp_event_oparg(const struct evp_event *e)
{
    return e->arg;
}

/*
 * One replayed sample: what the sampled thread was doing at TS, and its
 * stack, which the engine resolves from the trace's stack table (docs/
 * FORMAT.md "Samples"), so that views never walk the table.  FUNC holds
 * the function ids of its frames, outermost first, DEPTH of them, and is
 * valid during the samples() call only.  A stack that damage cut (a node
 * whose caller is missing, a leaf the table does not know) has
 * EVP_SMPF_CUT: views show "<unknown stack>" (EVP_STACK_UNKNOWN_NAME)
 * above FUNC[0], or alone when DEPTH is 0.  A sample with no Python frame
 * has STACK 0, DEPTH 0 and no flag.
 */
struct evp_sample {
    uint64_t ts;          /* trace-clock ns */
    uint32_t stack;       /* its leaf's node as recorded (0: no frame) */
    uint32_t state;       /* EVP_SAMPLE_* (evp_sample_opcode, _phase) */
    uint32_t weight;      /* timer periods it stands for (>= 1) */
    uint32_t unit;        /* the leaf's code unit + 1, 0 when unknown */
    const uint32_t *func; /* its frames' function ids, outermost first */
    int32_t depth;        /* frames in FUNC */
    uint32_t flags;       /* EVP_SMPF_* */
};

#define EVP_SMPF_CUT 0x1u /* the stack is cut: "<unknown stack>" above */

/* Per-function figures (replay option func_stats). */
struct evp_func_stats {
    uint64_t calls;   /* enter and c call events */
    uint64_t resumes; /* resume events */
    uint64_t incl_ns; /* inclusive, outermost activation only */
    uint64_t self_ns; /* self: inclusive minus callees */
    uint64_t max_incl_ns;
};

/* The outermost frames a replay follows: a thousand times CPython's
 * default recursion limit; 4 MiB of function ids (28 with func_stats). */
#define EVP_REPLAY_MAX_FRAMES (1 << 20)

/*
 * The frames open in the stream being replayed, for views that need a
 * whole call path (opts->frames): FUNC holds the function ids of the
 * followed frames, outermost first.  Valid during a callback only.
 *
 * During events(), FUNC is right for every event E of the batch: the
 * frames open at E are FUNC[0 .. E->depth), a push's own frame is
 * FUNC[E->depth], and so is the frame a pop closed (unless the pop is
 * EVP_EVF_UNMATCHED; and only below EVP_REPLAY_MAX_FRAMES).  The engine
 * starts a new batch rather than reuse a frame an earlier event of the
 * batch still sees.  DEPTH is the number of frames open after the
 * batch's last event.
 *
 * During end_stream(), FUNC[0 .. DEPTH) are the frames still open when
 * the stream ends (the engine closes them after the call).
 */
struct evp_replay_frames {
    const uint32_t *func;
    int32_t depth;
};

/* Totals of one replay. */
struct evp_replay_stats {
    uint64_t events;
    uint64_t unmatched;   /* pops without a push */
    uint64_t unclosed;    /* frames still open at a stream's end */
    uint64_t log_ns;      /* "# log written" time left out */
    uint64_t overhead_ns; /* per-event cost subtracted (compensate) */
    uint64_t recorder_ns; /* recorder events' time: the "[evalprof]" frames */
    uint64_t recorder_events;
    int32_t max_depth; /* most frames open at once in a stream */
    uint64_t samples;  /* samples handed to samples() */
    uint64_t periods;  /* their weights' sum */
};

/*
 * A view's callbacks.  What it fills in is what it reads: the engine
 * decodes a trace's events only for a view with events(), its samples
 * only for one with samples() (evp_replay_reads: the records it reads).
 */
struct evp_replay_ops {
    /* Called before a stream's first record; may be NULL. */
    int (*begin_stream)(void *ctx, const struct evp_stream *s);
    /* Batches of consecutive events of the current stream; may be NULL. */
    int (*events)(void *ctx, const struct evp_event *ev, size_t n);
    /* After a stream's last record; may be NULL. */
    int (*end_stream)(void *ctx, const struct evp_stream *s);
    /* Batches of the current stream's samples, in time order, after its
     * events; may be NULL. */
    int (*samples)(void *ctx, const struct evp_sample *s, size_t n);
};

/* The records OPS reads: EVP_RECORDS_* (trace.h), as a trace holds them. */
static inline unsigned evp_replay_reads(const struct evp_replay_ops *ops)
{
    return (ops->events ? EVP_RECORDS_EVENTS : 0u) |
           (ops->samples ? EVP_RECORDS_SAMPLES : 0u);
}

struct evp_replay_opts {
    /* Subtract the recorded per-event cost from every elapsed time, and
     * so from function times and the compensated clock (no effect when
     * the trace has no measured cost, as text traces). */
    int compensate;
    /* Only this stream (by index), or -1 for all: its events and its
     * samples. */
    long stream;
    /* When not NULL: an array of evp_trace_nfuncs()+1 entries, indexed by
     * function id, zeroed by the caller, filled by the replay. */
    struct evp_func_stats *func_stats;
    /* Filled when not NULL. */
    struct evp_replay_stats *stats;
    /* Hand "log written" records (EVP_EV_LOG_WRITTEN, arg: ns) to the
     * view as events instead of folding them into the elapsed time of
     * the event before (for writers that must keep them). */
    int keep_log;
    /* When not NULL: the frames open, updated before every events() and
     * end_stream() call (see struct evp_replay_frames). */
    struct evp_replay_frames *frames;
};

/*
 * Replay T through OPS.  A callback returning non-zero stops the replay
 * and that value is returned.  Returns 0 when done, or a negative value
 * when the trace could not be read (each damaged chunk has already been
 * reported as a warning; replay skips it and goes on).
 */
int evp_replay(struct evp_trace *t, const struct evp_replay_opts *opts,
               const struct evp_replay_ops *ops, void *ctx);

/* What kinds of events open and close frames. */
static inline int evp_kind_pushes(unsigned kind)
{
    return kind < 64 && (EVP_KINDS_PUSH >> kind & 1);
}

static inline int evp_kind_pops(unsigned kind)
{
    return kind < 64 && (EVP_KINDS_POP >> kind & 1);
}

/* A phase of the loop or the runtime around it, that the timeline views
 * show as a slice of its own with --phases (enter, exit, op, init, fini
 * and C calls are shown otherwise): kinds.def's PHASE column. */
static inline int evp_kind_is_phase(unsigned kind)
{
    return kind < 64 && (EVP_KINDS_PHASE >> kind & 1);
}

#endif /* EVALPROF_REPLAY_H */
