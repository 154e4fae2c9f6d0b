/*
 * `evalprof report [-o OUT.html] TRACE` and `evalprof report [-o OUT.html]
 * BASE NEW`: one self-contained HTML page of a run (header facts, time by
 * phase, top opcodes, the function table, the flame graph) or of two runs
 * (the diff tables and the differential flame graph), with the figures of
 * `evalprof summary` and `evalprof diff`.  Written whole to a temporary
 * file and renamed, so a failed run leaves no half page behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "views.h"
#include "cli.h"

int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        EVP_CLI_COMMON_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evp_cli_common co = EVP_CLI_COMMON_INIT;
    const char *out = "-";
    int c, k;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c == 's') {
            evp_cli_error("report: --stream is not supported (the report "
                          "shows every thread)");
            return 2;
        }
        if ((k = evp_cli_common_option(c, optarg, &co)) != 0) {
            if (k < 0)
                return 2;
            continue;
        }
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'h':
            return evp_cli_help("report");
        default:
            evp_cli_usage(stderr, "report");
            return 2;
        }
    }
    int n = argc - optind;
    if (n != 2 &&
        evp_cli_operands("report", n, 1, "one TRACE, or BASE and NEW") < 0)
        return 2;
    if (strcmp(out, "-") == 0 && isatty(1)) {
        evp_cli_error("report: refusing to write HTML to a terminal (use -o "
                      "FILE.html)");
        return 2;
    }
    struct evp_outfile of;
    int status;
    FILE *f = evp_cli_report_open("report", &of, out,
                                  (const char *const *)argv + optind, (size_t)n,
                                  &status);
    if (!f)
        return status;
    struct evp_trace *t[2] = {NULL, NULL};
    struct evp_report_opts o = {0};
    if (n == 1) {
        /* the summary's compensation: settled by the trace */
        t[0] = evp_cli_open_common("report", argv[optind], &co);
        o.compensate = co.compensate;
    } else {
        /* the diff's: wherever a trace measured its cost */
        t[0] = evp_cli_open_trace(argv[optind], co.python);
        if (t[0])
            t[1] = evp_cli_open_trace(argv[optind + 1], co.python);
        o.compensate = co.compensate != 0;
    }
    int rc = EVP_CLI_REPORTED;
    int mixed =
        t[0] && t[1] && evp_sampled_only(t[0]) != evp_sampled_only(t[1]);
    if (mixed)
        evp_cli_error("report: %s is a sampled trace and %s is not: a sampled "
                      "trace is compared with another sampled trace",
                      evp_sampled_only(t[0]) ? argv[optind] : argv[optind + 1],
                      evp_sampled_only(t[0]) ? argv[optind + 1] : argv[optind]);
    else if (t[0] && (n == 1 || t[1])) {
        struct evp_diag diag = {{0}, {0}};
        o.diag = &diag;
        rc = evp_cli_view_done("report", &diag,
                               evp_view_report(t[0], t[1], f, &o));
    }
    status = evp_cli_report_close(&of, rc);
    for (int i = 0; i < 2; i++)
        if (t[i])
            evp_trace_close(t[i]);
    return status;
}
