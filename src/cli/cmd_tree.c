/*
 * `evalprof tree`: print a trace as the discussion's indented event tree,
 * one section per thread; a sampled trace's samples in time order, each
 * with its stack.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"
#include "cli.h"

int cmd_tree(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"max-depth", required_argument, NULL, 'd'},
        {"no-pager", no_argument, NULL, 'P'},
        EVP_CLI_COMMON_LONGOPTS,
        EVP_CLI_FILTER_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evp_tree_opts o = {.format = EVP_TREE_SIMPLE_INDENT,
                              .max_depth = EVP_TREE_DEFAULT_DEPTH};
    long depth;
    struct evp_cli_common co = EVP_CLI_COMMON_INIT;
    struct evp_cli_filter fo = EVP_CLI_FILTER_INIT;
    const char *out = NULL;
    int c, k, no_pager = getenv("EVALPROF_PAGER") && !*getenv("EVALPROF_PAGER");
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:s:o:h", longopts, NULL)) != -1) {
        if ((k = evp_cli_common_option(c, optarg, &co)) != 0 ||
            (k = evp_cli_filter_option(c, optarg, &fo)) != 0) {
            if (k < 0)
                return 2;
            continue;
        }
        switch (c) {
        case 'f':
            if (strcmp(optarg, "simple-indent") == 0)
                o.format = EVP_TREE_SIMPLE_INDENT;
            else if (strcmp(optarg, "simple") == 0)
                o.format = EVP_TREE_SIMPLE;
            else if (strcmp(optarg, "raw") == 0)
                o.format = EVP_TREE_RAW;
            else {
                evp_cli_error("tree: unknown format '%s' (simple-indent, "
                              "simple, raw)",
                              optarg);
                return 2;
            }
            break;
        case 'o':
            out = optarg;
            break;
        case 'd':
            if ((depth = evp_cli_parse_long("--max-depth", optarg)) < 0)
                return 2;
            o.max_depth = (size_t)depth;
            break;
        case 'P':
            no_pager = 1;
            break;
        case 'h':
            return evp_cli_help("tree");
        default:
            evp_cli_usage(stderr, "tree");
            return 2;
        }
    }
    if (evp_cli_operands("tree", argc - optind, 1, "one TRACE") < 0)
        return 2;
    struct evp_outfile of;
    int status;
    FILE *f = evp_cli_report_open(
        "tree", &of, out, (const char *const *)argv + optind, 1, &status);
    if (!f)
        return status;
    struct evp_trace *t = evp_cli_open_common("tree", argv[optind], &co);
    if (!t)
        return evp_cli_report_close(&of, EVP_CLI_REPORTED);
    o.compensate = co.compensate;
    o.stream = co.stream;
    o.ns = evp_cli_unit(&co, EVP_UNIT_US);
    if (evp_cli_filter_resolve("tree", t, &fo, &o.stream) < 0) {
        evp_trace_close(t);
        evp_cli_report_close(&of, EVP_CLI_REPORTED);
        return 2;
    }
    int filtered = evp_filter_active(&fo.f);
    if (filtered)
        o.filter = &fo.f;
    /* a line an event, 110 bytes on average on the demo's trace */
    evp_cli_warn_size("tree", t, 110, filtered || o.stream >= 0);
    static char buf[1 << 16];
    FILE *pager = f == stdout ? evp_cli_pager_open(no_pager) : NULL;
    if (pager)
        f = pager;
    else if (f == stdout)
        setvbuf(stdout, buf, _IOFBF, sizeof buf);
    struct evp_diag diag = {{0}, {0}};
    o.diag = &diag;
    int rc = evp_view_tree(t, f, &o);
    if (pager)
        rc = evp_cli_pager_close(pager, rc);
    rc = evp_cli_view_done("tree", &diag, rc);
    evp_trace_close(t);
    return evp_cli_report_close(&of, rc);
}
