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

/*
 * The subcommands.  Each one's help (synopsis, description, options,
 * examples) is written once, in src/cli/help/NAME.txt, from which the
 * build makes the table below (help.h, by tools/gen-help.py), the man
 * pages and the bash completion: a new command adds its line here and its
 * help file to src/cli/meson.build's list.
 */
static const struct evp_cmd commands[] = {
    {"tree", cmd_tree},     {"summary", cmd_summary},
    {"info", cmd_info},     {"export", cmd_export},
    {"import", cmd_import}, {"diff", cmd_diff},
    {"record", cmd_record}, {"flamegraph", cmd_flamegraph},
    {"perf", cmd_perf},     {"report", cmd_report},
    {"dump", cmd_dump},
};

static const size_t ncommands = sizeof commands / sizeof commands[0];

struct evp_help {
    const char *name;
    const char *summary; /* one line */
    const char *usage;   /* the synopsis, printed after a usage error */
    const char *text;    /* everything, for --help */
};

#include "help.h"

static const struct evp_help *find_help(const char *name)
{
    for (size_t i = 0; i < sizeof evp_help_texts / sizeof evp_help_texts[0];
         i++)
        if (strcmp(evp_help_texts[i].name, name) == 0)
            return &evp_help_texts[i];
    return NULL;
}

void evp_cli_usage(FILE *f, const char *cmd)
{
    const struct evp_help *h = find_help(cmd);
    if (h)
        fputs(h->usage, f);
}

int evp_cli_help(const char *cmd)
{
    const struct evp_help *h = find_help(cmd);
    if (h)
        fputs(h->text, stdout);
    return evp_cli_finish(0);
}

int evp_cli_operands(const char *cmd, int got, int want, const char *what)
{
    if (got == want)
        return 0;
    evp_cli_usage(stderr, cmd);
    if (got == 0)
        evp_cli_error("%s: expected %s, got none", cmd, what);
    else
        evp_cli_error("%s: expected %s, got %d", cmd, what, got);
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(find_help("evalprof")->text, stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 ||
        strcmp(name, "-h") == 0) {
        if (argc > 2) {
            for (size_t i = 0; i < ncommands; i++)
                if (strcmp(commands[i].name, argv[2]) == 0)
                    return evp_cli_help(argv[2]);
            evp_cli_error("no such command '%s' (try 'evalprof help')",
                          argv[2]);
            return 2;
        }
        return evp_cli_help("evalprof");
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
