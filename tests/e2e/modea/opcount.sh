#!/bin/sh
# The op events of one call of a deterministic function equal the
# instruction count an independent method gives: sys.settrace with
# f_trace_opcodes, which runs the function unspecialized, counts one
# 'opcode' event per instruction except RESUME (reported as 'call').
# The traced call is the function's first, so its instructions specialize
# (and some deoptimise) while it runs: each must still count once.
#
#   opcount.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"

for n in 0 1 7 1000; do
    want=$("$PY" "$PROGRAMS/opcount.py" settrace $n)
    EVALPROF="$T/oc$n.evp" "$PY" "$PROGRAMS/opcount.py" run $n > /dev/null
    if ! "$CHECK" "$T/oc$n.evp" --func target > "$T/oc$n.out"; then
        grep FAIL "$T/oc$n.out"
        fail "n=$n: trace does not check"
        continue
    fi
    got=$(value "ops target" "$T/oc$n.out")
    calls=$(value "calls target" "$T/oc$n.out")
    resume=$(awk '$1 == "opcodes" { for (i = 3; i <= NF; i++) { split($i, a, ":"); if (a[1] ~ /^RESUME/) s += a[2] } } END { print s + 0 }' "$T/oc$n.out")
    if [ "$calls" = 1 ] && [ "$resume" = 1 ] && [ "$((got - resume))" = "$want" ]; then
        ok "n=$n: $got op events = $want settrace opcodes + 1 RESUME"
    else
        fail "n=$n: $got op events ($resume RESUME, $calls calls), settrace counted $want"
        grep '^opcodes' "$T/oc$n.out"
    fi
done
finish
