/*
 * Reading an input file (file.c): the one place evalprof opens what it is
 * given to read (traces, folded stacks, perf scripts), with the same rules
 * everywhere.
 *
 *  - "-" is standard input.
 *  - Directories, character and block devices are refused with a reason
 *    (a terminal, /dev/zero or a disk is no trace, and reading one would
 *    not end, or end only when memory does).
 *  - A FIFO is waited on for at most EVP_FILE_FIFO_WAIT_S seconds for its
 *    first byte: a FIFO nobody writes to is reported, not waited on
 *    forever.
 *  - A regular file is read whole with read() (evp_file_load), or mapped
 *    (evp_file_map) where copying it would cost (a trace: read() takes
 *    a tenth more CPU time than mapping for `summary` of 30 million
 *    events).  A file that shrinks while it is read is an error either
 *    way: a short read, or, mapped, the SIGBUS of a page past the new end,
 *    caught (evp_file_guard) and never a crash.
 *  - Pipes, FIFOs, standard input and files whose size the kernel does not
 *    know (/proc) are streams: evp_file_open says so, and the caller reads
 *    them piece by piece, keeping what it needs.
 */
#ifndef EVP_FILE_H
#define EVP_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* How long a FIFO may stay silent before it is given up on. */
#define EVP_FILE_FIFO_WAIT_S 10

struct evp_input {
    int fd;
    int stream;  /* not a regular file of known size: read piece by piece */
    size_t size; /* a regular file's size (0 for a stream) */
};

/*
 * Open PATH for reading by the rules above.  Returns 0 and fills *IN (the
 * caller closes in->fd), or a negative errno with a one-line reason in ERR
 * ("is a directory", "is a character device, not a file", "no data from
 * the FIFO after 10 s (nothing writes to it?)").
 */
int evp_file_open(const char *path, struct evp_input *in, char *err,
                  size_t errlen);

/* Read up to N bytes, retrying short reads and EINTR: the bytes read
 * (fewer than N only at the end of the input), or a negative errno. */
ssize_t evp_file_read(int fd, void *buf, size_t n);

/* Read the rest of IN (opened by evp_file_open, closed here) into memory,
 * as evp_file_load does.  When *DATA is not NULL it holds *SIZE bytes
 * already read from IN (a malloc'd buffer of that size, taken over). */
int evp_file_slurp(struct evp_input *in, size_t max, char **data, size_t *size,
                   char *err, size_t errlen);

/*
 * The whole of PATH in memory, NUL-terminated (the NUL not counted in
 * *SIZE); the caller frees *DATA.  A regular file is read to the size it
 * had when opened, and one that shrinks meanwhile is an error ("file
 * shrank while being read (expected N bytes, got M)"); a stream is read
 * to its end, and one longer than MAX bytes (0: no limit) is refused.
 * Returns 0, or a negative errno with a one-line reason in ERR.
 */
int evp_file_load(const char *path, size_t max, char **data, size_t *size,
                  char *err, size_t errlen);

/*
 * Map the regular file IN (closing its descriptor) for reading at *DATA,
 * *SIZE bytes; PATH names it in messages.  A SIGBUS on the mapping (the
 * file shrank) makes evp_file_guard() return -EIO when it happens inside
 * one, and otherwise prints "evalprof: PATH: file shrank while being read
 * ..." and exits with status 1.  Returns 0, or a negative errno (IN left
 * open: read it instead).
 */
int evp_file_map(struct evp_input *in, const char *path, const void **data,
                 size_t *size);
void evp_file_unmap(const void *data, size_t size);

/* FN(CTX), with a SIGBUS on a mapping of evp_file_map() turned into -EIO
 * and a reason in ERR; otherwise what FN returns. */
int evp_file_guard(int (*fn)(void *ctx), void *ctx, char *err, size_t errlen);

/* FN runs (inside the signal handler: async-signal-safe calls only) just
 * before a SIGBUS outside evp_file_guard() ends the process, so that an
 * output half written can be removed; NULL for none. */
void evp_file_on_fatal(void (*fn)(void));

#endif
