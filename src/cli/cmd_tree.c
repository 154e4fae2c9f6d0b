/*
 * `evalprof tree`: print a trace as the discussion's indented event tree,
 * one section per thread.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../views/views.h"
#include "cli.h"

int cmd_tree(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"stream", required_argument, NULL, 's'},
        {"python", required_argument, NULL, 'p'},
        {"no-compensate", no_argument, NULL, 'n'},
        {"compensate", no_argument, NULL, 'c'},
        {"ns", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evp_tree_opts o = {.format = EVP_TREE_SIMPLE_INDENT, .stream = -1};
    const char *python = NULL;
    int compensate = -1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:s:h", longopts, NULL)) != -1) {
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
        case 's':
            if ((o.stream = evp_cli_parse_long("--stream", optarg)) < 0)
                return 2;
            break;
        case 'p': python = optarg; break;
        case 'n': compensate = 0; break;
        case 'c': compensate = 1; break;
        case 'N': evp_fmt_set_ns(1); break;
        case 'h': evp_cli_usage(stdout, "tree"); return evp_cli_finish(0);
        default: evp_cli_usage(stderr, "tree"); return 2;
        }
    }
    if (optind != argc - 1) {
        evp_cli_usage(stderr, "tree");
        return 2;
    }
    struct evp_trace *t = evp_cli_open_trace(argv[optind], python);
    if (!t)
        return 1;
    o.compensate = compensate < 0 ? !evp_trace_info(t)->text : compensate;
    if (o.stream >= (long)evp_trace_nstreams(t)) {
        evp_cli_error("tree: --stream %ld: the trace has %zu stream(s)",
                      o.stream, evp_trace_nstreams(t));
        evp_trace_close(t);
        return 2;
    }
    static char buf[1 << 16];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    int rc = evp_view_tree(t, stdout, &o);
    evp_trace_close(t);
    return evp_cli_finish(rc < 0 ? 1 : 0);
}
