/*
 * evalprof event vocabulary.
 *
 * Every producer (the instrumented interpreter, the stock-interpreter
 * extension, the synthetic demo workload, the text-trace importer) speaks
 * these kinds and every view reads them.  The kinds themselves, with their
 * properties, are listed once, in evalprof/kinds.def; this header makes
 * the C names from that list.
 */
#ifndef EVALPROF_EVENTS_H
#define EVALPROF_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "evalprof/kinds.def"

#define EVP_KIND_ENUM_(id, n, name, arg, nest, phase, doc) EVP_EV_##id = n,
#define EVP_KIND_ONE_(id, n, name, arg, nest, phase, doc) +1
enum evp_kind {
    EVP_KINDS(EVP_KIND_ENUM_) /* EVP_EV_INIT = 0, ... */
    EVP_EV__COUNT = 0 EVP_KINDS(EVP_KIND_ONE_)
};

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
    int phase;              /* a phase of the loop or the runtime */
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

/* The kinds that push, that pop, and the phases (kinds.def's NEST and
 * PHASE columns), as constant masks. */
#define EVP_KIND_IF_PUSH_(id, n, name, arg, nest, phase, doc)                  \
    | (EVP_NEST_##nest == EVP_NEST_PUSH ? EVP_KIND_BIT(n) : 0)
#define EVP_KIND_IF_POP_(id, n, name, arg, nest, phase, doc)                   \
    | (EVP_NEST_##nest == EVP_NEST_POP ? EVP_KIND_BIT(n) : 0)
#define EVP_KIND_IF_PHASE_(id, n, name, arg, nest, phase, doc)                 \
    | (phase ? EVP_KIND_BIT(n) : 0)
#define EVP_KINDS_PUSH ((uint64_t)0 EVP_KINDS(EVP_KIND_IF_PUSH_))
#define EVP_KINDS_POP ((uint64_t)0 EVP_KINDS(EVP_KIND_IF_POP_))
#define EVP_KINDS_PHASE ((uint64_t)0 EVP_KINDS(EVP_KIND_IF_PHASE_))
_Static_assert(EVP_EV__COUNT <= 64, "kind sets are 64-bit masks");

/* Producers, as recorded in the trace metadata ("producer" key). */
#define EVP_PRODUCER_INSTRUMENTED "instrumented" /* mode A */
#define EVP_PRODUCER_EXTENSION "extension"       /* mode B */
#define EVP_PRODUCER_SYNTHETIC "synthetic"       /* demo workload */
#define EVP_PRODUCER_TEXT "text"                 /* imported text trace */

#endif /* EVALPROF_EVENTS_H */
