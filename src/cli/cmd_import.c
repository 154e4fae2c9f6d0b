/*
 * `evalprof import`: turn a text trace (the discussion's format) into a
 * binary .evp trace.  Opcode names chosen with --python are embedded, so
 * the binary trace names its opcodes on its own.  The trace is written
 * whole or not at all (evp_cli_out_open), never over its input.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* FOO.trace -> FOO.evp, FOO -> FOO.evp */
static char *default_output(const char *in)
{
    size_t n = strlen(in);
    const char *slash = strrchr(in, '/'), *dot = strrchr(in, '.');
    if (dot && (!slash || dot > slash) && dot != in)
        n = (size_t)(dot - in);
    char *out = malloc(n + 5);
    if (out)
        snprintf(out, n + 5, "%.*s.evp", (int)n, in);
    return out;
}

int cmd_import(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"zstd", optional_argument, NULL, 'z'},
        {"python", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *out = NULL, *python = NULL;
    int zstd = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'z':
            if ((zstd = evp_cli_parse_zstd(optarg)) < 0)
                return 2;
            break;
        case 'p':
            python = optarg;
            break;
        case 'h':
            return evp_cli_help("import");
        default:
            evp_cli_usage(stderr, "import");
            return 2;
        }
    }
    if (evp_cli_operands("import", argc - optind, 1, "one TEXT-TRACE") < 0)
        return 2;
    const char *in = argv[optind];
    char *def = out ? NULL : default_output(in);
    if (!out)
        out = def;
    if (!out) {
        evp_cli_error("import: %s", strerror(ENOMEM));
        return 1;
    }
    if (strcmp(out, in) == 0 || evp_cli_out_check("import", out, &in, 1)) {
        if (strcmp(out, in) == 0)
            evp_cli_error("import: %s: give an output name with -o", in);
        free(def);
        return 2;
    }
    struct evp_open_opts oo = {
        .python = python, .format = 2, .warn = evp_cli_trace_warn};
    struct evp_trace *t;
    char err[512];
    if (evp_trace_open(in, &oo, &t, err, sizeof err) < 0) {
        evp_cli_error("%s: %s", in, err);
        free(def);
        return 1;
    }
    struct evp_outfile of;
    int rc = 1;
    if (evp_cli_out_open(&of, out)) {
        rc = evp_trace_write_evp_to(t, of.f, out, zstd, err, sizeof err);
        if (rc < 0) {
            evp_cli_error("%s", err);
            rc = EVP_CLI_REPORTED;
        }
        rc = evp_cli_out_close(&of, rc);
    }
    if (rc == 0)
        fprintf(stderr, "evalprof: wrote %s\n", out);
    evp_trace_close(t);
    free(def);
    return evp_cli_finish(rc);
}
