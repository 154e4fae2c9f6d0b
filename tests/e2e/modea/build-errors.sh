#!/bin/sh
# cpython/build.sh on bad input: an unsupported version, a missing source
# tree, an archive that cannot be reached, a tree configured in place and
# a configure that fails are each reported in one line (exit status 3 when
# the source cannot be obtained, else 1).  Needs no CPython source.
#
#   build-errors.sh
HERE=$(cd "$(dirname "$0")" && pwd)
BUILDSH="$HERE/../../../cpython/build.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/evp-builderr-XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
failures=0

# expect STATUS WORDS ARGS...: exit STATUS and one error line (stderr,
# "evalprof-cpython: ...") containing WORDS; progress goes to stdout.
expect() {
    want=$1 words=$2
    shift 2
    "$@" > "$T/out" 2> "$T/err"
    rc=$?
    grep '^evalprof-cpython: ' "$T/err" > "$T/lines"
    if [ "$rc" = "$want" ] && [ "$(wc -l < "$T/lines")" = 1 ] && grep -q "$words" "$T/lines"; then
        echo "ok: $(cut -c1-150 "$T/lines")"
    else
        echo "FAIL: exit $rc (want $want), output:"
        cat "$T/out" "$T/err"
        failures=$((failures + 1))
    fi
}

expect 1 "3.12 is not supported" sh "$BUILDSH" --version 3.12 --build-dir "$T/b"
expect 1 "no such directory" sh "$BUILDSH" --src "$T/nowhere" --build-dir "$T/b"

printf 'Types: deb\nURIs: http://127.0.0.1:9/debian\nSuites: bookworm\nComponents: main\n' > "$T/debian.sources"
expect 3 "cannot obtain Debian source package python3.13" \
    env EVALPROF_DEBIAN_SOURCES="$T/debian.sources" sh "$BUILDSH" --version 3.13 --build-dir "$T/b"

mkdir -p "$T/tree/Include"
printf '#define PY_MAJOR_VERSION 3\n#define PY_MINOR_VERSION 13\n' > "$T/tree/Include/patchlevel.h"
touch "$T/tree/pyconfig.h"
expect 1 "configured in place" sh "$BUILDSH" --src "$T/tree" --build-dir "$T/b"
rm "$T/tree/pyconfig.h"
printf '#!/bin/sh\necho "configure: error: no C compiler here" >&2\nexit 1\n' > "$T/tree/configure"
chmod +x "$T/tree/configure"
expect 1 "configure failed (configure: error: no C compiler here" \
    sh "$BUILDSH" --src "$T/tree" --variant plain --build-dir "$T/b"
[ "$failures" = 0 ] || exit 1
