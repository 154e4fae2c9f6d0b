#!/bin/sh
# evalprof bootstrap: make sure the Debian packages evalprof builds and
# tests with are installed.  As root it installs what is missing with
# apt-get; otherwise it prints the exact apt-get line and fails.
#
#   tools/bootstrap.sh [GROUP...]    groups: build (default), test, cpython,
#                                    pythons, browser, bench
#   tools/bootstrap.sh --state [GROUP...]
#                                    print the installed version of each
#                                    package of the groups (or "absent") and
#                                    change nothing: the Makefile configures
#                                    the build directory again when it changes
#
# Each group lists packages from Debian's archive only.
set -eu

state=0
if [ "${1:-}" = --state ]; then
    state=1
    shift
fi

pkgs_build="meson ninja-build pkg-config gcc libzstd-dev libxxhash-dev python3-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libdw-dev"
pkgs_test="libcmocka-dev clang clang-format libclang-rt-14-dev golang-go valgrind time"
# the install suite: the wheel (meson-python), man pages rendered
pkgs_test="$pkgs_test python3-mesonpy python3-build python3-venv patchelf groff-base"
pkgs_cpython="dpkg-dev build-essential libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev libsqlite3-dev libreadline-dev libncurses-dev uuid-dev libgdbm-dev xz-utils"
# the private root of CPython 3.14 and 3.15 (tools/pythons.sh)
pkgs_pythons="mmdebstrap patchelf"
pkgs_browser="chromium"
pkgs_bench="libdevel-nytprof-perl"

groups="${*:-build}"
want=""
for g in $groups; do
    case "$g" in
    build) want="$want $pkgs_build" ;;
    test) want="$want $pkgs_build $pkgs_test" ;;
    cpython) want="$want $pkgs_cpython" ;;
    pythons) want="$want $pkgs_pythons" ;;
    browser) want="$want $pkgs_browser" ;;
    bench) want="$want $pkgs_bench" ;;
    *) echo "bootstrap: unknown group '$g' (build, test, cpython, pythons, browser, bench)" >&2; exit 2 ;;
    esac
done

if [ $state = 1 ]; then
    seen=""
    for p in $want; do
        case " $seen " in *" $p "*) continue ;; esac
        seen="$seen $p"
        v=$(dpkg-query -W -f '${Status} ${Version}' "$p" 2>/dev/null | sed -n 's/^install ok installed //p')
        echo "$p ${v:-absent}"
    done
    exit 0
fi

missing=""
for p in $want; do
    case " $missing " in *" $p "*) continue ;; esac
    if ! dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "bootstrap: missing Debian packages; run as root:" >&2
    echo "  apt-get install -y --no-install-recommends$missing" >&2
    exit 1
fi
echo "bootstrap: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have stale or empty package lists: refresh once on failure.
if ! apt-get install -y -q --no-install-recommends $missing >/tmp/evp-apt.log 2>&1; then
    apt-get update -q >/dev/null 2>&1 || true
    if ! apt-get install -y -q --no-install-recommends $missing >/tmp/evp-apt.log 2>&1; then
        echo "bootstrap: apt-get install failed (see /tmp/evp-apt.log):" >&2
        tail -n 5 /tmp/evp-apt.log >&2
        exit 1
    fi
fi
