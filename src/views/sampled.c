/*
 * The statistics of sampled traces (docs/FORMAT.md "Samples"): what the
 * sampled views (summary, lines, diff, the report) compute their shares,
 * intervals and estimated times with, and the words that say what those
 * figures cover.
 *
 * A sample's weight is the number of timer periods it stands for; a
 * row's share is its weight over the total, and its interval is the
 * Wilson score interval of a binomial proportion whose trials are the
 * samples' effective count, (sum w)^2 / sum w^2 (Kish's): the periods
 * while every sample stands for one, fewer where weights are uneven (a
 * timer that fires less often than asked, late signals whose missed
 * periods go into one sample).  That covers the sampling error only:
 * where a sampler's signals land (safe points, the clock's granularity)
 * biases shares in ways no interval shows, and the views say so.  Two
 * runs' shares are compared by a two-proportion z-test over their
 * effective counts.  A row's estimated time is its periods times the
 * period; of several runs, the median and range of the runs' estimates.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"
#include "views.h"

/* ---- shares and their intervals ------------------------------------------ */

double evp_sample_trials(uint64_t total, double w2)
{
    return w2 > 0 ? (double)total * (double)total / w2 : (double)total;
}

void evp_wilson(double p, double nn, double *lo, double *hi)
{
    if (!(nn > 0)) {
        *lo = *hi = 0;
        return;
    }
    const double z = 1.959963984540054;
    double z2 = z * z;
    double den = 1 + z2 / nn;
    double mid = (p + z2 / (2 * nn)) / den;
    double half = z * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / den;
    *lo = mid - half < 0 ? 0 : mid - half;
    *hi = mid + half > 1 ? 1 : mid + half;
}

int evp_two_prop_z(double p1, double n1, double p2, double n2, double *z)
{
    *z = 0;
    if (!(n1 > 0) || !(n2 > 0))
        return 0;
    double p = (p1 * n1 + p2 * n2) / (n1 + n2);
    double se = sqrt(p * (1 - p) * (1 / n1 + 1 / n2));
    if (!(se > 0))
        return 0;
    *z = (p2 - p1) / se;
    return fabs(*z) > 1.959963984540054;
}

uint64_t evp_sample_ns(const struct evp_trace *t, uint64_t weight)
{
    double ns = (double)weight * evp_trace_info(t)->sample_period_ns;
    return ns > 0 && ns < 1.8e19 ? (uint64_t)(ns + 0.5) : 0;
}

void evp_share_cells(uint64_t k, uint64_t n, double trials, char *sh,
                     size_t shl, char *ci, size_t cil)
{
    double lo, hi, p = n ? (double)k / (double)n : 0.0;
    evp_wilson(p, trials, &lo, &hi);
    snprintf(sh, shl, "%.1f%%", 100.0 * p);
    snprintf(ci, cil, "%.1f-%.1f%%", 100 * lo, 100 * hi);
}

/* ---- estimated times ------------------------------------------------------
 */

void evp_sample_est(struct evp_sample_est *s, struct evp_trace *const *t,
                    size_t runs, const uint64_t *w, size_t stride,
                    uint64_t *scratch)
{
    s->w = 0;
    for (size_t i = 0; i < runs; i++) {
        s->w += w[i * stride];
        scratch[i] = evp_sample_ns(t[i], w[i * stride]);
    }
    evp_runs_reduce(scratch, runs, scratch + runs, &s->est, &s->min, &s->max);
}

size_t evp_sample_range_cell(char *buf, size_t len,
                             const struct evp_sample_est *s, int u)
{
    char a[48], b[48];
    int k = snprintf(buf, len, "[%s - %s]", evp_fmt_us(a, sizeof a, s->min, u),
                     evp_fmt_us(b, sizeof b, s->max, u));
    return k > 0 ? (size_t)k : 0;
}

/* ---- what the figures cover ---------------------------------------------- */

const char *evp_sample_clock_name(const struct evp_trace_info *in)
{
    return !strcmp(in->sample_clock, "cpu")    ? "CPU time"
           : !strcmp(in->sample_clock, "wall") ? "wall clock"
           : *in->sample_clock                 ? in->sample_clock
                                               : "an unknown clock";
}

int evp_sample_one_rate(struct evp_trace *const *t, size_t runs)
{
    const struct evp_trace_info *a = evp_trace_info(t[0]);
    for (size_t i = 1; i < runs; i++) {
        const struct evp_trace_info *b = evp_trace_info(t[i]);
        if (a->sample_period_ns != b->sample_period_ns ||
            strcmp(a->sample_clock, b->sample_clock))
            return 0;
    }
    return 1;
}

const char *evp_sample_trials_words(char *buf, size_t len, uint64_t total,
                                    double trials)
{
    char c[32];
    if (!(trials < (double)total - 0.5))
        return "";
    snprintf(buf, len,
             ", over the samples' effective count, %s: their periods weigh "
             "unevenly",
             evp_num_group(c, sizeof c, (uint64_t)(trials + 0.5)));
    return buf;
}

void evp_sample_pooled_lines(FILE *out, struct evp_trace *const *t, size_t runs,
                             uint64_t total, double trials, const char *what,
                             uint64_t samples)
{
    char c1[32], c2[32], of[64] = "", tw[160];
    if (samples)
        snprintf(of, sizeof of, " (%s samples)",
                 evp_num_group(c2, sizeof c2, samples));
    fprintf(out,
            "%-11sshares are pooled over the %zu runs' %s timer periods%s%s, "
            "with 95%% confidence intervals (Wilson score interval, "
            "binomial%s); an interval covers the sampling error only, not "
            "the sampler's bias (where its signals land) nor how the runs "
            "differ (their est. times' [min - max] shows that)\n",
            "estimate:", runs, evp_num_group(c1, sizeof c1, total), what, of,
            evp_sample_trials_words(tw, sizeof tw, total, trials));
    if (evp_sample_one_rate(t, runs))
        return;
    const char *clock0 = evp_trace_info(t[0])->sample_clock;
    int clocks = 0;
    fprintf(out, "%-11sthe runs were sampled at different rates or clocks (",
            "note:");
    for (size_t i = 0; i < runs; i++) {
        const struct evp_trace_info *ti = evp_trace_info(t[i]);
        fprintf(out, "%s", i ? ", " : "");
        evp_esc_term(out, ti->path, strlen(ti->path), 0);
        fprintf(out, " %.0f Hz of %s", ti->sample_rate_hz,
                evp_sample_clock_name(ti));
        clocks |= strcmp(ti->sample_clock, clock0) != 0;
    }
    fprintf(out,
            "): the pooled shares weight each run by its timer periods, so "
            "that a run sampled faster weighs more per second%s; each run's "
            "est. time is its own periods x its period\n",
            clocks ? ", and periods of CPU time and of wall-clock time are "
                     "pooled alike"
                   : "");
}

int evp_sample_sparse(uint64_t total, double trials)
{
    return total && trials < 0.5 * (double)total;
}
