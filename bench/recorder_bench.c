/*
 * Recorder cost per event, beside two baselines measured in the same run:
 *
 *   bare     a loop of the same timestamp reads (what any tracer pays):
 *            the clock the recorder's session uses (TSC or
 *            CLOCK_MONOTONIC), learnt from that session in every round, so
 *            that the first round times the same clock as the others
 *   text     the discussion's way: clock_gettime and a formatted text line
 *            per event, written through stdio
 *   evalprof evp_rec_event() into a live session (writer thread running,
 *            buffers handed off and written to a real file)
 *
 * Each figure is the median of several rounds.  For evalprof the CPU time
 * of the whole process (the writer thread included) is reported too, so
 * the cost moved to the other core is visible.  Prints figures; never
 * fails on time.  Every ratio is printed beside the bare cost it divides
 * by, and the label names the clock that loop read.
 *
 *   recorder_bench [-n EVENTS] [-r ROUNDS] [-d DIR]
 *
 * EVALPROF_CLOCK=monotonic makes the recorder (and so the bare loop) use
 * CLOCK_MONOTONIC.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "evalprof/recorder.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static volatile uint64_t sink;

/* Timestamp reads of the clock a session used (TSC: 1), back to back. */
static double bare(uint64_t n, int tsc)
{
    uint64_t acc = 0, t0 = now_ns();
#ifdef EVP_HAVE_TSC
    if (tsc) {
        for (uint64_t i = 0; i < n; i++)
            acc += __rdtsc();
    } else
#endif
    {
        (void)tsc;
        for (uint64_t i = 0; i < n; i++)
            acc += evp_clock_mono_ns();
    }
    uint64_t t1 = now_ns();
    sink = acc;
    return (double)(t1 - t0) / (double)n;
}

static const char *clock_name(int tsc)
{
    return tsc ? "TSC" : "CLOCK_MONOTONIC";
}

static double text_way(uint64_t n, const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bench-text.trace", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        fprintf(f, "%ld.%09ld %u\n", (long)ts.tv_sec, ts.tv_nsec,
                (unsigned)(i % 14));
    }
    fflush(f);
    uint64_t t1 = now_ns();
    fclose(f);
    unlink(path);
    return (double)(t1 - t0) / (double)n;
}

/* Events into a live session; *TSC says which clock it used. */
static double evalprof_way(uint64_t n, const char *dir, double *cpu,
                           double *bytes_per_event, int *tsc)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bench-rec.evp", dir);
    struct evp_rec_config cfg = {.path = path,
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = EVP_KINDS_CLASSIC};
    if (evp_rec_open(&cfg) < 0)
        return -1;
    evp_rec_thread_attach("bench");
    *tsc = evp_rec_use_tsc_;
    uint64_t c0 = cpu_ns(), t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        evp_rec_event(EVP_EV_DISPATCH, 0);
    uint64_t t1 = now_ns();
    evp_rec_close();
    uint64_t c1 = cpu_ns();
    struct stat st;
    *bytes_per_event =
        stat(path, &st) == 0 ? (double)st.st_size / (double)n : 0;
    if (!getenv("EVALPROF_BENCH_KEEP")) /* kept: a trace for the readers */
        unlink(path);
    *cpu = (double)(c1 - c0) / (double)n;
    return (double)(t1 - t0) / (double)n;
}

int main(int argc, char **argv)
{
    uint64_t n = 20000000;
    int rounds = 7, c;
    const char *dir = "/tmp";
    while ((c = getopt(argc, argv, "n:r:d:")) != -1) {
        switch (c) {
        case 'n':
            n = strtoull(optarg, NULL, 10);
            break;
        case 'r':
            rounds = atoi(optarg);
            break;
        case 'd':
            dir = optarg;
            break;
        default:
            fprintf(stderr, "usage: recorder_bench [-n EVENTS] [-r ROUNDS] "
                            "[-d DIR]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 99 || !n)
        return 2;
    double b[99], t[99], e[99], cpu[99], bpe = 0;
    int tsc = 0, seen = -1; /* seen: clock of every round so far, 2 mixed */
    for (int r = 0; r < rounds; r++) {
        /* Interleaved, so that machine noise hits all three alike; the
         * session goes first so that the bare loop reads its clock. */
        e[r] = evalprof_way(n, dir, &cpu[r], &bpe, &tsc);
        t[r] = text_way(n / 10, dir);
        if (t[r] < 0 || e[r] < 0) {
            fprintf(stderr, "recorder_bench: cannot write in %s: %s\n", dir,
                    strerror(errno));
            return 1;
        }
        b[r] = bare(n, tsc);
        seen = r == 0 || seen == tsc ? tsc : 2;
    }
    double mb = median(b, rounds), mt = median(t, rounds),
           me = median(e, rounds), mc = median(cpu, rounds);
    const char *clk = seen == 2 ? "mixed" : clock_name(seen);
    char label[64];
    snprintf(label, sizeof label, "bare %s read loop (baseline)", clk);
    printf("recorder cost per event (median of %d rounds, %" PRIu64
           " events each; clock: %s)\n",
           rounds, n, clk);
    printf("  %-44s %8.2f ns\n", label, mb);
    printf("  %-44s %8.2f ns\n", "text line per event (discussion's way)", mt);
    printf("  %-44s %8.2f ns   %.2fx bare %s %.2f ns (target <= 1.30x)\n",
           "evalprof, traced thread", me, me / mb, clk, mb);
    printf("  %-44s %8.2f ns   %.1fx cheaper than text (target >= 10x; "
           "bare %s %.2f ns)\n",
           "", me, mt / me, clk, mb);
    printf("  %-44s %8.2f ns   (writer thread included)\n",
           "evalprof, whole-process CPU per event", mc);
    printf("  %-44s %8.2f bytes (one repeated kind: the floor)\n",
           "evalprof trace size per event", bpe);
    return 0;
}
