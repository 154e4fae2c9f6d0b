/*
 * `evalprof dump PID`: every thread's Python stack now, read from outside
 * the running process (evalprof/attach.h), as text or --json.
 *
 *   evalprof dump [--json] [--no-stop] [--max-depth N] [-o FILE] PID
 *
 * By default every thread is stopped for the moment of the read (ptrace:
 * a consistent snapshot, and each thread's program counter, which tells
 * the eval loop from a C call); --no-stop reads them as they run.  A
 * process that another tracer holds cannot be stopped: it is read
 * running, and a line on stderr says so.  Each thread is shown with its
 * kernel id, whether it is the main thread, its state (running Python
 * code, in a C call, waiting for the GIL, blocked in a named system call
 * with the GIL released, ...) and its frames, innermost first, with the
 * function, the file and line, and the instruction being executed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "esc.h"
#include "evalprof/attach.h"
#include "evalprof/format.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* PID as a process id: >0, or -1 after one line. */
long evp_cli_parse_pid(const char *cmd, const char *arg)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v <= 0 || v > 0x7fffffffL) {
        evp_cli_error("%s: %s is not a process id", cmd, arg);
        return -1;
    }
    return v;
}

static const char *state_words(const struct evp_tthread *th, char *buf,
                               size_t n)
{
    const char *s = evp_tthread_state_name(th->flags);
    if ((th->flags & EVP_SAMPLE_SYSCALL) && th->syscall >= 0) {
        const char *name = evp_syscall_name(th->syscall);
        if (name)
            snprintf(buf, n, "blocked in %s(), GIL released", name);
        else
            snprintf(buf, n, "blocked in system call %ld, GIL released",
                     th->syscall);
        return buf;
    }
    return s;
}

static void print_text(FILE *out, const struct evp_target *t,
                       const struct evp_tsnapshot *s, int stopped, double ms)
{
    const struct evp_target_info *in = evp_target_info(t);
    fprintf(out, "Process %d: ", (int)in->pid);
    evp_esc_term(out, in->cmdline, strlen(in->cmdline), 0);
    fputc('\n', out);
    fprintf(out, "CPython %s%s, %zu thread%s, ", in->version,
            in->instrumented ? " (evalprof-instrumented)" : "", s->nthreads,
            s->nthreads == 1 ? "" : "s");
    if (stopped)
        fprintf(out, "stopped for %.1f ms to read them\n", ms);
    else
        fprintf(out, "read while running (not stopped)\n");
    for (size_t i = 0; i < s->nthreads; i++) {
        const struct evp_tthread *th = &s->threads[i];
        char buf[128];
        fprintf(out, "\nThread %d (0x%llx)%s%s: %s\n", (int)th->tid,
                (unsigned long long)th->ident, th->main ? ", main thread" : "",
                th->interp ? ", a subinterpreter's" : "",
                state_words(th, buf, sizeof buf));
        if (th->nframes == 0)
            fprintf(out, "    (no Python frame)\n");
        for (unsigned k = 0; k < th->nframes; k++) {
            const struct evp_tframe *f = &th->frames[k];
            fputs("    ", out);
            size_t w = evp_esc_term(out, f->name, strlen(f->name), 60);
            fputs(" (", out);
            w += 2 + evp_esc_term(out, f->file, strlen(f->file), 0);
            if (f->line)
                w += (size_t)fprintf(out, ":%u", f->line);
            fputc(')', out);
            w++;
            const char *op = evp_target_opname(t, f->opcode);
            if (op || f->opcode >= 0) {
                for (size_t pad = w; pad < 56; pad++)
                    fputc(' ', out);
                if (op)
                    fprintf(out, "  %s", op);
                else
                    fprintf(out, "  opcode %d", f->opcode);
                if (f->unit >= 0)
                    fprintf(out, " @%d", 2 * f->unit);
            }
            fputc('\n', out);
        }
        if (th->flags & EVP_SAMPLE_TRUNCATED)
            fprintf(out, "    ... (deeper frames not shown: --max-depth)\n");
    }
}

static void json_flag(FILE *out, const char *key, int v, int *first)
{
    fprintf(out, "%s\"%s\": %s", *first ? "" : ", ", key, v ? "true" : "false");
    *first = 0;
}

static void print_json(FILE *out, const struct evp_target *t,
                       const struct evp_tsnapshot *s, int stopped)
{
    const struct evp_target_info *in = evp_target_info(t);
    fprintf(out, "{\"pid\": %d, \"python\": ", (int)in->pid);
    evp_json_string(out, in->version);
    fprintf(out,
            ", \"instrumented\": %s, \"stopped\": %s, \"opcode_names\": "
            "%s, \"cmdline\": ",
            in->instrumented ? "true" : "false", stopped ? "true" : "false",
            evp_target_opname(t, 1) || evp_target_opname(t, 9) ? "true"
                                                               : "false");
    evp_json_string(out, in->cmdline);
    fputs(", \"threads\": [", out);
    for (size_t i = 0; i < s->nthreads; i++) {
        const struct evp_tthread *th = &s->threads[i];
        char buf[128];
        fprintf(out,
                "%s\n  {\"tid\": %d, \"ident\": %llu, \"main\": %s, "
                "\"interpreter\": %d, \"state\": ",
                i ? "," : "", (int)th->tid, (unsigned long long)th->ident,
                th->main ? "true" : "false", th->interp);
        evp_json_string(out, state_words(th, buf, sizeof buf));
        fputs(", ", out);
        int first = 1;
        uint32_t f = th->flags;
        json_flag(out, "gil", !(f & EVP_SAMPLE_NO_GIL), &first);
        json_flag(out, "waiting_for_gil", f & EVP_SAMPLE_GIL_WAIT, &first);
        if (!(f & EVP_SAMPLE_NO_PC)) {
            json_flag(out, "in_eval_loop", f & EVP_SAMPLE_IN_EVAL, &first);
            json_flag(out, "in_c_call", f & EVP_SAMPLE_C_CALL, &first);
        }
        json_flag(out, "truncated", f & EVP_SAMPLE_TRUNCATED, &first);
        fputs(", \"syscall\": ", out);
        if (th->syscall >= 0 && (f & EVP_SAMPLE_NO_GIL)) {
            const char *name = evp_syscall_name(th->syscall);
            if (name)
                evp_json_string(out, name);
            else
                fprintf(out, "%ld", th->syscall);
        } else {
            fputs("null", out);
        }
        fputs(", \"frames\": [", out);
        for (unsigned k = 0; k < th->nframes; k++) {
            const struct evp_tframe *fr = &th->frames[k];
            fprintf(out, "%s\n    {\"function\": ", k ? "," : "");
            evp_json_string(out, fr->name);
            fputs(", \"file\": ", out);
            evp_json_string(out, fr->file);
            fprintf(out, ", \"line\": %u, \"firstline\": %u", fr->line,
                    fr->firstline);
            if (fr->unit >= 0)
                fprintf(out, ", \"offset\": %d", 2 * fr->unit);
            else
                fputs(", \"offset\": null", out);
            if (fr->opcode >= 0) {
                const char *op = evp_target_opname(t, fr->opcode);
                fprintf(out, ", \"opcode\": %d, \"instruction\": ", fr->opcode);
                if (op)
                    evp_json_string(out, op);
                else
                    fputs("null", out);
            } else {
                fputs(", \"opcode\": null, \"instruction\": null", out);
            }
            fputc('}', out);
        }
        fputs("]}", out);
    }
    fputs("\n]}\n", out);
}

int cmd_dump(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"no-stop", no_argument, NULL, 'S'},
        {"max-depth", required_argument, NULL, 'd'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int json = 0, nostop = 0, c;
    long depth = 512;
    const char *out = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'S':
            nostop = 1;
            break;
        case 'd':
            depth = evp_cli_parse_long("max-depth", optarg);
            if (depth <= 0 || depth > 4096) {
                if (depth == 0 || depth > 4096)
                    evp_cli_error("dump: --max-depth %s: expected a whole "
                                  "number from 1 to 4096",
                                  optarg);
                return 2;
            }
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            return evp_cli_help("dump");
        default:
            evp_cli_usage(stderr, "dump");
            return 2;
        }
    }
    if (evp_cli_operands("dump", argc - optind, 1, "one PID") < 0)
        return 2;
    long pid = evp_cli_parse_pid("dump", argv[optind]);
    if (pid < 0)
        return 2;
    char why[1024];
    struct evp_target *t;
    int rc = evp_target_open((pid_t)pid, &t, why, sizeof why);
    if (rc < 0) {
        evp_cli_error("dump: %s", why);
        return 1;
    }
    int stopped = 0;
    double t0 = now_ms(), ms = 0;
    if (!nostop) {
        rc = evp_target_freeze(t, why, sizeof why);
        if (rc == 0) {
            stopped = 1;
        } else if (rc == -ESRCH) {
            evp_cli_error("dump: %s", why);
            evp_target_close(t);
            return 1;
        } else {
            evp_cli_warn("%s; reading it without stopping it", why);
        }
    }
    struct evp_tsnapshot s = EVP_TSNAPSHOT_INIT;
    rc = evp_target_snapshot(t, (unsigned)depth, &s, why, sizeof why);
    if (stopped) {
        evp_target_thaw(t);
        ms = now_ms() - t0;
    }
    if (rc < 0) {
        evp_cli_error("dump: %s", why);
        evp_tsnapshot_free(&s);
        evp_target_close(t);
        return 1;
    }
    int status = 0;
    struct evp_outfile of;
    FILE *f = evp_cli_report_open("dump", &of, out, NULL, 0, &status);
    if (f) {
        if (json)
            print_json(f, t, &s, stopped);
        else
            print_text(f, t, &s, stopped, ms);
        status = evp_cli_report_close(&of, 0);
    }
    evp_tsnapshot_free(&s);
    evp_target_close(t);
    return evp_cli_finish(status);
}
