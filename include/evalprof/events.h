/*
 * evalprof event vocabulary.
 *
 * Every producer (the instrumented interpreter, the stock-interpreter
 * extension, the synthetic demo workload, the text-trace importer) speaks
 * these kinds and every view reads them.  Numbers 0-13 are those of the
 * eval-loop profiling discussion's text format, so its traces stay readable;
 * new kinds take new numbers and existing numbers never change meaning.
 *
 * An event's elapsed time is the time until the next event of the same
 * thread.  Kinds that nest (enter/exit and friends) give each event a depth
 * and a current function, from which inclusive and self times are derived.
 */
#ifndef EVALPROF_EVENTS_H
#define EVALPROF_EVENTS_H

#include <stddef.h>
#include <stdint.h>

enum evp_kind {
    EVP_EV_INIT = 0,            /* recording starts (interpreter start-up) */
    EVP_EV_FINI = 1,            /* recording ends */
    EVP_EV_RUNTIME_OTHER = 2,   /* back in the runtime after an exit */
    EVP_EV_ENTER = 3,           /* a frame starts being evaluated; arg: func */
    EVP_EV_EXIT = 4,            /* a frame stops being evaluated; arg: func */
    EVP_EV_LOOP_ENTER = 5,      /* set-up done, top of the loop reached */
    EVP_EV_LOOP_SLOW = 6,       /* eval-breaker slow path taken */
    EVP_EV_LOOP_FAST = 7,       /* eval-breaker check passed (fast path) */
    EVP_EV_DISPATCH = 8,        /* about to dispatch the next instruction */
    EVP_EV_OP = 9,              /* an instruction starts; opcode, oparg */
    EVP_EV_LOOP_EXCEPTION = 10, /* exception unwinding starts */
    EVP_EV_LOOP_ERROR = 11,     /* the error path is entered */
    EVP_EV_LOOP_EXITING = 12,   /* the exiting path is entered */
    EVP_EV_LOOP_EXIT = 13,      /* the loop is left */
    /* Kinds added by evalprof (not in the discussion's traces). */
    EVP_EV_RECORDER = 14,    /* time spent inside evalprof's recorder */
    EVP_EV_C_CALL = 15,      /* a C function is called; arg: func */
    EVP_EV_C_RETURN = 16,    /* the C function returned; arg: func */
    EVP_EV_C_RAISE = 17,     /* the C function raised; arg: func */
    EVP_EV_RESUME = 18,      /* a suspended generator/coroutine frame
                                is evaluated again; arg: func (nests
                                like enter) */
    EVP_EV_SUSPEND = 19,     /* the frame suspends (yield, await);
                                arg: func (nests like exit) */
    EVP_EV_LOG_WRITTEN = 20, /* text traces' "# log written: <s>"
                                annotation: arg is the time (ns) the
                                tracer spent writing its log, left out
                                of the preceding event's elapsed */
    EVP_EV__COUNT = 21
};

/* Kinds of the discussion's vocabulary (0-13). */
#define EVP_EV_CLASSIC_COUNT 14

/* What an event's argument means. */
enum evp_arg_class {
    EVP_ARG_NONE = 0, /* no argument */
    EVP_ARG_FUNC = 1, /* a function id from the trace's function table */
    EVP_ARG_OP = 2,   /* opcode (aux) and oparg (arg) */
};

/* How a kind changes the nesting depth. */
enum evp_nest {
    EVP_NEST_NONE = 0,
    EVP_NEST_PUSH = 1, /* enter, resume, c call */
    EVP_NEST_POP = 2,  /* exit, suspend, c return, c raise */
};

struct evp_kind_info {
    const char *name;       /* as printed in reports: "loop enter" */
    enum evp_arg_class arg; /* argument class */
    enum evp_nest nest;     /* nesting effect */
    const char *doc;        /* one line, for `evalprof info` and docs */
};

/*
 * Properties of kind K, or NULL for a number evalprof does not know
 * (such kinds may still appear in imported text traces and are kept).
 */
const struct evp_kind_info *evp_kind_info(unsigned kind);

/* Name of kind K; "kind N" style names are returned for unknown kinds
 * in a static buffer that the next call may overwrite. */
const char *evp_kind_name(unsigned kind);

/* The metadata key of kind KIND's measured cost in ns, "event_cost.kind."
 * and its name with blanks as '_' ("event_cost.kind.runtime_other"). */
void evp_kind_cost_key(char *buf, size_t len, unsigned kind);

/* Bit mask helpers for sets of kinds (kinds below 64). */
#define EVP_KIND_BIT(k) (UINT64_C(1) << (k))
#define EVP_KINDS_CLASSIC ((UINT64_C(1) << EVP_EV_CLASSIC_COUNT) - 1)
#define EVP_KINDS_ALL ((UINT64_C(1) << EVP_EV__COUNT) - 1)

/* Producers, as recorded in the trace metadata ("producer" key). */
#define EVP_PRODUCER_INSTRUMENTED "instrumented" /* mode A */
#define EVP_PRODUCER_EXTENSION "extension"       /* mode B */
#define EVP_PRODUCER_SYNTHETIC "synthetic"       /* demo workload */
#define EVP_PRODUCER_TEXT "text"                 /* imported text trace */

#endif /* EVALPROF_EVENTS_H */
