/*
 * Another process, as evalprof reads it from outside (attach-internal):
 * its memory (process_vm_readv, /proc/PID/mem where that is refused for
 * a reason that one is not), its mapped files, its threads and what each
 * is doing (/proc/PID/task/TID/syscall, stat, schedstat), and ptrace,
 * with which evalprof stops every thread for a moment (a consistent
 * read, or a write that must not race the target's own) and runs a
 * system call or a function in one of them (inject.c).
 *
 * Every function returns 0 (or a count) or a negative errno; those that
 * can be refused for want of rights fill WHY with one line saying why
 * and what would allow it (evp_proc_explain).
 */
#ifndef EVP_ATTACH_PROC_H
#define EVP_ATTACH_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct evp_map {
    uint64_t lo, hi, off;
    char perms[5];
    char *path; /* NULL: anonymous */
};

struct evp_proc {
    pid_t pid;
    int mem_fd;     /* /proc/PID/mem, opened on first need (-1) */
    int vm_refused; /* process_vm_readv gave EPERM once: use mem_fd */
    struct evp_map *maps;
    size_t nmaps;
    /* ptrace: the threads this process has seized (freeze) */
    struct evp_seized {
        pid_t tid;
        int sig; /* a signal that arrived while stopping it, delivered at
                    thaw */
    } * seized;
    size_t nseized, seized_cap;
};

/* Open PID: its maps are read (the first read that needs the rights a
 * debugger has).  0, -ESRCH (no such process), or -EPERM/-EACCES with
 * WHY. */
int evp_proc_open(struct evp_proc *p, pid_t pid, char *why, size_t n);
void evp_proc_close(struct evp_proc *p);
int evp_proc_read_maps(struct evp_proc *p);

/* Read N bytes at ADDR: N, or fewer (the range ran into unmapped
 * memory), or -errno (-EFAULT: nothing there, -ESRCH: gone). */
ssize_t evp_proc_read(struct evp_proc *p, uint64_t addr, void *buf, size_t n);
/* Exactly N bytes: 0, or -EFAULT / -errno. */
int evp_proc_get(struct evp_proc *p, uint64_t addr, void *buf, size_t n);
int evp_proc_ptr(struct evp_proc *p, uint64_t addr, uint64_t *v);
int evp_proc_write(struct evp_proc *p, uint64_t addr, const void *buf,
                   size_t n);

/* The process's threads (kernel ids, the main thread first): a count,
 * *TIDS malloc'ed; or -errno. */
ssize_t evp_proc_threads(pid_t pid, pid_t **tids);

/* What thread TID is doing, from /proc/PID/task/TID/syscall: 1 with *NR
 * and *ARG0 (blocked in a system call), 0 running, -errno. */
int evp_proc_syscall(pid_t pid, pid_t tid, long *nr, uint64_t *arg0);

/* /proc/PID/task/TID/stat's state letter ('R', 'S', 'D', 't', ...), or
 * 0 when it cannot be read. */
char evp_proc_state(pid_t pid, pid_t tid);

/* /proc/PID/cmdline with spaces between the words, /proc/PID/exe, the
 * process's real uid and its user name: 0 or -errno. */
int evp_proc_cmdline(pid_t pid, char *buf, size_t n);
int evp_proc_exe(pid_t pid, char *buf, size_t n);
int evp_proc_uid(pid_t pid, uid_t *uid);
/* The tracer of PID (TracerPid), 0 when none. */
pid_t evp_proc_tracer(pid_t pid);

/* WHY gets one line: why reading or tracing PID was refused with ERR
 * (a negative errno) and what would allow it (the same user,
 * kernel.yama.ptrace_scope, CAP_SYS_PTRACE, a process that is not
 * dumpable, one already traced). */
void evp_proc_explain(pid_t pid, int err, const char *what, char *why,
                      size_t n);

/* ---- ptrace ----------------------------------------------------------- */

/* Stop every thread of P (PTRACE_SEIZE and PTRACE_INTERRUPT, until no
 * new thread appears): 0, or -errno with WHY (nothing is left seized).
 * thaw lets them all go again (PTRACE_DETACH, delivering any signal that
 * arrived meanwhile). */
int evp_proc_freeze(struct evp_proc *p, char *why, size_t n);
void evp_proc_thaw(struct evp_proc *p);
/* Seize and stop one thread TID only (for an injection): 0, -errno with
 * WHY.  thaw releases it. */
int evp_proc_freeze_one(struct evp_proc *p, pid_t tid, char *why, size_t n);
int evp_proc_is_seized(const struct evp_proc *p, pid_t tid);

#endif
