#!/bin/sh
# Every C file of evalprof is formatted as its .clang-format says (the
# top-level one, or PEP 7 in python/_tracer and cpython/hooks).  `make
# format` fixes what this reports.  Skips (77) without clang-format.
top=${1:-.}
cd "$top" || exit 1
command -v clang-format >/dev/null 2>&1 || { echo "SKIP: clang-format not found (Debian package clang-format)"; exit 77; }
if [ -d .git ] && command -v git >/dev/null 2>&1; then
    files=$(git ls-files '*.c' '*.h')
else
    files=$(find include src python cpython tests examples bench -name '*.[ch]' | sort)
fi
bad=0
n=0
for f in $files; do
    n=$((n + 1))
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f (clang-format -i $f)"
        bad=$((bad + 1))
    fi
done
echo "$(clang-format --version | head -n 1): $n files, $bad not formatted"
[ $bad -eq 0 ]
