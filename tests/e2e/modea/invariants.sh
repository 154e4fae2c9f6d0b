#!/bin/sh
# Trace invariants on a real program (programs/workload.py: loops, inlined
# calls, calls from C, __init__, generators, coroutines, throw/close,
# exceptions raised, handled and escaping, RecursionError, a signal,
# threads), traced with every event class:
#   - every enter has its exit, per thread, and depth never goes negative;
#   - all 14 classic kinds appear;
#   - the op count of a function is the same whatever else is recorded,
#     and matches its bytecode (loop(n) runs a fixed number per iteration).
#
#   invariants.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"

EVALPROF="$T/all.evp" "$PY" "$PROGRAMS/workload.py" > "$T/out" || fail "workload failed under tracing"
if "$CHECK" "$T/all.evp" --kinds all --func loop --func add > "$T/all.out"; then
    ok "all 14 kinds, enters and exits balance, depth >= 0 ($(value events "$T/all.out") events, max depth $(value max_depth "$T/all.out"))"
else
    grep FAIL "$T/all.out"
    fail "invariants on the workload trace"
fi
# A generator's frame starts with enter, then resumes and suspends; it
# ends in exit (or stays suspended): the pushes and pops balance, and
# every one of them is a loop exit.
n_enter=$(value "kind enter" "$T/all.out"); n_exit=$(value "kind exit" "$T/all.out")
n_resume=$(value "kind resume" "$T/all.out"); n_suspend=$(value "kind suspend" "$T/all.out")
[ "$((n_enter + n_resume))" = "$((n_exit + n_suspend))" ] && [ "${n_resume:-0}" -gt 0 ] &&
    [ "$(value "kind loop-exit" "$T/all.out")" = "$((n_exit + n_suspend))" ] &&
    ok "enter + resume = exit + suspend = loop exit ($n_enter + $n_resume)" ||
    fail "enter $n_enter, exit $n_exit, resume $n_resume, suspend $n_suspend, loop exit $(value "kind loop-exit" "$T/all.out")"

# The same program with only frames and ops (ops need frames to be
# attributed to a function): the same op counts per function.
EVALPROF="$T/op.evp" EVALPROF_EVENTS=frames,op "$PY" "$PROGRAMS/workload.py" > /dev/null
"$CHECK" "$T/op.evp" --func loop --func add > "$T/op.out" || fail "frames,op trace does not check"
for f in loop add; do
    a=$(value "ops $f" "$T/all.out"); b=$(value "ops $f" "$T/op.out")
    [ -n "$a" ] && [ "$a" = "$b" ] && ok "ops of $f: $a with every event, $b with frames,op" ||
        fail "ops of $f: $a with every event, $b with frames,op"
done

# loop(n) executes a fixed number of instructions per iteration plus a
# fixed prologue and epilogue; the workload calls it with n = 5000, 2000,
# 2001, 2002 (11003 iterations, 4 calls).  Per-iteration and fixed counts
# come from dis, run by the same interpreter with tracing off.
"$PY" - "$PROGRAMS/workload.py" > "$T/expect" <<'PYEOF'
import dis, importlib.util, sys
spec = importlib.util.spec_from_file_location("workload", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
ins = [i for i in dis.get_instructions(mod.loop) if i.opname != "CACHE"]
names = [i.opname for i in ins]
start = names.index("FOR_ITER")
end = max(n for n, i in enumerate(ins) if i.opname.startswith("JUMP_BACKWARD"))
body = end - start + 1                      # FOR_ITER .. JUMP_BACKWARD
# prologue (up to FOR_ITER), the exhausted FOR_ITER, and what follows the
# loop up to the return; END_FOR (3.12+) is jumped over
after = [n for n in names[end + 1:] if n not in ("END_FOR", "POP_TOP")]
fixed = start + 1 + len(after)
calls, iterations = 4, 5000 + 2000 + 2001 + 2002
print(calls * fixed + iterations * body)
PYEOF
want=$(cat "$T/expect")
got=$(value "ops loop" "$T/all.out")
[ -n "$want" ] && [ "$got" = "$want" ] && ok "ops of loop() = $got, as its bytecode says" ||
    fail "ops of loop(): trace $got, bytecode $want"
finish
