/*
 * evalprof's perf side: turning `perf script` text into folded stacks, a
 * hot-function table, the CPython start-up breakdown and the cross-check
 * against an evalprof trace, plus running `perf record` itself.
 *
 *   perf script text ──► evp_perf_parse (one callback per sample, frames
 *                        tidied the way stackcollapse-perf.pl tidies them)
 *                          ├─► evp_stacks (folded lines)  ─► flame graph
 *                          ├─► evp_hot    (total / self per function)
 *                          ├─► evp_startup (pymain_init, pyinit_core, ...)
 *                          └─► evp_xcheck  (eval / runtime / init / fini)
 *
 * Nothing here touches a trace except crosscheck.c, which uses the replay
 * engine.  Functions return 0 or a negative errno-style value unless said
 * otherwise.
 */
#ifndef EVP_PERF_H
#define EVP_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- stacks.c: folded-stack accumulator ------------------------------ */

struct evp_stacks;

struct evp_stacks *evp_stacks_new(void);
void evp_stacks_free(struct evp_stacks *s);
/* Add VALUE to the stack KEY ("a;b;c", LEN bytes, copied). */
int evp_stacks_add(struct evp_stacks *s, const char *key, size_t len,
                   uint64_t value);
/* Call FN for every stack in byte order of the key; a non-zero return
 * stops the walk and is returned. */
int evp_stacks_each(const struct evp_stacks *s,
                    int (*fn)(void *ctx, const char *key, size_t len,
                              uint64_t value),
                    void *ctx);
/* Write "key value\n" lines in byte order of the key; -EIO on error. */
int evp_stacks_write(const struct evp_stacks *s, FILE *out);

/* "1,234,567" into BUF. */
char *evp_perf_count(char *buf, size_t len, uint64_t v);

/* ---- collapse.c: perf script parsing --------------------------------- */

struct evp_perf_frame {
    const char *name; /* tidied as stackcollapse-perf.pl does */
    size_t len;
    const char *dso; /* as printed between the parentheses */
    size_t dso_len;
};

struct evp_perf_sample {
    const char *comm; /* as printed; may contain spaces */
    size_t comm_len;
    const char *pname; /* the process-name frame ("comm", "comm-pid",
                          "comm-pid/tid"; spaces made '_') */
    size_t pname_len;
    long pid; /* -1 when perf printed only the thread id */
    long tid;
    uint64_t time_ns; /* sample time; valid when has_time */
    int has_time;
    uint64_t period; /* the count before the event name, else 1 */
    const struct evp_perf_frame *frames; /* root first */
    size_t nframes;
    size_t raw_frames; /* callchain lines perf printed for the sample */
    size_t line;       /* line number of the sample's header */
};

struct evp_perf_unnamed;

struct evp_collapse_opts {
    int pid;             /* "comm-pid" process frames */
    int tid;             /* "comm-pid/tid" */
    int annotate_kernel; /* "_[k]" on kernel frames */
    int annotate_jit;    /* "_[j]" on /tmp/perf-PID.map frames */
    int addrs;           /* "[mod <addr>]" for unresolved frames */
    const char *event;   /* keep only this event (default: the first) */
    /* names for the unnamed eval loop of a stripped interpreter
     * (unnamed.c), or NULL */
    struct evp_perf_unnamed *unnamed;
};

struct evp_collapse_stats {
    uint64_t lines;
    uint64_t samples;            /* samples handed on */
    uint64_t filtered;           /* samples of other events */
    uint64_t ignored;            /* blank lines and '#' comments */
    uint64_t unrecognized;       /* lines matching no pattern */
    uint64_t first_unrecognized; /* line number */
    uint64_t first_binary;       /* first line with a NUL byte, 0: none */
    size_t max_raw_frames;
    char event[64];       /* the event kept */
    char other_event[64]; /* first other event met, when any */
    /* with -ERANGE: the header line holding a number out of range */
    uint64_t bad_line;
    const char *bad_what; /* "pid", "tid", "period" or "time" */
    char bad_num[32];     /* its digits (cut at 31) */
    uint64_t bad_max;     /* the largest value taken */
};

/*
 * Parse perf script text BUF (LEN bytes) and call CB for every sample of
 * the kept event.  Frames point into scratch memory valid during the
 * call only.  Returns 0, the callback's non-zero value, -ENOMEM, or
 * -ERANGE at the first header with a number out of range (a pid or tid
 * above 2^31-1, a period above 2^53, a time past 2^64 ns), a damaged
 * file rather than perf's output: ST says which line and number.
 */
int evp_perf_parse(const char *buf, size_t len,
                   const struct evp_collapse_opts *o,
                   int (*cb)(void *ctx, const struct evp_perf_sample *s),
                   void *ctx, struct evp_collapse_stats *st);

/* Append the folded key of sample S (process frame first) to *BUF. */
int evp_perf_sample_key(const struct evp_perf_sample *s, char **buf,
                        size_t *cap, size_t *len);

/* ---- unnamed.c: the eval loop of a stripped interpreter ------------- */

/* The name given to an unnamed frame in a stripped interpreter's eval
 * loop (a function of EVP_PERF_EVAL_MIN_BYTES or more by its unwind
 * table), counted as the eval function everywhere. */
#define EVP_PERF_UNNAMED_EVAL "_PyEval_EvalFrameDefault.unnamed"
#define EVP_PERF_EVAL_MIN_BYTES (48u * 1024)

#ifdef EVP_HAVE_LIBDW
/* Read perf script TEXT (LEN bytes) for files with unnamed frames that
 * are stripped CPython interpreters, and prepare to name their eval
 * loop.  NULL when there is none (or no memory: frames then stay
 * unnamed). */
struct evp_perf_unnamed *evp_perf_unnamed_scan(const char *text, size_t len);
/* EVP_PERF_UNNAMED_EVAL when the unnamed frame at printed address PC (hex
 * digits, PC_LEN) of file DSO lies in its eval loop, else NULL. */
const char *evp_perf_unnamed_name(struct evp_perf_unnamed *u, const char *dso,
                                  size_t dso_len, const char *pc,
                                  size_t pc_len);
/* A file whose frames were named, and how many (*FRAMES); NULL if none. */
const char *evp_perf_unnamed_report(const struct evp_perf_unnamed *u,
                                    uint64_t *frames);
void evp_perf_unnamed_free(struct evp_perf_unnamed *u);
#else
/* Without libdw the frames stay unnamed. */
static inline struct evp_perf_unnamed *evp_perf_unnamed_scan(const char *t,
                                                             size_t n)
{
    (void)t;
    (void)n;
    return NULL;
}
static inline const char *evp_perf_unnamed_name(struct evp_perf_unnamed *u,
                                                const char *d, size_t dn,
                                                const char *pc, size_t pn)
{
    (void)u, (void)d, (void)dn, (void)pc, (void)pn;
    return NULL;
}
static inline const char *
evp_perf_unnamed_report(const struct evp_perf_unnamed *u, uint64_t *f)
{
    (void)u;
    (void)f;
    return NULL;
}
static inline void evp_perf_unnamed_free(struct evp_perf_unnamed *u)
{
    (void)u;
}
#endif

/* ---- hot.c: hot-function table ------------------------------------- */

struct evp_hot;

struct evp_hot *evp_hot_new(void);
void evp_hot_free(struct evp_hot *h);
/* Count one sample: every distinct frame gets total += 1, the leaf self
 * += 1 (process-name frames are not functions and are left out). */
int evp_hot_add(struct evp_hot *h, const struct evp_perf_sample *s);
/* Print the LIMIT hottest functions by self share (Visual Studio's
 * layout: name, total samples and share, self samples and share). */
int evp_hot_print(const struct evp_hot *h, FILE *out, size_t limit);

/* ---- startup.c: CPython start-up breakdown ---------------------------- */

enum evp_startup_phase {
    EVP_SU_INIT_CORE,  /* pymain_init > ... > pyinit_core */
    EVP_SU_INIT_MAIN,  /* pymain_init > ... > pyinit_main */
    EVP_SU_INIT_OTHER, /* pymain_init, elsewhere (pre-init, config) */
    EVP_SU_RUNNING,    /* Py_RunMain, before finalisation */
    EVP_SU_FINI,       /* Py_FinalizeEx and what follows in Py_RunMain */
    EVP_SU_MAIN_OTHER, /* under main, none of the above */
    EVP_SU_LOADER,     /* dynamic loader before main */
    EVP_SU_KERNEL,     /* kernel only: exec, exit, page faults */
    EVP_SU_OTHER_PROC, /* other processes (wrappers, shells) */
    EVP_SU_UNROOTED,   /* user stack that never reaches main/_start */
    EVP_SU__COUNT
};

struct evp_startup {
    uint64_t n[EVP_SU__COUNT];
    uint64_t total;
    int seen_pymain_init; /* symbols were available */
    int seen_init_split;  /* pyinit_core / pyinit_main seen */
};

/* Classify one sample; COMM_PREFIX selects the profiled program's
 * samples (others count as EVP_SU_OTHER_PROC); NULL keeps all. */
enum evp_startup_phase evp_startup_classify(const struct evp_perf_sample *s,
                                            const char *comm_prefix);
void evp_startup_add(struct evp_startup *su, const struct evp_perf_sample *s,
                     const char *comm_prefix);
/* CALLGRAPH: the unwinding mode used ("fp", "dwarf"), NULL unknown. */
int evp_startup_print(const struct evp_startup *su, FILE *out, const char *what,
                      unsigned runs, const char *callgraph);

/* Root frames at which a complete user stack ends. */
int evp_perf_is_root_frame(const char *name, size_t len);

/* ---- run.c: running perf and the profiled interpreter ------------------ */

/* Path of executable NAME (searched in PATH unless it has a '/'). */
int evp_perf_which(const char *name, char *buf, size_t len);
/* Run ARGV; stdout/stderr to files when given; EXTRA_ENV ("K=V", NULL
 * ended) added to the environment.  Returns the exit status (0-255,
 * 128+signal) or a negative errno when it could not start. */
int evp_perf_spawn(char *const argv[], const char *out_path,
                   const char *err_path, char *const extra_env[]);
/* CPython version of interpreter EXE; -EINVAL when not CPython. */
int evp_perf_python_version(const char *exe, int *major, int *minor);
/* One-line explanation of perf's error text. */
void evp_perf_explain(const char *text, char *msg, size_t len);
/* kernel.perf_event_max_stack, -1 when unknown. */
long evp_perf_max_stack(void);
/* Is EXE a CPython interpreter by its name ("python", "python3.12")? */
int evp_perf_is_python(const char *exe);

/* What evp_perf_record runs. */
struct evp_perf_record_opts {
    const char *perf; /* path of the perf program */
    const char *dir;  /* where perf.data and perf.err are kept */
    char *const *cmd; /* the command to profile, NCMD words */
    int ncmd;
    const char *event;     /* perf record -e */
    const char *callgraph; /* fp, dwarf or lbr */
    long freq;             /* samples per second */
    unsigned repeat;       /* runs, their perf script text concatenated */
    const char *script;    /* the file the perf script text goes to */
    int want_xperf;        /* add -X perf to a CPython 3.12+ command */
    const char *ops;       /* when set, leaf IPs as symbol+offset here
                              (perf script -F ip,sym,symoff,dso -G) */
};

/*
 * Check that perf can record here, then record the command REPEAT times
 * and leave the `perf script` text in O->script.  *ADDED_XPERF says
 * whether -X perf was added.  Returns the last run's exit status (0-255,
 * 128+signal), or -1 with the reason (one line) in MSG.
 */
int evp_perf_record(const struct evp_perf_record_opts *o, int *added_xperf,
                    char *msg, size_t len);

/* ---- ops.c: eval-loop samples to source lines and opcodes ------------- */
/* Built only where libdw is found (EVP_HAVE_LIBDW). */

/* One TARGET(NAME) block: source lines FIRST..LAST (1-based). */
struct evp_ops_handler {
    unsigned first, last;
    char name[64];
};

/*
 * The TARGET(NAME) blocks of C source TEXT (LEN bytes): each from its
 * TARGET line to the brace closing its block (or the line before the
 * next TARGET), in order.  *OUT is malloc'd (the caller frees it).
 * Returns 0 or -ENOMEM.
 */
int evp_ops_scan_targets(const char *text, size_t len,
                         struct evp_ops_handler **out, size_t *count);
/* The name of the block holding LINE, NULL outside every block. */
const char *evp_ops_handler_at(const struct evp_ops_handler *h, size_t n,
                               unsigned line);

struct evp_ops;

struct evp_ops *evp_ops_new(void);
void evp_ops_free(struct evp_ops *o);
/* Count the samples of `perf script -F ip,sym,symoff,dso -G` text BUF,
 * keeping those in the eval function: 0 or -ENOMEM. */
int evp_ops_read_script(struct evp_ops *o, const char *buf, size_t len);
/* Samples read, and (into *EVAL) those in the eval function. */
uint64_t evp_ops_samples(const struct evp_ops *o, uint64_t *eval);
/* Map the kept samples to lines and opcodes: 0, or -1 with the reason
 * (no sample in the eval function, no line tables) in MSG. */
int evp_ops_resolve(struct evp_ops *o, char *msg, size_t len);
/* The opcode-share table and the TOP hottest lines: 0, -ENOMEM or
 * -EIO. */
int evp_ops_print(const struct evp_ops *o, FILE *out, size_t top);

/* ---- crosscheck.c: perf samples against an evalprof trace -------------- */

enum evp_xc_cat {
    EVP_XC_EVAL,    /* inside the eval function */
    EVP_XC_RUNTIME, /* runtime other */
    EVP_XC_INIT,
    EVP_XC_FINI,
    EVP_XC__COUNT
};

/* Category of a perf sample from its stack alone. */
enum evp_xc_cat evp_xc_classify(const struct evp_perf_sample *s);

#endif /* EVP_PERF_H */
