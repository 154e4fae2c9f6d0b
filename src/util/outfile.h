/*
 * Output files written whole or not at all (outfile.c).  Every file an
 * analyzer command writes (export, import, flamegraph, perf) goes through
 * evp_outfile: the data goes to a temporary file created with mkstemp()
 * next to the output, which is flushed to disk and renamed over the
 * output only once everything was written.  A failure (a full disk, a
 * writer's error) removes the temporary file and leaves whatever was at
 * the output before untouched.
 *
 * The rules, one for every writer:
 *   - "-" is standard output, written in place;
 *   - a symbolic link is followed: the file it points to is replaced
 *     (the link stays), as a shell's '>' or the recorder would write it;
 *   - a directory, a FIFO, a socket or a device is refused, /dev/null
 *     excepted (written in place, so that output can be thrown away);
 *   - an existing file keeps its permission bits; a new one gets
 *     0666 less the umask, as fopen() would give it;
 *   - the temporary name is created with O_EXCL by mkstemp(): a symbolic
 *     link planted there is never followed.
 */
#ifndef EVP_OUTFILE_H
#define EVP_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct evp_outfile {
    FILE *f;          /* write here; NULL when not open */
    const char *name; /* the output as given (borrowed), for messages */
    char *dest;       /* the file replaced: NAME with symbolic links followed */
    char *tmp;        /* the temporary file; NULL when written in place */
    char *buf;        /* F's buffer (64 KiB: few system calls) */
};

/*
 * Check that PATH may be written as an output, creating nothing: 0, or a
 * negative errno with ERR set to one line ("out: not a regular file (a
 * FIFO)"): -EISDIR for a directory, -EINVAL for another non-regular
 * file, the error of a missing directory or a dangling loop of links.
 */
int evp_outfile_check(const char *path, char *err, size_t errlen);

/*
 * Open PATH for writing by the rules above: 0 with O->f ready, or a
 * negative errno with ERR set (nothing was created then).  PATH must
 * outlive O.  Not thread-safe (reads the umask).
 */
int evp_outfile_open(struct evp_outfile *o, const char *path, char *err,
                     size_t errlen);

/*
 * Finish O after its writer returned RC (0, or a negative errno).  With
 * RC 0 and every byte flushed and synced, the temporary file is renamed
 * over the output; otherwise it is removed and the output left as it
 * was.  Standard output is flushed, never closed.  Returns 0; RC when it
 * was negative; or the negative errno of the flush, sync, close or
 * rename that failed, with ERR set ("out: write failed: No space left on
 * device").
 */
int evp_outfile_close(struct evp_outfile *o, int rc, char *err, size_t errlen);

/* 1 when A and B name the same existing file (the same device and inode:
 * through symbolic and hard links), else 0.  "-" is never a file. */
int evp_same_file(const char *a, const char *b);

#endif
