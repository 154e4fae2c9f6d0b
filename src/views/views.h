/*
 * evalprof views: each turns a trace (through the replay engine) into one
 * kind of output.  The command-line subcommands are thin wrappers around
 * these functions, so tests and other tools can call them directly.
 *
 * Every view writes its output to OUT and nothing else: it returns 0, or
 * a negative errno-style value with a one-line reason in its options'
 * DIAG (struct evp_diag), where the notes on an output that succeeded go
 * too; the command prints them.
 */
#ifndef EVP_VIEWS_H
#define EVP_VIEWS_H

#include <stdio.h>

#include "evalprof/replay.h"
#include "evalprof/trace.h"
#include "esc.h"
#include "num.h"

/* ---- what a view has to say besides its output (format.c) ----------- */

/*
 * Views print nothing but their output.  A view that fails returns a
 * negative errno and, where it can say more than the errno, one line
 * saying why in REASON ("summary --lines: t.evp has no instruction
 * offsets (record it with --lines)"); an output that succeeded may come
 * with notes (stacks cut at --max-depth), a line each in NOTE.  Neither
 * starts with "evalprof: " nor ends in a newline of its own; the command
 * prints REASON as an error and each note as "evalprof: note: LINE".
 * Zero-initialised by the caller; a view given none keeps nothing.
 */
struct evp_diag {
    char reason[512];
    char note[1536]; /* lines, each ending in '\n' */
};

/* Set D's reason (the first one set stays); nothing when D is NULL. */
void evp_diag_fail(struct evp_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Add a note line to D (a note that does not fit is cut). */
void evp_diag_note(struct evp_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* RC, a replay of T that failed in VIEW, as a reason: "VIEW: out of
 * memory", else "PATH: trace could not be replayed"; returns RC. */
int evp_diag_replay(struct evp_diag *d, const char *view,
                    const struct evp_trace *t, int rc);

/* ---- event filters (filter.c): tree, chrome, speedscope ------------ */

/*
 * What of a trace the tree and the timelines show.  FROM_NS and TO_NS
 * bound a window of time from the trace's start (TO_NS 0: to the end);
 * FUNC keeps every call of the functions it names (a name, "name:file",
 * "file:line" or summary's "name (file:line)") and all they call;
 * MAX_DEPTH drops frames deeper than that (0: none; the tree elides them
 * itself instead); STREAM keeps one stream (-1: all; the tree takes its
 * own option's).  Frames open across the window's edges, or around a
 * kept event, are the views' to clip: see evp_filter_shown.
 */
struct evp_filter {
    uint64_t from_ns, to_ns;
    const char *func; /* NULL: every function */
    size_t max_depth;
    long stream;
};

struct evp_filter_run {
    const struct evp_filter *f;
    uint64_t start;  /* trace-clock ns of the trace's start */
    uint8_t *funcs;  /* by function id: FUNC matches it */
    uint32_t nfuncs; /* entries of FUNCS - 1 */
    int32_t in_func; /* depth of the matched call open, -1: none */
};

/* Any filter set (the views keep their unfiltered output otherwise). */
int evp_filter_active(const struct evp_filter *f);
/* Resolve F->func against T: 0, or -EINVAL (no function matches) or
 * -ENOMEM, its reason in D. */
int evp_filter_open(struct evp_filter_run *r, struct evp_trace *t,
                    const struct evp_filter *f, struct evp_diag *d);
void evp_filter_close(struct evp_filter_run *r);
/* At a stream's start. */
void evp_filter_stream(struct evp_filter_run *r);

#define EVP_FILTER_DROP 0
#define EVP_FILTER_KEEP 1
#define EVP_FILTER_AFTER 2 /* at or past the window's end */
/* Whether E is shown; called for every event of a stream, in order. */
int evp_filter_event(struct evp_filter_run *r, const struct evp_event *e);
/* Whether sample S is shown: its time in the window, and with FUNC that
 * function on its stack (EVP_FILTER_*; MAX_DEPTH is the view's). */
int evp_filter_sample(const struct evp_filter_run *r,
                      const struct evp_sample *s);
/* The frames open at kept event E that are shown, a pop's own included:
 * levels *LO+1 .. the result (level L is FUNC[L-1] of the replay's
 * frames).  A view opens those it has not (the window began inside them)
 * at the window's start, and closes those still open at its end. */
int32_t evp_filter_shown(const struct evp_filter_run *r,
                         const struct evp_event *e, int32_t *lo);
/* E, or E with its elapsed time cut at the window's end (copied into
 * *BUF) when it runs past it; TS: E's time from the trace start. */
const struct evp_event *evp_filter_clip(const struct evp_filter_run *r,
                                        const struct evp_event *e, uint64_t ts,
                                        struct evp_event *buf);
/* The window's end in ns from the trace start (UINT64_MAX: none). */
uint64_t evp_filter_to(const struct evp_filter_run *r);

/* A filtered timeline's frames (chrome, speedscope): levels LO+1 ..
 * LO+N of the replay's frames are open in its output, the ones the
 * window began inside included. */
struct evp_filter_frames {
    int32_t lo, n;
};

/* How a timeline writes those frames: OPEN begins level LEVEL (FUNC[LEVEL
 * - 1] of the replay's frames) at AT, CLOSE ends level LEVEL, the
 * innermost open, at AT.  Each returns 0 or a negative errno. */
struct evp_filter_frame_ops {
    int (*open)(void *ctx, int32_t level, uint64_t at);
    int (*close)(void *ctx, int32_t level, uint64_t at);
};

/* Filtered: whether the timeline shows event *E, at TS from the trace
 * start.  At the window's end every frame in FR is closed there; before
 * a kept event the frames around it that are shown and not yet open (the
 * window began inside them) are opened at the window's start, and *E is
 * then E clipped to the window (into *CLIPPED).  Returns 1 (shown), 0
 * (not), or the first negative errno of OPS. */
int evp_filter_keep(struct evp_filter_run *r, struct evp_filter_frames *fr,
                    const struct evp_filter_frame_ops *ops, void *ctx,
                    const struct evp_event **e, struct evp_event *clipped,
                    uint64_t ts);
/* Filtered: close every frame in FR at AT (a stream's or the window's
 * end): 0 or the first negative errno of OPS->close. */
int evp_filter_close_shown(struct evp_filter_frames *fr,
                           const struct evp_filter_frame_ops *ops, void *ctx,
                           uint64_t at);

/* ---- tree ---------------------------------------------------------- */
enum evp_tree_format {
    EVP_TREE_SIMPLE_INDENT, /* the discussion's default listing */
    EVP_TREE_SIMPLE,        /* same columns, no indentation */
    EVP_TREE_RAW,           /* one line per event, every field */
};

struct evp_tree_opts {
    enum evp_tree_format format;
    int compensate;
    long stream;      /* -1: all */
    size_t max_depth; /* events drawn deeper are elided; 0: none */
    int ns;           /* enum evp_unit of durations (--ns, --us) */
    const struct evp_filter *filter; /* NULL: none (max_depth unused) */
    struct evp_diag *diag;           /* NULL: none */
};

/* The command line's max_depth: the folded stacks' cut, deeper than any
 * real Python stack; a line at that depth (3 KB of indentation) still
 * fits the tree's line whole, and output stays O(events x cap). */
#define EVP_TREE_DEFAULT_DEPTH 1024

int evp_view_tree(struct evp_trace *t, FILE *out,
                  const struct evp_tree_opts *o);

/* ---- lines (lines.c) ---------------------------------------------- */
/* A trace's code unit -> line maps, parsed on first use. */
struct evp_lines;
struct evp_lines *evp_lines_open(const struct evp_trace *t);
void evp_lines_close(struct evp_lines *l);
/* Whether T's ops carry their offset (recorded with --lines). */
int evp_lines_present(const struct evp_trace *t);
/* The line of the op at AT (evp_event.unit) in FUNC; 0 when unknown. */
uint32_t evp_lines_line(struct evp_lines *l, uint32_t func, uint32_t at);
/* "file.py:12" of FUNC's LINE ("?" unknown; a long file cut at its
 * start to "...", 32 characters), as summary --lines shows it. */
void evp_lines_where(char *buf, size_t len, const struct evp_trace *t,
                     uint32_t func, uint32_t line);
/* summary --lines: the hottest lines, with the ops that ran on them
 * (the first EVP_LINES_SHOWN, then how many more). */
#define EVP_LINES_SHOWN 25
int evp_view_lines_table(struct evp_trace *t, FILE *out, int compensate,
                         long stream, int ns, struct evp_diag *d);
/* `summary --lines` of N sampled runs T (stream index STREAM, -1 all):
 * the hottest lines, matched by function (evp_stats_func_rel_key) and
 * line, with their periods summed, pooled share and 95% interval, and
 * estimated time per run as median [min - max].  0 or a negative errno
 * (its reason in D). */
int evp_view_lines_runs(struct evp_trace **t, size_t n, FILE *out, long stream,
                        int unit, struct evp_diag *d);

/* ---- summary ------------------------------------------------------- */
enum evp_sort {
    EVP_SORT_COUNT,
    EVP_SORT_NAME,
    EVP_SORT_ELAPSED,
    EVP_SORT_TOTAL
};

struct evp_summary_opts {
    enum evp_sort sort;
    int funcs;             /* add the per-function table */
    int group_specialized; /* fold specialized opcodes into their base */
    int compensate;
    long stream;
    int ns;                /* enum evp_unit of durations (--ns, --us) */
    int wide_names;        /* function names never cut (--wide) */
    int lines;             /* the hottest lines table instead (--lines) */
    struct evp_diag *diag; /* NULL: none */
};

int evp_view_summary(struct evp_trace *t, FILE *out,
                     const struct evp_summary_opts *o);

/* Several runs of one program (summary_runs.c): counts summed, times as
 * the median and [min - max] across the N traces of T.  Sampled runs
 * (all of them: a command refuses a mix) are laid out as one's: per
 * state, phase, opcode and function (matched by evp_stats_func_rel_key)
 * the periods summed, the pooled share of all runs' periods with its 95%
 * Wilson interval, and the estimated time per run as median and [min -
 * max]; exact counts summed over the runs that recorded them.  Runs
 * sampled at different rates or clocks are pooled by periods, and a note
 * says so; with o->lines, evp_view_lines_runs. */
int evp_view_summary_runs(struct evp_trace **t, size_t n, FILE *out,
                          const struct evp_summary_opts *o);

/* ---- diff (diff.c) ------------------------------------------------ */
struct evp_diff_opts {
    enum evp_sort sort; /* EVP_SORT_TOTAL (default): by change in total */
    int funcs;          /* add the per-function table */
    int compensate;
    int ns;                /* enum evp_unit of durations (--ns, --us) */
    int wide_names;        /* function names never cut (--wide) */
    int group_specialized; /* opcode families: specialized forms folded */
    struct evp_diag *diag; /* NULL: none */
};

/* Two traces of events, or two sampled traces (their shares compared: a
 * command refuses a mix). */
int evp_view_diff(struct evp_trace *base, struct evp_trace *new_, FILE *out,
                  const struct evp_diff_opts *o);

/* ---- timeline (chrome.c): Trace Event Format JSON ------------------
 *
 * A sampled trace's timeline has sample events and their stack frames
 * (chrome) or sampled profiles (speedscope); FILTER may only name its
 * stream. */
struct evp_chrome_opts {
    int ops;    /* every instruction as a slice */
    int phases; /* the loop's phases as slices */
    int compensate;
    const struct evp_filter *filter; /* NULL: none */
    struct evp_diag *diag;           /* NULL: none */
};

int evp_view_chrome(struct evp_trace *t, FILE *out,
                    const struct evp_chrome_opts *o);

/* The same run in speedscope's file format: one evented profile per
 * thread (speedscope.c). */
int evp_view_speedscope(struct evp_trace *t, FILE *out,
                        const struct evp_chrome_opts *o);

/* ---- info ---------------------------------------------------------- */
int evp_view_info(struct evp_trace *t, FILE *out);

/* ---- report header (header.c) ---------------------------------------- */

/* The python/argv/start/end/elapsed block; PREFIX "# " and WIDTH 18 for
 * the tree, "" and 11 for the summary; the elapsed time in ns if IN_NS. */
void evp_view_header(FILE *out, const struct evp_trace *t, const char *prefix,
                     int width, int compensate, int in_ns);
/* The head of a summary of the N runs T: a "reading from" line each, the
 * mode line "(showing results in 'summary' format, N WHAT)", the
 * first run's interpreter and the runs' elapsed times as median [min -
 * max] in UNIT (enum evp_unit). */
void evp_view_runs_header(FILE *out, struct evp_trace *const *t, size_t n,
                          const char *what, int unit);
/* Of several sampled runs, the overhead: line with what sampling cost
 * evalprof's handlers and writer, summed over the runs (nothing when a
 * run's recorder did not measure it). */
void evp_view_overhead_runs(FILE *out, struct evp_trace *const *t, size_t runs);
/* "/usr/bin/python3.12 3.12.0": IN's interpreter and its version (when
 * known), escaped as the header's values are, no newline. */
void evp_view_python(FILE *out, const struct evp_trace_info *in);
/* The per-kind costs the producer measured, kinds of equal cost grouped:
 * "op 41.2 ns; enter, exit 60.3 ns; other kinds 8.5 ns (the recorder
 * alone), measured per event"; returns its length. */
size_t evp_view_kind_costs(const struct evp_trace *t, char *buf, size_t len);
/* One line describing the producer ("" for text traces). */
const char *evp_view_producer_note(const struct evp_trace *t, char *buf,
                                   size_t len);
/* "N threads ran untraced (main thread only)" when the trace's
 * threads.untraced metadata counts any, else "". */
const char *evp_view_untraced_note(const struct evp_trace *t, char *buf,
                                   size_t len);

/* ---- folded stacks (folded.c) ------------------------------------ */

/*
 * Collapsed stacks ("a;b;c <ns>" per line, sorted) for flamegraph.pl,
 * inferno and speedscope.  A frame is a function's qualified name, with
 * " (file:line)" when the trace knows them; time outside any frame shows
 * as "[init]", "[runtime other]", "[fini]" ... at the root, so the lines
 * add up to the traced time.  With several streams each stack starts with
 * the stream's name.  OPS adds the opcode as a leaf "op:NAME"; PHASES adds
 * the loop phase as a leaf "[dispatch]", "[op]" ... (both: "[op];op:NAME").
 * MAX_DEPTH (0: no limit) cuts stacks after that many frames: the time of
 * the frames below goes to one "[N deeper frames]" leaf under the frame at
 * the cap (N: the most frames it stands for), and a note says so (DIAG).
 * Memory is O(tree nodes + depth) whatever the length of the lines.
 */
struct evp_folded_opts {
    int ops;   /* 1: opcode leaves; 2: their families, every specialized
                  form folded into its base and named as across versions
                  (evp_view_op_family), so that two versions' stacks match */
    int lines; /* a "file:line" leaf under each function (traces with
                  op offsets, --lines) */
    int phases;
    int compensate;
    long stream;           /* -1: all */
    size_t max_depth;      /* frames kept on a stack; 0: all */
    struct evp_diag *diag; /* NULL: none */
};

/* The command line's max_depth: deeper than any real Python stack (the
 * default recursion limit is 1000), shallow enough that no line is long. */
#define EVP_FOLDED_DEFAULT_DEPTH 1024

int evp_view_folded(struct evp_trace *t, FILE *out,
                    const struct evp_folded_opts *o);

/* The same lines handed to FN one at a time, in the same order: STACK
 * ("a;b;c", LEN bytes, no newline) is valid during the call only.  FN
 * returns 0 or a negative errno, which stops the walk and is returned. */
int evp_view_folded_each(struct evp_trace *t, const struct evp_folded_opts *o,
                         int (*fn)(void *ctx, const char *stack, size_t len,
                                   uint64_t ns),
                         void *ctx);

/* ---- frame keys of the flame and timeline views (format.c) --------- */

/* A frame is a function id, or a leaf tagged with what it stands for. */
#define EVP_KEY_PHASE 0x10000000u   /* | kind: "[loop fast]" */
#define EVP_KEY_OP 0x20000000u      /* | opcode: "op:LOAD_FAST" */
#define EVP_KEY_STREAM 0x30000000u  /* | stream index: a stream's root */
#define EVP_KEY_DEEP 0x40000000u    /* the frames below a depth cap */
#define EVP_KEY_LINE 0x50000000u    /* | index: "file:line" (calltree.h) */
#define EVP_KEY_UNKNOWN 0x60000000u /* "<unknown stack>" (sampled) */
#define EVP_KEY_SCAT 0x70000000u    /* | enum evp_sample_cat: "[C call]" */
#define EVP_KEY_TAG 0xf0000000u
#define EVP_KEY_VAL 0x0fffffffu
/* The recorder's own time, in every view a frame of this name (replay.h) */
#define EVP_KEY_RECORDER (EVP_KEY_PHASE | EVP_EV_RECORDER)
#define EVP_RECORDER_FRAME "[evalprof]"

/* The name of leaf KEY (a phase, an op, a sampled thread's state, the
 * recorder's frame or "<unknown stack>"), unescaped, into BUF (LEN > 0),
 * cut to fit; returns its length.  Opcode names come from the trace. */
size_t evp_view_leaf_name(const struct evp_trace *t, uint32_t key, char *buf,
                          size_t len);

/* ---- flame graphs (flamegraph.c) ----------------------------------- */

struct evp_flame;

struct evp_flame_opts {
    const char *title;     /* NULL: "Flame Graph" / "Icicle Graph" */
    const char *subtitle;  /* NULL: none */
    const char *countname; /* unit of the values: "samples", "ns" */
    int icicle;            /* root at the top */
    int width;             /* pixels; 0: 1200 */
    int frame_height;      /* pixels; 0: 16 */
    double min_width;      /* frames narrower (pixels) are left out; <0: 0.1 */
    int negate;            /* differential: draw BASE's widths, not NEW's */
};

struct evp_flame_stats {
    uint64_t lines;     /* input lines */
    uint64_t stacks;    /* lines taken */
    uint64_t malformed; /* lines without a trailing count */
    uint64_t first_malformed;
    int differential;   /* two counts per line: the second was drawn */
    uint64_t frames;    /* frames drawn */
    uint64_t nodes;     /* merged frames in the tree */
    uint64_t bad_line;  /* -ERANGE: the line whose count is too large */
    char bad_count[32]; /* that count as written (cut at 31 bytes) */
};

/* The largest count a folded line may carry: sums of counts up to 2^53
 * are exact in the doubles the tree adds them in. */
#define EVP_FLAME_MAX_COUNT 9007199254740992.0

struct evp_flame *evp_flame_new(void);
void evp_flame_free(struct evp_flame *f);

/* Merge folded text (LEN bytes; need not outlive the call unless
 * evp_flame_borrow was called).  Returns 0, -ENOMEM, or -ERANGE at the
 * first count above EVP_FLAME_MAX_COUNT (ST->bad_line says where: the
 * picture would be wrong, so the input is refused); malformed lines are
 * counted in ST, not fatal. */
int evp_flame_add_folded(struct evp_flame *f, const char *buf, size_t len,
                         struct evp_flame_stats *st);

/* From now on names may point into the buffers given to
 * evp_flame_add_folded instead of being copied: those buffers must then
 * stay valid until evp_flame_free (saves copying every name). */
void evp_flame_borrow(struct evp_flame *f);

/* Add VALUE to one stack ("a;b;c", LEN bytes). */
int evp_flame_add(struct evp_flame *f, const char *stack, size_t len,
                  double value);

/* Total of all values merged so far. */
double evp_flame_total(const struct evp_flame *f);

/* Differential flame graphs (difffolded.pl and flamegraph.pl's): after
 * evp_flame_to_base(F, 1) stacks add to the BASE profile, after (F, 0) to
 * NEW again (returns 0 or -ENOMEM).  A flame with a BASE is drawn with
 * NEW's widths (BASE's with opts.negate), each frame red as its own value
 * grew and blue as it shrank, saturation relative to the largest change,
 * and its title holds both values and the change. */
int evp_flame_to_base(struct evp_flame *f, int on);
int evp_flame_differential(const struct evp_flame *f);
double evp_flame_base_total(const struct evp_flame *f);

/* Write the interactive SVG.  Deterministic: the same stacks give the same
 * bytes whatever their input order.  Returns 0 or -EIO / -ENOMEM. */
int evp_flame_write_svg(struct evp_flame *f, FILE *out,
                        const struct evp_flame_opts *o,
                        struct evp_flame_stats *st);

/* Read a whole file ("-": stdin) into a malloc'ed buffer (NUL-terminated
 * beyond LEN).  Returns 0 or a negative errno. */
int evp_flame_slurp(const char *path, char **buf, size_t *len);

/* Map a regular file read-only (no NUL after it), else read it as
 * evp_flame_slurp does; *MAPPED says which, for evp_flame_unmap. */
int evp_flame_map(const char *path, const char **buf, size_t *len, int *mapped);
void evp_flame_unmap(const char *buf, size_t len, int mapped);

/* ---- HTML report (html.c) ------------------------------------------ */

/* One self-contained page (no network): the run's header facts and
 * notes, time by loop phase, top opcodes, a sortable and filterable
 * function table and the flame graph, with the summary's figures; with
 * NEW_ (not NULL) the two runs' headers, the diff tables and the
 * differential flame graph instead. */
struct evp_report_opts {
    int compensate;
    struct evp_diag *diag; /* NULL: none */
};

int evp_view_report(struct evp_trace *base, struct evp_trace *new_, FILE *out,
                    const struct evp_report_opts *o);

/* A function as the diff view matches it across runs: "name (file:line)",
 * or the name alone when the file is unknown (format.c). */
void evp_view_func_key(const struct evp_trace *t, uint32_t id, char *buf,
                       size_t len);

/* A function's label S ("name (file:line)") escaped for a terminal cell
 * into BUF (LEN bytes); returns its columns.  MAXCOLS 0 keeps it whole;
 * a label wider than MAXCOLS keeps its name and the end of its path (the
 * last component and ":line)") and elides the middle of the path with
 * "…"; a label of another shape is cut to end in ".." (format.c). */
int evp_view_func_cell(char *buf, size_t len, const char *s, int maxcols);
/* Among cells that print alike, when their labels are not all the same,
 * every cut cell shows its whole label (SHOWN[i] = FULL[i], COLS[i] =
 * FULLCOLS[i]), again until no two labels that differ print alike
 * (format.c). */
void evp_view_cells_unique(size_t n, const char **shown, int *cols,
                           const char *const *full, const int *fullcols);

/* Opcode OP's name in T, or "<OP>" when the trace does not name it
 * (format.c). */
void evp_view_op_name(const struct evp_trace *t, unsigned op, char *buf,
                      size_t len);
/* NAME (LEN bytes), an opcode's name in one CPython version, rewritten
 * to the name it is compared by across versions (format.c): the newer
 * name of a renamed or merged instruction, sys.monitoring's
 * INSTRUMENTED_ forms as the instruction; with BASE (NAME being a base
 * instruction already, or folded to one) the family's base. */
void evp_view_op_family(char *name, size_t len, int base);

/* ---- shared formatting helpers (format.c) ------------------------- */

/* The unit durations print in: UNIT_US is the discussion's reports'
 * (--us), UNIT_NS whole nanoseconds (--ns), UNIT_AUTO (the default of
 * summary's and diff's tables) the largest of ns, µs and ms in which
 * every nonzero value of a column is at least 1, chosen per column by
 * evp_fmt_col_unit: a column of 4 ns means does not read "0.0 µs", and
 * every value keeps at least two significant digits. */
enum evp_unit {
    EVP_UNIT_US = 0,
    EVP_UNIT_NS = 1,
    EVP_UNIT_MS = 2,
    EVP_UNIT_AUTO = 3
};

/* UNIT, or for EVP_UNIT_AUTO the unit of a column whose smallest nonzero
 * value is LO ns (UINT64_MAX or 0: no such value, µs). */
int evp_fmt_col_unit(int unit, uint64_t lo);
/* *LO lowered to NS when NS is nonzero: the column scan for the above. */
void evp_fmt_col_see(uint64_t *lo, uint64_t ns);

/* ns as "1,782.7" in UNIT (µs or ms with one truncated decimal,
 * thousands separated), or in whole nanoseconds ("1,782,700") for
 * EVP_UNIT_NS; the unit's name printed after them is evp_fmt_unit(UNIT)
 * ("µs", "ns", "ms").  EVP_UNIT_AUTO prints as µs: a caller picks
 * the column's unit first. */
char *evp_fmt_us(char *buf, size_t len, uint64_t ns, int unit);
const char *evp_fmt_unit(int unit);
/* A table's column rule: a blank, then N dashes. */
void evp_fmt_dashes(FILE *out, int n);
/* The rule under a heading of N columns W[0..N): the name column's W[0]
 * dashes, then each column's after a blank (evp_fmt_dashes), a newline. */
void evp_fmt_rule(FILE *out, const int *w, size_t n);
/* a mean in µs, as evp_fmt_us */
char *evp_fmt_us_double(char *buf, size_t len, double us, int unit);
/* epoch ns as "2021-03-31 20:27:25.663947 UTC" */
char *evp_fmt_wall(char *buf, size_t len, int64_t epoch_ns);

/* ---- profile exports (pprof.c, pstats.c, callgrind.c) -------------- */

/*
 * The trace as the profiles other tools read, every figure the
 * compensated time of `summary --funcs` (self, inclusive, calls): pprof's
 * gzipped profile.proto (samples of the call tree; OPS and PHASES add
 * leaves, MAX_DEPTH cuts stacks as folded stacks do), cProfile's marshal
 * format for pstats, and callgrind's text format for callgrind_annotate
 * and KCachegrind (OPS adds an instruction count).  A sampled trace's
 * profiles hold its estimated times, and its timer periods for counts
 * (each file's comment says how).
 */
struct evp_profile_opts {
    int ops;
    int phases;
    int compensate;
    size_t max_depth;      /* pprof: frames kept on a stack; 0: all */
    struct evp_diag *diag; /* NULL: none */
};

int evp_view_pprof(struct evp_trace *t, FILE *out,
                   const struct evp_profile_opts *o);
int evp_view_pstats(struct evp_trace *t, FILE *out,
                    const struct evp_profile_opts *o);
int evp_view_callgrind(struct evp_trace *t, FILE *out,
                       const struct evp_profile_opts *o);

/* ---- sampled traces ---------------------------------------------------
 *
 * A trace recorded in sampled mode (samples, no events) is shown from its
 * samples by every view: shares of the timer periods with 95% confidence
 * intervals (Wilson score) and estimated times, weight x
 * sample.period_ns (the statistics: sampled.c).
 */

/* T is shown from its samples: it holds samples and no events. */
static inline int evp_sampled_only(const struct evp_trace *t)
{
    return evp_trace_records(t) == EVP_RECORDS_SAMPLES;
}

/* What a sampled thread was doing, one category a sample: without the
 * GIL (blocked taking it, blocked in another system call, else running
 * or not known), in a C call, in the eval loop, on no Python frame, else
 * in the runtime with a frame (format.c). */
enum evp_sample_cat {
    EVP_SCAT_EVAL,
    EVP_SCAT_C_CALL,
    EVP_SCAT_GIL_WAIT,
    EVP_SCAT_SYSCALL,
    EVP_SCAT_NO_GIL,
    EVP_SCAT_OTHER,
    EVP_SCAT_NO_FRAME,
    EVP_SCAT_NO_PC,      /* GIL held, where in machine code not read */
    EVP_SCAT_JIT,        /* in JIT-compiled code */
    EVP_SCAT_JIT_CALLED, /* runtime code a JIT-compiled trace called */
    EVP_SCAT__COUNT
};
int evp_sample_cat(uint32_t state, uint32_t stack);
/* The row of the samples in JIT-compiled code in the tables of opcodes
 * and lines: the frame's instruction pointer is the last _SET_IP's, which
 * may lag, so they name no opcode or line (docs/FORMAT.md, bit 22). */
#define EVP_SAMPLE_JIT_OP_NAME "(JIT: instruction not current)"
/* Whether a sample's instruction and line are current (format.c): not in
 * JIT code, nor in code a JIT trace called before its first _SET_IP (the
 * frame's pointer still on the trace's ENTER_EXECUTOR). */
int evp_sample_ip_current(const struct evp_trace *t, uint32_t state);
/* 1 when a producer of one of the RUNS traces could tell JIT-compiled code
 * (its sample.jit says how): the JIT rows are shown, at 0% too. */
int evp_sample_jit_told(struct evp_trace *const *t, size_t runs);
const char *evp_sample_cat_name(int cat); /* the summary's row */
const char *evp_sample_cat_leaf(int cat); /* a stack leaf, "[C call]" */

/* The estimated time of WEIGHT timer periods, in ns. */
uint64_t evp_sample_ns(const struct evp_trace *t, uint64_t weight);

/* How many samples TOTAL timer periods count as, their weights squared
 * summing to W2: (sum w)^2 / sum w^2 (Kish's effective count), TOTAL
 * itself while every sample stands for one period. */
double evp_sample_trials(uint64_t total, double w2);

/* The 95% Wilson score interval of a share P over N trials (N need not
 * be whole: evp_sample_trials). */
void evp_wilson(double p, double n, double *lo, double *hi);

/* A sampled table's share and interval cells: "12.3%" and "11.1-13.6%"
 * for K of N periods, which count as TRIALS samples (evp_sample_trials,
 * evp_wilson). */
void evp_share_cells(uint64_t k, uint64_t n, double trials, char *sh,
                     size_t shl, char *ci, size_t cil);

/* Two-proportion z-test of share P1 over N1 trials against P2 over N2:
 * *Z, and whether the difference is significant at 95% (|z| > 1.96). */
int evp_two_prop_z(double p1, double n1, double p2, double n2, double *z);

#endif
