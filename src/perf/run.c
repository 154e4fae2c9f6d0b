/*
 * Running programs for `evalprof perf`: perf itself, and the profiled
 * command's interpreter when its version decides whether `-X perf` is
 * added.  posix_spawn with optional redirections; the exit status comes
 * back as 0-255, or 128+signal.
 *
 * evp_perf_record is the whole recording: a preflight `perf record -- true`
 * (so that a refusal is explained before the command runs), then per
 * repeat `perf record` of the command and `perf script` of its data,
 * the texts concatenated into one file; with O->ops, a second `perf
 * script` of each run's data keeps every sample's leaf as symbol+offset,
 * for `evalprof perf --ops`.
 *
 * evp_perf_explain turns perf's own error text into the one line evalprof
 * prints: perf missing (Debian's wrapper without a matching kernel
 * package), events not permitted (perf_event_paranoid), no such event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "outfile.h"
#include "views.h"
#include "perf.h"

extern char **environ;

int evp_perf_which(const char *name, char *buf, size_t len)
{
    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0)
            return -errno;
        snprintf(buf, len, "%s", name);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        if (n) {
            snprintf(buf, len, "%.*s/%s", (int)n, path, name);
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
                access(buf, X_OK) == 0)
                return 0;
        }
        path += n + (c ? 1 : 0);
    }
    return -ENOENT;
}

int evp_perf_spawn(char *const argv[], const char *out_path,
                   const char *err_path, char *const extra_env[])
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_path)
        posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err_path)
        posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char **env = environ;
    char **own = NULL;
    if (extra_env && extra_env[0]) {
        size_t n = 0, m = 0;
        while (environ[n])
            n++;
        while (extra_env[m])
            m++;
        own = malloc((n + m + 1) * sizeof *own);
        if (!own) {
            posix_spawn_file_actions_destroy(&fa);
            return -ENOMEM;
        }
        size_t k = 0;
        for (size_t i = 0; i < m; i++)
            own[k++] = extra_env[i];
        for (size_t i = 0; i < n; i++) {
            const char *eqp = strchr(environ[i], '=');
            size_t kl = eqp ? (size_t)(eqp - environ[i]) : strlen(environ[i]);
            int dup = 0;
            for (size_t j = 0; j < m; j++)
                if (strncmp(extra_env[j], environ[i], kl) == 0 &&
                    extra_env[j][kl] == '=')
                    dup = 1;
            if (!dup)
                own[k++] = environ[i];
        }
        own[k] = NULL;
        env = own;
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(own);
    if (rc)
        return -rc;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

int evp_perf_python_version(const char *exe, int *major, int *minor)
{
    char tmpl[] = "/tmp/evalprof-pyver-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return -errno;
    close(fd);
    char *argv[] = {(char *)exe, "-c",
                    "import sys; print(sys.implementation.name, "
                    "sys.version_info[0], sys.version_info[1])",
                    NULL};
    int rc = evp_perf_spawn(argv, tmpl, "/dev/null", NULL);
    int ok = -EINVAL;
    if (rc == 0) {
        FILE *f = fopen(tmpl, "r");
        char impl[32];
        if (f && fscanf(f, "%31s %d %d", impl, major, minor) == 3 &&
            strcmp(impl, "cpython") == 0)
            ok = 0;
        if (f)
            fclose(f);
    }
    unlink(tmpl);
    return ok;
}

static int has(const char *s, const char *t)
{
    return s && strstr(s, t) != NULL;
}

void evp_perf_explain(const char *text, char *msg, size_t len)
{
    int paranoid = -100;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    if (f) {
        if (fscanf(f, "%d", &paranoid) != 1)
            paranoid = -100;
        fclose(f);
    }
    if (has(text, "not found for kernel") || has(text, "linux-perf"))
        snprintf(msg, len,
                 "perf does not match this kernel: install the matching "
                 "linux-perf package (Debian: apt-get install linux-perf)");
    else if (has(text, "perf_event_paranoid") || has(text, "Permission") ||
             has(text, "permission") || has(text, "not permitted") ||
             has(text, "Access to performance monitoring"))
        snprintf(msg, len,
                 "perf is not permitted to record here "
                 "(kernel.perf_event_paranoid=%d): run as root, or "
                 "`sysctl -w kernel.perf_event_paranoid=1`",
                 paranoid);
    else if (has(text, "not supported") || has(text, "event syntax error") ||
             has(text, "unknown tracepoint"))
        snprintf(msg, len,
                 "perf cannot record this event here (virtual machines often "
                 "lack hardware counters): try -e cpu-clock");
    else if (has(text, "Operation not permitted") || has(text, "seccomp"))
        snprintf(msg, len,
                 "perf_event_open is blocked (a container or seccomp "
                 "profile): run on the host or allow perf_event_open");
    else {
        /* First line of perf's own message. */
        const char *s = text ? text : "";
        while (*s == '\n' || *s == ' ')
            s++;
        size_t n = strcspn(s, "\n");
        if (n > 200)
            n = 200;
        snprintf(msg, len, "perf failed: %.*s", (int)n, n ? s : "no message");
    }
}

long evp_perf_max_stack(void)
{
    long v = -1;
    FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int evp_perf_is_python(const char *exe)
{
    const char *b = base_name(exe);
    if (strncmp(b, "python", 6) != 0)
        return 0;
    for (b += 6; *b; b++)
        if (!(*b == '.' || (*b >= '0' && *b <= '9')))
            return 0;
    return 1;
}

/* "WHAT: reason" into MSG for a perf run that ended with RC, its stderr
 * in the file ERR. */
static void explain_failure(int rc, const char *err, const char *what,
                            char *msg, size_t len)
{
    char *text = NULL, why[512];
    size_t n;
    if (evp_flame_slurp(err, &text, &n))
        text = NULL;
    evp_perf_explain(rc < 0 ? strerror(-rc) : text, why, sizeof why);
    snprintf(msg, len, "%s: %s", what, why);
    free(text);
}

/* perf record's command line: its options, then the command, with -X perf
 * added for CPython 3.12+ (which then shows Python frames to perf). */
static char **record_argv(const struct evp_perf_record_opts *o,
                          const char *data, const char *freq, int *xperf)
{
    const char *const fixed[] = {o->perf,
                                 "record",
                                 "-q",
                                 "-e",
                                 o->event,
                                 "-F",
                                 freq,
                                 "--call-graph",
                                 o->callgraph,
                                 "-k",
                                 "CLOCK_MONOTONIC",
                                 "-o",
                                 data,
                                 "--"};
    size_t nf = sizeof fixed / sizeof *fixed;
    char **v = calloc(nf + (size_t)o->ncmd + 3, sizeof *v);
    if (!v)
        return NULL;
    size_t n = 0;
    for (; n < nf; n++)
        v[n] = (char *)fixed[n];
    v[n++] = o->cmd[0];
    int major, minor;
    *xperf = 0;
    if (o->want_xperf && evp_perf_is_python(o->cmd[0]) &&
        evp_perf_python_version(o->cmd[0], &major, &minor) == 0 &&
        (major > 3 || (major == 3 && minor >= 12))) {
        v[n++] = "-X";
        v[n++] = "perf";
        *xperf = 1;
    }
    for (int i = 1; i < o->ncmd; i++)
        v[n++] = o->cmd[i];
    return v;
}

/* Append the file PATH (a perf script part) to OUT, ended by a blank line
 * so that its last sample never runs into the next part's first. */
static void append_part(FILE *out, const char *path)
{
    char *part;
    size_t plen;
    if (evp_flame_slurp(path, &part, &plen) == 0) {
        fwrite(part, 1, plen, out);
        if (plen && part[plen - 1] != '\n')
            fputc('\n', out);
        fputc('\n', out);
        free(part);
    }
}

int evp_perf_record(const struct evp_perf_record_opts *o, int *added_xperf,
                    char *msg, size_t len)
{
    char data[4096], err[4096], part[4096];
    snprintf(err, sizeof err, "%s/perf.err", o->dir);
    /* Preflight: can perf record here at all? */
    snprintf(data, sizeof data, "%s/preflight.data", o->dir);
    char *pre[] = {(char *)o->perf,  "record", "-q", "-e",
                   (char *)o->event, "-o",     data, "--",
                   "true",           NULL};
    int rc = evp_perf_spawn(pre, "/dev/null", err, NULL);
    unlink(data);
    if (rc != 0) {
        explain_failure(rc, err, "perf", msg, len);
        return -1;
    }
    snprintf(data, sizeof data, "%s/perf.data", o->dir);
    snprintf(part, sizeof part, "%s/perf.script.part", o->dir);
    char freq[32], maxs[32];
    snprintf(freq, sizeof freq, "%ld", o->freq);
    /* perf script cuts stacks at 127 frames unless told otherwise,
     * whatever the kernel recorded. */
    long ms = evp_perf_max_stack();
    snprintf(maxs, sizeof maxs, "--max-stack=%ld", ms > 127 ? ms : 127);
    char *scr[] = {(char *)o->perf,
                   "script",
                   "-i",
                   data,
                   "-F",
                   "comm,pid,tid,time,period,event,ip,sym,symoff,dso",
                   "--ns",
                   maxs,
                   NULL};
    char *leaves[] = {(char *)o->perf,     "script", "-i", data, "-F",
                      "ip,sym,symoff,dso", "-G",     NULL};
    char **argv = record_argv(o, data, freq, added_xperf);
    /* the script is written whole or not at all, as every output */
    struct evp_outfile so = {0}, lo = {0};
    int status = -1, last = 0, open = -1, lopen = -1;
    if (!argv) {
        snprintf(msg, len, "perf: %s", strerror(ENOMEM));
        goto out;
    }
    if ((open = evp_outfile_open(&so, o->script, msg, len)) < 0)
        goto out;
    if (o->ops && (lopen = evp_outfile_open(&lo, o->ops, msg, len)) < 0)
        goto out;
    FILE *all = so.f;
    for (unsigned r = 0; r < o->repeat; r++) {
        last = evp_perf_spawn(argv, NULL, NULL, NULL);
        if (last < 0) {
            snprintf(msg, len, "perf: %s", strerror(-last));
            goto out;
        }
        struct stat sb;
        if (stat(data, &sb) != 0 || sb.st_size == 0) {
            snprintf(msg, len, "perf record wrote no data (exit status %d)",
                     last);
            goto out;
        }
        int s = evp_perf_spawn(scr, part, err, NULL);
        if (s != 0) {
            explain_failure(s, err, "perf script", msg, len);
            goto out;
        }
        append_part(all, part);
        unlink(part);
        if (o->ops) {
            if ((s = evp_perf_spawn(leaves, part, err, NULL)) != 0) {
                explain_failure(s, err, "perf script", msg, len);
                goto out;
            }
            append_part(lo.f, part);
            unlink(part);
        }
    }
    status = last;
out:
    free(argv);
    struct evp_outfile *outs[] = {open == 0 ? &so : NULL,
                                  lopen == 0 ? &lo : NULL};
    for (size_t i = 0; i < 2; i++) {
        char why[1024];
        if (outs[i] &&
            evp_outfile_close(outs[i], status < 0 ? -ECANCELED : 0, why,
                              sizeof why) < 0 &&
            status >= 0) {
            snprintf(msg, len, "%s", why);
            status = -1;
        }
    }
    return status;
}
