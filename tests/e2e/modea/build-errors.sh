#!/bin/sh
# cpython/build.sh on bad input: an unsupported version, a missing source
# tree, an archive that cannot be reached, a tree configured in place and
# a configure that fails are each reported in one line (exit status 3 when
# the source cannot be obtained, else 1).  Then, on a tree whose configure
# and Makefile only record what they are asked: a build is profile-guided
# unless --no-pgo (configure given --enable-optimizations, make's target
# profile-opt, GCC told -fprofile-partial-training), switching either
# way configures again, and a changed source is trained again (CPython's
# profile-opt would reuse the old counts).  Needs no CPython source.
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

# A configure that writes a Makefile whose targets say which ran.
cat > "$T/tree/configure" <<'EOF'
#!/bin/sh
echo "$*" > configure.args
printf 'CC=\t\tgcc\nall:\n\techo all > target\n\tcp /bin/true python\n' > Makefile
printf 'profile-opt:\n\ttest ! -e profile-run-stamp\n\ttouch profile-run-stamp\n\techo "profile-opt task=$(PROFILE_TASK) use=$(PGO_PROF_USE_FLAG)" > target\n\tcp /bin/true python\n' >> Makefile
EOF
chmod +x "$T/tree/configure"
# built NAME ARGS...: build.sh --variant plain ARGS on the tree into $T/b;
# prints the target make ran, configure's arguments and the stamp's pgo=
built() {
    name=$1
    shift
    if sh "$BUILDSH" --src "$T/tree" --variant plain --build-dir "$T/b" "$@" > "$T/out" 2>&1; then
        d="$T/b/cpython/3.13"
        echo "$(cat "$d/plain/target") | $(cat "$d/plain/configure.args") | $(sed 's/.* pgo=/pgo=/' "$d/plain.stamp")"
    else
        echo "build.sh exited non-zero: $(tail -n 1 "$T/out")"
    fi
}
# check NAME GOT PATTERN
check() {
    case "$2" in
    $3) echo "ok: $1: $2" ;;
    *) echo "FAIL: $1: got '$2', want '$3'"; failures=$((failures + 1)) ;;
    esac
}
check "profile-guided by default" "$(built default)" \
    "profile-opt task= use=-fprofile-use -fprofile-correction -fprofile-partial-training | *--enable-optimizations* | pgo=yes"
check "--no-pgo configures again, without" "$(built no-pgo --no-pgo)" "all | --without-ensurepip | pgo=no"
check "and back" "$(built again)" "profile-opt task=* | *--enable-optimizations* | pgo=yes"
# A changed source in the same configured tree: trained again, not built
# against the counts of before (CPython's profile-run-stamp removed).
echo "/* changed */" >> "$T/tree/Include/patchlevel.h"
check "a changed source is trained again" "$(built changed)" "profile-opt task=* | *--enable-optimizations* | pgo=yes"
[ "$failures" = 0 ] || exit 1
