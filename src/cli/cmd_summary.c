/*
 * `evalprof summary`: the discussion's events and ops tables, sorted as
 * asked, and with --funcs a per-function table (calls, inclusive, self,
 * mean).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../views/views.h"
#include "cli.h"

int cmd_summary(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"sort", required_argument, NULL, 'o'},
        {"funcs", no_argument, NULL, 'F'},
        {"group-specialized", no_argument, NULL, 'g'},
        {"stream", required_argument, NULL, 's'},
        {"python", required_argument, NULL, 'p'},
        {"no-compensate", no_argument, NULL, 'n'},
        {"compensate", no_argument, NULL, 'c'},
        {"ns", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evp_summary_opts o = {.sort = EVP_SORT_COUNT, .stream = -1};
    const char *python = NULL;
    int compensate = -1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:s:Fgh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (strcmp(optarg, "count") == 0)
                o.sort = EVP_SORT_COUNT;
            else if (strcmp(optarg, "name") == 0)
                o.sort = EVP_SORT_NAME;
            else if (strcmp(optarg, "elapsed") == 0)
                o.sort = EVP_SORT_ELAPSED;
            else if (strcmp(optarg, "total") == 0)
                o.sort = EVP_SORT_TOTAL;
            else {
                evp_cli_error("summary: unknown sort '%s' (name, count, "
                              "elapsed, total)",
                              optarg);
                return 2;
            }
            break;
        case 'F': o.funcs = 1; break;
        case 'g': o.group_specialized = 1; break;
        case 's':
            if ((o.stream = evp_cli_parse_long("--stream", optarg)) < 0)
                return 2;
            break;
        case 'p': python = optarg; break;
        case 'n': compensate = 0; break;
        case 'c': compensate = 1; break;
        case 'N': evp_fmt_set_ns(1); break;
        case 'h': evp_cli_usage(stdout, "summary"); return evp_cli_finish(0);
        default: evp_cli_usage(stderr, "summary"); return 2;
        }
    }
    if (optind != argc - 1) {
        evp_cli_usage(stderr, "summary");
        return 2;
    }
    struct evp_trace *t = evp_cli_open_trace(argv[optind], python);
    if (!t)
        return 1;
    o.compensate = compensate < 0 ? !evp_trace_info(t)->text : compensate;
    if (o.stream >= (long)evp_trace_nstreams(t)) {
        evp_cli_error("summary: --stream %ld: the trace has %zu stream(s)",
                      o.stream, evp_trace_nstreams(t));
        evp_trace_close(t);
        return 2;
    }
    int rc = evp_view_summary(t, stdout, &o);
    evp_trace_close(t);
    return evp_cli_finish(rc < 0 ? 1 : 0);
}
