#!/bin/sh
# cpython/apply-hooks.py on real and damaged CPython trees: it applies to
# the pristine source, the traced copy of the eval function has the same
# hooks as the original, applying twice gives the same tree, and a tree
# whose labels or macros differ from what the hooks expect (or another
# CPython version) is refused with every mismatch listed and nothing
# written.
#
#   apply.sh VERSION BUILD_DIR
VER=$1
BUILD=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TOOL="$HERE/../../../cpython/apply-hooks.py"
SRC=$BUILD/cpython/$VER/src
if [ ! -f "$SRC/Include/patchlevel.h" ]; then
    why=$(cat "$BUILD/cpython/$VER/evalprof.status" 2>/dev/null)
    case "$why" in
    unavailable:*) echo "SKIP: CPython $VER source not obtainable here"; exit 77 ;;
    *) echo "FAIL: $SRC missing (tests/prepare.d/cpython.sh unpacks it)"; exit 1 ;;
    esac
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/evp-apply-XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# Only the files the tool reads, copied from the pristine tree.
files="Include/patchlevel.h Include/cpython/code.h Objects/codeobject.c
       Modules/main.c Modules/posixmodule.c Python/pylifecycle.c
       Python/sysmodule.c Python/pystate.c Python/ceval.c Python/ceval_macros.h
       Python/generated_cases.c.h Python/opcode_targets.h Makefile.pre.in"
mktree() {
    rm -rf "$1"
    for f in $files; do
        [ -f "$SRC/$f" ] || continue
        mkdir -p "$1/$(dirname "$f")"
        cp "$SRC/$f" "$1/$f"
    done
}

mktree "$T/a"
python3 "$TOOL" --check "$T/a" > "$T/out" 2>&1 && ok "--check: $(cat "$T/out")" || fail "--check on the pristine tree: $(cat "$T/out")"
python3 "$TOOL" "$T/a" > "$T/out" 2>&1 || fail "apply: $(cat "$T/out")"
cp -r "$T/a" "$T/once"
python3 "$TOOL" "$T/a" > "$T/out2" 2>&1 || fail "second apply: $(cat "$T/out2")"
if diff -r "$T/once" "$T/a" > /dev/null; then ok "applying twice gives the same tree ($(cat "$T/out2"))"; else fail "applying twice changed the tree"; fi
n=$(grep -c 'evalprof-hook' "$T/a/Python/ceval.c")
[ "$n" -ge 8 ] && ok "$n hook lines in ceval.c" || fail "only $n hook lines in ceval.c"
# The traced copy of the eval function carries the same hooks.
a=$(grep -c 'EVP_HOOK_\|EVP_LOCALS' "$T/a/Python/ceval.c")
b=$(grep -c 'EVP_HOOK_\|EVP_LOCALS' "$T/a/Python/evalprof_traced.h" 2>/dev/null)
if [ "$a" -ge 5 ] && [ "$a" = "$b" ] && grep -q '^evp_eval_frame_traced(' "$T/a/Python/evalprof_traced.h"; then
    ok "the traced copy has the eval function's $a hook statements"
else
    fail "hook statements: $a in ceval.c, ${b:-no file} in the traced copy"
fi
# And so does the sampled copy (sample mode), compiled with EVP_COPY_SAMPLED.
c=$(grep -c 'EVP_HOOK_\|EVP_LOCALS' "$T/a/Python/evalprof_sampled.h" 2>/dev/null)
if [ "$a" = "$c" ] && grep -q '^evp_eval_frame_sampled(' "$T/a/Python/evalprof_sampled.h" &&
   grep -q '^#define EVP_COPY_SAMPLED 1$' "$T/a/Python/evalprof_sampled.h"; then
    ok "the sampled copy has the eval function's $a hook statements"
else
    fail "hook statements: $a in ceval.c, ${c:-no file} in the sampled copy"
fi
# And the counted copy (sample mode with EVALPROF_COUNTS): the sampled
# copy compiled with EVP_COPY_COUNTED too, and only it and the traced copy
# hold the counting entries.
d=$(grep -c 'EVP_HOOK_\|EVP_LOCALS' "$T/a/Python/evalprof_counted.h" 2>/dev/null)
if [ "$a" = "$d" ] && grep -q '^evp_eval_frame_counted(' "$T/a/Python/evalprof_counted.h" &&
   grep -q '^#define EVP_COPY_SAMPLED 1$' "$T/a/Python/evalprof_counted.h" &&
   grep -q '^#define EVP_COPY_COUNTED 1$' "$T/a/Python/evalprof_counted.h" &&
   ! grep -q 'EVP_COPY_COUNTED' "$T/a/Python/evalprof_sampled.h" &&
   grep -q '^#if EVP_COPY_TRACED || EVP_COPY_COUNTED$' "$T/a/Python/evalprof_entries.h"; then
    ok "the counted copy has the eval function's $a hook statements, and the counting entries are its and the traced copy's only"
else
    fail "hook statements: $a in ceval.c, ${d:-no file} in the counted copy, or the entries' guard: $(grep '^#if' "$T/a/Python/evalprof_entries.h" 2>/dev/null)"
fi

# Damage: a label renamed, a macro redefined differently.
mktree "$T/b"
sed -i 's/^exit_unwind:$/exit_unwinding:/' "$T/b/Python/ceval.c"
if [ "$VER" = 3.13 ]; then
    sed -i 's/^#define SKIP_OVER(x) .*/#define SKIP_OVER(x) (next_instr += 2 * (x))/' "$T/b/Python/ceval_macros.h"
else
    sed -i 's/^#define INSTRUCTION_START(op) (frame->prev_instr = next_instr++)$/#define INSTRUCTION_START(op) (next_instr++)/' "$T/b/Python/ceval.c"
fi
cp -r "$T/b" "$T/b0"
python3 "$TOOL" "$T/b" > "$T/out" 2>&1
rc=$?
cat "$T/out"
if [ "$rc" = 2 ] && grep -q "exit_unwind" "$T/out" && grep -q "SKIP_OVER\|INSTRUCTION_START" "$T/out"; then
    ok "a damaged tree is refused, naming both mismatches"
else
    fail "damaged tree: exit status $rc"
fi
diff -r "$T/b0" "$T/b" > /dev/null && ok "nothing written to the refused tree" || fail "the refused tree was modified"

# Another version.
mktree "$T/c"
sed -i 's/^#define PY_MINOR_VERSION.*/#define PY_MINOR_VERSION        12/' "$T/c/Include/patchlevel.h"
python3 "$TOOL" "$T/c" > "$T/out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "3.12 .*not supported" "$T/out" && ok "3.12 refused: $(tail -n 1 "$T/out" | cut -c1-120)" || fail "3.12: exit $rc: $(cat "$T/out")"
[ "$failures" = 0 ] || exit 1
