/*
 * `evalprof diff BASE NEW`: compare two traces, e.g. one interpreter
 * against another, or a run before and after a change.  Events, opcodes
 * and (with --funcs) functions, sorted by how much their total time moved.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "views.h"
#include "cli.h"

int cmd_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"sort", required_argument, NULL, 'S'},
        {"output", required_argument, NULL, 'o'},
        {"funcs", no_argument, NULL, 'F'},
        {"wide", no_argument, NULL, 'W'},
        {"group-specialized", no_argument, NULL, 'G'},
        EVP_CLI_COMMON_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evp_diff_opts o = {.sort = EVP_SORT_TOTAL};
    struct evp_cli_common co = EVP_CLI_COMMON_INIT;
    const char *out = NULL;
    int c, k, sort;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:Fh", longopts, NULL)) != -1) {
        if (c == 's') {
            evp_cli_error("diff: --stream is not supported (both traces "
                          "are compared whole)");
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
        case 'S':
            if (evp_cli_parse_sort("diff", optarg, &sort) < 0)
                return 2;
            o.sort = (enum evp_sort)sort;
            break;
        case 'F':
            o.funcs = 1;
            break;
        case 'W':
            o.wide_names = 1;
            break;
        case 'G':
            o.group_specialized = 1;
            break;
        case 'h':
            return evp_cli_help("diff");
        default:
            evp_cli_usage(stderr, "diff");
            return 2;
        }
    }
    if (evp_cli_operands("diff", argc - optind, 2, "two traces, BASE and NEW") <
        0)
        return 2;
    /* Compensation applies where a trace measured its cost (binary). */
    o.compensate = co.compensate != 0;
    o.ns = evp_cli_unit(&co, EVP_UNIT_AUTO);
    struct evp_outfile of;
    int status;
    FILE *f = evp_cli_report_open(
        "diff", &of, out, (const char *const *)argv + optind, 2, &status);
    if (!f)
        return status;
    struct evp_trace *a = evp_cli_open_trace(argv[optind], co.python);
    struct evp_trace *b =
        a ? evp_cli_open_trace(argv[optind + 1], co.python) : NULL;
    int rc = EVP_CLI_REPORTED;
    int sampled = b ? evp_sampled_only(a) + evp_sampled_only(b) : 0;
    if (sampled == 1) {
        evp_cli_error("diff: %s is a sampled trace and %s is not: a sampled "
                      "trace is compared with another sampled trace",
                      evp_sampled_only(a) ? argv[optind] : argv[optind + 1],
                      evp_sampled_only(a) ? argv[optind + 1] : argv[optind]);
    } else if (b) {
        struct evp_diag diag = {{0}, {0}};
        o.diag = &diag;
        rc = evp_view_diff(a, b, f, &o);
        if (rc == -ENOMEM && !diag.reason[0])
            evp_diag_fail(&diag, "diff: out of memory");
        if (evp_cli_view_done("diff", &diag, rc) < 0 && rc != -EIO)
            rc = EVP_CLI_REPORTED;
    }
    if (a)
        evp_trace_close(a);
    if (b)
        evp_trace_close(b);
    return evp_cli_report_close(&of, rc);
}
