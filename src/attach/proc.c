/*
 * Another process from outside (proc.h): memory, maps, threads, the
 * rights the kernel asks of a reader, and ptrace's stop and release.
 *
 * Rights.  Reading another process's memory (process_vm_readv,
 * /proc/PID/mem), its maps and a thread's current system call, and
 * tracing it, all pass the kernel's ptrace access check: the same user
 * (real, effective and saved ids of the target all the reader's), a
 * target that is dumpable, and Yama's kernel.yama.ptrace_scope where the
 * kernel has it (1: only an ancestor; 2: only CAP_SYS_PTRACE; 3: no
 * one); CAP_SYS_PTRACE passes all but the last.  evp_proc_explain says
 * which of these refused a read, from what /proc tells.
 *
 * Stopping.  freeze seizes every thread (PTRACE_SEIZE: no signal is
 * sent, the target's parent sees nothing) and interrupts it
 * (PTRACE_INTERRUPT), listing /proc/PID/task again until every thread
 * listed is stopped, since a running thread may start another meanwhile.
 * A signal that reaches a thread while it is being stopped is delivered
 * when it is let go.  A thread blocked in a system call is stopped in it;
 * the kernel restarts the call when the thread goes on (the calls that
 * cannot be restarted, epoll_wait, semop and a few others, return EINTR
 * instead, as they do for a debugger's attach or a SIGSTOP and SIGCONT:
 * CPython retries them, PEP 475).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

static int read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = read(fd, buf + got, n - 1 - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (int)got;
}

static void free_maps(struct evp_proc *p)
{
    for (size_t i = 0; i < p->nmaps; i++)
        free(p->maps[i].path);
    free(p->maps);
    p->maps = NULL;
    p->nmaps = 0;
}

int evp_proc_read_maps(struct evp_proc *p)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)p->pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    free_maps(p);
    size_t cap = 0;
    char *line = NULL;
    size_t llen = 0;
    int rc = 0;
    errno = 0;
    while (getline(&line, &llen, f) > 0) {
        struct evp_map m = {0};
        unsigned long long lo, hi, off;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &lo, &hi, perms, &off,
                   &pos) < 4)
            continue;
        m.lo = lo;
        m.hi = hi;
        m.off = off;
        memcpy(m.perms, perms, 4);
        char *name = line + pos;
        while (*name == ' ')
            name++;
        size_t nl = strcspn(name, "\n");
        name[nl] = '\0';
        if (*name == '/') {
            m.path = strdup(name);
            if (!m.path) {
                rc = -ENOMEM;
                break;
            }
        }
        if (p->nmaps == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct evp_map *nm = realloc(p->maps, nc * sizeof *nm);
            if (!nm) {
                free(m.path);
                rc = -ENOMEM;
                break;
            }
            p->maps = nm;
            cap = nc;
        }
        p->maps[p->nmaps++] = m;
    }
    /* an unreadable maps file reads as empty: the access check */
    if (rc == 0 && ferror(f))
        rc = errno ? -errno : -EIO;
    if (rc == 0 && p->nmaps == 0)
        rc = -EACCES;
    free(line);
    fclose(f);
    return rc;
}

int evp_proc_open(struct evp_proc *p, pid_t pid, char *why, size_t n)
{
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->mem_fd = -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    struct stat st;
    if (pid <= 0 || stat(path, &st) != 0) {
        snprintf(why, n, "no process %d", (int)pid);
        return -ESRCH;
    }
    int rc = evp_proc_read_maps(p);
    if (rc == -ENOENT || rc == -ESRCH) {
        snprintf(why, n, "no process %d", (int)pid);
        return -ESRCH;
    }
    if (rc < 0) {
        evp_proc_explain(pid, rc, "read", why, n);
        return rc;
    }
    /* the maps can be read by a process allowed less than a debugger
     * (PTRACE_MODE_READ): the memory itself tells */
    uint8_t b;
    for (size_t i = 0; i < p->nmaps; i++) {
        if (p->maps[i].perms[0] != 'r')
            continue;
        ssize_t r = evp_proc_read(p, p->maps[i].lo, &b, 1);
        if (r == 1)
            return 0;
        if (r == -EPERM || r == -EACCES) {
            evp_proc_explain(pid, (int)r, "read", why, n);
            return (int)r;
        }
        if (r == -ESRCH) {
            snprintf(why, n, "process %d exited", (int)pid);
            return -ESRCH;
        }
    }
    snprintf(why, n, "cannot read process %d's memory", (int)pid);
    return -EFAULT;
}

void evp_proc_close(struct evp_proc *p)
{
    evp_proc_thaw(p);
    free(p->seized);
    p->seized = NULL;
    p->seized_cap = 0;
    free_maps(p);
    if (p->mem_fd >= 0)
        close(p->mem_fd);
    p->mem_fd = -1;
}

ssize_t evp_proc_read(struct evp_proc *p, uint64_t addr, void *buf, size_t n)
{
    if (n == 0)
        return 0;
    if (addr == 0 || addr + n < addr)
        return -EFAULT;
    if (!p->vm_refused) {
        struct iovec local = {buf, n};
        struct iovec remote = {(void *)(uintptr_t)addr, n};
        ssize_t r = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
        if (r >= 0)
            return r;
        if (errno != ENOSYS && errno != EPERM)
            return -errno;
        /* a seccomp filter, or a kernel without it: /proc/PID/mem */
        p->vm_refused = 1;
    }
    if (p->mem_fd < 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/mem", (int)p->pid);
        p->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (p->mem_fd < 0)
            return errno == ENOENT ? -ESRCH : -errno;
    }
    ssize_t r = pread(p->mem_fd, buf, n, (off_t)addr);
    if (r < 0)
        return errno == EIO ? -EFAULT : -errno;
    return r;
}

int evp_proc_get(struct evp_proc *p, uint64_t addr, void *buf, size_t n)
{
    ssize_t r = evp_proc_read(p, addr, buf, n);
    if (r < 0)
        return (int)r;
    return (size_t)r == n ? 0 : -EFAULT;
}

int evp_proc_ptr(struct evp_proc *p, uint64_t addr, uint64_t *v)
{
    return evp_proc_get(p, addr, v, sizeof *v);
}

int evp_proc_write(struct evp_proc *p, uint64_t addr, const void *buf, size_t n)
{
    struct iovec local = {(void *)buf, n};
    struct iovec remote = {(void *)(uintptr_t)addr, n};
    ssize_t r = process_vm_writev(p->pid, &local, 1, &remote, 1, 0);
    if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/mem", (int)p->pid);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        r = pwrite(fd, buf, n, (off_t)addr);
        int e = errno;
        close(fd);
        errno = e;
    }
    if (r < 0)
        return -errno;
    return (size_t)r == n ? 0 : -EFAULT;
}

static int cmp_tid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

ssize_t evp_proc_threads(pid_t pid, pid_t **tids)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? -ESRCH : -errno;
    size_t n = 0, cap = 16;
    pid_t *t = malloc(cap * sizeof *t);
    if (!t) {
        closedir(d);
        return -ENOMEM;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (*end || v <= 0)
            continue;
        if (n == cap) {
            pid_t *nt = realloc(t, 2 * cap * sizeof *nt);
            if (!nt) {
                free(t);
                closedir(d);
                return -ENOMEM;
            }
            t = nt;
            cap *= 2;
        }
        t[n++] = (pid_t)v;
    }
    closedir(d);
    qsort(t, n, sizeof *t, cmp_tid);
    /* the main thread (tid == pid) first */
    for (size_t i = 0; i < n; i++)
        if (t[i] == pid && i > 0) {
            memmove(t + 1, t, i * sizeof *t);
            t[0] = pid;
            break;
        }
    *tids = t;
    return (ssize_t)n;
}

int evp_proc_syscall(pid_t pid, pid_t tid, long *nr, uint64_t *arg0)
{
    char path[80], buf[256];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
    int rc = read_small(path, buf, sizeof buf);
    if (rc < 0)
        return rc;
    if (strncmp(buf, "running", 7) == 0)
        return 0;
    char *end;
    long v = strtol(buf, &end, 10);
    if (end == buf)
        return -EIO;
    *nr = v;
    *arg0 = 0;
    if (v >= 0)
        *arg0 = strtoull(end, NULL, 16);
    return 1;
}

char evp_proc_state(pid_t pid, pid_t tid)
{
    char path[80], buf[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    if (read_small(path, buf, sizeof buf) <= 0)
        return 0;
    char *r = strrchr(buf, ')');
    if (!r || r[1] != ' ')
        return 0;
    return r[2];
}

int evp_proc_cmdline(pid_t pid, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int rc = read_small(path, buf, n);
    if (rc < 0)
        return rc;
    for (int i = 0; i + 1 < rc; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    return 0;
}

int evp_proc_exe(pid_t pid, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t r = readlink(path, buf, n - 1);
    if (r < 0)
        return -errno;
    buf[r] = '\0';
    return 0;
}

/* A "Key:" line of /proc/PID/status: its first number, or -1. */
static long status_field(pid_t pid, const char *key)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (read_small(path, buf, sizeof buf) <= 0)
        return -1;
    size_t kl = strlen(key);
    for (char *l = buf; l && *l;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, key, kl) == 0 && l[kl] == ':')
            return strtol(l + kl + 1, NULL, 10);
    }
    return -1;
}

int evp_proc_uid(pid_t pid, uid_t *uid)
{
    long v = status_field(pid, "Uid");
    if (v < 0)
        return -ESRCH;
    *uid = (uid_t)v;
    return 0;
}

pid_t evp_proc_tracer(pid_t pid)
{
    long v = status_field(pid, "TracerPid");
    return v > 0 ? (pid_t)v : 0;
}

/* Whether this process has CAP_SYS_PTRACE in its effective set. */
static int have_cap_ptrace(void)
{
    char buf[4096];
    if (read_small("/proc/self/status", buf, sizeof buf) <= 0)
        return 0;
    char *l = strstr(buf, "\nCapEff:");
    if (!l)
        return 0;
    unsigned long long caps = strtoull(l + 8, NULL, 16);
    return (caps >> 19) & 1; /* CAP_SYS_PTRACE */
}

static void user_name(uid_t uid, char *buf, size_t n)
{
    struct passwd pw, *res = NULL;
    char tmp[1024];
    if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
        snprintf(buf, n, "%s (uid %u)", res->pw_name, (unsigned)uid);
    else
        snprintf(buf, n, "uid %u", (unsigned)uid);
}

void evp_proc_explain(pid_t pid, int err, const char *what, char *why, size_t n)
{
    uid_t target = 0, me = geteuid();
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, n, "no process %d", (int)pid);
        return;
    }
    int known = evp_proc_uid(pid, &target) == 0;
    int cap = have_cap_ptrace();
    char scope_s[16] = "";
    int scope = -1;
    if (read_small("/proc/sys/kernel/yama/ptrace_scope", scope_s,
                   sizeof scope_s) > 0)
        scope = atoi(scope_s);
    pid_t tracer = evp_proc_tracer(pid);
    char tu[160], mu[160];
    user_name(target, tu, sizeof tu);
    user_name(me, mu, sizeof mu);
    if (err == -EBUSY ||
        (strcmp(what, "trace") == 0 && tracer > 0 && tracer != getpid())) {
        char comm[64] = "", cp[64];
        snprintf(cp, sizeof cp, "/proc/%d/comm", (int)tracer);
        if (read_small(cp, comm, sizeof comm) > 0)
            comm[strcspn(comm, "\n")] = '\0';
        snprintf(why, n,
                 "cannot attach to process %d: it is being traced by process "
                 "%d%s%s%s, and a process has one tracer at a time; detach "
                 "that one first",
                 (int)pid, (int)tracer, *comm ? " (" : "", comm,
                 *comm ? ")" : "");
        return;
    }
    if (scope == 3) {
        snprintf(why, n,
                 "cannot %s process %d: kernel.yama.ptrace_scope is 3, which "
                 "lets no process attach to another until the next boot",
                 what, (int)pid);
    } else if (known && target != me && !cap) {
        snprintf(why, n,
                 "cannot %s process %d: it runs as %s and evalprof as %s; "
                 "attaching needs the same user, or CAP_SYS_PTRACE (run "
                 "evalprof as root)",
                 what, (int)pid, tu, mu);
    } else if (known && st.st_uid == 0 && target != 0 && !cap) {
        /* /proc/PID belongs to root while its process is not dumpable */
        snprintf(why, n,
                 "cannot %s process %d: it is not dumpable (it changed its "
                 "credentials, runs a set-user-ID program, or called "
                 "prctl(PR_SET_DUMPABLE, 0)), so only CAP_SYS_PTRACE may "
                 "read it (run evalprof as root)",
                 what, (int)pid);
    } else if (scope == 2 && !cap) {
        snprintf(why, n,
                 "cannot %s process %d: kernel.yama.ptrace_scope is 2, which "
                 "lets only a process with CAP_SYS_PTRACE attach (run "
                 "evalprof as root)",
                 what, (int)pid);
    } else if (scope == 1 && !cap) {
        snprintf(why, n,
                 "cannot %s process %d: kernel.yama.ptrace_scope is 1, which "
                 "lets a process attach only to its own descendants; run "
                 "evalprof as root (CAP_SYS_PTRACE), or allow it with `sysctl "
                 "kernel.yama.ptrace_scope=0`",
                 what, (int)pid);
    } else {
        snprintf(why, n,
                 "cannot %s process %d: %s (attaching needs the rights a "
                 "debugger has: the same user and a kernel.yama.ptrace_scope "
                 "that allows it, or CAP_SYS_PTRACE)",
                 what, (int)pid, strerror(err < 0 ? -err : err));
    }
}

/* ---- ptrace -------------------------------------------------------------- */

int evp_proc_is_seized(const struct evp_proc *p, pid_t tid)
{
    for (size_t i = 0; i < p->nseized; i++)
        if (p->seized[i].tid == tid)
            return 1;
    return 0;
}

/*
 * Seize TID and wait until it is stopped: 1 stopped, 0 gone (it exited),
 * -errno.  A signal-delivery stop met on the way is let through (the
 * signal delivered now, its handler run) and the wait goes on.
 */
static int seize_stop(struct evp_proc *p, pid_t tid)
{
    if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0)
        return errno == ESRCH ? 0 : -errno;
    if (p->nseized == p->seized_cap) {
        size_t nc = p->seized_cap ? p->seized_cap * 2 : 16;
        struct evp_seized *ns = realloc(p->seized, nc * sizeof *ns);
        if (!ns) {
            ptrace(PTRACE_DETACH, tid, 0, 0);
            return -ENOMEM;
        }
        p->seized = ns;
        p->seized_cap = nc;
    }
    struct evp_seized *s = &p->seized[p->nseized++];
    s->tid = tid;
    s->sig = 0;
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 && errno == ESRCH) {
        p->nseized--;
        return 0;
    }
    for (;;) {
        int status;
        pid_t r = waitpid(tid, &status, __WALL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            p->nseized--;
            return errno == ECHILD ? 0 : -errno;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            p->nseized--;
            return 0;
        }
        if (!WIFSTOPPED(status))
            continue;
        int sig = WSTOPSIG(status);
        int event = status >> 16;
        if (event == PTRACE_EVENT_STOP)
            return 1; /* the interrupt's stop (or a group stop) */
        if (event != 0) {
            /* another event (exec, exit): let it go on and wait */
            ptrace(PTRACE_CONT, tid, 0, 0);
            continue;
        }
        /* a signal-delivery stop: deliver it, the interrupt follows */
        if (ptrace(PTRACE_CONT, tid, 0, (void *)(uintptr_t)sig) != 0 &&
            errno == ESRCH) {
            p->nseized--;
            return 0;
        }
    }
}

int evp_proc_freeze_one(struct evp_proc *p, pid_t tid, char *why, size_t n)
{
    if (evp_proc_is_seized(p, tid))
        return 0;
    int rc = seize_stop(p, tid);
    if (rc < 0) {
        evp_proc_explain(p->pid, rc, "trace", why, n);
        return rc;
    }
    if (rc == 0) {
        snprintf(why, n, "thread %d of process %d exited", (int)tid,
                 (int)p->pid);
        return -ESRCH;
    }
    return 0;
}

int evp_proc_freeze(struct evp_proc *p, char *why, size_t n)
{
    for (int round = 0; round < 64; round++) {
        pid_t *tids;
        ssize_t nt = evp_proc_threads(p->pid, &tids);
        if (nt < 0) {
            evp_proc_thaw(p);
            snprintf(why, n, "process %d exited", (int)p->pid);
            return (int)nt;
        }
        int fresh = 0;
        for (ssize_t i = 0; i < nt; i++) {
            if (evp_proc_is_seized(p, tids[i]))
                continue;
            int rc = seize_stop(p, tids[i]);
            if (rc < 0) {
                free(tids);
                evp_proc_thaw(p);
                evp_proc_explain(p->pid, rc, "trace", why, n);
                return rc;
            }
            fresh += rc;
        }
        free(tids);
        if (fresh == 0) {
            if (p->nseized == 0) {
                snprintf(why, n, "process %d exited", (int)p->pid);
                return -ESRCH;
            }
            return 0;
        }
    }
    evp_proc_thaw(p);
    snprintf(why, n,
             "process %d starts threads faster than they can be stopped",
             (int)p->pid);
    return -EAGAIN;
}

void evp_proc_thaw(struct evp_proc *p)
{
    for (size_t i = 0; i < p->nseized; i++)
        ptrace(PTRACE_DETACH, p->seized[i].tid, 0,
               (void *)(uintptr_t)p->seized[i].sig);
    p->nseized = 0;
}
