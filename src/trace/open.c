/*
 * Opening a trace (evp_trace_open): what the file is, sniffed from its
 * first bytes, then the reader of its kind: the binary index pass
 * (reader.c) or the text reader (text.c), then the model finished
 * (trace.c, samples.c).  The top of src/trace's readers: nothing below
 * calls back up here.
 *
 * A regular file is mapped (read into memory where it cannot be) and
 * read under evp_file_guard, so that a file cut while it is read is an
 * error and not a SIGBUS (file.h); a pipe's text is parsed as it comes, a
 * pipe's binary trace read to its end first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "internal.h"

/* No callback: warnings are kept (evp_trace_warning), not printed. */
static void keep_warning(void *ctx, const char *path, const char *msg)
{
    (void)ctx;
    (void)path;
    (void)msg;
}

/* What a stream is sniffed from: enough for a damaged binary header to
 * show its first chunks, and for a text trace's first lines. */
#define SNIFF_BYTES ((size_t)64 << 10)

enum kind { NOT_TRACE, BINARY, BINARY_DAMAGED, TEXT };

/*
 * What the first N bytes of a file are.  A binary trace has its magic; a
 * binary trace whose header is damaged still has whole chunks (*FIRST:
 * the first); text is anything else without a NUL in its first line (a
 * NUL further on is a damaged line, warned about and skipped).  ERR gets
 * the reason for NOT_TRACE.
 */
static enum kind sniff(const uint8_t *d, size_t n, size_t *first, char *err,
                       size_t errlen)
{
    *first = EVP_FILE_HEADER_SIZE;
    if (n >= 8 && memcmp(d, EVP_FILE_MAGIC, 8) == 0)
        return BINARY;
    const uint8_t *nul = memchr(d, 0, n < 512 ? n : 512);
    const uint8_t *nl = memchr(d, '\n', n);
    int text_start = n && (d[0] == '#' || (d[0] >= '0' && d[0] <= '9'));
    int evpt = n >= 4 && memcmp(d, "EVPT", 4) == 0;
    if (!nul && !evpt)
        return TEXT;
    if (nul && nl && nl < nul && text_start && !evpt)
        return TEXT;
    size_t c = evp_binary_resync(d, n, 0);
    if (c < n && c >= EVP_FILE_HEADER_SIZE) {
        *first = c;
        return BINARY_DAMAGED;
    }
    size_t line = 1;
    for (const uint8_t *p = d; nul && p < nul; p++)
        line += *p == '\n';
    if (evpt || !nul)
        snprintf(err, errlen, "not an evalprof trace (bad magic at byte 0)");
    else
        snprintf(err, errlen,
                 "not an evalprof trace (bad magic at byte 0, and a NUL "
                 "byte at byte %zu, line %zu, where a text trace has none)",
                 (size_t)(nul - d), line);
    return NOT_TRACE;
}

/* The first bytes of a stream (up to SNIFF_BYTES), in a malloc'd buffer. */
static int read_head(struct evp_input *in, uint8_t **head, size_t *n, char *err,
                     size_t errlen)
{
    *head = malloc(SNIFF_BYTES);
    if (!*head) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    ssize_t r = evp_file_read(in->fd, *head, SNIFF_BYTES);
    if (r < 0) {
        snprintf(err, errlen, "%s", strerror((int)-r));
        return (int)r;
    }
    *n = (size_t)r;
    return 0;
}

/* The input of evp_trace_open, on its way into the trace. */
struct load {
    struct evp_trace *t;
    int format; /* opts->format */
    struct evp_input in;
    uint8_t *data; /* the file (mapped or read), or a stream's head */
    size_t n;
    int mapped;
    char *err;
    size_t errlen;
};

/*
 * Read LD's input into the trace, by its kind: a text trace line by line
 * (a stream as it comes, keeping the records, not the text); a binary one
 * kept whole (read to its end first when a stream: its chunks are what
 * the reports need), the trace taking over the buffer.  Run under
 * evp_file_guard(): a mapped file that shrinks meanwhile makes this
 * return -EIO.
 */
static int load(void *ctx)
{
    struct load *ld = ctx;
    struct evp_trace *t = ld->t;
    if (ld->n == 0) {
        snprintf(ld->err, ld->errlen, "empty file");
        return -ENODATA;
    }
    size_t first;
    char why[160];
    enum kind kind = sniff(ld->data, ld->n, &first, why, sizeof why);
    if (ld->format == 2 || (ld->format == 0 && kind == TEXT)) {
        t->info.text = 1;
        return evp_text_read(t, (const char *)ld->data, ld->n, ld->in.fd,
                             ld->err, ld->errlen);
    }
    if (kind == NOT_TRACE || kind == TEXT) {
        snprintf(ld->err, ld->errlen, "%s",
                 kind == TEXT ? "not an evalprof trace (bad magic at byte 0)"
                              : why);
        return -EPROTO;
    }
    if (ld->in.stream) {
        int rc = evp_file_slurp(&ld->in, 0, (char **)&ld->data, &ld->n, ld->err,
                                ld->errlen);
        ld->in.fd = -1;
        if (rc < 0)
            return rc;
    }
    t->data = ld->data;
    t->size = ld->n;
    t->mapped = ld->mapped;
    ld->data = NULL;
    return evp_binary_read(t, kind == BINARY_DAMAGED ? first : 0, ld->err,
                           ld->errlen);
}

int evp_trace_open(const char *path, const struct evp_open_opts *opts,
                   struct evp_trace **out, char *err, size_t errlen)
{
    static const struct evp_open_opts defaults;
    if (!opts)
        opts = &defaults;
    *out = NULL;
    struct evp_trace *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    t->path = strdup(path);
    t->warn = opts->warn ? opts->warn : keep_warning;
    t->warn_ctx = opts->warn_ctx;
    t->info.path = t->path;
    t->info.pid = -1;
    t->info.parent_pid = -1;
    t->info.start_wall_ns = -1;
    t->info.opcode_source = "";
    t->mult = UINT64_C(1) << 32;
    t->nfuncs = 1;

    struct load ld = {
        .t = t, .format = opts->format, .err = err, .errlen = errlen};
    int rc = evp_file_open(path, &ld.in, err, errlen);
    if (rc < 0)
        goto fail;
    if (!ld.in.stream &&
        evp_file_map(&ld.in, path, (const void **)&ld.data, &ld.n) == 0)
        ld.mapped = 1;
    else if (!ld.in.stream)
        rc = evp_file_slurp(&ld.in, 0, (char **)&ld.data, &ld.n, err, errlen);
    else
        rc = read_head(&ld.in, &ld.data, &ld.n, err, errlen);
    if (!ld.in.stream)
        ld.in.fd = -1; /* mapped or read: closed */
    if (rc == 0)
        rc = evp_file_guard(load, &ld, err, errlen);
    if (ld.data && ld.mapped)
        evp_file_unmap(ld.data, ld.n);
    else
        free(ld.data);
    if (ld.in.fd >= 0)
        close(ld.in.fd);
    if (rc < 0)
        goto fail;
    if (!t->nops || !t->ops_from_trace) {
        const char *ver = opts->python;
        if (!ver || !*ver)
            ver = t->info.text ? "3.10" : NULL;
        char mm[16];
        unsigned major, minor;
        const char *pv = evp_trace_meta(t, "python.version");
        if (!ver && pv && sscanf(pv, "%u.%u", &major, &minor) == 2) {
            /* A binary trace without a table: go by its version. */
            snprintf(mm, sizeof mm, "%u.%u", major, minor);
            ver = mm;
        }
        if (ver && !t->ops_from_trace &&
            evp_trace_builtin_opcodes(t, ver) < 0) {
            snprintf(err, errlen,
                     "no built-in opcode table for Python %s (known: %s)", ver,
                     evp_optable_versions());
            rc = -EINVAL;
            goto fail;
        }
    } else {
        t->info.opcode_source = "recorded in the trace";
    }
    evp_trace_finish(t);
    evp_samples_finish(t);
    evp_trace_opened(t);
    *out = t;
    return 0;
fail:
    evp_text_reader_free(t); /* a text read cut short (evp_file_guard) */
    evp_trace_close(t);
    return rc;
}
