#!/bin/sh
# A machine with only the bootstrap's build group (no cmocka, no clang)
# builds everything `make demo` needs, and a build directory configured
# there is configured again by the Makefile once the test packages come.
#
#   missing-test-deps.sh SRCDIR SCRATCH
#
# 1. Configures SCRATCH/build with pkg-config seeing every .pc file of
#    this machine but cmocka's (the real dependency() lookup, which then
#    fails): configure must say which tests it leaves out and why, and a
#    plain `ninja` must build evalprof and the extension, no unit test.
# 2. -Dfuzz=true with gcc: the fuzz targets are left out, said so.
# 3. `make configure` on that directory, told that the packages changed,
#    configures it again: cmocka is found and the unit tests are there.
set -u
src=${1:?usage: missing-test-deps.sh SRCDIR SCRATCH}
scratch=${2:?usage: missing-test-deps.sh SRCDIR SCRATCH}
fail() {
    echo "FAIL: $*"
    exit 1
}
rm -rf "$scratch"
mkdir -p "$scratch/pkgconfig" || fail "cannot create $scratch"
pcpath=$(pkg-config --variable pc_path pkg-config) || fail "pkg-config is missing"
for d in $(echo "${PKG_CONFIG_PATH:-}:$pcpath" | tr : ' '); do
    for f in "$d"/*.pc; do
        [ -f "$f" ] || continue
        case "$(basename "$f")" in cmocka.pc) continue ;; esac
        [ -e "$scratch/pkgconfig/$(basename "$f")" ] || ln -s "$f" "$scratch/pkgconfig/"
    done
done
hide() {
    PKG_CONFIG_LIBDIR="$scratch/pkgconfig" PKG_CONFIG_PATH= "$@"
}

b="$scratch/build"
hide meson setup "$b" "$src" -Dbuildtype=debug >"$scratch/setup.log" 2>&1 ||
    fail "configure without cmocka failed: $(tail -n 3 "$scratch/setup.log")"
grep -q "Run-time dependency cmocka found: NO" "$scratch/setup.log" ||
    fail "cmocka was found although its .pc file was hidden ($scratch/setup.log)"
grep -q "not built: suite unit: cmocka not found" "$scratch/setup.log" ||
    fail "configure did not say that the unit tests are left out ($scratch/setup.log)"
ninja -C "$b" >"$scratch/ninja.log" 2>&1 ||
    fail "ninja without cmocka failed: $(grep -m 3 -E 'error|FAILED' "$scratch/ninja.log")"
[ -x "$b/evalprof" ] || fail "no $b/evalprof"
find_interp=$(python3 "$src/python/find_interpreters.py" | grep -c '^build')
built=$(ls "$b"/python/evalprof/_tracer-*.so 2>/dev/null | wc -l)
[ "$built" -eq "$find_interp" ] ||
    fail "$built extension modules built for $find_interp interpreters found"
ninja -C "$b" -t targets all | grep -q '^tests/unit/' &&
    fail "unit test targets are in a build without cmocka"
echo "without cmocka: evalprof and $built extension modules built, unit tests left out"

CC=gcc hide meson setup "$scratch/fuzz-gcc" "$src" -Dfuzz=true >"$scratch/fuzz.log" 2>&1 ||
    fail "-Dfuzz=true with gcc failed to configure: $(tail -n 3 "$scratch/fuzz.log")"
grep -q "not built: fuzz targets (-Dfuzz=true): need clang" "$scratch/fuzz.log" ||
    fail "-Dfuzz=true with gcc did not say that the fuzz targets are left out"
echo "-Dfuzz=true without clang: fuzz targets left out, said so"

echo "stale" >"$b/bootstrap-packages"
make -C "$src" --no-print-directory BUILD="$b" MESON_OPTS= configure >"$scratch/make.log" 2>&1 ||
    fail "make configure failed: $(tail -n 3 "$scratch/make.log")"
grep -q "configuring it again" "$scratch/make.log" ||
    fail "make configure did not configure again after the packages changed"
ninja -C "$b" -t targets all | grep -q '^tests/unit/test_codec' ||
    fail "after make configure the unit tests are still left out"
make -C "$src" --no-print-directory BUILD="$b" MESON_OPTS= configure >"$scratch/make2.log" 2>&1 ||
    fail "second make configure failed"
grep -q "configuring it again" "$scratch/make2.log" &&
    fail "make configure configured again with the packages unchanged"
echo "make configure: configured again once the packages changed, then left alone"
rm -rf "$scratch"
