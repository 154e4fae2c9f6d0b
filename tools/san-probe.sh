#!/bin/sh
# Whether a C compiler can build and run a threaded program with a
# sanitizer's flags here: prints nothing when it can, else one line saying
# why not (tools/sanitize-tests.sh, cpython/build.sh's sanitized builds).
#
#   tools/san-probe.sh CC FLAGS...
cc=$1
shift
d=$(mktemp -d)
cat >"$d/p.c" <<'C'
#include <pthread.h>
#include <stdlib.h>
static void *run(void *p) { return p; }
int main(void)
{
    pthread_t t;
    char *m = malloc(16);
    pthread_create(&t, NULL, run, m);
    pthread_join(t, NULL);
    free(m);
    return 0;
}
C
if ! $cc "$@" -pthread -o "$d/p" "$d/p.c" >"$d/log" 2>&1; then
    echo "$cc $*: cannot build: $(head -n 1 "$d/log")"
elif ! "$d/p" >"$d/log" 2>&1; then
    echo "$cc $*: cannot run: $(grep -m 1 . "$d/log")"
fi
rm -rf "$d"
