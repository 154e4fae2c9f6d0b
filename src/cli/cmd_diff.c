/*
 * `evalprof diff BASE NEW`: compare two traces, e.g. one interpreter
 * against another, or a run before and after a change.  Events, opcodes
 * and (with --funcs) functions, sorted by how much their total time moved.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../views/views.h"
#include "cli.h"

int cmd_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"sort", required_argument, NULL, 'o'},
        {"funcs", no_argument, NULL, 'F'},
        {"python", required_argument, NULL, 'p'},
        {"no-compensate", no_argument, NULL, 'n'},
        {"ns", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evp_diff_opts o = {.sort = EVP_SORT_TOTAL, .compensate = 1};
    const char *python = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:Fh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (strcmp(optarg, "total") == 0)
                o.sort = EVP_SORT_TOTAL;
            else if (strcmp(optarg, "count") == 0)
                o.sort = EVP_SORT_COUNT;
            else if (strcmp(optarg, "elapsed") == 0)
                o.sort = EVP_SORT_ELAPSED;
            else if (strcmp(optarg, "name") == 0)
                o.sort = EVP_SORT_NAME;
            else {
                evp_cli_error("diff: unknown sort '%s' (total, count, "
                              "elapsed, name)",
                              optarg);
                return 2;
            }
            break;
        case 'F': o.funcs = 1; break;
        case 'p': python = optarg; break;
        case 'n': o.compensate = 0; break;
        case 'N': evp_fmt_set_ns(1); break;
        case 'h': evp_cli_usage(stdout, "diff"); return evp_cli_finish(0);
        default: evp_cli_usage(stderr, "diff"); return 2;
        }
    }
    if (optind != argc - 2) {
        evp_cli_usage(stderr, "diff");
        return 2;
    }
    struct evp_trace *a = evp_cli_open_trace(argv[optind], python);
    if (!a)
        return 1;
    struct evp_trace *b = evp_cli_open_trace(argv[optind + 1], python);
    if (!b) {
        evp_trace_close(a);
        return 1;
    }
    int rc = evp_view_diff(a, b, stdout, &o);
    if (rc < 0)
        evp_cli_error("diff: out of memory");
    evp_trace_close(a);
    evp_trace_close(b);
    return evp_cli_finish(rc < 0 ? 1 : 0);
}
