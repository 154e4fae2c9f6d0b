/*
 * `evalprof info`: a trace's metadata, clock, streams, dropped events and
 * the warnings met while reading it.
 */
#include <getopt.h>
#include <stdio.h>

#include "views.h"
#include "cli.h"

int cmd_info(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"python", required_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *python = NULL, *out = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            python = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            return evp_cli_help("info");
        default:
            evp_cli_usage(stderr, "info");
            return 2;
        }
    }
    if (evp_cli_operands("info", argc - optind, 1, "one TRACE") < 0)
        return 2;
    struct evp_outfile of;
    int status;
    FILE *f = evp_cli_report_open(
        "info", &of, out, (const char *const *)argv + optind, 1, &status);
    if (!f)
        return status;
    struct evp_trace *t = evp_cli_open_trace(argv[optind], python);
    if (!t)
        return evp_cli_report_close(&of, EVP_CLI_REPORTED);
    int rc = evp_view_info(t, f);
    evp_trace_close(t);
    return evp_cli_report_close(&of, rc);
}
