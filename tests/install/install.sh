#!/bin/sh
# evalprof installed as a user gets it: `meson install --destdir` into a
# temporary directory, nothing else moved, then every command run from
# there.  The installed binary records a trace on python3 (finding the
# package in PREFIX/lib/python3.X/site-packages from its own place), the
# views read it, python3 -m evalprof runs with that directory on
# sys.path, a C program builds against the installed recorder through
# pkg-config and writes a trace, man renders a page and the bash
# completion answers.
#
# usage: install.sh BUILD_DIR SOURCE_DIR PYTHON
# (PYTHON: an interpreter the extension was built for)
set -eu
build=$1
src=$2
py=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evp-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "meson install"; }
prefix=$(meson introspect --buildoptions "$build" |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
libdir=$(meson introspect --buildoptions "$build" |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
root=$tmp/root$prefix
evp=$root/bin/evalprof
[ -x "$evp" ] || fail "no $evp"
minor=$($py -c 'import sys; print("%d.%d" % sys.version_info[:2])')
site=$root/lib/python$minor/site-packages
[ -f "$site/evalprof/__init__.py" ] || fail "no package in $site"
ls "$site"/evalprof/_tracer-*.so >/dev/null || fail "no extension in $site"
# compiled at install, so that no run compiles it (nor needs to write there)
tag=$($py -c 'import sys; print(sys.implementation.cache_tag)')
for f in __init__ _api _cli _kinds; do
    [ -f "$site/evalprof/__pycache__/$f.$tag.pyc" ] || fail "no $f.$tag.pyc in $site"
done

cd "$tmp"
cat >work.py <<'PY'
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print(fib(15))
PY
# The installed binary finds the installed package, not the build tree's.
out=$("$evp" record -q -o run.evp -- $py work.py) || fail "record"
[ "$out" = 610 ] || fail "record: program printed '$out'"
# ... also through a symlink elsewhere (/proc/self/exe is the real place).
mkdir elsewhere && ln -s "$evp" elsewhere/evalprof
elsewhere/evalprof record -q --no-ops -o noops.evp -- $py work.py >/dev/null || fail "record --no-ops through a symlink"
"$evp" summary --funcs run.evp >summary.txt || fail "summary"
grep -q "fib" summary.txt || fail "summary names no fib"
"$evp" tree run.evp >tree.txt || fail "tree"
grep -q "func: fib" tree.txt || fail "tree names no fib"
"$evp" info run.evp >info.txt || fail "info"
for f in text folded chrome speedscope; do
    "$evp" export --format $f -o "run.$f" run.evp || fail "export $f"
    [ -s "run.$f" ] || fail "export $f wrote nothing"
done
"$evp" export --format evp --zstd -o run-z.evp run.evp || fail "export evp"
"$evp" import -o back.evp run.text || fail "import"
"$evp" flamegraph -o run.svg run.evp || fail "flamegraph"
grep -q "<svg" run.svg || fail "flamegraph wrote no SVG"
"$evp" diff noops.evp run.evp >diff.txt || fail "diff"
"$evp" perf -o perf-out --script "$src/tests/flame/data/edge.script" >perf.txt || fail "perf --script"
[ -s perf-out/flamegraph.svg ] || fail "perf --script drew no flame graph"
for c in tree summary info export import diff record flamegraph perf; do
    "$evp" $c --help | grep -q "^options:" || fail "$c --help"
done
"$evp" --version | grep -q "^evalprof " || fail "--version"

# python3 -m evalprof with the prefix's site directory on sys.path.
PYTHONPATH=$site $py -m evalprof -q -o m.evp work.py >/dev/null || fail "python -m evalprof"
"$evp" info m.evp | grep -q "work.py" || fail "python -m evalprof traced no work.py"

# A C program against the installed recorder, through pkg-config.
pcdir=$root/$libdir/pkgconfig
[ -f "$pcdir/evalprof.pc" ] || fail "no $pcdir/evalprof.pc"
pc="pkg-config --define-variable=prefix=$root"
flags=$(PKG_CONFIG_PATH=$pcdir $pc --cflags --libs evalprof) || fail "pkg-config"
case "$flags" in *"-I$root/include"*"-levalprof-recorder"*) ;; *) fail "pkg-config: $flags" ;; esac
cat >rec.c <<'C'
#include <stdio.h>
#include <evalprof/recorder.h>

int main(int argc, char **argv)
{
    struct evp_rec_config cfg = {.path = argv[1],
                                 .producer = EVP_PRODUCER_SYNTHETIC,
                                 .can_emit = ~0ull};
    if (argc < 2 || evp_rec_open(&cfg) < 0)
        return 1;
    evp_rec_thread_attach("main");
    uint32_t f = evp_rec_func("work", "rec.c", 1);
    for (int i = 0; i < 100; i++) {
        evp_rec_event(EVP_EV_ENTER, f);
        evp_rec_op(100, (uint32_t)i);
        evp_rec_event(EVP_EV_EXIT, f);
    }
    return evp_rec_close() < 0;
}
C
${CC:-cc} -o rec rec.c $flags || fail "compile and link against the installed recorder"
./rec c.evp || fail "the recorder program"
"$evp" summary c.evp | grep -q "enter *100" || fail "the recorder program's trace"

# The man pages, rendered.
man=$root/share/man/man1
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$man/evalprof-summary.1" 2>man.err >man.txt || fail "man -l"
    render="man -l"
else
    nroff -man "$man/evalprof-summary.1" 2>man.err >man.txt || fail "nroff"
    render="nroff -man"
fi
grep -q "OPTIONS" man.txt && grep -q "group" man.txt || fail "$render: no options"
[ ! -s man.err ] || { cat man.err >&2; fail "$render warned"; }

# The bash completion, sourced and asked.
comp=$root/share/bash-completion/completions/evalprof
[ -f "$comp" ] || fail "no $comp"
ask() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _evalprof; echo "${COMPREPLY[*]}"' sh "$comp" "$@"
}
[ "$(ask evalprof summ)" = summary ] || fail "completion of 'summ': $(ask evalprof summ)"
[ "$(ask evalprof export --fo)" = --format ] || fail "completion of 'export --fo'"
[ "$(ask evalprof export --format ch)" = chrome ] || fail "completion of '--format ch'"
[ "$(ask evalprof help fl)" = flamegraph ] || fail "completion of 'help fl'"
echo "ok: installed under $prefix (destdir), every command run from there; man page by $render"
