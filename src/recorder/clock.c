/*
 * The recorder's clock: which time source to use and how its ticks map to
 * nanoseconds.
 *
 * The invariant TSC is read with a bare RDTSC (no fence: events of one
 * thread are ordered by program order, and a fence would double the cost).
 * Ticks are converted to CLOCK_MONOTONIC nanoseconds by the reader, from
 * (ticks, ns) pairs sampled at open, with every chunk written and at
 * close; the short calibration here only gives a first estimate for
 * traces too short to calibrate themselves.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

#ifdef EVP_HAVE_TSC
#include <cpuid.h>
#endif

uint64_t evp_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t evp_clock_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int evp_clock_tsc_invariant(void)
{
#ifdef EVP_HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1; /* "Invariant TSC" */
#else
    return 0;
#endif
}

void evp_clock_pair(int use_tsc, uint64_t *ticks, uint64_t *ns)
{
    /* Sandwich the tick read between two clock reads and keep the
     * tightest of a few tries, so the pair is good to a few ns. */
    uint64_t best = UINT64_MAX;
    *ticks = *ns = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t a = evp_clock_mono_ns();
#ifdef EVP_HAVE_TSC
        uint64_t t = use_tsc ? __rdtsc() : 0;
#else
        uint64_t t = 0;
#endif
        uint64_t b = evp_clock_mono_ns();
        if (b - a < best) {
            best = b - a;
            *ns = a + (b - a) / 2;
            *ticks = use_tsc ? t : *ns;
        }
    }
}

double evp_clock_calibrate(int use_tsc, unsigned spin_us)
{
    if (!use_tsc)
        return 1e9;
    uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
    evp_clock_pair(1, &t0, &n0);
    do
        evp_clock_pair(1, &t1, &n1);
    while (n1 - n0 < (uint64_t)spin_us * 1000u);
    return (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
}
