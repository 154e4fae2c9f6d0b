#!/bin/sh
# The two copies of the eval function (docs/EVENTS.md, "What it costs"):
#   - the untraced copy, _PyEval_EvalFrameDefault, has no hook left: its
#     machine code reads the recorder's mask once (the choice of copy) and
#     refers to nothing else of evalprof but the copies it jumps to (the
#     traced one, or while sampling the sampled or counted one);
#   - the sampled copy dispatches as the untraced one and has none of the
#     counting entries, which the counted copy has;
#   - a trace that stops while frames are live (a forked child stops
#     recording) leaves them running in the traced copy and new calls in
#     the untraced one: the program's results do not change, and the
#     parent's trace stays balanced.
#
#   copies.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"

# --- the untraced copy, from the interpreter's own machine code ------------
if command -v objdump > /dev/null 2>&1; then
    for sym in _PyEval_EvalFrameDefault _PyEval_EvalFrameDefault.cold; do
        objdump -d --no-show-raw-insn --disassemble="$sym" "$PY" >> "$T/untraced.s" 2>/dev/null
    done
    objdump -d --no-show-raw-insn --disassemble=evp_eval_frame_traced "$PY" > "$T/traced.s" 2>/dev/null
    insns=$(grep -c '^ *[0-9a-f]*:' "$T/untraced.s")
    mask=$(grep -c '<evp_rec_mask_>' "$T/untraced.s")
    others=$(grep -o '<evp[a-z_]*' "$T/untraced.s" | sort -u | tr -d '<' |
             grep -v -x -e evp_rec_mask_ -e evp_eval_frame_traced \
                 -e evp_eval_frame_sampled -e evp_eval_frame_counted | tr '\n' ' ')
    if [ "$insns" -gt 1000 ] && [ "$mask" = 1 ] && [ -z "$others" ] &&
       grep -q 'jmp .*<evp_eval_frame_traced>' "$T/untraced.s" &&
       grep -q 'jmp .*<evp_eval_frame_sampled>' "$T/untraced.s" &&
       grep -q 'jmp .*<evp_eval_frame_counted>' "$T/untraced.s"; then
        ok "untraced copy: $insns instructions, one test of the mask, a jump to the traced copy or (sampling) the sampled or counted one, no hook"
    else
        fail "untraced copy: $insns instructions, $mask reads of the mask, other evalprof symbols: '$others'"
    fi
    n=$(grep -c '<evp_rec_mask_>' "$T/traced.s")
    [ "$n" -gt 10 ] && ok "traced copy: $n tests of the mask" ||
        fail "traced copy: $n tests of the mask (evp_eval_frame_traced missing?)"
    # the sampled copy dispatches as the untraced one does: each handler
    # its own indirect jump (a dispatch merged into one shared jump
    # mispredicts, and cost 3.11's copy 1.14x); it stores the state word
    # where the loop's phase changes, never per instruction (a store in
    # every handler cost 3.11's copy 1.17x the untraced copy's
    # instructions), and those stores name their thread-pointer offset
    # (held in a register instead, it took a register from every handler)
    objdump -d --no-show-raw-insn --disassemble=evp_eval_frame_sampled "$PY" > "$T/sampled.s" 2>/dev/null
    uj=$(grep -c 'jmp  *\*' "$T/untraced.s")
    sj=$(grep -c 'jmp  *\*' "$T/sampled.s")
    viareg=$(grep -c ',%fs:(%' "$T/sampled.s")
    direct=$(grep -c 'movb  *\$0x[0-9a-f]*,%fs:0x' "$T/sampled.s")
    if [ "$uj" -gt 100 ] && [ $((sj * 10)) -ge $((uj * 9)) ] && [ "$viareg" = 0 ] &&
       [ "$direct" -ge 8 ] && [ $((direct * 3)) -lt "$sj" ]; then
        ok "sampled copy: $sj indirect jumps (untraced: $uj), $direct stores of the phase at a fixed offset, none per handler"
    else
        fail "sampled copy: $sj indirect jumps (untraced: $uj), $direct stores of the phase at a fixed offset (8 to a third of the jumps), $viareg through a register"
    fi
    # the counting entries (an add to the thread's counter of the opcode
    # at a fixed offset, then a jump to the handler) are the counted
    # copy's: in the sampled copy they cost spills around every handler
    # even while nothing counts
    objdump -d --no-show-raw-insn --disassemble=evp_eval_frame_counted "$PY" > "$T/counted.s" 2>/dev/null
    for sym in evp_eval_frame_sampled.cold evp_eval_frame_counted.cold; do
        objdump -d --no-show-raw-insn --disassemble="$sym" "$PY" > "$T/$sym.s" 2>/dev/null
    done
    sc=$(cat "$T/sampled.s" "$T/evp_eval_frame_sampled.cold.s" | grep -c 'addq  *\$0x1,%fs:0x')
    cc=$(cat "$T/counted.s" "$T/evp_eval_frame_counted.cold.s" | grep -c 'addq  *\$0x1,%fs:0x')
    if [ "$sc" = 0 ] && [ "$cc" -gt 100 ]; then
        ok "counting entries: $cc in the counted copy, none in the sampled one"
    else
        fail "counting entries: $cc in the counted copy (over 100 wanted), $sc in the sampled one (none wanted)"
    fi
else
    echo "note: no objdump here: the machine code of the copies is not checked"
fi

# --- a trace that stops while frames are live -------------------------------
want=$("$PY" "$PROGRAMS/workload.py" | grep checksum)
cat > "$T/fork.py" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[1])
import workload

def deep(n):
    if n:
        return deep(n - 1)
    pid = os.fork()
    if pid == 0:
        # this frame and its callers started in the traced copy
        workload.main()
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
    workload.main()

deep(20)
EOF
EVALPROF="$T/fork.evp" "$PY" "$T/fork.py" "$PROGRAMS" > "$T/fork.out" 2>&1
rc=$?
n=$(grep -c -x "$want" "$T/fork.out")
[ "$rc" = 0 ] && [ "$n" = 2 ] && ok "fork mid-run: child and parent both print '$want'" ||
    fail "fork mid-run: exit $rc, output: $(cat "$T/fork.out")"
[ "$(ls "$T" | grep -c '^fork\.evp\.')" = 0 ] || fail "fork mid-run: the child recorded"
if "$CHECK" "$T/fork.evp" > "$T/fork.chk"; then
    ok "fork mid-run: the parent's trace is balanced ($(value "kind enter" "$T/fork.chk") enters)"
else
    grep FAIL "$T/fork.chk"
    fail "fork mid-run: the parent's trace"
fi
finish
