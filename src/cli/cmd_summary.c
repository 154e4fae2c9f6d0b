/*
 * `evalprof summary`: the discussion's events and ops tables, sorted as
 * asked, and with --funcs a per-function table (calls, inclusive, self,
 * mean).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"
#include "cli.h"

/* Several runs: every trace opened first (a bad one named, nothing
 * printed), all sampled or all exact, all from one interpreter version,
 * then one summary. */
static int summary_runs(char **paths, size_t n, struct evp_cli_common *co,
                        FILE *f, const struct evp_summary_opts *o)
{
    struct evp_trace **t = calloc(n, sizeof *t);
    int rc = EVP_CLI_REPORTED;
    size_t opened = 0;
    if (!t) {
        evp_cli_error("summary: out of memory");
        return EVP_CLI_REPORTED;
    }
    for (; opened < n; opened++)
        if (!(t[opened] = evp_cli_open_run("summary", paths[opened], co)))
            goto done;
    /* all sampled or all exact: the two are summarised differently */
    int sampled = evp_sampled_only(t[0]);
    for (size_t i = 1; i < n; i++)
        if (evp_sampled_only(t[i]) != sampled) {
            evp_cli_error("summary: %s is %s trace and %s %s one: the runs "
                          "to summarise together must be all sampled or "
                          "all exact",
                          paths[i], sampled ? "an exact" : "a sampled",
                          paths[0], sampled ? "a sampled" : "an exact");
            goto done;
        }
    if (o->lines && !sampled) {
        evp_cli_error("summary: --lines of several runs reads sampled "
                      "traces, and these are exact: summarise one at a time");
        goto done;
    }
    const char *v0 = evp_trace_info(t[0])->python_version;
    for (size_t i = 1; i < n; i++) {
        const char *vi = evp_trace_info(t[i])->python_version;
        if (strcmp(v0, vi) != 0) {
            evp_cli_error("summary: %s was recorded by Python %s and %s by "
                          "%s: the runs to summarise together must come "
                          "from one interpreter version",
                          paths[i], *vi ? vi : "(unknown)", paths[0],
                          *v0 ? v0 : "(unknown)");
            goto done;
        }
    }
    struct evp_diag diag = {{0}, {0}};
    struct evp_summary_opts so = *o;
    so.diag = &diag;
    rc = evp_cli_view_done("summary", &diag,
                           evp_view_summary_runs(t, n, f, &so));
done:
    for (size_t i = 0; i < opened; i++)
        evp_trace_close(t[i]);
    free(t);
    return rc;
}

int cmd_summary(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"sort", required_argument, NULL, 'S'},
        {"output", required_argument, NULL, 'o'},
        {"funcs", no_argument, NULL, 'F'},
        {"lines", no_argument, NULL, 'L'},
        {"wide", no_argument, NULL, 'W'},
        {"group-specialized", no_argument, NULL, 'g'},
        EVP_CLI_COMMON_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evp_summary_opts o = {.sort = EVP_SORT_COUNT};
    struct evp_cli_common co = EVP_CLI_COMMON_INIT;
    const char *out = NULL;
    int c, k, sort;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:s:Fgh", longopts, NULL)) != -1) {
        if ((k = evp_cli_common_option(c, optarg, &co)) != 0) {
            if (k < 0)
                return 2;
            continue;
        }
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'S':
            if (evp_cli_parse_sort("summary", optarg, &sort) < 0)
                return 2;
            o.sort = (enum evp_sort)sort;
            break;
        case 'F':
            o.funcs = 1;
            break;
        case 'L':
            o.lines = 1;
            break;
        case 'W':
            o.wide_names = 1;
            break;
        case 'g':
            o.group_specialized = 1;
            break;
        case 'h':
            return evp_cli_help("summary");
        default:
            evp_cli_usage(stderr, "summary");
            return 2;
        }
    }
    int ntraces = argc - optind;
    if (ntraces < 1 &&
        evp_cli_operands("summary", ntraces, 1, "one TRACE or more") < 0)
        return 2;
    struct evp_outfile of;
    int status;
    FILE *f = evp_cli_report_open("summary", &of, out,
                                  (const char *const *)argv + optind, ntraces,
                                  &status);
    if (!f)
        return status;
    if (ntraces > 1) {
        o.compensate = co.compensate;
        o.stream = co.stream;
        o.ns = evp_cli_unit(&co, EVP_UNIT_AUTO);
        return evp_cli_report_close(
            &of, summary_runs(argv + optind, (size_t)ntraces, &co, f, &o));
    }
    struct evp_trace *t = evp_cli_open_common("summary", argv[optind], &co);
    if (!t)
        return evp_cli_report_close(&of, EVP_CLI_REPORTED);
    o.compensate = co.compensate;
    o.stream = co.stream;
    o.ns = evp_cli_unit(&co, EVP_UNIT_AUTO);
    struct evp_diag diag = {{0}, {0}};
    o.diag = &diag;
    int rc = evp_cli_view_done("summary", &diag, evp_view_summary(t, f, &o));
    evp_trace_close(t);
    return evp_cli_report_close(&of, rc);
}
