#!/bin/sh
# Build evalprof's instrumented CPython (mode A) and a plain baseline from
# the same source (`make cpython`, tests/prepare.d/cpython.sh, the
# benchmarks).
#
#   sh cpython/build.sh [--version X.Y]... [--src DIR] [--variant V]
#                       [--build-dir DIR] [--jobs N] [--no-pgo]
#
#   --version X.Y   3.13 or 3.11 (default: both; with --src, the tree's)
#   --src DIR       a CPython source tree to use instead of Debian's source
#                   package (python3.13 from trixie, python3.11 from
#                   bookworm, fetched with apt-get source)
#   --variant V     evalprof, plain or both (default: both); or
#                   evalprof-asan, evalprof-tsan: the evalprof build with
#                   evalprof's own objects (its hooks' Python/evalprof.c
#                   and the recorder, Python/evalprof/) rebuilt under
#                   AddressSanitizer + UndefinedBehaviorSanitizer or
#                   ThreadSanitizer and the interpreter linked with the
#                   sanitizer's runtime; CPython's own objects are not
#                   instrumented (the sanitizer stress tests,
#                   tests/e2e/modea/stress.sh)
#   --build-dir D   the project's build directory (default: build)
#   --jobs N        parallel make jobs (default: number of CPUs)
#   --no-pgo        build without profile-guided optimization (quicker:
#                   one compile instead of two and a training run)
#
# Profile-guided (the default): evalprof and plain are configured with
# --enable-optimizations and built by CPython's `make profile-opt`, as
# distributions build CPython.  plain trains on CPython's own task (-m
# test --pgo); evalprof on cpython/pgo-train.py, the same task run
# untraced and sampled at once, so that each copy of the eval function
# the two runs execute is laid out by its own profile (README, "Sampled
# mode": without it, where the sampled copy's hot code fell in the
# instruction cache was a draw).  The traced copy is compiled as
# without feedback (GCC's -fprofile-partial-training).
#
# EVALPROF_DEBIAN_SOURCES names another deb822 file to take the Debian
# archive entry from (tools/debian-entry.sh; tests use it to simulate an
# unreachable archive).
#
# Layout, per version, under BUILD/cpython/X.Y/:
#   src/            the pristine source (never configured in place)
#   src-evalprof/   the same source with evalprof's hooks applied
#   evalprof/       out-of-tree build of src-evalprof: evalprof/python
#   evalprof-asan/, evalprof-tsan/
#                   copies of evalprof/ with evalprof's objects sanitized
#   plain/          out-of-tree build of src: plain/python
#   *.stamp         what each build was made from; a build whose source,
#                   hooks and configure options are unchanged is reused
#
# Errors (no source package, a tree evalprof does not support, a failed
# configure or make) are reported in one line naming the log to read.
# Exit status: 0 built (or up to date), 3 the source could not be
# obtained (or, for a sanitized variant, the compiler cannot build and
# run a threaded program under that sanitizer here), 1 anything else.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
versions=""
src=""
variant=both
build=build
jobs=$(nproc 2>/dev/null || echo 2)
configure_opts="--without-ensurepip"
pgo=yes

die() {
    echo "evalprof-cpython: $*" >&2
    exit 1
}

# The source could not be obtained (exit status 3: tests skip, not fail).
unavailable() {
    echo "evalprof-cpython: $*" >&2
    exit 3
}

while [ $# -gt 0 ]; do
    case "$1" in
    --version) [ $# -ge 2 ] || die "--version needs X.Y"; versions="$versions $2"; shift 2 ;;
    --src) [ $# -ge 2 ] || die "--src needs a directory"; src=$2; shift 2 ;;
    --variant) [ $# -ge 2 ] || die "--variant needs evalprof, plain or both"; variant=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a directory"; build=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || die "--jobs needs a number"; jobs=$2; shift 2 ;;
    --no-pgo) pgo=no; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
done
case "$variant" in
evalprof|plain|both) ;;
evalprof-asan) san_flags="-fsanitize=address,undefined -fno-sanitize-recover=all" ;;
evalprof-tsan) san_flags="-fsanitize=thread" ;;
*) die "--variant must be evalprof, plain, both, evalprof-asan or evalprof-tsan" ;;
esac
case "$build" in /*) ;; *) build="$top/$build" ;; esac
if [ -n "$src" ]; then
    [ -d "$src" ] || die "--src $src: no such directory"
    src=$(cd "$src" && pwd)
fi

# configure and make write to /dev/null; on a shared machine a tool that
# "atomically" renames its output over /dev/null replaces the device.
[ -c /dev/null ] || die "/dev/null is not the null device (it was replaced by a file); restore it with: rm -f /dev/null; mknod -m 666 /dev/null c 1 3"

python=$(command -v python3) || die "python3 is needed to apply the hooks (tools/bootstrap.sh build)"
# CPython's build dependencies (Debian packages; a no-op once installed).
sh "$top/tools/bootstrap.sh" cpython >&2 ||
    echo "evalprof-cpython: some CPython build dependencies are missing: optional modules may not build" >&2

# ---- sources ----------------------------------------------------------------

# The machine's Debian archive entry (debian_entry), read from its apt
# configuration.
. "$top/tools/debian-entry.sh"

# Fetch Debian's source package for VERSION into $dl; prints the tarball.
fetch_debian() {
    ver=$1
    pkg="python$ver"
    apt="$build/cpython/apt"
    dl="$build/cpython/downloads"
    mkdir -p "$apt/sources" "$apt/lists/partial" "$apt/cache" "$dl" || die "cannot create $apt"
    tarball=$(ls "$dl/${pkg}_"*.orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -n 1)
    if [ -n "$tarball" ]; then
        echo "$tarball"
        return 0
    fi
    entry=$(debian_entry deb-src "bookworm trixie")
    [ -n "$entry" ] || unavailable "no Debian archive entry in /etc/apt to fetch source package $pkg from (use --src DIR)"
    printf '%s\n' "$entry" > "$apt/sources/evalprof-src.sources"
    : > "$apt/empty.list"
    set -- -o Dir::Etc::sourcelist="$apt/empty.list" -o Dir::Etc::sourceparts="$apt/sources" \
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" \
        -o APT::Sandbox::User="$(id -un)" -q
    # apt-get update exits 0 when an archive cannot be reached: read its log.
    if ! apt-get "$@" update >"$apt/update.log" 2>&1 ||
       grep -qE '^(E:|W: Failed to fetch)' "$apt/update.log"; then
        unavailable "cannot obtain Debian source package $pkg: apt-get update failed ($(grep -E '^(E|W):' "$apt/update.log" | head -n 1 | cut -c1-160); log: $apt/update.log)"
    fi
    if ! (cd "$dl" && apt-get "$@" source --download-only --tar-only "$pkg") >"$apt/source-$ver.log" 2>&1; then
        unavailable "cannot obtain Debian source package $pkg ($(grep -E '^E:' "$apt/source-$ver.log" | head -n 1 | cut -c1-160); log: $apt/source-$ver.log)"
    fi
    tarball=$(ls "$dl/${pkg}_"*.orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -n 1)
    [ -n "$tarball" ] || unavailable "cannot obtain Debian source package $pkg: no upstream tarball downloaded (log: $apt/source-$ver.log)"
    echo "$tarball"
}

tree_version() {
    awk '/#define PY_MAJOR_VERSION/ { ma = $3 } /#define PY_MINOR_VERSION/ { mi = $3 }
         END { if (ma != "" && mi != "") print ma "." mi }' "$1/Include/patchlevel.h" 2>/dev/null
}

# A content hash of the source tree DIR (git metadata left out).
tree_fingerprint() {
    (cd "$1" && find . -name .git -prune -o -type f -print | LC_ALL=C sort |
        tr '\n' '\0' | xargs -0 sha256sum) | sha256sum | cut -c1-64
}

# Make $out/src the pristine source of version $ver; sets src_fp.
prepare_source() {
    if [ -n "$src" ]; then
        [ -d "$src" ] || die "--src $src: no such directory"
        if [ -e "$src/pyconfig.h" ] || [ -e "$src/Makefile" ]; then
            die "--src $src has been configured in place; evalprof builds out of tree: run 'make distclean' there or use a clean checkout"
        fi
        src_fp=$(tree_fingerprint "$src") || die "cannot read $src"
        origin="$src"
    else
        tarball=$(fetch_debian "$ver") || exit $?
        src_fp=$(sha256sum "$tarball" | cut -c1-64)
        origin="$tarball"
    fi
    if [ "$(cat "$out/src.stamp" 2>/dev/null)" = "$src_fp" ] && [ -d "$out/src/Include" ]; then
        return
    fi
    echo "evalprof-cpython: $ver: unpacking $origin"
    rm -rf "$out/src" "$out/src.stamp"
    mkdir -p "$out/src"
    if [ -n "$src" ]; then
        (cd "$src" && tar --exclude=.git -cf - .) | (cd "$out/src" && tar -xf -) ||
            die "cannot copy $src to $out/src"
    else
        tar -xf "$tarball" -C "$out/src" --strip-components=1 ||
            die "cannot unpack $tarball"
    fi
    echo "$src_fp" > "$out/src.stamp"
}

# ---- builds -------------------------------------------------------------------

# build_variant NAME SRCDIR STAMP [TASK]: configure and make $out/NAME
# from SRCDIR; profile-guided unless --no-pgo, trained by the script TASK
# (CPython's own task when there is none).
build_variant() {
    name=$1 srcdir=$2 want=$3 task=${4:-}
    dir="$out/$name"
    if [ "$(cat "$out/$name.stamp" 2>/dev/null)" = "$want" ] && [ -x "$dir/python" ]; then
        echo "evalprof-cpython: $ver $name: up to date ($dir/python)"
        return 0
    fi
    rm -f "$out/$name.stamp"
    opts=$configure_opts
    [ "$pgo" = no ] || opts="$opts --enable-optimizations"
    confsig="$opts"
    if [ "$(cat "$dir/.evalprof-configure" 2>/dev/null)" != "$confsig" ] || [ ! -f "$dir/Makefile" ]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        echo "evalprof-cpython: $ver $name: configure"
        # shellcheck disable=SC2086
        if ! (cd "$dir" && "$srcdir/configure" $opts) >"$out/$name-configure.log" 2>&1; then
            die "$ver $name: configure failed ($(tail -n 1 "$out/$name-configure.log" | cut -c1-160); log: $out/$name-configure.log)"
        fi
        echo "$confsig" > "$dir/.evalprof-configure"
    fi
    # profile-opt: build with -fprofile-generate, run the task, build
    # again with the counts.  With GCC, a function the task never ran (the
    # traced copy of the eval function) is compiled as without feedback,
    # not for size as GCC's default would.
    # CPython's profile-opt skips the training once its profile-run-stamp
    # exists, and would compile changed sources (new hooks) against the
    # old counts: each build trains again, from a clean tree.
    set --
    if [ "$pgo" != no ]; then
        rm -f "$dir/profile-run-stamp" "$dir/profile-gen-stamp" "$dir/profile-clean-stamp"
        set -- profile-opt
        [ -z "$task" ] || set -- "$@" PROFILE_TASK="$task"
        # shellcheck disable=SC2046
        if $(make_cc "$dir") --version 2>/dev/null | grep -q 'Free Software Foundation'; then
            set -- "$@" PGO_PROF_USE_FLAG="-fprofile-use -fprofile-correction -fprofile-partial-training"
        fi
    fi
    echo "evalprof-cpython: $ver $name: make -j$jobs${1:+ $1} (log: $out/$name-make.log)"
    start=$(date +%s)
    if ! make -C "$dir" -j"$jobs" "$@" >"$out/$name-make.log" 2>&1; then
        err=$(grep -E 'error:|Error [0-9]' "$out/$name-make.log" | head -n 1 | cut -c1-200)
        die "$ver $name: build failed (${err:-see log}; log: $out/$name-make.log)"
    fi
    [ -x "$dir/python" ] || die "$ver $name: build produced no $dir/python (log: $out/$name-make.log)"
    echo "$want" > "$out/$name.stamp"
    echo "evalprof-cpython: $ver $name: built in $(( $(date +%s) - start ))s: $dir/python"
}

# The C compiler make uses (configure's choice, recorded in the Makefile).
make_cc() {
    sed -n 's/^CC=[[:space:]]*//p' "$1/Makefile" | head -n 1
}

# build_sanitized NAME: $out/NAME, a copy of the evalprof build whose
# evalprof objects are compiled again with $san_flags (make's
# CFLAGS_NODIST, which CPython adds to every compile) and the interpreter
# linked again with them.  The copy keeps the files' times, so make
# rebuilds only the objects removed and what depends on them (the
# library, the frozen modules' tool, the interpreter).
build_sanitized() {
    name=$1
    base="$out/evalprof"
    dir="$out/$name"
    want="$(cat "$out/evalprof.stamp") sanitize=$san_flags"
    if [ "$(cat "$out/$name.stamp" 2>/dev/null)" = "$want" ] && [ -x "$dir/python" ]; then
        echo "evalprof-cpython: $ver $name: up to date ($dir/python)"
        return 0
    fi
    rm -f "$out/$name.stamp"
    cc=$(make_cc "$base")
    # shellcheck disable=SC2086
    why=$(sh "$top/tools/san-probe.sh" "${cc:-cc}" $san_flags)
    [ -z "$why" ] || unavailable "$ver $name: $why"
    rm -rf "$dir"
    cp -a "$base" "$dir" || die "cannot copy $base to $dir"
    objs=$(sed -n 's/^EVALPROF_OBJS=//p' "$dir/Makefile")
    [ -n "$objs" ] || die "$ver $name: $dir/Makefile lists no EVALPROF_OBJS"
    # shellcheck disable=SC2086
    (cd "$dir" && rm -f $objs python libpython*.a) || die "cannot clean $dir"
    echo "evalprof-cpython: $ver $name: make python (log: $out/$name-make.log)"
    start=$(date +%s)
    # (the frozen modules' tool runs under the sanitizer during the
    # build: the interpreter's leaks at its exit are not evalprof's)
    if ! ASAN_OPTIONS=detect_leaks=0 make -C "$dir" -j"$jobs" python \
            CFLAGS_NODIST="$san_flags -fno-omit-frame-pointer" \
            LDFLAGS_NODIST="$san_flags" > "$out/$name-make.log" 2>&1; then
        err=$(grep -E 'error:|Error [0-9]' "$out/$name-make.log" | head -n 1 | cut -c1-200)
        die "$ver $name: build failed (${err:-see log}; log: $out/$name-make.log)"
    fi
    [ -x "$dir/python" ] || die "$ver $name: build produced no $dir/python (log: $out/$name-make.log)"
    echo "$want" > "$out/$name.stamp"
    echo "evalprof-cpython: $ver $name: built in $(( $(date +%s) - start ))s: $dir/python"
}

build_version() {
    ver=$1
    case "$ver" in
    3.11|3.13) ;;
    *) die "CPython $ver is not supported (evalprof hooks 3.11 and 3.13; docs/EVENTS.md says how 3.12 and 3.14 would map)" ;;
    esac
    out="$build/cpython/$ver"
    mkdir -p "$out" || die "cannot create $out"
    prepare_source
    got=$(tree_version "$out/src")
    [ "$got" = "$ver" ] || die "source tree is CPython ${got:-of unknown version}, not $ver"

    if [ "$variant" != plain ]; then
        hooks_fp=$("$python" "$top/cpython/apply-hooks.py" --fingerprint) ||
            die "cannot hash the hook sources"
        train="$top/cpython/pgo-train.py"
        pgo_sig=$pgo
        if [ "$pgo" != no ]; then
            pgo_sig=$(sha256sum "$train" | cut -c1-16) || die "cannot hash $train"
            pgo_sig="$pgo:$pgo_sig"
        fi
        want="src=$src_fp hooks=$hooks_fp configure=$configure_opts pgo=$pgo_sig"
        if [ "$(cat "$out/evalprof.stamp" 2>/dev/null)" != "$want" ] || [ ! -x "$out/evalprof/python" ]; then
            if [ ! -d "$out/src-evalprof/Include" ] ||
               [ "$(cat "$out/src-evalprof.stamp" 2>/dev/null)" != "$src_fp" ]; then
                rm -rf "$out/src-evalprof"
                cp -a "$out/src" "$out/src-evalprof" || die "cannot copy $out/src"
                echo "$src_fp" > "$out/src-evalprof.stamp"
            fi
            "$python" "$top/cpython/apply-hooks.py" --pristine "$out/src" "$out/src-evalprof" ||
                die "$ver: the hooks do not apply to this source (see above)"
        fi
        build_variant evalprof "$out/src-evalprof" "$want" "$train"
    fi
    case "$variant" in
    evalprof-*) build_sanitized "$variant"; return ;;
    esac
    if [ "$variant" != evalprof ]; then
        build_variant plain "$out/src" "src=$src_fp configure=$configure_opts pgo=$pgo"
    fi
}

if [ -z "$versions" ]; then
    if [ -n "$src" ]; then
        versions=$(tree_version "$src")
        [ -n "$versions" ] || die "--src $src: not a CPython source tree (no Include/patchlevel.h)"
    else
        versions="3.13 3.11"
    fi
elif [ -n "$src" ] && [ "$(echo $versions | wc -w)" -gt 1 ]; then
    die "--src takes one --version"
fi
for v in $versions; do
    (build_version "$v") || exit $?
done
