#!/bin/sh
# CPython 3.14 and 3.15 for evalprof's build and tests (`make pythons`; run
# by `make test` before it builds).
#
#   sh tools/pythons.sh [BUILD]
#
# The machine's own Debian (bookworm) has neither, and Debian's binaries of
# them, from the testing suite (forky), need a newer C library than the
# machine's.  So they live in a private root: a minimal Debian forky made
# by Debian's mmdebstrap with the packages below, kept in a cache outside
# the source tree that every later run, clone and CI run on this machine
# reuses.  The root's name is a hash of what it is made of (suite, package
# list, this recipe's version), so a changed list makes a new root beside
# the old one; roots are never changed or removed once made (others may be
# running them), and `make pythons` names the ones no longer used.
#
# BUILD/pythons/ (default build/pythons) then holds:
#   python3.14, python3.15   the root's interpreters, copied and made to
#                            run on the host: their ELF interpreter is the
#                            root's dynamic loader and their library path
#                            (DT_RPATH, patchelf) the root's libraries, so
#                            that they behave like the user's own
#                            python3.14: the program keeps the host's files,
#                            working directory, /proc and programs;
#                            sys.executable and /proc/self/exe are the
#                            copy itself, so subprocess, multiprocessing
#                            (spawn, forkserver) and `-m venv --without-pip`
#                            start the same interpreter again, and a
#                            debugger, Valgrind or perf run it as any
#                            program
#   lib/python3.X, lib/python3, include/python3.X, include/TRIPLET/python3.X
#                            links into the root: the prefix the launchers'
#                            interpreters find beside their executable
#                            (sys.prefix is BUILD/pythons; no PYTHONHOME,
#                            which a child of another Python would inherit)
#   status                   "ok ROOT" and one "python3.X VERSION" line each,
#                            or "unavailable: REASON" (the root cannot be
#                            made here: no mmdebstrap, no network, no disk;
#                            the 3.14 and 3.15 tests skip, saying so), or
#                            "failed: REASON" (anything else: they fail)
#   mmdebstrap.log           the last attempt's log
#
# Environment:
#   EVALPROF_PYTHONS_CACHE   the cache directory (default
#                            /var/cache/evalprof/pythons for root, else
#                            ${XDG_CACHE_HOME:-~/.cache}/evalprof/pythons)
#   EVALPROF_DEBIAN_SOURCES  another deb822 file to take the archive entry
#                            from (tools/debian-entry.sh)
#
# Prints one line per outcome.  Exit status 0 (ready), 3 (unavailable), 1
# (failed).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
out="$BUILD/pythons"

suite=forky
versions="3.14 3.15"
# The root's packages: the interpreters and their headers (the internal
# ones included), nothing else (apt variant: no init, no compilers).
pkgs="python3.14 python3.14-dev python3.15 python3.15-dev"
# Bumped when the way the root is made changes (a new root then).
recipe=1
# What a root takes while it is made (downloads and unpacked files);
# 320 MB once made.
need_mb=900

if [ -n "${EVALPROF_PYTHONS_CACHE:-}" ]; then
    cache=$EVALPROF_PYTHONS_CACHE
elif [ "$(id -u)" = 0 ]; then
    cache=/var/cache/evalprof/pythons
else
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/evalprof/pythons
fi

mkdir -p "$out" || { echo "pythons: cannot create $out"; exit 1; }
log="$out/mmdebstrap.log"

# finish STATE REASON: record the outcome, say it in one line, exit.
finish() {
    printf '%s: %s\n' "$1" "$2" > "$out/status"
    rm -f "$out/python3.14" "$out/python3.15" "$out/python3.14.new" "$out/python3.15.new"
    case $1 in
    unavailable) echo "pythons: CPython 3.14 and 3.15 not available: $2 (their tests will skip)"; exit 3 ;;
    *) echo "pythons: FAILED: $2 (the 3.14 and 3.15 tests will fail)"; exit 1 ;;
    esac
}

key=$(printf 'suite=%s\npackages=%s\nrecipe=%s\n' "$suite" "$pkgs" "$recipe" |
      sha256sum | cut -c1-12)
root="$cache/$suite-$key"

# ---- the root ---------------------------------------------------------------

make_root() {
    if ! sh "$top/tools/bootstrap.sh" pythons >"$log" 2>&1; then
        finish unavailable "mmdebstrap is not installed and cannot be ($(tail -n 1 "$log"))"
    fi
    mkdir -p "$cache" 2>/dev/null || finish unavailable "cannot create the cache directory $cache"
    [ -w "$cache" ] || finish unavailable "cannot write to the cache directory $cache"
    free_mb=$(df -Pk "$cache" 2>/dev/null | awk 'NR == 2 { print int($4 / 1024) }')
    if [ -n "$free_mb" ] && [ "$free_mb" -lt $need_mb ]; then
        finish unavailable "not enough disk space in $cache (${free_mb} MB free, $need_mb MB needed)"
    fi
    . "$top/tools/debian-entry.sh"
    entry=$(debian_entry deb "$suite")
    [ -n "$entry" ] || finish unavailable "no Debian archive entry in /etc/apt to take $suite's packages from"
    tmp="$cache/.$suite-$key.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp.apt" || finish unavailable "cannot write to $cache"
    printf '%s\n' "$entry" > "$tmp.apt/$suite.sources"
    start=$(date +%s)
    # The suite's Release file may be past its validity date on a
    # snapshot archive; a network that answers nothing fails in minutes,
    # not hours.
    if ! mmdebstrap --variant=apt \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        --aptopt='Acquire::http::Timeout "30"' \
        --aptopt='Acquire::Retries "2"' \
        --include="$(echo "$pkgs" | tr ' ' ',')" \
        "$suite" "$tmp" "$tmp.apt/$suite.sources" >>"$log" 2>&1; then
        rm -rf "$tmp" "$tmp.apt"
        why=$(grep -E '^(E|W): ' "$log" | grep -vE 'W: (cannot|Download is performed unsandboxed)' | head -n 1 | cut -c1-200)
        free_mb=$(df -Pk "$cache" 2>/dev/null | awk 'NR == 2 { print int($4 / 1024) }')
        if [ -n "$free_mb" ] && [ "$free_mb" -lt 100 ]; then
            finish unavailable "the disk under $cache filled up while making the root (log: $log)"
        fi
        if grep -qE 'Could not (connect|resolve)|Temporary failure resolving|Connection timed out|Network is unreachable' "$log"; then
            finish unavailable "cannot reach the Debian archive for $suite's packages (${why#E: }; log: $log)"
        fi
        finish unavailable "mmdebstrap could not make a Debian $suite root (${why:-see the log}; log: $log)"
    fi
    rm -rf "$tmp.apt"
    {
        printf 'suite: %s\npackages: %s\nrecipe: %s\nmade: %s\n' "$suite" "$pkgs" "$recipe" \
            "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        dpkg-query --admindir="$tmp/var/lib/dpkg" -W $pkgs libc6 2>/dev/null
    } > "$tmp/.evalprof-root"
    mv "$tmp" "$root" || finish failed "cannot move the new root into $root"
    made="made in $(( $(date +%s) - start )) s"
}

made=reused
if [ ! -f "$root/.evalprof-root" ]; then
    mkdir -p "$cache" 2>/dev/null || finish unavailable "cannot create the cache directory $cache"
    # One maker at a time per root; a second waits, then reuses it.
    exec 9>"$cache/.$suite-$key.lock" || finish unavailable "cannot write to the cache directory $cache"
    if command -v flock >/dev/null 2>&1; then
        flock 9
    fi
    [ -f "$root/.evalprof-root" ] || make_root
    exec 9>&-
fi

# ---- the launchers ----------------------------------------------------------

if ! command -v patchelf >/dev/null 2>&1 &&
   ! sh "$top/tools/bootstrap.sh" pythons >"$log" 2>&1; then
    finish unavailable "patchelf is not installed and cannot be ($(tail -n 1 "$log"))"
fi

# The root's loader (the interpreters' ELF interpreter) and its library
# directory.
interp=$(readelf -l "$root/usr/bin/python3.14" 2>/dev/null |
         sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
[ -n "$interp" ] && [ -e "$root$interp" ] ||
    finish failed "cannot find the dynamic loader of $root/usr/bin/python3.14"
libc=$(ls "$root"/usr/lib/*/libc.so.6 2>/dev/null | head -n 1)
[ -n "$libc" ] || finish failed "no C library in $root/usr/lib"
triplet=$(basename "$(dirname "$libc")")
libpath="$root/usr/lib/$triplet"

rm -rf "$out/lib" "$out/include"
mkdir -p "$out/lib" "$out/include/$triplet" || finish failed "cannot write to $out"
ln -s "$root/usr/lib/python3" "$out/lib/python3"
{
    echo "ok $root"
} > "$out/status.new"
found=""
for v in $versions; do
    ln -s "$root/usr/lib/python$v" "$out/lib/python$v"
    ln -s "$root/usr/include/python$v" "$out/include/python$v"
    ln -s "$root/usr/include/$triplet/python$v" "$out/include/$triplet/python$v"
    l="$out/python$v"
    # A copy of the root's interpreter whose ELF interpreter is the root's
    # loader and whose library path (DT_RPATH, which also serves the
    # extension modules it loads) is the root's: it runs as any program
    # of the host's, under a debugger, Valgrind or perf too.
    cp "$root/usr/bin/python$v" "$l.new" 2>/dev/null &&
        patchelf --set-interpreter "$root$interp" --force-rpath \
            --set-rpath "$libpath" "$l.new" 2>"$out/patchelf.log" &&
        mv "$l.new" "$l" ||
        finish failed "cannot make $l from $root/usr/bin/python$v (patchelf: $(tail -n 1 "$out/patchelf.log" 2>/dev/null))"
    got=$("$l" -I -c 'import sys; print("%d.%d.%d" % sys.version_info[:3], sys.executable == sys.argv[1] or sys.executable)' "$l" 2>&1)
    case "$got" in
    "$v".*" True") ;;
    *) finish failed "$l does not start the root's interpreter: $(echo "$got" | tail -n 1 | cut -c1-200)" ;;
    esac
    echo "python$v ${got% True}" >> "$out/status.new"
    found="$found, python$v ${got% True}"
done
mv "$out/status.new" "$out/status"
echo "pythons: ${found#, } from Debian $suite ($root, $made): $out/python3.X, run by the root's loader"

# Roots of other package lists or recipes, left for whoever still uses them.
for old in "$cache/$suite"-*; do
    [ -d "$old" ] && [ "$old" != "$root" ] || continue
    echo "pythons: $old ($(du -sh "$old" 2>/dev/null | cut -f1)) was made from another package list; remove it when nothing uses it"
done
exit 0
