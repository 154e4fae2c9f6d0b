/*
 * What one CPU-time timer signal costs this machine, whoever handles it:
 * a loop of fixed work, run with no timer, then with a POSIX CPU-time
 * timer (CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID, as the recorder arms
 * where perf events are refused) and an empty SA_SIGINFO handler, with a
 * perf task-clock event signalling through F_SETSIG and re-armed by each
 * handler (the recorder's clock under a debugger or with
 * EVALPROF_SAMPLE_TIMER=rt), with the same event sending SIGTRAP itself
 * (attr.sigtrap: the recorder's default clock), and with the event
 * counting but signalling nothing (its timer interrupts alone),
 * and with no signal at all: a sampler thread that wakes at the rate and
 * reads the working thread's CPU clock and a word it stores (how a
 * sampler could read a state word without interrupting the thread it
 * samples), interleaved; prints the process CPU time of each (the
 * sampler thread's included), the working thread's own CPU time and the
 * run's real time, medians of REPS, and (timed - none) / signals (or the
 * sampler's reads) delivered.
 *
 *   signal_cost [RATE_HZ=1000] [REPS=9] [WORK_MS=1000]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sigs;
static volatile uint64_t sink;
static int perf_fd = -1;
static volatile uint64_t state_word;
static volatile int sampler_stop;

/* Mode 5's sampler thread: every period (CLOCK_MONOTONIC, absolute), the
 * working thread's CPU clock and its state word; counts its reads. */
struct sampler {
    clockid_t clock;
    long period;
    uint64_t reads, seen;
};

static void *sampler_main(void *arg)
{
    struct sampler *sp = arg;
    struct timespec next, cpu;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!sampler_stop) {
        next.tv_nsec += sp->period;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        clock_gettime(sp->clock, &cpu);
        sp->seen += state_word;
        sp->reads++;
    }
    return NULL;
}

static void on_sig(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    sigs++;
}

static void on_perf(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    sigs++;
    ioctl(perf_fd, PERF_EVENT_IOC_REFRESH, 1);
}

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static void work(uint64_t n)
{
    uint64_t x = 1;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        if ((i & 255) == 0)
            state_word = i; /* as a hook stores its phase */
    }
    sink = x;
}

/* MODE 0 none, 1 POSIX CPU timer, 2 perf task-clock through F_SETSIG,
 * 3 the same event with no signal (its hrtimer keeps firing every
 * period), 4 the event sending SIGTRAP (sigtrap), 5 a sampler thread
 * reading the working thread's clock and state word (no signal).
 * *THREAD and *REAL: the working thread's CPU time and the real time. */
enum { NMODES = 6 };
static double one(int mode, unsigned rate, uint64_t n, uint64_t *nsig,
                  double *thread, double *real)
{
    timer_t t;
    pthread_t sampler_thread;
    struct sampler sp = {0};
    long period = 1000000000L / rate;
    sigs = 0;
    if (mode == 5) {
        sampler_stop = 0;
        sp.period = period;
        if (pthread_getcpuclockid(pthread_self(), &sp.clock) != 0 ||
            pthread_create(&sampler_thread, NULL, sampler_main, &sp) != 0)
            return -1;
    } else if (mode == 1) {
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = SIGRTMIN + 4;
        ev._sigev_un._tid = (int)syscall(SYS_gettid);
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) != 0)
            return -1;
        struct itimerspec its = {{0, period}, {0, period}};
        timer_settime(t, 0, &its, NULL);
    } else if (mode >= 2 && mode <= 4) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.sample_period = (uint64_t)period;
        a.wakeup_events = 1;
        a.exclude_kernel = 1;
        if (mode == 4) {
            a.sigtrap = 1;
            a.remove_on_exec = 1;
        }
        perf_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
                               PERF_FLAG_FD_CLOEXEC);
        if (perf_fd < 0)
            return -1;
        if (mode == 3 || mode == 4)
            goto armed;
        struct f_owner_ex o = {F_OWNER_TID, (int)syscall(SYS_gettid)};
        fcntl(perf_fd, F_SETFL, O_ASYNC);
        fcntl(perf_fd, F_SETSIG, SIGRTMIN + 5);
        fcntl(perf_fd, F_SETOWN_EX, &o);
        ioctl(perf_fd, PERF_EVENT_IOC_REFRESH, 1);
    }
armed:;
    double t0 = cpu_s(), w0 = clock_s(CLOCK_THREAD_CPUTIME_ID),
           r0 = clock_s(CLOCK_MONOTONIC);
    work(n);
    double dt = cpu_s() - t0;
    *thread = clock_s(CLOCK_THREAD_CPUTIME_ID) - w0;
    *real = clock_s(CLOCK_MONOTONIC) - r0;
    if (mode == 5) {
        sampler_stop = 1;
        pthread_join(sampler_thread, NULL);
        sigs = sp.reads;
        dt = cpu_s() - t0; /* the sampler's last period included */
    } else if (mode == 1)
        timer_delete(t);
    else if (mode >= 2) {
        if (mode == 3) {
            uint64_t c = 0; /* task-clock ns / period: the interrupts */
            if (read(perf_fd, &c, sizeof c) == (ssize_t)sizeof c)
                sigs = c / (uint64_t)period;
        }
        close(perf_fd);
        perf_fd = -1;
    }
    *nsig = sigs;
    return dt;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of V's N values (V sorted in place). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    unsigned rate = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    double work_ms = argc > 3 ? atof(argv[3]) : 1000;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sa.sa_sigaction = on_sig;
    sigaction(SIGRTMIN + 4, &sa, NULL);
    sa.sa_sigaction = on_perf;
    sigaction(SIGRTMIN + 5, &sa, NULL);
    sa.sa_sigaction = on_sig;
    sigaction(SIGTRAP, &sa, NULL);
    /* calibrate the loop to WORK_MS of CPU time */
    uint64_t n = 10000000, s;
    double th, re;
    double d = one(0, rate, n, &s, &th, &re);
    n = (uint64_t)(n * (work_ms / 1e3) / d);
    double tm[NMODES][64] = {{0}}, tt[NMODES][64] = {{0}},
           tr[NMODES][64] = {{0}};
    uint64_t sg[NMODES] = {0};
    int missing[NMODES] = {0}; /* a clock this machine refused */
    if (reps > 64)
        reps = 64;
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < NMODES; m++) {
            tm[m][r] =
                missing[m] ? 0 : one(m, rate, n, &s, &tt[m][r], &tr[m][r]);
            if (tm[m][r] < 0)
                missing[m] = 1;
            sg[m] += missing[m] ? 0 : s;
        }
    static const char *name[NMODES] = {"none",           "POSIX CPU timer",
                                       "perf, F_SETSIG", "perf, no signal",
                                       "perf, sigtrap",  "sampler thread"};
    /* each run against the run without a timer of its own round: a load
     * that drifts over the rounds cancels */
    double med[NMODES], dif[NMODES][64], mdif[NMODES], medt[NMODES],
        medr[NMODES];
    for (int m = 0; m < NMODES; m++) {
        for (int r = 0; r < reps; r++)
            dif[m][r] = tm[m][r] - tm[0][r];
        mdif[m] = median(dif[m], reps);
    }
    for (int m = 0; m < NMODES; m++) {
        med[m] = median(tm[m], reps);
        medt[m] = median(tt[m], reps);
        medr[m] = median(tr[m], reps);
    }
    printf("%u Hz, %d interleaved runs of %.0f ms of work, CPU time medians "
           "and the median of each run's difference to its round's run "
           "without a timer, per signal:\n",
           rate, reps, work_ms);
    for (int m = 0; m < NMODES; m++) {
        if (missing[m]) {
            printf("  %-16s not available here\n", name[m]);
            continue;
        }
        double per_run = (double)sg[m] / reps;
        double per = sg[m] ? mdif[m] / per_run : 0;
        printf("  %-16s %8.1f ms  %6.3fx  %7.0f signals/run  %6.1f us/signal"
               "  (%+.2f%% of the run)  thread %6.3fx  real %6.3fx\n",
               name[m], med[m] * 1e3, med[m] / med[0], per_run, per * 1e6,
               100 * mdif[m] / med[0], medt[m] / medt[0], medr[m] / medr[0]);
    }
    return 0;
}
