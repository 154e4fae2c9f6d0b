#!/bin/sh
# pip's way in: the wheel built offline (python -m build --wheel
# --no-isolation, meson-python) from the source tree, installed into a
# fresh virtual environment with pip --no-index, then used from there:
# venv/bin/python -m evalprof traces a script and the wheel's own evalprof
# binary (venv/bin/evalprof) reads the trace and records one itself.
#
# usage: wheel.sh SOURCE_DIR
# Needs an interpreter with the build and mesonpy modules (Debian:
# python3-build, python3-mesonpy, python3-venv, patchelf), else skips.
set -eu
src=$1
py=
for p in /usr/bin/python3 python3; do
    if $p -c 'import build, mesonpy, venv' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with the build and mesonpy modules (tools/bootstrap.sh test)"; exit 77; }
command -v patchelf >/dev/null || { echo "SKIP: no patchelf (meson-python needs it)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evp-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$src" && $py -m build --wheel --no-isolation --outdir "$tmp/dist" .) \
    >"$tmp/build.log" 2>&1 || { tail -30 "$tmp/build.log" >&2; fail "python -m build --wheel"; }
whl=$(ls "$tmp"/dist/evalprof-*.whl)
$py -m zipfile -l "$whl" >"$tmp/list"
for f in evalprof/__init__.py evalprof/_cli.py scripts/evalprof 'evalprof/_tracer\.cpython-.*\.so' man/man1/evalprof-record.1; do
    grep -q "$f" "$tmp/list" || fail "the wheel has no $f"
done
[ "$(grep -c '_tracer' "$tmp/list")" = 1 ] || fail "the wheel holds other interpreters' extensions"

$py -m venv "$tmp/venv" || fail "python -m venv"
v=$tmp/venv/bin
"$v/pip" install --no-index --no-deps -q "$whl" >"$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log" >&2; fail "pip install"; }
cd "$tmp"
printf 'def f(n):\n    return n and f(n - 1) + 1\nprint(f(50))\n' >script.py
out=$("$v/python" -m evalprof -q -o x.evp script.py) || fail "python -m evalprof"
[ "$out" = 50 ] || fail "the traced script printed '$out'"
"$v/evalprof" summary x.evp >summary.txt || fail "evalprof summary"
grep -q "enter" summary.txt || fail "summary: no enter events"
"$v/evalprof" record -q -o y.evp -- "$v/python" script.py >/dev/null || fail "evalprof record from the venv"
"$v/evalprof" info y.evp | grep -q "script.py" || fail "record traced no script.py"
[ -f "$tmp/venv/share/man/man1/evalprof.1" ] || fail "no man page in the venv"
echo "ok: $(basename "$whl") built with $py, installed in a venv, traced from there"
