/*
 * evalprof attach: looking at a Python process that is already running
 * (src/attach; docs/ATTACH.md).
 *
 *   the target    a running CPython 3.11-3.15 (stock or evalprof-
 *                 instrumented) read from outside: its memory through
 *                 process_vm_readv, its interpreter's layout from the
 *                 offsets it publishes (_PyRuntime.debug_offsets, 3.13+)
 *                 or from evalprof's tables of 3.11 and 3.12
 *                 (src/attach/layouts.c), its threads' Python stacks and
 *                 states (evp_target_*: `evalprof dump`).
 *
 * Every call that can fail returns 0 (or a count) or a negative errno
 * and writes one line into WHY saying what happened and, where the
 * kernel refused, what would allow it.  Nothing writes to stdout or
 * stderr.
 */
#ifndef EVALPROF_ATTACH_H
#define EVALPROF_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the target -------------------------------------------------------- */

struct evp_target; /* opaque */

struct evp_target_info {
    pid_t pid;
    unsigned long version_hex; /* Py_Version */
    char version[24];          /* "3.13.0" */
    unsigned minor;            /* 11..15 */
    int instrumented;          /* an evalprof-instrumented interpreter */
    int published;             /* offsets from _PyRuntime.debug_offsets */
    char runtime_file[4096];   /* the file holding _PyRuntime */
    char exe[4096];            /* /proc/PID/exe */
    char cmdline[4096];        /* its words, spaces between */
    uid_t uid;                 /* its real user */
};

/*
 * Open process PID for reading.  Returns 0, or: -ESRCH (no such process,
 * or it exited), -EPERM or -EACCES (refused: WHY says why and what would
 * allow it), -ENOEXEC (not a Python process), -EPROTONOSUPPORT (a Python
 * evalprof does not read: another version, free-threaded), -ENOENT (no
 * interpreter running: not yet initialized, or finalized).
 */
int evp_target_open(pid_t pid, struct evp_target **out, char *why, size_t n);
const struct evp_target_info *evp_target_info(const struct evp_target *t);
void evp_target_close(struct evp_target *t);

/* Stop every thread of the target for a consistent read (ptrace), and
 * let them go again.  0, or -errno with WHY (another tracer, the rights,
 * the target gone). */
int evp_target_freeze(struct evp_target *t, char *why, size_t n);
void evp_target_thaw(struct evp_target *t);

/* One frame of a thread's stack.  The strings belong to the target's
 * cache and last until evp_target_close. */
struct evp_tframe {
    const char *name;   /* co_qualname */
    const char *file;   /* co_filename */
    uint32_t firstline; /* co_firstlineno */
    uint32_t line;      /* the line being run, 0: unknown */
    int32_t unit;       /* its instruction's code unit, -1: unknown */
    int opcode;         /* the executed (specialized) opcode, -1 */
    uint64_t code;      /* the code object's address */
    uint32_t key;       /* the cache's key of the code (a dense id >= 1) */
};

struct evp_tthread {
    pid_t tid;       /* the kernel's id */
    uint64_t ident;  /* threading.get_ident() */
    uint64_t tstate; /* its PyThreadState */
    int main;        /* the process's main thread */
    int interp;      /* the interpreter's index, 0: the main one */
    uint32_t flags;  /* EVP_SAMPLE_* state flags (evalprof/format.h) */
    long syscall;    /* blocked in this system call, -1: not */
    uint64_t pc;     /* frozen: the program counter, else 0 */
    unsigned nframes;
    struct evp_tframe *frames; /* leaf first */
};

struct evp_tsnapshot {
    size_t nthreads;
    struct evp_tthread *threads;
    uint64_t walk_errors; /* frames that could not be read (cut stacks) */
    /* room kept for the next snapshot into the same struct */
    struct evp_tframe *pool_;
    size_t *starts_;
    size_t threads_cap_, pool_cap_;
};
#define EVP_TSNAPSHOT_INIT                                                     \
    {                                                                          \
        0, NULL, 0, NULL, NULL, 0, 0                                           \
    }

/*
 * Every thread's state and Python stack now (at most MAX_DEPTH frames
 * each, 0: 512), into S (EVP_TSNAPSHOT_INIT, or a snapshot taken before,
 * whose room is reused; free it with evp_tsnapshot_free).  On a frozen
 * target the stacks are consistent and each thread's program counter
 * tells the eval loop from a C call (EVP_SAMPLE_IN_EVAL, _C_CALL); else
 * they are read as the threads run (EVP_SAMPLE_NO_PC).  0 or -errno
 * with WHY.
 */
int evp_target_snapshot(struct evp_target *t, unsigned max_depth,
                        struct evp_tsnapshot *s, char *why, size_t n);
void evp_tsnapshot_free(struct evp_tsnapshot *s);

/* The name of OPCODE in the target's interpreter ("LOAD_FAST"), or
 * NULL. */
const char *evp_target_opname(const struct evp_target *t, int opcode);

/* "waiting for the GIL", "in a C call", ... for a thread's FLAGS. */
const char *evp_tthread_state_name(uint32_t flags);

/* The name of system call NR on this machine ("futex"), or NULL. */
const char *evp_syscall_name(long nr);

#ifdef __cplusplus
}
#endif

#endif /* EVALPROF_ATTACH_H */
