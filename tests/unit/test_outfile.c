/*
 * Unit tests of the output files (src/util/outfile.c): a file appears
 * whole or not at all, the previous file survives a failed write (a
 * writer's error, a file-size limit), a symbolic link is written
 * through, non-regular outputs are refused but /dev/null, permission
 * bits are kept, and no temporary file is left behind.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch.h"

#include "outfile.h"

static char err[512];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_content(const char *path, const char *want)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_string_equal(buf, want);
}

/* Files in the scratch directory whose name starts with '.': temporary
 * files left behind. */
static int leftovers(void)
{
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] == '.' && strcmp(e->d_name, ".") &&
             strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static int write_text(const char *path, const char *text, int rc)
{
    struct evp_outfile o;
    int r = evp_outfile_open(&o, path, err, sizeof err);
    if (r < 0)
        return r;
    fputs(text, o.f);
    return evp_outfile_close(&o, rc, err, sizeof err);
}

static void test_new_and_replaced(void **state)
{
    (void)state;
    char p[128];
    scratch_path(p, sizeof p, "out.txt");
    struct evp_outfile o;
    assert_int_equal(evp_outfile_open(&o, p, err, sizeof err), 0);
    fputs("first\n", o.f);
    /* Nothing at the output until it is complete. */
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(evp_outfile_close(&o, 0, err, sizeof err), 0);
    assert_content(p, "first\n");
    mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0666 & ~mask);

    /* Replaced: the permission bits stay the file's. */
    assert_int_equal(chmod(p, 0640), 0);
    assert_int_equal(write_text(p, "second\n", 0), 0);
    assert_content(p, "second\n");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(leftovers(), 0);
}

static void test_failure_keeps_previous(void **state)
{
    (void)state;
    char p[128];
    scratch_path(p, sizeof p, "keep.txt");
    put(p, "old\n");
    /* The writer failed: its half-written output is thrown away. */
    assert_int_equal(write_text(p, "half", -ENOMEM), -ENOMEM);
    assert_content(p, "old\n");
    assert_int_equal(leftovers(), 0);

    /* The disk fills up (a file-size limit): one line, nothing changed. */
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        struct evp_outfile o;
        if (evp_outfile_open(&o, p, err, sizeof err) < 0)
            _exit(3);
        for (int i = 0; i < 10000; i++)
            fputs("0123456789", o.f);
        int rc = evp_outfile_close(&o, 0, err, sizeof err);
        _exit(rc == -EFBIG && strstr(err, "write failed: File too large") ? 0
                                                                          : 4);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    assert_content(p, "old\n");
    assert_int_equal(leftovers(), 0);

    /* The same, the failing write one block larger than the stream's
     * buffer: written past the buffer, it fails inside the writer, and
     * the close finds nothing left to flush; its error is still told. */
    pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        static char block[256 * 1024];
        memset(block, 'x', sizeof block);
        struct evp_outfile o;
        if (evp_outfile_open(&o, p, err, sizeof err) < 0)
            _exit(3);
        fwrite(block, 1, sizeof block, o.f);
        int rc = evp_outfile_close(&o, 0, err, sizeof err);
        _exit(rc == -EFBIG && strstr(err, "write failed: File too large") ? 0
                                                                          : 4);
    }
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    assert_content(p, "old\n");
    assert_int_equal(leftovers(), 0);
}

static void test_symlink_written_through(void **state)
{
    (void)state;
    char target[128], link[128], rel[128];
    scratch_path(target, sizeof target, "target.txt");
    scratch_path(link, sizeof link, "link.txt");
    scratch_path(rel, sizeof rel, "rel.txt");
    put(target, "old\n");
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(symlink("link.txt", rel), 0); /* a chain, relative */
    assert_int_equal(write_text(rel, "new\n", 0), 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(rel, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_content(target, "new\n");

    /* A dangling link: its target is created, as '>' would. */
    char dangling[128], made[128];
    scratch_path(dangling, sizeof dangling, "dangling.txt");
    scratch_path(made, sizeof made, "made.txt");
    assert_int_equal(symlink("made.txt", dangling), 0);
    assert_int_equal(write_text(dangling, "made\n", 0), 0);
    assert_content(made, "made\n");

    /* A loop of links is an error, not a hang. */
    char loop[128];
    scratch_path(loop, sizeof loop, "loop.txt");
    assert_int_equal(symlink("loop.txt", loop), 0);
    assert_int_equal(write_text(loop, "x", 0), -ELOOP);
    assert_int_equal(leftovers(), 0);
}

static void test_non_regular_refused(void **state)
{
    (void)state;
    char fifo[128];
    scratch_path(fifo, sizeof fifo, "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* Refused before anything opens it (opening would block). */
    assert_int_equal(evp_outfile_check(fifo, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "not a regular file (a FIFO)"));
    struct evp_outfile o;
    assert_int_equal(evp_outfile_open(&o, fifo, err, sizeof err), -EINVAL);
    assert_int_equal(evp_outfile_open(&o, tmpdir, err, sizeof err), -EISDIR);
    assert_non_null(strstr(err, "a directory"));
    char missing[160];
    scratch_path(missing, sizeof missing, "no-such-dir/out.txt");
    assert_int_equal(evp_outfile_check(missing, err, sizeof err), -ENOENT);
    assert_int_equal(write_text(missing, "x", 0), -ENOENT);

    /* /dev/null is written in place, and stays the null device. */
    struct stat st;
    if (stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode)) {
        assert_int_equal(evp_outfile_check("/dev/null", err, sizeof err), 0);
        assert_int_equal(write_text("/dev/null", "gone", 0), 0);
        assert_int_equal(stat("/dev/null", &st), 0);
        assert_true(S_ISCHR(st.st_mode));
    }
    assert_int_equal(leftovers(), 0);
}

static void test_same_file(void **state)
{
    (void)state;
    char a[128], hard[128], soft[128], other[128];
    scratch_path(a, sizeof a, "a.evp");
    scratch_path(hard, sizeof hard, "hard.evp");
    scratch_path(soft, sizeof soft, "soft.evp");
    scratch_path(other, sizeof other, "other.evp");
    put(a, "a");
    put(other, "b");
    assert_int_equal(link(a, hard), 0);
    assert_int_equal(symlink("a.evp", soft), 0);
    assert_true(evp_same_file(a, a));
    assert_true(evp_same_file(a, hard));
    assert_true(evp_same_file(soft, a));
    assert_false(evp_same_file(a, other));
    assert_false(evp_same_file(a, "-"));
    assert_false(evp_same_file("-", "-"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_and_replaced),
        cmocka_unit_test(test_failure_keeps_previous),
        cmocka_unit_test(test_symlink_written_through),
        cmocka_unit_test(test_non_regular_refused),
        cmocka_unit_test(test_same_file),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
