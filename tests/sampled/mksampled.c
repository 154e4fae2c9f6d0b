/*
 * mksampled: write the known-shares sampled trace of sampgen.h.
 *
 *   mksampled [-b] [-c] [-e] [-j] [-w] [-r DIR] [-z] [-n SAMPLES_PER_CHUNK]
 * FILE
 *
 * -b writes variant B (hot 40 %, cold 50 %), -c adds exact opcode counts
 * (sampgen.h), -e records that the sampler found no eval function
 * (sample.eval_ranges 0), -j makes it a run with the JIT (sampgen.h), -w
 * samples 4000 Hz of wall-clock time, -r DIR puts the functions' file under DIR
 * (the script's recorded root), -z compresses the chunks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampgen.h"

int main(int argc, char **argv)
{
    struct sampgen_opts o = {'a', 0, 0, 0, 0, NULL, 0, 0};
    int c;
    while ((c = getopt(argc, argv, "bcejwr:zn:")) != -1) {
        switch (c) {
        case 'b':
            o.variant = 'b';
            break;
        case 'c':
            o.counts = 1;
            break;
        case 'e':
            o.no_eval = 1;
            break;
        case 'j':
            o.jit = 1;
            break;
        case 'w':
            o.wall = 1;
            break;
        case 'r':
            o.root = optarg;
            break;
        case 'z':
            o.zstd = 1;
            break;
        case 'n':
            o.per_chunk = strtoul(optarg, NULL, 10);
            break;
        default:
            fprintf(stderr,
                    "usage: mksampled [-b] [-c] [-e] [-j] [-w] [-r DIR] "
                    "[-z] [-n N] FILE\n");
            return 2;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "usage: mksampled [-b] [-c] [-e] [-j] [-w] [-r DIR] "
                        "[-z] [-n N] FILE\n");
        return 2;
    }
    if (sampgen_write(argv[optind], &o) < 0) {
        fprintf(stderr, "mksampled: %s: %s\n", argv[optind], strerror(errno));
        return 1;
    }
    return 0;
}
