/*
 * The unit tests' scratch directory: made under /tmp by the group set-up,
 * removed with its files by the group tear-down.
 *
 *   return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
 *
 * and scratch_path(buf, len, "name") for a file in it.
 */
#ifndef EVP_TEST_SCRATCH_H
#define EVP_TEST_SCRATCH_H

#include <stdio.h>
#include <stdlib.h>

static char tmpdir[64];

static inline void scratch_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

static int scratch_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/evp-unit-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int scratch_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif /* EVP_TEST_SCRATCH_H */
