/*
 * Output files written whole or not at all: the temporary file, its
 * flush, sync and rename, and the checks that come first (outfile.h
 * states the rules).  The temporary file sits in the output's own
 * directory, so that the rename is atomic and a full disk shows while
 * writing it, never half-way through replacing the output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "outfile.h"

/* Longest final name component the temporary name leaves room for. */
#define TMP_BASE_MAX (NAME_MAX - 8)
#define BUF_SIZE (1u << 16)

static int is_dev_null(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 &&
           minor(st->st_rdev) == 3;
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
                         : "not a plain file";
}

/* PATH with the symbolic links of its last component followed (the
 * kernel follows those of its directories): malloc'ed, or NULL with
 * errno set. */
static char *follow_links(const char *path)
{
    char *p = strdup(path);
    for (int hops = 0; p; hops++) {
        struct stat st;
        if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode))
            return p;
        char target[PATH_MAX];
        ssize_t n = hops < 40 ? readlink(p, target, sizeof target - 1) : -1;
        if (n < 0) {
            int e = hops < 40 ? errno : ELOOP;
            free(p);
            errno = e;
            return NULL;
        }
        target[n] = '\0';
        const char *slash = strrchr(p, '/');
        size_t d = target[0] == '/' || !slash ? 0 : (size_t)(slash - p) + 1;
        char *next = malloc(d + (size_t)n + 1);
        if (next) {
            memcpy(next, p, d);
            memcpy(next + d, target, (size_t)n + 1);
        }
        free(p);
        p = next;
    }
    errno = ENOMEM;
    return NULL;
}

/*
 * What writing PATH means: 0 with *DEST (malloc'ed) the file to replace,
 * *EXISTS and *ST its status, *IN_PLACE set for /dev/null; or a negative
 * errno with ERR set.
 */
static int examine(const char *path, char **dest, struct stat *st, int *exists,
                   int *in_place, char *err, size_t errlen)
{
    *dest = NULL;
    *exists = stat(path, st) == 0;
    *in_place = 0;
    if (!*exists && errno != ENOENT) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    if (*exists && !S_ISREG(st->st_mode)) {
        if (is_dev_null(st)) {
            *in_place = 1;
            return 0;
        }
        snprintf(err, errlen, "%s: not a regular file (%s)", path,
                 kind_of(st->st_mode));
        return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
    }
    char *d = follow_links(path);
    if (!d) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    struct stat ds;
    if (*exists && (stat(d, &ds) != 0 || ds.st_dev != st->st_dev ||
                    ds.st_ino != st->st_ino)) {
        /* A link only the kernel can follow (/proc/self/fd/N of a file
         * since removed): no name to put the new file under. */
        snprintf(err, errlen,
                 "%s: the file this link names has no name "
                 "to replace",
                 path);
        free(d);
        return -ENOENT;
    }
    *dest = d;
    return 0;
}

/* DEST's directory, "." when it has none: malloc'ed or NULL. */
static char *dir_of(const char *dest)
{
    const char *slash = strrchr(dest, '/');
    if (!slash)
        return strdup(".");
    size_t n = slash == dest ? 1 : (size_t)(slash - dest);
    return strndup(dest, n);
}

int evp_outfile_check(const char *path, char *err, size_t errlen)
{
    if (strcmp(path, "-") == 0)
        return 0;
    char *dest;
    struct stat st;
    int exists, in_place;
    int rc = examine(path, &dest, &st, &exists, &in_place, err, errlen);
    if (rc < 0 || in_place)
        return rc;
    char *dir = dir_of(dest);
    if (!dir)
        rc = -ENOMEM;
    else if (access(dir, W_OK | X_OK) != 0)
        rc = -errno;
    if (rc < 0)
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
    free(dir);
    free(dest);
    return rc;
}

int evp_outfile_open(struct evp_outfile *o, const char *path, char *err,
                     size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->name = path;
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    struct stat st;
    int exists, in_place;
    int rc = examine(path, &o->dest, &st, &exists, &in_place, err, errlen);
    if (rc < 0)
        return rc;
    if (in_place) {
        o->f = fopen(path, "w");
        if (!o->f) {
            int e = errno;
            snprintf(err, errlen, "%s: %s", path, strerror(e));
            return -e;
        }
        return 0;
    }
    const char *slash = strrchr(o->dest, '/');
    const char *base = slash ? slash + 1 : o->dest;
    size_t dlen = (size_t)(base - o->dest), blen = strlen(base);
    if (blen > TMP_BASE_MAX)
        blen = TMP_BASE_MAX;
    o->tmp = malloc(dlen + blen + 9);
    if (!o->tmp) {
        free(o->dest);
        o->dest = NULL;
        snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
        return -ENOMEM;
    }
    snprintf(o->tmp, dlen + blen + 9, "%.*s.%.*s.XXXXXX", (int)dlen, o->dest,
             (int)blen, base);
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd >= 0) {
        mode_t mask = umask(0);
        umask(mask);
        /* mkstemp's 0600 would hide the output from everyone else. */
        fchmod(fd, exists ? st.st_mode & 07777 : 0666 & ~mask);
        o->f = fdopen(fd, "w");
        if (!o->f) {
            int e = errno;
            unlink(o->tmp);
            close(fd);
            errno = e;
        }
    }
    if (!o->f) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        free(o->tmp);
        free(o->dest);
        o->tmp = o->dest = NULL;
        return -e;
    }
    if ((o->buf = malloc(BUF_SIZE)))
        setvbuf(o->f, o->buf, _IOFBF, BUF_SIZE);
    return 0;
}

/* Make a rename in DEST's directory durable; a failure changes nothing
 * that was written, so it is not reported. */
static void sync_dir(const char *dest)
{
    char *dir = dir_of(dest);
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

/*
 * Why a write to temporary file F failed, once the cause was lost: a
 * write past F's buffer, inside the writer, set F's error flag, and the
 * close's flush found nothing left to write, so errno says nothing.  One
 * more byte at F's end, which is removed anyway, fails the same way
 * (EFBIG past the file-size limit, ENOSPC on a full file system); EIO
 * when it does not.
 */
static int lost_write_error(FILE *f)
{
    int fd = fileno(f);
    if (fd >= 0 && lseek(fd, 0, SEEK_END) >= 0 && write(fd, "", 1) < 0 &&
        errno != 0)
        return errno;
    return EIO;
}

int evp_outfile_close(struct evp_outfile *o, int rc, char *err, size_t errlen)
{
    if (!o->f)
        return rc < 0 ? rc : 0;
    int e = 0;
    errno = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = errno ? errno : o->tmp ? lost_write_error(o->f) : EIO;
    if (o->f != stdout) {
        if (!e && rc >= 0 && o->tmp && fsync(fileno(o->f)) != 0)
            e = errno;
        if (fclose(o->f) != 0 && !e)
            e = errno ? errno : EIO;
    }
    o->f = NULL;
    if (o->tmp) {
        if (!e && rc >= 0 && rename(o->tmp, o->dest) != 0)
            e = errno;
        if (e || rc < 0)
            unlink(o->tmp);
        else
            sync_dir(o->dest);
    }
    free(o->tmp);
    free(o->dest);
    free(o->buf);
    o->tmp = o->dest = o->buf = NULL;
    if (e) {
        snprintf(err, errlen, "%s: write failed: %s",
                 strcmp(o->name, "-") ? o->name : "standard output",
                 strerror(e));
        return -e;
    }
    return rc < 0 ? rc : 0;
}

int evp_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return strcmp(a, "-") && strcmp(b, "-") && stat(a, &sa) == 0 &&
           stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}
