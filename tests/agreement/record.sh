#!/bin/sh
# Records prog.py with the stock python3 through the extension (mode B)
# and checks that every view agrees on its function times (check.py).
#   record.sh EVALPROF CHECK.PY PROG.PY
set -u
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP: no python3 on PATH"
    exit 77
fi
if ! "$1" record -q -o "$dir/t.evp" -- python3 "$3" >"$dir/out" 2>"$dir/err"; then
    if grep -q "extension" "$dir/err"; then
        echo "SKIP: python3 cannot load the evalprof extension: $(head -1 "$dir/err")"
        exit 77
    fi
    echo "FAIL: evalprof record: $(cat "$dir/err")"
    exit 1
fi
exec python3 "$2" "$1" "$dir/t.evp" "$dir/t.pstats"
