/*
 * evalprof: the command-line front end.
 *
 * One binary with subcommands in the manner of perf and uftrace: main()
 * looks the first argument up in the table below and hands over argc/argv.
 * Each subcommand lives in its own cmd_<name>.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const struct evp_cmd commands[] = {
    {"tree", cmd_tree, "print the trace as an indented event tree",
     "usage: evalprof tree [--format simple-indent|simple|raw] [--stream N]\n"
     "                     [--max-depth N] (default 1024, 0: all)\n"
     "                     [--no-compensate] [--ns] [--python X.Y] TRACE\n"},
    {"summary", cmd_summary, "print event, opcode and function tables",
     "usage: evalprof summary [--sort name|count|elapsed|total] [--funcs]\n"
     "                        [--group-specialized] [--no-compensate] [--ns]\n"
     "                        [--python X.Y] TRACE\n"},
    {"info", cmd_info, "print a trace's metadata, streams and warnings",
     "usage: evalprof info [--python X.Y] TRACE\n"},
    {"export", cmd_export, "write a trace in another format",
     "usage: evalprof export --format text|evp|folded|chrome|speedscope|\n"
     "                                pprof|pstats|callgrind\n"
     "                       [-o OUT] [--zstd[=LEVEL]] (evp)\n"
     "                       [--ops] [--phases] (folded, chrome, speedscope,\n"
     "                                pprof; --ops also callgrind)\n"
     "                       [--max-depth N] (folded, pprof; default 1024,\n"
     "                                0: all)\n"
     "                       [--python X.Y] TRACE\n"},
    {"import", cmd_import, "turn a text trace into a binary .evp trace",
     "usage: evalprof import [-o OUT.evp] [--zstd[=LEVEL]] [--python X.Y]\n"
     "                       TEXT-TRACE\n"},
    {"diff", cmd_diff, "compare two traces: events, opcodes, functions",
     "usage: evalprof diff [--sort total|count|elapsed|name] [--funcs]\n"
     "                     [--no-compensate] [--ns] [--python X.Y] BASE NEW\n"},
    {"record", cmd_record, "run a Python program and record a trace of it",
     "usage: evalprof record [-o FILE] [--no-ops] [--threads] "
     "[--no-follow-fork]\n"
     "                       [--no-calibrate] [-q]\n"
     "                       -- PYTHON [PYTHON-OPTIONS]\n"
     "                          (SCRIPT | -m MODULE | -c CODE | -) "
     "[ARGS...]\n"},
    {"flamegraph", cmd_flamegraph, "draw an interactive SVG flame graph",
     "usage: evalprof flamegraph [-o OUT.svg] [--title T] [--subtitle S]\n"
     "                           [--icicle] [--width PX] [--height PX]\n"
     "                           [--minwidth PX] [--countname UNIT]\n"
     "                           [--ops] [--phases] [--input folded|trace]\n"
     "                           [--max-depth N] (default 1024, 0: all)\n"
     "                           [--python X.Y] TRACE|FOLDED\n"
     "       evalprof flamegraph --diff [--negate] [OPTIONS] BASE NEW\n"
     "                           (each a TRACE or FOLDED)\n"},
    {"perf", cmd_perf, "profile a command with perf: flame graph, hot table",
     "usage: evalprof perf [-o DIR] [-F HZ] [-e EVENT] [--call-graph "
     "fp|dwarf]\n"
     "                     [--startup] [--repeat N] [--trace FILE]\n"
     "                     [--threshold POINTS] [--top N] [--title T] [--pid]\n"
     "                     [--perf PATH] (-- CMD [ARGS...] | --script FILE)\n"},
    {"report", cmd_report, "write an HTML report of one run or of two",
     "usage: evalprof report [-o OUT.html] [--no-compensate] [--ns]\n"
     "                       [--python X.Y] TRACE | BASE NEW\n"},
};

static const size_t ncommands = sizeof commands / sizeof commands[0];

void evp_cli_usage(FILE *f, const char *cmd)
{
    for (size_t i = 0; i < ncommands; i++)
        if (strcmp(commands[i].name, cmd) == 0)
            fputs(commands[i].usage, f);
}

static void help(FILE *f)
{
    fputs("usage: evalprof COMMAND [OPTIONS] [ARGS]\n\n"
          "evalprof shows where CPython's virtual machine spends its time.\n\n"
          "commands:\n",
          f);
    for (size_t i = 0; i < ncommands; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fputs("\n`evalprof help COMMAND` shows a command's options.\n", f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        help(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 ||
        strcmp(name, "-h") == 0) {
        if (argc > 2) {
            for (size_t i = 0; i < ncommands; i++)
                if (strcmp(commands[i].name, argv[2]) == 0) {
                    fputs(commands[i].usage, stdout);
                    return evp_cli_finish(0);
                }
            evp_cli_error("no such command '%s'", argv[2]);
            return 2;
        }
        help(stdout);
        return evp_cli_finish(0);
    }
    if (strcmp(name, "--version") == 0) {
        puts("evalprof " EVP_VERSION);
        return evp_cli_finish(0);
    }
    for (size_t i = 0; i < ncommands; i++)
        if (strcmp(commands[i].name, name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    evp_cli_error("no such command '%s' (try 'evalprof help')", name);
    return 2;
}
