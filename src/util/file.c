/*
 * Reading an input file: open, check what it is, read it (see file.h for
 * the rules and why regular files are read, not mapped).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "file.h"

#define PIPEFS_MAGIC 0x50495045 /* linux/magic.h */

static int fail(int e, char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg ? msg : strerror(e));
    return -e;
}

/* From now on reads block as usual. */
static int blocking(int fd, char *err, size_t errlen)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        return fail(errno, err, errlen, NULL);
    return 0;
}

/* A pipe reached by path (/dev/stdin, /proc/self/fd/N, a shell's <(...))
 * has a writer, however slow: only a named FIFO may have none. */
static int anonymous_pipe(int fd)
{
    struct statfs fs;
    return fstatfs(fd, &fs) == 0 && fs.f_type == PIPEFS_MAGIC;
}

/* Wait for a FIFO's first byte (or its writer's end). */
static int wait_fifo(int fd, char *err, size_t errlen)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;
    do
        r = poll(&p, 1, EVP_FILE_FIFO_WAIT_S * 1000);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return fail(errno, err, errlen, NULL);
    if (r == 0) {
        snprintf(err, errlen,
                 "no data from the FIFO after %d s (nothing writes to it?)",
                 EVP_FILE_FIFO_WAIT_S);
        return -ETIMEDOUT;
    }
    return blocking(fd, err, errlen);
}

int evp_file_open(const char *path, struct evp_input *in, char *err,
                  size_t errlen)
{
    int std = strcmp(path, "-") == 0;
    struct stat st;
    *in = (struct evp_input){-1, 0, 0};
    /* stat first: opening a FIFO without O_NONBLOCK waits for a writer */
    if (!std && stat(path, &st) < 0)
        return fail(errno, err, errlen, NULL);
    int fifo = !std && S_ISFIFO(st.st_mode);
    int fd = std ? dup(0)
                 : open(path, O_RDONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
    if (fd < 0)
        return fail(errno, err, errlen, NULL);
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = fail(errno, err, errlen, NULL);
    else if (S_ISDIR(st.st_mode))
        rc = fail(EISDIR, err, errlen, "is a directory");
    else if (S_ISCHR(st.st_mode))
        rc = fail(ENODEV, err, errlen,
                  std ? "standard input is a character device (a terminal?), "
                        "not a file"
                      : "is a character device, not a file");
    else if (S_ISBLK(st.st_mode))
        rc = fail(ENODEV, err, errlen, "is a block device, not a file");
    else if (fifo && !anonymous_pipe(fd))
        rc = wait_fifo(fd, err, errlen);
    else if (fifo)
        rc = blocking(fd, err, errlen);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    in->fd = fd;
    in->stream = !S_ISREG(st.st_mode) || st.st_size <= 0;
    in->size = in->stream ? 0 : (size_t)st.st_size;
    if (!in->stream)
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return 0;
}

ssize_t evp_file_read(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int evp_file_slurp(struct evp_input *inp, size_t max, char **data, size_t *size,
                   char *err, size_t errlen)
{
    struct evp_input in = *inp;
    int rc = 0;
    size_t n = *data ? *size : 0;
    size_t cap = in.stream ? n + ((size_t)1 << 16) : in.size;
    char *buf = realloc(*data, cap + 1);
    if (!buf)
        free(*data);
    *data = NULL;
    for (;;) {
        if (!buf) {
            rc = fail(ENOMEM, err, errlen, "out of memory");
            break;
        }
        if (n == cap && in.stream) {
            if (max && cap >= max) {
                snprintf(err, errlen, "input longer than %zu bytes", max);
                rc = -EFBIG;
                break;
            }
            size_t ncap = max && 2 * cap > max ? max : 2 * cap;
            char *b = realloc(buf, ncap + 1);
            if (!b) {
                rc = fail(ENOMEM, err, errlen, "out of memory");
                break;
            }
            buf = b;
            cap = ncap;
        }
        ssize_t r = evp_file_read(in.fd, buf + n, cap - n);
        if (r < 0) {
            rc = fail((int)-r, err, errlen, NULL);
            break;
        }
        n += (size_t)r;
        if (n < cap || !in.stream)
            break;
    }
    close(in.fd);
    if (rc == 0 && !in.stream && n < in.size) {
        snprintf(err, errlen,
                 "file shrank while being read (expected %zu bytes, got %zu)",
                 in.size, n);
        rc = -EIO;
    }
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return 0;
}

int evp_file_load(const char *path, size_t max, char **data, size_t *size,
                  char *err, size_t errlen)
{
    struct evp_input in;
    int rc = evp_file_open(path, &in, err, errlen);
    *data = NULL;
    *size = 0;
    return rc < 0 ? rc : evp_file_slurp(&in, max, data, size, err, errlen);
}

/* ---- mapped files, and SIGBUS ---------------------------------------------
 *
 * A mapped file that another process truncates raises SIGBUS on the next
 * read of a page past the new end.  The mappings are registered here with
 * their paths, and one handler serves them all: inside evp_file_guard()
 * the fault becomes an error return of the guarded call; anywhere else
 * (a report walking the mapping) it becomes one line naming the file and
 * exit status 1, the same as any other fatal error of a report.  A fault
 * outside every registered mapping is left to the default action.
 */

#define MAX_MAPS 16

static struct map_slot {
    const void *volatile start; /* NULL: free */
    size_t len;
    char path[256];
} maps[MAX_MAPS];
static pthread_mutex_t maps_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction old_bus;
static void (*on_fatal)(void);

void evp_file_on_fatal(void (*fn)(void))
{
    on_fatal = fn;
}
static int bus_installed;
static _Thread_local sigjmp_buf *guard;

static void put_str(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    const char *a = si->si_addr;
    for (int i = 0; i < MAX_MAPS; i++) {
        const char *m = maps[i].start;
        if (m && a >= m && a < m + maps[i].len) {
            if (guard)
                siglongjmp(*guard, 1);
            put_str("evalprof: ");
            put_str(maps[i].path);
            put_str(": file shrank while being read (truncated by another "
                    "process?)\n");
            if (on_fatal)
                on_fatal();
            _exit(1);
        }
    }
    /* Not ours: what would have happened without this handler. */
    if (old_bus.sa_flags & SA_SIGINFO && old_bus.sa_sigaction) {
        old_bus.sa_sigaction(sig, si, uc);
        return;
    }
    if (old_bus.sa_handler != SIG_DFL && old_bus.sa_handler != SIG_IGN) {
        old_bus.sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL); /* the access faults again, and kills */
}

int evp_file_map(struct evp_input *in, const char *path, const void **data,
                 size_t *size)
{
    if (in->stream || !in->size)
        return -EINVAL;
    pthread_mutex_lock(&maps_mu);
    int slot = -1;
    for (int i = 0; i < MAX_MAPS && slot < 0; i++)
        if (!maps[i].start)
            slot = i;
    /* (again, when something else took the signal since: a test
     * framework's crash handler) */
    struct sigaction cur;
    if (bus_installed && sigaction(SIGBUS, NULL, &cur) == 0 &&
        cur.sa_sigaction != on_sigbus)
        bus_installed = 0;
    if (slot >= 0 && !bus_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        bus_installed = sigaction(SIGBUS, &sa, &old_bus) == 0;
    }
    void *m = slot >= 0 && bus_installed
                  ? mmap(NULL, in->size, PROT_READ, MAP_PRIVATE, in->fd, 0)
                  : MAP_FAILED;
    if (m != MAP_FAILED) {
        snprintf(maps[slot].path, sizeof maps[slot].path, "%s", path);
        maps[slot].len = in->size;
        maps[slot].start = m;
        madvise(m, in->size, MADV_SEQUENTIAL);
    }
    pthread_mutex_unlock(&maps_mu);
    if (m == MAP_FAILED)
        return -ENOMEM;
    close(in->fd);
    in->fd = -1;
    *data = m;
    *size = in->size;
    return 0;
}

void evp_file_unmap(const void *data, size_t size)
{
    pthread_mutex_lock(&maps_mu);
    for (int i = 0; i < MAX_MAPS; i++)
        if (maps[i].start == data)
            maps[i].start = NULL;
    pthread_mutex_unlock(&maps_mu);
    munmap((void *)data, size);
}

int evp_file_guard(int (*fn)(void *ctx), void *ctx, char *err, size_t errlen)
{
    sigjmp_buf jb, *outer = guard;
    if (sigsetjmp(jb, 1)) {
        guard = outer;
        snprintf(err, errlen,
                 "file shrank while being read (truncated by another "
                 "process?)");
        return -EIO;
    }
    guard = &jb;
    int rc = fn(ctx);
    guard = outer;
    return rc;
}
