/*
 * The CPython start-up breakdown of the eval-loop profiling discussion,
 * computed from perf samples instead of by reading a flame graph:
 *
 *   main ─► pymain_main ─┬─► pymain_init ─┬─► (pre-init, configuration)
 *                        │                ├─► pyinit_core
 *                        │                └─► pyinit_main
 *                        └─► Py_RunMain ──┬─► pymain_run_python  (running)
 *                                         └─► Py_FinalizeEx, pymain_free
 *                                                          (finalisation)
 *
 * Each sample is put in one phase by the outermost decisive frame on its
 * stack.  Samples that never reach main are split into the dynamic loader,
 * kernel-only stacks (exec, page faults, exit), other processes (a pyenv
 * shim, a shell) and user stacks that stop early (broken unwinding).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "views.h"
#include "perf.h"

static int eq(const struct evp_perf_frame *f, const char *s)
{
    size_t n = strlen(s);
    return f->len == n && memcmp(f->name, s, n) == 0;
}

static int starts(const char *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    return n >= k && memcmp(p, s, k) == 0;
}

static int contains(const char *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, s, k) == 0)
            return 1;
    return 0;
}

static int is_kernel(const struct evp_perf_frame *f)
{
    return (f->dso_len && f->dso[0] == '[' &&
            contains(f->dso, f->dso_len, "kernel")) ||
           (f->len > 4 && memcmp(f->name + f->len - 4, "_[k]", 4) == 0);
}

int evp_perf_is_root_frame(const char *name, size_t len)
{
    static const char *roots[] = {"_start",
                                  "__libc_start_main",
                                  "__libc_start_main_impl",
                                  "__libc_start_call_main",
                                  "main",
                                  "clone",
                                  "clone3",
                                  "__clone",
                                  "__clone3",
                                  "start_thread",
                                  "_dl_start_user",
                                  "_dl_start",
                                  "ret_from_fork",
                                  "ret_from_fork_asm",
                                  "entry_SYSCALL_64",
                                  "entry_SYSCALL_64_after_hwframe",
                                  NULL};
    for (size_t i = 0; roots[i]; i++)
        if (strlen(roots[i]) == len && memcmp(roots[i], name, len) == 0)
            return 1;
    return 0;
}

static int is_init_fn(const struct evp_perf_frame *f)
{
    return eq(f, "pymain_init") || eq(f, "Py_InitializeFromConfig") ||
           eq(f, "Py_InitializeEx") || eq(f, "Py_Initialize") ||
           eq(f, "_Py_InitializeMain") ||
           starts(f->name, f->len, "_Py_PreInitialize") ||
           starts(f->name, f->len, "Py_PreInitialize");
}

static int is_fini_fn(const struct evp_perf_frame *f)
{
    return eq(f, "Py_FinalizeEx") || eq(f, "_Py_Finalize") ||
           eq(f, "Py_Finalize") || eq(f, "pymain_free") || eq(f, "Py_Exit");
}

static int is_main_fn(const struct evp_perf_frame *f)
{
    return eq(f, "main") || eq(f, "Py_BytesMain") || eq(f, "Py_Main") ||
           eq(f, "pymain_main") || eq(f, "__libc_start_call_main") ||
           eq(f, "__libc_start_main") || eq(f, "__libc_start_main_impl");
}

static int python_dso(const struct evp_perf_frame *f)
{
    return contains(f->dso, f->dso_len, "python") ||
           contains(f->dso, f->dso_len, "/tmp/perf-");
}

enum evp_startup_phase evp_startup_classify(const struct evp_perf_sample *s,
                                            const char *comm_prefix)
{
    int in_init = 0, in_run = 0, has_main = 0, loader = 0, py = 0, user = 0;
    enum evp_startup_phase init_part = EVP_SU_INIT_OTHER;
    for (size_t i = 0; i < s->nframes; i++) {
        const struct evp_perf_frame *f = &s->frames[i];
        if (!is_kernel(f))
            user = 1;
        if (python_dso(f))
            py = 1;
        if (starts(f->name, f->len, "_dl_") || eq(f, "dl_main") ||
            contains(f->dso, f->dso_len, "/ld-linux"))
            loader = loader || !has_main;
        if (is_main_fn(f))
            has_main = 1;
        if (!in_run && is_init_fn(f))
            in_init = 1;
        if (in_init && init_part == EVP_SU_INIT_OTHER) {
            if (eq(f, "pyinit_core"))
                init_part = EVP_SU_INIT_CORE;
            else if (eq(f, "pyinit_main"))
                init_part = EVP_SU_INIT_MAIN;
        }
        if (!in_init) {
            if (eq(f, "Py_RunMain") || eq(f, "pymain_run_python"))
                in_run = 1;
            if (is_fini_fn(f))
                return EVP_SU_FINI;
        }
    }
    int ours = !comm_prefix ||
               (s->comm_len >= strlen(comm_prefix) &&
                memcmp(s->comm, comm_prefix, strlen(comm_prefix)) == 0);
    if (in_init)
        return init_part;
    if (in_run)
        return EVP_SU_RUNNING;
    if (py && has_main)
        return EVP_SU_MAIN_OTHER;
    if (py)
        return EVP_SU_UNROOTED;
    if (!ours)
        return EVP_SU_OTHER_PROC;
    if (loader)
        return EVP_SU_LOADER;
    if (!user)
        return EVP_SU_KERNEL;
    return EVP_SU_OTHER_PROC;
}

void evp_startup_add(struct evp_startup *su, const struct evp_perf_sample *s,
                     const char *comm_prefix)
{
    enum evp_startup_phase p = evp_startup_classify(s, comm_prefix);
    su->n[p]++;
    su->total++;
    for (size_t i = 0; i < s->nframes; i++) {
        if (eq(&s->frames[i], "pymain_init"))
            su->seen_pymain_init = 1;
        if (eq(&s->frames[i], "pyinit_core") ||
            eq(&s->frames[i], "pyinit_main"))
            su->seen_init_split = 1;
    }
}

static void row(FILE *out, const char *label, uint64_t n, uint64_t total)
{
    char c[32];
    fprintf(out, "  %-44s %10s %7.1f%%\n", label,
            evp_perf_count(c, sizeof c, n),
            total ? 100.0 * (double)n / (double)total : 0.0);
}

int evp_startup_print(const struct evp_startup *su, FILE *out, const char *what,
                      unsigned runs, const char *callgraph)
{
    const uint64_t *n = su->n;
    uint64_t t = su->total;
    char c[32];
    fprintf(out, "start-up breakdown of ");
    evp_esc_term(out, what, strlen(what), 0);
    fprintf(out, " (%s samples", evp_perf_count(c, sizeof c, t));
    if (runs > 1)
        fprintf(out, " over %u runs", runs);
    fprintf(out, ")\n\n  %-44s %10s %8s\n", "phase", "samples", "share");
    uint64_t init =
        n[EVP_SU_INIT_CORE] + n[EVP_SU_INIT_MAIN] + n[EVP_SU_INIT_OTHER];
    row(out, "pymain_init (initialisation)", init, t);
    row(out, "  pyinit_core", n[EVP_SU_INIT_CORE], t);
    row(out, "  pyinit_main", n[EVP_SU_INIT_MAIN], t);
    row(out, "  pre-init and configuration", n[EVP_SU_INIT_OTHER], t);
    row(out, "running (Py_RunMain until finalisation)", n[EVP_SU_RUNNING], t);
    row(out, "finalisation (Py_FinalizeEx, pymain_free)", n[EVP_SU_FINI], t);
    row(out, "main, elsewhere", n[EVP_SU_MAIN_OTHER], t);
    row(out, "before main (dynamic loader)", n[EVP_SU_LOADER], t);
    row(out, "kernel only (exec, page faults, exit)", n[EVP_SU_KERNEL], t);
    row(out, "other processes (wrappers, shells)", n[EVP_SU_OTHER_PROC], t);
    row(out, "interpreter stacks that stop before main", n[EVP_SU_UNROOTED], t);
    if (!t)
        fprintf(out, "\nnote: no samples; the command ran too briefly for the "
                     "sampling rate (raise -F or --repeat)\n");
    if (init && !su->seen_init_split && !n[EVP_SU_FINI])
        fprintf(out,
                "\nnote: no pyinit_core/pyinit_main frames and no "
                "finalisation frames: this interpreter lacks symbols for its "
                "static functions (it is stripped), so initialisation is "
                "shown undivided and finalisation, which Py_RunMain reaches "
                "through them, counts as running\n");
    else if (init && !su->seen_init_split)
        fprintf(out,
                "\nnote: no pyinit_core/pyinit_main frames: this interpreter "
                "lacks symbols for its static functions, so initialisation "
                "is shown undivided\n");
    if (t && n[EVP_SU_UNROOTED] * 10 > t) {
        fprintf(out, "\nnote: %.0f%% of interpreter stacks stop before main: ",
                100.0 * (double)n[EVP_SU_UNROOTED] / (double)t);
        if (callgraph && strcmp(callgraph, "dwarf") == 0)
            fprintf(out, "the unwinder stopped early (code without unwind "
                         "information, such as -X perf trampolines)\n");
        else
            fprintf(out, "frame-pointer unwinding fails on binaries built "
                         "without frame pointers; use --call-graph dwarf\n");
    }
    return ferror(out) ? -EIO : 0;
}
