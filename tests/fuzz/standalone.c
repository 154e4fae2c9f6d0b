/*
 * Replay driver for the fuzz targets, built in every build (any compiler,
 * no libFuzzer): runs each file named on the command line, or each file
 * in each directory named, through the target's LLVMFuzzerTestOneInput.
 * The Meson suite 'fuzz-corpus' runs it over tests/fuzz/corpus/<target>/,
 * so every seed and every input that once broke a reader is re-checked by
 * an ordinary `make test` (and under AddressSanitizer in CI).
 *
 * A target that finds a violated property aborts, naming it; the driver
 * prints the input's name first, so the failing file is known.  Ends with
 * "N inputs replayed"; an empty corpus is an error (a wrong path would
 * otherwise pass silently).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0, r;
    uint8_t *buf = malloc(cap);
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    /* Exactly sized, as libFuzzer hands inputs over, so that reading one
     * byte too far is caught under AddressSanitizer. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    fprintf(stderr, "replaying %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    long done = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            errors++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            errors += replay_file(argv[i]) < 0;
            done++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            errors++;
            continue;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                char **nn = realloc(names, cap * sizeof *nn);
                if (!nn)
                    return 1;
                names = nn;
            }
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[n] = malloc(len);
            if (!names[n])
                return 1;
            snprintf(names[n++], len, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof *names, cmp_str);
        for (size_t k = 0; k < n; k++) {
            errors += replay_file(names[k]) < 0;
            done++;
            free(names[k]);
        }
        free(names);
    }
    printf("%ld inputs replayed, %ld unreadable\n", done, errors);
    if (!done) {
        fprintf(stderr, "no inputs: give corpus files or directories\n");
        return 1;
    }
    return errors ? 1 : 0;
}
