#!/bin/sh
# Sample mode (EVALPROF_MODE=sample, docs/EVENTS.md "Sampled mode"): a
# deterministic hot loop sampled at 1 kHz (the default) gives a trace of samples only,
# whose state words name the loop's phases and whose top instruction is
# the loop's BINARY_OP; EVALPROF_COUNTS=1 counts every instruction
# exactly as the exact mode's op events do (per opcode name, over the
# whole run); every thread gets its own stream; the settings' bad values
# are one line on stderr and leave tracing off; a forked child that
# follows the fork samples into its own trace; daemon threads sampled
# while the interpreter exits do not crash it; the sampler thread
# (EVALPROF_SAMPLE_TIMER=thread) finds the same hot instruction without
# interrupting the thread, over threads that come and go, and says what
# it cannot tell (the program counter) and when it could not walk.
#
#   sample.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"
EVALPROF_CLI=$BUILD/evalprof
if [ ! -x "$EVALPROF_CLI" ]; then
    echo "FAIL: $EVALPROF_CLI not built"
    exit 1
fi
unset EVALPROF_MODE EVALPROF_COUNTS EVALPROF_SAMPLE_RATE EVALPROF_SAMPLE_CLOCK
export EVALPROF_QUIET=1 PYTHONHASHSEED=0
prog=$PROGRAMS/sampled.py
want=$("$PY" -S "$prog" 20000)
samples_in() { # samples_in FILE: the sample count of info's or summary's "sampled:" line
    awk '$1 == "sampled:" { gsub(",", "", $2); print $2; exit }' "$1"
}
stream_rows() { # stream_rows FILE: the rows of info's "sampled streams" table
    # (a name may hold blanks, "thread 1234": count the columns from the end,
    # samples $(NF - 3), periods $(NF - 2))
    sed -n '/^sampled streams:/,/^$/p' "$1" | awk '$1 ~ /^[0-9]+$/'
}

# --- samples, phases, the hot instruction --------------------------------
# (on 3.11 the loop's BINARY_OPs hold some 40% of its time and its
# STORE_FASTs, which free the ints they replace, some 28%: 15 million
# iterations give 400-500 samples, enough to tell them apart)
out=$(EVALPROF="$T/s.evp" EVALPROF_MODE=sample "$PY" -S "$prog" 15000000)
[ "$out" = "$(  "$PY" -S "$prog" 15000000)" ] && ok "sampling leaves the program's output alone" ||
    fail "sampled run printed '$out'"
"$EVALPROF_CLI" info "$T/s.evp" > "$T/s.info" 2>&1 || fail "info: $(head -n 1 "$T/s.info")"
"$EVALPROF_CLI" summary --group-specialized "$T/s.evp" > "$T/s.sum" 2>&1 ||
    fail "summary: $(head -n 1 "$T/s.sum")"
n=$(samples_in "$T/s.info")
events=$(awk '$1 == "events:" { print $2; exit }' "$T/s.info")
[ "${n:-0}" -ge 50 ] && [ "$events" = 0 ] && ok "$n samples, no events" ||
    fail "samples: '${n:-none}', events: '$events'"
# the end line counts samples, as `evalprof record --sample` does
env -u EVALPROF_QUIET EVALPROF="$T/q.evp" EVALPROF_MODE=sample "$PY" -S "$prog" 200000 > /dev/null 2> "$T/q.err"
qn=$("$EVALPROF_CLI" info "$T/q.evp" 2>&1 | awk '$1 == "sampled:" { print $2; exit }')
grep -Eq "^evalprof: wrote .*/q\.evp \($qn samples, [0-9.]+ kB, [0-9.]+ kB/s\)\$" "$T/q.err" &&
    ok "the end line counts the samples: $(cat "$T/q.err")" || fail "end line: $(cat "$T/q.err") (info: $qn samples)"
grep -q '^  evalprof.mode  *sample$' "$T/s.info" && grep -q '^  sample.rate_hz  *1000$' "$T/s.info" && grep -q '^  sample.clock  *cpu$' "$T/s.info" &&
    ok "metadata: evalprof.mode sample, the defaults: sample.rate_hz 1000, sample.clock cpu" || fail "metadata lacks evalprof.mode or sample.rate_hz"
# --- phases: stored where they change, each ended in time --------------
# The sampled copy stores no phase per instruction (dispatch and the eval
# breaker's fast path are in their instruction's row, and the summary says
# so); a phase that ends at the next instruction (loop enter, loop error,
# loop exception, exit) ends there: in a loop that makes no call nearly
# every sample is op, and one that raises and catches at every iteration
# spends a part of its time on the error path.
phase_share() { # phase_share PHASE FILE: the phase's share in "loop phases"
    awk -v r="$1" '/^loop phases:/ { f = 1; next } f && /^[a-z]/ { exit }
        f && index($0, " " r " ") == 1 { n = split(r, w, " "); v = $(n + 1)
        sub("%", "", v); print v; exit }' "$2"
}
phases=$(awk '/^loop phases:/ { f = 1; next } f && /^---/ { if (++d == 2) exit; next }
              d == 1 { sub(/^ /, ""); sub(/  .*/, ""); print }' "$T/s.sum" | tr '\n' ',')
opshare=$(phase_share op "$T/s.sum")
case ",$phases" in
*,dispatch,* | *,loop\ fast,*) fail "a per-instruction phase was sampled: '$phases'" ;;
*,op,*) if awk -v o="${opshare:-0}" 'BEGIN { exit !(o >= 90) }' &&
           grep -q '^note: *phases not sampled apart (dispatch,loop fast): ' "$T/s.sum"; then
            ok "phases: $phases op ${opshare}% of a loop without calls; dispatch and loop fast not sampled, as the note says"
        else
            fail "phases '$phases': op ${opshare}% of a loop without calls, or no note: $(grep '^note:' "$T/s.sum")"
        fi ;;
*) fail "no op phase among '$phases'" ;;
esac
EVALPROF="$T/ex.evp" EVALPROF_MODE=sample "$PY" -S -c '
def f(n):
    for i in range(n):
        try:
            raise ValueError(i)
        except ValueError:
            pass
f(1500000)'
"$EVALPROF_CLI" summary "$T/ex.evp" > "$T/ex.sum" 2>&1
err=$(phase_share "loop error" "$T/ex.sum")
exc=$(phase_share "loop exception" "$T/ex.sum")
exop=$(phase_share op "$T/ex.sum")
awk -v a="${err:-0}" -v b="${exc:-0}" -v o="${exop:-0}" 'BEGIN { exit !(a + b >= 3 && a + b <= 60 && o >= 30) }' &&
    ok "phases: a raising loop ${err}% loop error, ${exc}% loop exception, ${exop}% op" ||
    fail "phases: a raising loop '${err}'% loop error, '${exc}'% loop exception, '${exop}'% op"
# where: the hot loop's samples are partly in the eval function's own
# code; a loop around sum() spends its time in the C callee of a CALL
share() { # share ROW FILE: the percentage of row ROW of the "where" table
    awk -v r="$1" '/^where/ { f = 1 } f && index($0, " " r " ") == 1 {
        n = split(r, w, " "); v = $(n + 1); sub("%", "", v); print v; exit }' "$2"
}
ineval=$(share "in the eval loop" "$T/s.sum")
EVALPROF="$T/cc.evp" EVALPROF_MODE=sample "$PY" -S -c '
for i in range(300):
    sum(range(20000))'
"$EVALPROF_CLI" summary "$T/cc.evp" > "$T/cc.sum" 2>&1
ccall=$(share "C call (GIL held)" "$T/cc.sum")
awk -v a="${ineval:-0}" -v b="${ccall:-0}" 'BEGIN { exit !(a > 5 && b > 50) }' &&
    ok "flags: hot loop ${ineval}% in the eval loop, sum() loop ${ccall}% in a C call" ||
    fail "flags: hot loop '${ineval}'% in the eval loop, sum() loop '${ccall}'% in a C call"
top=$(sed -n '/^ops:/,$p' "$T/s.sum" | awk '/^ [A-Z]/ { print $1; exit }')
[ "$top" = BINARY_OP ] && ok "top instruction: BINARY_OP" || fail "top instruction: '$top'"
# ... and the hot function and line: hot() holds the loop, whose body
# line (x = x * 3 % 1000003) holds its BINARY_OPs
hotline=$(grep -n 'x = x \* 3 % 1000003' "$prog" | cut -d: -f1)
"$EVALPROF_CLI" summary --funcs "$T/s.evp" > "$T/s.funcs" 2>&1 || fail "summary --funcs: $(head -n 1 "$T/s.funcs")"
"$EVALPROF_CLI" summary --lines "$T/s.evp" > "$T/s.lines" 2>&1 || fail "summary --lines: $(head -n 1 "$T/s.lines")"
topfn=$(sed -n '/^functions/,$p' "$T/s.funcs" | awk '/^ [a-z]/ { print $1, $2; exit }')
topln=$(awk '/^ file:line/ { f = 1; next } f { print $1, $2, $5; exit }' "$T/s.lines")
case "$topfn|$topln" in
"hot ("*"/sampled.py:10)|"*"/sampled.py:$hotline hot "[0-9]*.[0-9]-[0-9]*.[0-9]%)
    ok "top function: $topfn; top line: $topln (share, 95% CI)" ;;
*) fail "top function '$topfn', top line '$topln' (want hot, sampled.py:$hotline, with an interval)" ;;
esac
out=$(EVALPROF="$T/m.evp" "$PY" -X evalprof_mode=sample -c '
import sys
x = 0
for i in range(3000000):
    x += i
print(sys._evalprof["mode"])')
"$EVALPROF_CLI" info "$T/m.evp" > "$T/m.info" 2>&1
mn=$(samples_in "$T/m.info")
[ "$out" = sample ] && [ "${mn:-0}" -ge 10 ] && ok "-X evalprof_mode=sample: sys._evalprof says mode sample, $mn samples" ||
    fail "-X evalprof_mode=sample: sys._evalprof mode '$out', '${mn:-no}' samples"

# --- exact counts --------------------------------------------------------
EVALPROF="$T/x.evp" EVALPROF_EVENTS=op "$PY" -S "$prog" 20000 > /dev/null
EVALPROF="$T/c.evp" EVALPROF_MODE=sample EVALPROF_COUNTS=1 "$PY" -S "$prog" 20000 > /dev/null
"$EVALPROF_CLI" summary --wide "$T/x.evp" |
    awk '/^ops:/ { f = 1; next } f && /^ [A-Z]/ { gsub(",", "", $2); print $1, $2 }' | sort > "$T/x.ops"
"$EVALPROF_CLI" info "$T/c.evp" |
    awk '$1 ~ /^counts\.op\./ { sub("counts.op.", "", $1); print $1, $2 }' | sort > "$T/c.ops"
nx=$(wc -l < "$T/x.ops")
bin=$(awk '$1 == "BINARY_OP_MULTIPLY_INT" { print $2 }' "$T/c.ops")
if [ "$nx" -ge 20 ] && [ "${bin:-0}" -ge 19000 ] && cmp -s "$T/x.ops" "$T/c.ops"; then
    ok "EVALPROF_COUNTS: the $nx opcodes' counts equal the exact mode's op events (BINARY_OP_MULTIPLY_INT $bin)"
else
    fail "EVALPROF_COUNTS: counts differ from the exact op events ($nx opcodes exact, BINARY_OP_MULTIPLY_INT ${bin:-none}):"
    diff "$T/x.ops" "$T/c.ops" | head -n 10
fi
EVALPROF="$T/n.evp" EVALPROF_MODE=sample "$PY" -S "$prog" 20000 > /dev/null
"$EVALPROF_CLI" info "$T/n.evp" | grep -q 'counts\.op\.' && fail "counts written without EVALPROF_COUNTS" ||
    ok "no counts without EVALPROF_COUNTS"
# With counts the program runs in the counted copy of the eval function,
# whose code the sampler must know as the sampled copy's: its samples of
# the hot loop are in the eval loop and name the loop's instruction.
EVALPROF="$T/cs.evp" EVALPROF_MODE=sample EVALPROF_COUNTS=1 "$PY" -S "$prog" 15000000 > /dev/null
"$EVALPROF_CLI" summary --group-specialized "$T/cs.evp" > "$T/cs.sum" 2>&1
csin=$(share "in the eval loop" "$T/cs.sum")
cstop=$(sed -n '/^ops:/,$p' "$T/cs.sum" | awk '/^ [A-Z]/ { print $1; exit }')
if [ "$cstop" = BINARY_OP ] && awk -v a="${csin:-0}" 'BEGIN { exit !(a > 5) }' &&
   "$EVALPROF_CLI" info "$T/cs.evp" | grep -q '^  counts\.op\.BINARY_OP_MULTIPLY_INT '; then
    ok "counted copy: ${csin}% of the samples in the eval loop (sampled copy: ${ineval}%), top instruction $cstop, counts written"
else
    fail "counted copy: '${csin}'% in the eval loop, top instruction '$cstop', or no counts: $(head -n 3 "$T/cs.sum")"
fi

# --- threads -------------------------------------------------------------
EVALPROF="$T/t.evp" EVALPROF_MODE=sample "$PY" -S "$prog" 300000 2 > /dev/null
"$EVALPROF_CLI" info "$T/t.evp" > "$T/t.info" 2>&1
streams=$(stream_rows "$T/t.info" | awk '$(NF - 3) + 0 > 0 || $(NF - 2) + 0 > 0' | wc -l)
main=$(stream_rows "$T/t.info" | awk '$2 == "main"' | wc -l)
[ "$streams" -ge 3 ] && [ "$main" = 1 ] && ok "3 threads: $streams sampled streams, one of them main" ||
    fail "threads: $streams sampled streams ($main main)"

# 16 threads, each spinning in a function of its own (mode B's program,
# work_0 ... work_15): each thread's stream holds its own function and no
# other thread's
EVALPROF="$T/t16.evp" EVALPROF_MODE=sample "$PY" -S "$HERE/../modeb/progs/sample_threads.py" 1000000 > /dev/null
"$EVALPROF_CLI" info "$T/t16.evp" > "$T/t16.info" 2>&1
own=0 mixed=""
for sid in $(stream_rows "$T/t16.info" | awk '$2 != "main" && $(NF - 3) + 0 > 0 { print $1 }'); do
    # the work_ functions with samples in this stream, by self share
    fns=$("$EVALPROF_CLI" summary --funcs --stream "$sid" "$T/t16.evp" 2>&1 |
          sed -n '/^functions/,$p' | awk '$1 ~ /^work_/ && $3 + 0 > 0 { print $1 }' | sort -u)
    case "$fns" in
    work_*[0-9]) [ "$(echo "$fns" | wc -l)" = 1 ] && own=$((own + 1)) || mixed="$mixed $sid:$(echo $fns | tr ' ' ,)" ;;
    esac
    echo "$fns" >> "$T/t16.fns"
done
distinct=$(sort -u "$T/t16.fns" 2>/dev/null | grep -c '^work_')
if [ "$own" = 16 ] && [ "$distinct" = 16 ] && [ -z "$mixed" ]; then
    ok "16 threads: 16 streams, each with its own work_ function and no other's"
else
    fail "16 threads: $own streams with one work_ function, $distinct distinct, mixed:${mixed:- none}"
fi

# --- threads without the GIL (wall clock) ----------------------------------
# mode B's program: a thread sleeps alone, then two threads take turns
# with the GIL; the main thread waits in join()
EVALPROF="$T/g.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_CLOCK=wall \
    "$PY" -S "$HERE/../modeb/progs/sample_gil.py" > /dev/null
where() { # where STREAM ROW: the row's share in that stream's "where" table
    "$EVALPROF_CLI" summary --stream "$1" "$T/g.evp" 2>&1 |
        awk -v r="$2" '/^where/ { f = 1 } f && index($0, " " r " ") == 1 {
            n = split(r, w, " "); v = $(n + 1); sub("%", "", v); print v; exit }'
}
sleep_sys=$(where 1 "no GIL, in a system call")
spin_a=$(where 2 "waiting for the GIL")
spin_b=$(where 3 "waiting for the GIL")
main_sys=$(where 0 "no GIL, in a system call")
if awk -v a="${sleep_sys:-0}" -v b="${spin_a:-0}" -v c="${spin_b:-0}" -v m="${main_sys:-0}" \
       'BEGIN { exit !(a > 90 && b > 25 && b < 75 && c > 25 && c < 75 && m > 60) }'; then
    ok "without the GIL: the sleeper ${sleep_sys}% in a system call, the spinners ${spin_a}% and ${spin_b}% waiting for the GIL, main ${main_sys}% in join"
else
    fail "without the GIL: sleeper in a call '$sleep_sys', spinners waiting '$spin_a' '$spin_b', main in a call '$main_sys'"
fi

# --- a forked child (EVALPROF_FORK=follow) ---------------------------------
# The child samples its forking thread into a trace of its own, and names
# again the functions the parent's samples had named before the fork;
# with the sampler thread too (the child's one reads the forking thread).
# (mode B's program: burn() sampled in the parent before the fork)
for timer in signal thread; do
    rm -f "$T"/f.evp*
    cpid=$(cd "$T" && EVALPROF="$T/f.evp" EVALPROF_MODE=sample EVALPROF_FORK=follow \
        EVALPROF_SAMPLE_TIMER=$([ $timer = thread ] && echo thread) \
        "$PY" -S "$HERE/../modeb/progs/sample_fork.py" | awk '{ print $1 }')
    if [ -n "$cpid" ] && [ -s "$T/f.evp.$cpid" ]; then
        "$EVALPROF_CLI" summary --funcs --wide "$T/f.evp.$cpid" > "$T/f.sum" 2>&1
        fn=$(samples_in "$T/f.sum")
        if grep -q '^ child_hot ' "$T/f.sum" && grep -q '^ burn ' "$T/f.sum" &&
           ! grep -q '<unknown>' "$T/f.sum" && [ "${fn:-0}" -ge 20 ] &&
           { [ $timer = signal ] || grep -q '^bias: .*read by the sampler thread' "$T/f.sum"; }; then
            ok "EVALPROF_FORK=follow ($timer): the child's trace holds $fn samples under child_hot and burn"
        else
            fail "EVALPROF_FORK=follow ($timer): the child's trace: $(head -c 2000 "$T/f.sum")"
        fi
    else
        fail "EVALPROF_FORK=follow ($timer): no trace of the child '$cpid' ($(ls "$T" | grep f.evp | tr '\n' ' '))"
    fi
done

# --- the program's own signals ---------------------------------------------
# mode B's program: its SIGPROF handler on setitimer(ITIMER_PROF), its
# SIGALRM on ITIMER_REAL, and a thread that blocks every signal for 0.3 s
# of CPU time print what they counted, sampled as untraced; with the
# wall clock, the blocked thread's periods wait for it to unblock and are
# counted in the weight of its first sample after
sigprog=$HERE/../modeb/progs/sample_signals.py
sigwant=$("$PY" -S "$sigprog")
for how in signal wall thread; do
    rm -f "$T/sig.evp"
    out=$(EVALPROF="$T/sig.evp" EVALPROF_MODE=sample \
        EVALPROF_SAMPLE_CLOCK=$([ $how = wall ] && echo wall || echo cpu) \
        EVALPROF_SAMPLE_RATE=$([ $how = wall ] && echo 4000 || echo 1000) \
        EVALPROF_SAMPLE_TIMER=$([ $how = thread ] && echo thread) \
        "$PY" -S "$sigprog" 2> "$T/sig.err")
    rc=$?
    "$EVALPROF_CLI" info "$T/sig.evp" > "$T/sig.info" 2>&1
    # the blocked thread (the one stream besides main): its samples and
    # the periods they stand for
    set -- $(stream_rows "$T/sig.info" | awk '$2 != "main" { gsub(",", ""); print $(NF - 3), $(NF - 2) }')
    bs=${1:-0} bp=${2:-0}
    held=$((bp - bs))
    if [ "$rc" = 0 ] && [ "$out" = "$sigwant" ] && [ "$bp" -gt 0 ] &&
       { [ $how != wall ] || [ "$held" -gt 400 ]; }; then
        ok "the program's own signals ($how): '$out' as untraced; its blocked thread $bs samples for $bp periods"
    else
        fail "the program's own signals ($how): exit $rc, '$out' (untraced '$sigwant'), blocked thread $bs samples, $bp periods: $(cat "$T/sig.err")"
    fi
done

# --- killed outright -------------------------------------------------------
# A sampled run killed with SIGKILL keeps what the writer flushed (every
# 200 ms): its samples read, under the function that ran.
rm -f "$T/k.evp"
(EVALPROF="$T/k.evp" EVALPROF_MODE=sample exec "$PY" -S "$HERE/../modeb/progs/forever.py" > "$T/k.out") &
kpid=$!
i=0
while [ "$i" -lt 100 ] && ! grep -q started "$T/k.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
sleep 1.5
kill -KILL "$kpid" 2>/dev/null
wait "$kpid" 2>/dev/null
"$EVALPROF_CLI" summary --funcs "$T/k.evp" > "$T/k.sum" 2> "$T/k.err"
rc=$?
kn=$(samples_in "$T/k.sum")
kfn=$(sed -n '/^functions/,$p' "$T/k.sum" | awk '/^ [a-z]/ { print $1; exit }')
if [ "$rc" = 0 ] && [ "${kn:-0}" -gt 100 ] && [ "$kfn" = spin ] && grep -q 'no end record' "$T/k.err"; then
    ok "killed with SIGKILL: $kn samples kept, spin on top, the reader says: $(head -n 1 "$T/k.err")"
else
    fail "killed with SIGKILL: exit $rc, ${kn:-no} samples, top '$kfn': $(head -n 2 "$T/k.err")"
fi

# --- daemon threads at exit ------------------------------------------------
# Finalization clears and frees the thread states of daemon threads that
# still run (in C, without the GIL) and still take samples: a walk under
# way on such a thread must end before its thread state is freed, and no
# walk may start after.  EVALPROF_TEST_WALK_DELAY_US makes each walk off
# the main thread spin first, widening that window; MALLOC_PERTURB_ fills
# freed memory, so that a walk through it faults (2-4 runs in 10-12 did,
# without the wait).
crashed=0
for i in $(seq 1 20); do
    rm -f "$T/daemon.evp"
    EVALPROF="$T/daemon.evp" EVALPROF_MODE=sample EVALPROF_TEST_WALK_DELAY_US=300 \
        MALLOC_PERTURB_=24 "$PY" -X faulthandler -S "$PROGRAMS/daemon_exit.py" 24 \
        > /dev/null 2> "$T/daemon.err" || { crashed=$((crashed + 1)); head -n 3 "$T/daemon.err"; }
done
"$EVALPROF_CLI" info "$T/daemon.evp" > "$T/daemon.info" 2>&1
dn=$(samples_in "$T/daemon.info")
[ "$crashed" = 0 ] && [ "${dn:-0}" -ge 1 ] &&
    ok "20 exits with 24 daemon threads sampled mid-walk: no crash ($dn samples in the last)" ||
    fail "daemon threads at exit: $crashed of 20 runs failed, last trace: ${dn:-no} samples"
# --- the walk's fault guard ------------------------------------------------
# A walk reads what may be a half-written frame with plain loads under a
# SIGSEGV/SIGBUS handler of evalprof's (Python/evalprof.c, evp_safe_read):
# every 10th walk made to fault (EVALPROF_TEST_WALK_FAULT) is dropped, its
# periods counted unsampled, and the program runs on as untraced; a
# handler installed in front of evalprof's (-X faulthandler, after the
# sampler starts) sends the walks back to process_vm_readv; a SIGSEGV the
# program sends itself still ends it.
out=$(EVALPROF="$T/fault.evp" EVALPROF_MODE=sample EVALPROF_TEST_WALK_FAULT=10 \
    "$PY" -S "$prog" 3000000 2> "$T/fault.err")
rc=$?
want3=$("$PY" -S "$prog" 3000000)
"$EVALPROF_CLI" info "$T/fault.evp" > "$T/fault.info" 2>&1
fn=$(samples_in "$T/fault.info")
faults=$(awk '$1 == "sample.walk_faults" { print $2; exit }' "$T/fault.info")
unsampled=$(awk '$1 == "sample.unsampled" { print $2; exit }' "$T/fault.info")
if [ "$rc" = 0 ] && [ "$out" = "$want3" ] && [ "${fn:-0}" -ge 20 ] &&
   [ "${faults:-0}" -ge 2 ] && [ "${unsampled:-0}" -ge "${faults:-1}" ] &&
   [ $((fn / faults)) -ge 6 ] && [ $((fn / faults)) -le 12 ] &&
   grep -q '^  sample.fault_guard  *SIGSEGV and SIGBUS: plain reads$' "$T/fault.info"; then
    ok "faulting walks dropped: $faults of $((fn + faults)), $unsampled periods unsampled, the program's output unchanged"
else
    fail "fault guard: exit $rc, output '$out', $fn samples, walk faults '$faults', unsampled '$unsampled', $(grep fault_guard "$T/fault.info"), stderr: $(head -n 2 "$T/fault.err")"
fi
out=$(EVALPROF="$T/fh.evp" EVALPROF_MODE=sample "$PY" -X faulthandler -S "$prog" 3000000 2> "$T/fh.err")
rc=$?
"$EVALPROF_CLI" info "$T/fh.evp" > "$T/fh.info" 2>&1
if [ "$rc" = 0 ] && [ "$out" = "$want3" ] &&
   grep -q '^  sample.fault_guard  *replaced by the program.s handler' "$T/fh.info"; then
    ok "-X faulthandler in front of the guard: $(awk '$1 == "sample.fault_guard" { $1 = ""; print; exit }' "$T/fh.info")"
else
    fail "-X faulthandler: exit $rc, output '$out', $(grep fault_guard "$T/fh.info"), stderr: $(head -n 2 "$T/fh.err")"
fi
code='import os, signal
x = 0
for i in range(300000):
    x = (x + i * i) % 1000003
print(x, flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
print("survived")'
plain=$("$PY" -S -c "$code" 2> /dev/null; echo "rc $?")
got=$(EVALPROF="$T/segv.evp" EVALPROF_MODE=sample "$PY" -S -c "$code" 2> /dev/null; echo "rc $?")
[ "$got" = "$plain" ] && case "$plain" in *"rc 139") true ;; *) false ;; esac &&
    ok "a SIGSEGV the program sends itself ends it, as untraced" ||
    fail "SIGSEGV sent: sampled '$got', untraced '$plain'"
# --- the benchmarks' empty handler ------------------------------------------
# EVALPROF_TEST_SAMPLE_NOP (bench/cpython/sampled.py --nop): no sample is
# taken, and the trace's overhead line says which run it was.
#   nop_run N: "$prog" with EVALPROF_TEST_SAMPLE_NOP=N into $T/nopN.evp;
#   sets rc, out, nn (its samples), nops (sample.nop_signals), and
#   $T/nopN.info
nop_run() {
    out=$(EVALPROF="$T/nop$1.evp" EVALPROF_MODE=sample EVALPROF_TEST_SAMPLE_NOP=$1 \
        "$PY" -S "$prog" 3000000)
    rc=$?
    "$EVALPROF_CLI" info "$T/nop$1.evp" > "$T/nop$1.info" 2>&1
    nn=$(samples_in "$T/nop$1.info")
    nops=$(awk '$1 == "sample.nop_signals" { print $2; exit }' "$T/nop$1.info")
}
# =1: the signals still come at the rate and are handled, by returning at
# once
nop_run 1
if [ "$rc" = 0 ] && [ "$out" = "$want3" ] && [ "$nn" = 0 ] && [ "${nops:-0}" -ge 20 ] &&
   grep -q "EVALPROF_TEST_SAMPLE_NOP): [0-9,]* signals handled by returning at once" "$T/nop1.info"; then
    ok "EVALPROF_TEST_SAMPLE_NOP: $nops signals handled, no sample taken, said on the overhead line"
else
    fail "EVALPROF_TEST_SAMPLE_NOP: exit $rc, output '$out', $nn samples, nop signals '$nops'"
fi
# =2: the perf event overflows, no signal is sent (the timer interrupts alone)
nop_run 2
if [ "$rc" = 0 ] && [ "$out" = "$want3" ] && [ "$nn" = 0 ] &&
   grep -q '^  sample.nop  *interrupts$' "$T/nop2.info" && [ "$nops" = 0 ] &&
   grep -q "EVALPROF_TEST_SAMPLE_NOP=2): the perf event's overflows interrupted the thread" "$T/nop2.info"; then
    ok "EVALPROF_TEST_SAMPLE_NOP=2: no signal, no sample, said on the overhead line"
else
    fail "EVALPROF_TEST_SAMPLE_NOP=2: exit $rc, output '$out', $nn samples, $(grep 'sample.nop' "$T/nop2.info" | tr -s ' ')"
fi
# =3: no timer, no signal: the sampler thread reads each thread's CPU clock
nop_run 3
if [ "$rc" = 0 ] && [ "$out" = "$want3" ] && [ "$nn" = 0 ] && [ "${nops:-0}" -ge 20 ] &&
   grep -q '^  sample.nop  *sampler thread$' "$T/nop3.info" &&
   grep -q "EVALPROF_TEST_SAMPLE_NOP=3): a sampler thread read each thread's CPU clock [0-9,]* times" "$T/nop3.info"; then
    ok "EVALPROF_TEST_SAMPLE_NOP=3: $nops reads by the sampler thread, no signal, no sample"
else
    fail "EVALPROF_TEST_SAMPLE_NOP=3: exit $rc, output '$out', $nn samples, $(grep 'sample.nop' "$T/nop3.info" | tr -s ' ')"
fi
# --- the sampler thread (EVALPROF_SAMPLE_TIMER=thread) ----------------------
# No thread is interrupted: the recorder's sampler thread reads the running
# thread's state word and frames from outside it, every period of its CPU
# time.  Its samples name the hot loop's phase and instruction as the
# signal's do, have no program counter (a "where" row of their own, none
# in the eval loop), summary's bias: line says what reading from outside
# the thread does to the shares, and the overhead line gives the sampler
# thread's CPU.
want15=$("$PY" -S "$prog" 15000000)
out=$(EVALPROF="$T/pk.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_TIMER=thread "$PY" -S "$prog" 15000000)
rc=$?
"$EVALPROF_CLI" info "$T/pk.evp" > "$T/pk.info" 2>&1
"$EVALPROF_CLI" summary --group-specialized "$T/pk.evp" > "$T/pk.sum" 2>&1
pn=$(samples_in "$T/pk.info")
peeks=$(awk '$1 == "sample.peeks" { print $2; exit }' "$T/pk.info")
ptop=$(sed -n '/^ops:/,$p' "$T/pk.sum" | awk '/^ [A-Z]/ { print $1; exit }')
nopc=$(share "GIL held: eval loop, C call or runtime (not told: sampler thread)" "$T/pk.sum")
pineval=$(share "in the eval loop" "$T/pk.sum")
pop=$(phase_share op "$T/pk.sum")
if [ "$rc" = 0 ] && [ "$out" = "$want15" ] && [ "${pn:-0}" -ge 50 ] && [ "${peeks:-0}" -ge "${pn:-1}" ] &&
   [ "$ptop" = BINARY_OP ] && [ "$pineval" = 0.0 ] &&
   awk -v a="${nopc:-0}" -v o="${pop:-0}" 'BEGIN { exit !(a >= 90 && o >= 90) }' &&
   grep -q "^  sample.sampler  *sampler thread: each running thread's frames read from outside it" "$T/pk.info" &&
   grep -q '^  sample.signal  *none$' "$T/pk.info" &&
   grep -Eq '^bias: *(9[0-9]|100)\.[0-9]% of the periods were read by the sampler thread, from outside the thread' "$T/pk.sum" &&
   ! grep -q 'read by the sampler thread' "$T/s.sum" &&
   grep -q "^overhead: .*evalprof's sampler thread, beside the program, [0-9.]* ms of CPU over its ticks (its wake-ups, each thread's clock and state read, and [0-9,]* walks), interrupting no thread" "$T/pk.info"; then
    ok "sampler thread: $pn samples in $peeks walks, top instruction $ptop, op ${pop}%, ${nopc}% with no program counter, 0% claimed in the eval loop"
else
    fail "sampler thread: exit $rc, output '$out', $pn samples, peeks '$peeks', top '$ptop', op '$pop', no PC '$nopc', in eval '$pineval', $(grep -E 'sample.sampler|sample.signal|^overhead' "$T/pk.info" | tr -s ' ' | tr '\n' ';') $(grep '^bias:' "$T/pk.sum" "$T/s.sum")"
fi
# every thread, each its own stream, as with the signals (through
# `evalprof record --sampler thread`)
"$EVALPROF_CLI" record --sample --sampler thread -q -o "$T/pkt.evp" -- "$PY" -S "$prog" 300000 2 > /dev/null
"$EVALPROF_CLI" info "$T/pkt.evp" > "$T/pkt.info" 2>&1
streams=$(stream_rows "$T/pkt.info" | awk '$(NF - 3) + 0 > 0' | wc -l)
[ "$streams" -ge 3 ] && grep -q "^  sample.sampler  *sampler thread: each running thread's frames" "$T/pkt.info" &&
    ok "record --sampler thread, 3 threads: $streams streams with samples" ||
    fail "record --sampler thread, threads: $streams streams with samples: $(sed -n '/^sampled streams:/,/^$/p' "$T/pkt.info" | tr -s ' ') $(grep sample.sampler "$T/pkt.info")"
# `--sampler signal` undoes EVALPROF_SAMPLE_TIMER=thread and keeps rt
# (the real-time signal through F_SETSIG in place of SIGTRAP)
for t in thread rt; do
    EVALPROF_SAMPLE_TIMER=$t "$EVALPROF_CLI" record --sample --sampler signal -q -o "$T/pks-$t.evp" -- \
        "$PY" -S "$prog" 300000 > /dev/null
    how=$("$EVALPROF_CLI" info "$T/pks-$t.evp" 2>&1 | awk '$1 == "sample.sampler" { $1 = ""; print; exit }')
    case "$t:$how" in
    "thread: perf_event_open task-clock, "*) ok "EVALPROF_SAMPLE_TIMER=thread, record --sampler signal:$how" ;;
    "rt: perf_event_open task-clock, F_SETSIG"*) ok "EVALPROF_SAMPLE_TIMER=rt, record --sampler signal:$how" ;;
    *) fail "EVALPROF_SAMPLE_TIMER=$t, record --sampler signal: sampler '$how'" ;;
    esac
done
# threads that start, run and end while the sampler thread reads them at
# 20 kHz, a generator's frames, calls pushed and popped under the walk: the
# program's output unchanged, and the walks that met a frame chain that
# moved are few
wantc=$("$PY" -S "$PROGRAMS/churn.py")
out=$(EVALPROF="$T/churn.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_TIMER=thread EVALPROF_SAMPLE_RATE=20000 \
    "$PY" -S "$PROGRAMS/churn.py" 2> "$T/churn.err")
rc=$?
"$EVALPROF_CLI" info "$T/churn.evp" > "$T/churn.info" 2>&1
cn=$(samples_in "$T/churn.info")
races=$(awk '$1 == "sample.walk_races" { print $2; exit }' "$T/churn.info")
if [ "$rc" = 0 ] && [ "$out" = "$wantc" ] && [ "${cn:-0}" -ge 100 ] && [ $((${races:-0} * 20)) -le "${cn:-0}" ]; then
    ok "sampler thread at 20 kHz over threads that come and go: $cn samples, ${races:-0} walks dropped for a moving frame chain"
else
    fail "sampler thread churn: exit $rc, output '$out', $cn samples, walk races '$races', stderr: $(head -n 2 "$T/churn.err")"
fi
# the sampler thread's walks fault under evalprof's guard too: dropped,
# their periods unsampled
out=$(EVALPROF="$T/pkf.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_TIMER=thread EVALPROF_TEST_WALK_FAULT=10 \
    "$PY" -S "$prog" 3000000 2> "$T/pkf.err")
rc=$?
"$EVALPROF_CLI" info "$T/pkf.evp" > "$T/pkf.info" 2>&1
fn=$(samples_in "$T/pkf.info")
faults=$(awk '$1 == "sample.walk_faults" { print $2; exit }' "$T/pkf.info")
if [ "$rc" = 0 ] && [ "$out" = "$want3" ] && [ "${fn:-0}" -ge 20 ] && [ "${faults:-0}" -ge 2 ]; then
    ok "sampler thread: faulting walks dropped ($faults of $((fn + faults))), the program's output unchanged"
else
    fail "sampler thread, fault guard: exit $rc, output '$out', $fn samples, walk faults '$faults', stderr: $(head -n 2 "$T/pkf.err")"
fi
# a handler of the program's in front of the guard (-X faulthandler): the
# sampler thread reads frames that may be freed under it, so it no longer
# walks: it signals each thread to sample itself (its reads then
# process_vm_readv), and the trace says so; only the walks before the
# handler was installed have no program counter
out=$(EVALPROF="$T/pkh.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_TIMER=thread \
    "$PY" -X faulthandler -S "$prog" 3000000 2> "$T/pkh.err")
rc=$?
"$EVALPROF_CLI" info "$T/pkh.evp" > "$T/pkh.info" 2>&1
hn=$(samples_in "$T/pkh.info")
psig=$(awk '$1 == "sample.peek_signals" { print $2; exit }' "$T/pkh.info")
"$EVALPROF_CLI" summary "$T/pkh.evp" > "$T/pkh.sum" 2>&1
hpc=$(share "GIL held: eval loop, C call or runtime (not told: sampler thread)" "$T/pkh.sum")
if [ "$rc" = 0 ] && [ "$out" = "$want3" ] && [ "${psig:-0}" -ge 20 ] && [ "${hn:-0}" -ge "$((psig * 9 / 10))" ] &&
   awk -v h="${hpc:-0}" 'BEGIN { exit !(h <= 10) }' &&
   grep -q "^overhead: .*and [0-9,]* signals it sent instead (a handler of the program's had replaced the walk's fault guard): evalprof's signal handlers [0-9.]* ms in [0-9,]* signals" "$T/pkh.info" &&
   grep -q "^  sample.fault_guard  *replaced by the program's handler: plain reads until the sampler thread saw it, then each thread signalled to sample itself, with process_vm_readv$" "$T/pkh.info"; then
    ok "sampler thread under -X faulthandler: $psig samples taken by signal instead, with their program counter (${hpc:-0}% without, from before the handler), said in sample.fault_guard"
else
    fail "sampler thread, -X faulthandler: exit $rc, output '$out', $hn samples, peek signals '$psig', no-PC row '$hpc', $(grep fault_guard "$T/pkh.info"), stderr: $(head -n 2 "$T/pkh.err")"
fi
# the perf cross-check cannot compare the leaf share: no program counter
if perf record -q -e cpu-clock -o "$T/probe.data" -- true > /dev/null 2>&1; then
    "$EVALPROF_CLI" perf --trace "$T/px.evp" -o "$T/px.out" -- env EVALPROF="$T/px.evp" EVALPROF_MODE=sample \
        EVALPROF_SAMPLE_TIMER=thread "$PY" -S "$prog" 3000000 > "$T/px.txt" 2> "$T/px.err"
    if grep -q '^  inside the eval function' "$T/px.txt" &&
       grep -q 'leaf in the eval function: the trace cannot tell (its samples were read by the sampler thread' "$T/px.txt"; then
        ok "perf cross-check of the sampler thread's trace: no leaf share claimed"
    else
        fail "perf cross-check of the sampler thread's trace: $(head -n 3 "$T/px.err") $(grep -i leaf "$T/px.txt")"
    fi
else
    echo "skip: perf cannot record here: the cross-check of the sampler thread's trace"
fi

# --- the clock and bad settings -------------------------------------------
EVALPROF="$T/cpu.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_CLOCK=wall EVALPROF_SAMPLE_RATE=2000 \
    "$PY" -S "$prog" 20000 > /dev/null
"$EVALPROF_CLI" info "$T/cpu.evp" | grep -q '^  sample.clock  *wall$' &&
    "$EVALPROF_CLI" info "$T/cpu.evp" | grep -q '^  sample.rate_hz  *2000$' &&
    ok "EVALPROF_SAMPLE_CLOCK=wall, EVALPROF_SAMPLE_RATE=2000" || fail "wall clock or rate not in the metadata"
for bad in "EVALPROF_MODE=sampled" "EVALPROF_SAMPLE_RATE=0" "EVALPROF_SAMPLE_RATE=fast" \
           "EVALPROF_SAMPLE_RATE=1000000" "EVALPROF_SAMPLE_CLOCK=sundial" \
           "EVALPROF_SAMPLE_TIMER=sundial"; do
    rm -f "$T/bad.evp"
    out=$(env EVALPROF="$T/bad.evp" EVALPROF_MODE=sample "$bad" "$PY" -S "$prog" 20000 2> "$T/bad.err")
    rc=$?
    if [ "$rc" = 0 ] && [ "$out" = "$want" ] && [ "$(wc -l < "$T/bad.err")" = 1 ] &&
       grep -q 'tracing is off' "$T/bad.err" && [ ! -s "$T/bad.evp" ]; then
        ok "$bad: $(cat "$T/bad.err")"
    else
        fail "$bad: exit $rc, output '$out', stderr: $(cat "$T/bad.err")"
    fi
done
rm -f "$T/bad.evp"
out=$(EVALPROF="$T/bad.evp" EVALPROF_MODE=sample EVALPROF_SAMPLE_TIMER=thread EVALPROF_SAMPLE_CLOCK=wall \
    "$PY" -S "$prog" 20000 2> "$T/bad.err")
rc=$?
if [ "$rc" = 0 ] && [ "$out" = "$want" ] && [ "$(wc -l < "$T/bad.err")" = 1 ] &&
   grep -q 'EVALPROF_SAMPLE_TIMER=thread samples CPU time.*tracing is off' "$T/bad.err" && [ ! -s "$T/bad.evp" ]; then
    ok "the sampler thread with the wall clock: $(cat "$T/bad.err")"
else
    fail "the sampler thread with the wall clock: exit $rc, output '$out', stderr: $(cat "$T/bad.err")"
fi
finish
