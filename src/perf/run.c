/*
 * Running programs for `evalprof perf`: perf itself, and the profiled
 * command's interpreter when its version decides whether `-X perf` is
 * added.  posix_spawn with optional redirections; the exit status comes
 * back as 0-255, or 128+signal.
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
