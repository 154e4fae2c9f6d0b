/*
 * Shared pieces of the evalprof command line: the subcommand table entry,
 * error reporting and trace opening with the common options.
 *
 * Every subcommand lives in its own cmd_<name>.c with
 *     int cmd_<name>(int argc, char **argv);
 * (argv[0] is the subcommand name) and is listed in main.c's table.  A
 * subcommand returns its exit status: 0 success, 1 failure, 2 usage.
 */
#ifndef EVP_CLI_H
#define EVP_CLI_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "evalprof/trace.h"
#include "outfile.h"
#include "views.h"

struct evp_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
};

/* The subcommands (one cmd_<name>.c each). */
int cmd_tree(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_perf(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_dump(int argc, char **argv);

/* ARG as a process id for command CMD: > 0, or -1 after one line. */
long evp_cli_parse_pid(const char *cmd, const char *arg);

/* --zstd[=LEVEL]: the level (3 without a value), or -1 after an error. */
int evp_cli_parse_zstd(const char *arg);

/* Print "evalprof: MSG" to stderr (one line). */
void evp_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "evalprof: warning: MSG" to stderr. */
void evp_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a command's synopsis to F (after a usage error). */
void evp_cli_usage(FILE *f, const char *cmd);

/* Print a command's whole help (src/cli/help/CMD.txt) to stdout; returns
 * the exit status (evp_cli_finish). */
int evp_cli_help(const char *cmd);

/* Check a command's operand count: GOT against WANT.  0, or -1 after
 * printing the synopsis and "CMD: expected WHAT, got N" (WHAT: "one
 * TRACE"). */
int evp_cli_operands(const char *cmd, int got, int want, const char *what);

/*
 * Open a trace for a view, printing warnings and the error.  PYTHON is the
 * --python value (NULL for the default).  Returns NULL after printing
 * "evalprof: PATH: reason".
 */
struct evp_trace *evp_cli_open_trace(const char *path, const char *python);

/*
 * Options the reports share: --python X.Y, --stream N, --compensate /
 * --no-compensate, --ns / --us.  Put EVP_CLI_COMMON_LONGOPTS in a getopt_long
 * table and hand every option to evp_cli_common_option first.
 */
struct evp_cli_common {
    const char *python; /* opcode table for text traces, NULL: default */
    long stream;        /* -1: every stream */
    int compensate;     /* -1 until the trace is open: then on for .evp */
    int ns; /* enum evp_unit: --ns, --us; -1: neither (evp_cli_unit) */
};

/* The unit of durations O's options ask for, else DFLT (enum evp_unit). */
int evp_cli_unit(const struct evp_cli_common *o, int dflt);

/* clang-format off */
#define EVP_CLI_COMMON_INIT {NULL, -1, -1, -1}
#define EVP_CLI_COMMON_LONGOPTS                                              \
    {"stream", required_argument, NULL, 's'},                                \
    {"python", required_argument, NULL, 'p'},                                \
    {"no-compensate", no_argument, NULL, 'n'},                               \
    {"compensate", no_argument, NULL, 'c'},                                  \
    {"ns", no_argument, NULL, 'N'},                                          \
    {"us", no_argument, NULL, 'U'}
/* clang-format on */

/* 1: C was a shared option and is handled; 0: not one; -1: bad value
 * (reported; exit 2). */
int evp_cli_common_option(int c, const char *arg, struct evp_cli_common *o);

/* Open PATH for command CMD, settle the compensation default from the
 * trace and check --stream against it.  NULL after reporting. */
struct evp_trace *evp_cli_open_common(const char *cmd, const char *path,
                                      struct evp_cli_common *o);

/* As evp_cli_open_common, for one of several runs summarised together:
 * a trace read around damage (truncated, a corrupt chunk) is refused in
 * one line naming its first damage, since a run read in part would
 * count short in the sums and the range across runs. */
struct evp_trace *evp_cli_open_run(const char *cmd, const char *path,
                                   struct evp_cli_common *o);

/* --sort name|count|elapsed|total for command CMD: 0, or -1 after
 * reporting.  (enum evp_sort is in views.h.) */
int evp_cli_parse_sort(const char *cmd, const char *arg, int *sort);

/* What view CMD had to say besides its output (D), printed once it
 * returned RC: its reason as an error when it failed (else, but for a
 * write error, which closing the output reports, its errno's words), then
 * each note as "evalprof: note: ...".  Returns RC. */
int evp_cli_view_done(const char *cmd, const struct evp_diag *d, int rc);

/* The trace reader's warning callback (evp_open_opts.warn) of the
 * commands: "evalprof: PATH: MSG" on stderr. */
void evp_cli_trace_warn(void *ctx, const char *path, const char *msg);

/* Flush stdout and report a write error (perf's run_builtin check).
 * Returns STATUS, or 1 when stdout could not be written. */
int evp_cli_finish(int status);

/* Close F, the output of a view written to PATH (stdout stays open for
 * evp_cli_finish), after the view returned RC: 0, or 1 when the view
 * failed or the output could not be written, the latter said in one line
 * with the reason (a full disk).  A view reports its other failures
 * itself. */
int evp_cli_close_out(FILE *f, const char *path, int rc);

/*
 * The files a command writes, whole or not at all (outfile.h states the
 * rules: links followed, FIFOs, devices and directories refused but
 * /dev/null).  evp_cli_out_check refuses, before any work, an output OUT
 * that cannot be written or that is one of the N inputs IN (the same
 * file through any link): 0, or 2 after one line naming CMD.
 * evp_cli_out_open opens OUT ("-": standard output): the stream, or NULL
 * after one line.  evp_cli_out_close finishes it after the writer
 * returned RC: 0 puts the file in place; -EIO (a write error the writer
 * noticed) and EVP_CLI_REPORTED (a failure the writer has reported)
 * leave whatever was at OUT before.  Returns 0, or 1 after saying why in
 * one line (once).  Standard output is left to evp_cli_finish.
 */
#define EVP_CLI_REPORTED (-ECANCELED)
int evp_cli_out_check(const char *cmd, const char *out, const char *const *in,
                      size_t n);
FILE *evp_cli_out_open(struct evp_outfile *o, const char *out);
int evp_cli_out_close(struct evp_outfile *o, int rc);

/*
 * The reports (tree, summary, info, diff) print to standard output, or
 * with -o FILE into FILE, written whole or not at all as every output.
 * evp_cli_report_open checks OUT (NULL or "-": standard output) against
 * the N inputs IN and opens it: the stream, or NULL after one line with
 * *STATUS the exit status.  evp_cli_report_close finishes it after the
 * view returned RC (negative: it failed) and returns the exit status.
 */
FILE *evp_cli_report_open(const char *cmd, struct evp_outfile *o,
                          const char *out, const char *const *in, size_t n,
                          int *status);
int evp_cli_report_close(struct evp_outfile *o, int rc);

/*
 * The filters of the tree and the timeline exports (filter.c): --from S,
 * --to S (seconds from the trace's start), --func NAME, --thread ID.  Put
 * EVP_CLI_FILTER_LONGOPTS in the getopt_long table and hand every option
 * to evp_cli_filter_option (1 handled, 0 not one, -1 bad value, reported)
 * first; once the trace is open, evp_cli_filter_resolve checks them and
 * sets *STREAM to --thread's stream (a tid, else a stream number): 0, or
 * -1 after reporting.
 */
struct evp_cli_filter {
    struct evp_filter f;
    long thread; /* -1: none */
};

#define EVP_CLI_OPT_FROM 0x300
#define EVP_CLI_OPT_TO 0x301
#define EVP_CLI_OPT_FUNC 0x302
#define EVP_CLI_OPT_THREAD 0x303
/* clang-format off */
#define EVP_CLI_FILTER_INIT {{0, 0, NULL, 0, -1}, -1}
#define EVP_CLI_FILTER_LONGOPTS                                              \
    {"from", required_argument, NULL, EVP_CLI_OPT_FROM},                     \
    {"to", required_argument, NULL, EVP_CLI_OPT_TO},                         \
    {"func", required_argument, NULL, EVP_CLI_OPT_FUNC},                     \
    {"thread", required_argument, NULL, EVP_CLI_OPT_THREAD}
/* clang-format on */
int evp_cli_filter_option(int c, const char *arg, struct evp_cli_filter *o);
int evp_cli_filter_resolve(const char *cmd, struct evp_trace *t,
                           struct evp_cli_filter *o, long *stream);

/* One line on stderr when the output of CMD, about BYTES_PER_EVENT a
 * trace event, would pass 1 GB (EVALPROF_WARN_BYTES), saying how to
 * narrow it; nothing when FILTERED. */
void evp_cli_warn_size(const char *cmd, struct evp_trace *t,
                       double bytes_per_event, int filtered);

/* Standard output through a pager, as git does, when it is a terminal
 * and not NO_PAGER: $EVALPROF_PAGER, else $PAGER, else "less -FRX" (""
 * or "cat": none).  NULL: write to stdout.  evp_cli_pager_close waits
 * for the pager and returns RC, 0 when the reader quit early. */
FILE *evp_cli_pager_open(int no_pager);
int evp_cli_pager_close(FILE *p, int rc);

/* Parse a non-negative integer option value; -1 on error (printed). */
long evp_cli_parse_long(const char *opt, const char *val);

#endif
