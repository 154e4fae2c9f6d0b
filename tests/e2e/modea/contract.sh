#!/bin/sh
# The instrumented interpreter's run-time contract (docs/EVENTS.md):
# tracing is off unless asked for; EVALPROF and -X evalprof start it;
# event classes select kinds; sys._evalprof tells an instrumented
# interpreter and describes the trace; child processes get their own
# files (a second writer of one path is told where it writes); bad input
# is one line on stderr and changes nothing else; a trace removed while
# recording, a full disk and a file-size limit are said at exit.
#
#   contract.sh VERSION BUILD_DIR CHECK_TRACE
. "$(dirname "$0")/lib.sh"

# --- off by default ---------------------------------------------------------
out=$("$PY" -c 'import sys; print(sys._evalprof)' 2>"$T/err")
[ "$out" = "None" ] && [ ! -s "$T/err" ] && ok "sys._evalprof is None when not tracing" ||
    fail "untraced: sys._evalprof printed '$out', stderr: $(cat "$T/err")"

# --- EVALPROF=FILE ------------------------------------------------------------
out=$(EVALPROF="$T/env.evp" "$PY" -c 'import sys; d = sys._evalprof; print(d["path"], d["events"], d["pid"] > 0)')
[ "$out" = "$T/env.evp all True" ] && ok "EVALPROF: sys._evalprof describes the trace" ||
    fail "EVALPROF: sys._evalprof gave '$out'"
"$CHECK" "$T/env.evp" > "$T/env.out" || fail "EVALPROF trace does not check: $(grep FAIL "$T/env.out")"
[ "$(value "kind init" "$T/env.out")" = 1 ] && [ "$(value "kind fini" "$T/env.out")" = 1 ] &&
    ok "one init and one fini" || fail "init/fini counts: $(grep -E 'kind (init|fini)' "$T/env.out" | tr '\n' ' ')"

# --- the line at exit ----------------------------------------------------------
# As `evalprof record` of a stock interpreter says it: what was written,
# its events (those `evalprof info` counts), size and rate; EVALPROF_QUIET
# leaves it out.
EVALPROF="$T/line.evp" "$PY" "$PROGRAMS/workload.py" > /dev/null 2>"$T/line.err"
n=$(sed -n "s/^evalprof: wrote $(printf '%s' "$T" | sed 's/[.[\*^$/]/\\&/g')\/line.evp (\([0-9,]*\) events, [0-9.]* [km]B, [0-9.]* MB\/s)\$/\1/p" "$T/line.err")
info=$("$BUILD/evalprof" info "$T/line.evp" | sed -n 's/^events: *\([0-9,]*\) in .*/\1/p')
[ "$(wc -l < "$T/line.err")" = 1 ] && [ -n "$n" ] && [ "$n" = "$info" ] &&
    ok "exit line: $(cat "$T/line.err") (info: $info events)" ||
    fail "exit line: '$(cat "$T/line.err")', info says $info events"
EVALPROF="$T/lineq.evp" EVALPROF_QUIET=1 "$PY" -c 'pass' 2>"$T/line.err"
[ ! -s "$T/line.err" ] && ok "EVALPROF_QUIET: no exit line" || fail "EVALPROF_QUIET: $(cat "$T/line.err")"
"$BUILD/evalprof" record -o "$T/rec.evp" -- "$PY" -c 'pass' 2>"$T/line.err"
[ "$(wc -l < "$T/line.err")" = 1 ] && grep -q "^evalprof: wrote $T/rec.evp (" "$T/line.err" &&
    ok "evalprof record: the exit line" || fail "evalprof record: $(cat "$T/line.err")"
"$BUILD/evalprof" record -q -o "$T/rec.evp" -- "$PY" -c 'pass' 2>"$T/line.err"
[ ! -s "$T/line.err" ] && ok "evalprof record -q: no exit line" || fail "evalprof record -q: $(cat "$T/line.err")"

# --- -X evalprof=FILE, -X evalprof_events=op ------------------------------------
"$PY" -X evalprof="$T/x.evp" -X evalprof_events=op -c 'sum(range(1000))'
"$CHECK" "$T/x.evp" > "$T/x.out" || fail "-X trace does not check"
nop=$(value "kind op" "$T/x.out")
others=$(awk '$1 == "kind" && $2 != "op" && $2 != "init" && $2 != "fini" { s += $3 } END { print s + 0 }' "$T/x.out")
[ "${nop:-0}" -gt 0 ] && [ "$others" = 0 ] && ok "-X evalprof_events=op records op events only ($nop)" ||
    fail "-X evalprof_events=op: $nop op events, $others others"

# --- event classes ---------------------------------------------------------------
EVALPROF="$T/nd.evp" EVALPROF_EVENTS=no-dispatch "$PY" -c 'sum(range(1000))'
"$CHECK" "$T/nd.evp" > "$T/nd.out" || fail "no-dispatch trace does not check"
[ "$(value "kind dispatch" "$T/nd.out")" = 0 ] && [ "$(value "kind op" "$T/nd.out")" -gt 0 ] &&
    [ "$(value "kind enter" "$T/nd.out")" -gt 0 ] && ok "EVALPROF_EVENTS=no-dispatch" ||
    fail "no-dispatch: dispatch=$(value "kind dispatch" "$T/nd.out")"
EVALPROF="$T/fr.evp" EVALPROF_EVENTS=frames,loop-fast "$PY" -c 'sum(range(1000))'
"$CHECK" "$T/fr.evp" > "$T/fr.out" || fail "frames trace does not check"
[ "$(value "kind op" "$T/fr.out")" = 0 ] && [ "$(value "kind enter" "$T/fr.out")" -gt 0 ] &&
    [ "$(value "kind loop-fast" "$T/fr.out")" -gt 0 ] && [ "$(value "kind loop-enter" "$T/fr.out")" = 0 ] &&
    ok "EVALPROF_EVENTS=frames,loop-fast" || fail "frames,loop-fast: wrong kinds"

# --- bad input: one line on stderr, nothing else changes --------------------------
ref=$("$PY" -c 'print(6 * 7)')
check_bad() {  # check_bad WHAT ENV... -- ARGS...
    what=$1; shift
    out=$(env "$@" -c 'import sys; print(6 * 7, sys._evalprof)' 2>"$T/err"); rc=$?
    lines=$(wc -l < "$T/err")
    if [ "$rc" = 0 ] && [ "$out" = "$ref None" ] && [ "$lines" = 1 ] && grep -q '^evalprof: ' "$T/err"; then
        ok "$what: $(cat "$T/err")"
    else
        fail "$what: rc=$rc out='$out' stderr=$(cat "$T/err")"
    fi
}
check_bad "unwritable trace path" EVALPROF=/nonexistent/dir/t.evp "$PY"
check_bad "trace path is a directory" EVALPROF="$T" "$PY"
check_bad "unknown event class" EVALPROF="$T/bad.evp" EVALPROF_EVENTS=op,bogus "$PY"
check_bad "-X evalprof without a file" "$PY" -X evalprof
[ ! -e "$T/bad.evp" ] && ok "no trace file after a refused event list" || fail "a trace file was created"

# A disk that fills up while tracing: one line at exit, the program as
# usual, the trace readable up to the error (needs a small tmpfs: root).
mkdir -p "$T/tiny"
if mount -t tmpfs -o size=256k tmpfs "$T/tiny" 2>/dev/null; then
    out=$(EVALPROF="$T/tiny/t.evp" "$PY" -c '
s = 0
for i in range(200000): s += i
print(s)' 2>"$T/err"); rc=$?
    if [ "$rc" = 0 ] && [ "$out" = 19999900000 ] && [ "$(wc -l < "$T/err")" = 1 ] &&
       grep -q '^evalprof: trace .* is incomplete: No space left on device' "$T/err"; then
        ok "disk full: $(cat "$T/err")"
    else
        fail "disk full: rc=$rc out=$out stderr=$(cat "$T/err")"
    fi
    "$CHECK" "$T/tiny/t.evp" > /dev/null 2>&1
    [ $? -le 1 ] && ok "disk full: the partial trace is readable" || fail "disk full: partial trace unreadable"
    umount "$T/tiny"
else
    echo "note: no tmpfs mount here (not root?): disk-full check not run"
fi

# A FIFO as the trace: refused at once, never opened (it would block).
mkfifo "$T/fifo"
check_bad "trace path is a FIFO" EVALPROF="$T/fifo" timeout 30 "$PY"

# --- one file, one writer ------------------------------------------------------------
# A second process given the path while the first records: a file of its
# own, said in one line; neither trace holds the other's events.
cat > "$T/wait.py" <<'EOF'
import os, sys, time
open(sys.argv[1] + ".started", "w").close()
while not os.path.exists(sys.argv[1] + ".go"):
    sum(range(100))
    time.sleep(0.001)
EOF
EVALPROF="$T/two.evp" "$PY" "$T/wait.py" "$T/a" 2>"$T/a.err" &
apid=$!
n=0
while [ ! -e "$T/a.started" ] && [ "$n" -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
out=$(EVALPROF="$T/two.evp" "$PY" -c 'print(6 * 7)' 2>"$T/b.err")
# EVALPROF_QUIET: the same move, without the notice
qout=$(EVALPROF="$T/two.evp" EVALPROF_QUIET=1 "$PY" -c 'import sys
print(sys._evalprof["path"])' 2>"$T/q.err")
touch "$T/a.go"
wait "$apid"
alt=$(sed -n 's/^evalprof: .* is being written by another process: this one writes //p' "$T/b.err")
if [ "$out" = 42 ] && [ "$(wc -l < "$T/b.err")" = 2 ] && [ -n "$alt" ] &&
   head -n 1 "$T/b.err" | grep -q "^evalprof: $T/two.evp is being written by another process" &&
   tail -n 1 "$T/b.err" | grep -q "^evalprof: wrote $alt ("; then
    ok "second writer: $(tr '\n' ' ' < "$T/b.err")"
else
    fail "second writer: out=$out stderr=$(cat "$T/b.err")"
fi
[ "$(wc -l < "$T/a.err")" = 1 ] && grep -q "^evalprof: wrote $T/two.evp (" "$T/a.err" &&
    ok "first writer: only its exit line on stderr" || fail "first writer printed: $(cat "$T/a.err")"
case "$qout" in
"$T/two.evp."*) [ ! -s "$T/q.err" ] && ok "EVALPROF_QUIET: moved to $qout, nothing on stderr" ||
    fail "EVALPROF_QUIET: stderr: $(cat "$T/q.err")" ;;
*) fail "EVALPROF_QUIET: wrote '$qout', not $T/two.evp.<pid>" ;;
esac
if [ -n "$alt" ] && "$CHECK" "$T/two.evp" > "$T/two.out" && "$CHECK" "$alt" > "$T/alt.out" &&
   [ "$(value "kind init" "$T/two.out")" = 1 ] && [ "$(value "kind init" "$T/alt.out")" = 1 ]; then
    ok "two writers: both traces whole, one run each"
else
    fail "two writers: $(cat "$T/two.out" "$T/alt.out" 2>&1 | grep FAIL | head -n 3 | tr '\n' ' ')"
fi

# The trace's directory deleted while recording: said at exit.
mkdir "$T/doomed"
out=$(EVALPROF="$T/doomed/x.evp" "$PY" -c 'import shutil, sys
shutil.rmtree(sys.argv[1])
print(6 * 7)' "$T/doomed" 2>"$T/err"); rc=$?
if [ "$rc" = 0 ] && [ "$out" = 42 ] && [ "$(wc -l < "$T/err")" = 1 ] &&
   grep -q "^evalprof: trace $T/doomed/x.evp was removed or replaced while recording: the [0-9]* events written to it are lost$" "$T/err"; then
    ok "trace removed: $(cat "$T/err")"
else
    fail "trace removed: rc=$rc out=$out stderr=$(cat "$T/err")"
fi

# A file-size limit below one chunk: no event fits, and the trace's end
# record (written after the error) counts them all.
out=$( (ulimit -f 16 && EVALPROF="$T/lim.evp" "$PY" -c '
s = 0
for i in range(200000): s += i
print(s)') 2>"$T/err"); rc=$?
if [ "$rc" = 0 ] && [ "$out" = 19999900000 ] && [ "$(wc -l < "$T/err")" = 1 ] &&
   grep -q '^evalprof: trace .* is incomplete: File too large ([1-9][0-9]* events lost)$' "$T/err"; then
    ok "ulimit -f 16: $(cat "$T/err")"
else
    fail "ulimit -f 16: rc=$rc out=$out stderr=$(cat "$T/err")"
fi
lost=$(sed -n 's/.*(\([0-9]*\) events lost)$/\1/p' "$T/err" | sed -e :a -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/; ta')
"$BUILD/evalprof" info "$T/lim.evp" > "$T/lim.info" 2>"$T/lim.err"
if [ -n "$lost" ] && [ ! -s "$T/lim.err" ] && grep -q "^dropped: *$lost events lost" "$T/lim.info"; then
    ok "ulimit -f 16: the trace says $(grep '^dropped' "$T/lim.info")"
else
    fail "ulimit -f 16: info says '$(grep '^dropped' "$T/lim.info")' for $lost lost $(cat "$T/lim.err")"
fi

# A symbolic link as the trace: written through to its target, the link
# staying (the rule of every evalprof writer).
mkdir "$T/runs"
: > "$T/runs/real.evp"
ln -s "$T/runs/real.evp" "$T/link.evp"
EVALPROF="$T/link.evp" "$PY" -c 'print(6 * 7)' > /dev/null
if [ -L "$T/link.evp" ] && "$CHECK" "$T/runs/real.evp" > /dev/null; then
    ok "EVALPROF=LINK: the link's target holds the trace, the link stays"
else
    fail "EVALPROF=LINK: $(ls -l "$T/link.evp" "$T/runs")"
fi

# --- exit status and output unchanged ---------------------------------------------
EVALPROF="$T/exit.evp" "$PY" -c 'import sys; print("out"); sys.exit(3)' > "$T/o" 2>"$T/e"
rc=$?
[ "$rc" = 3 ] && [ "$(cat "$T/o")" = out ] && ok "exit status and output kept (3)" || fail "exit status $rc, output $(cat "$T/o")"
"$CHECK" "$T/exit.evp" > "$T/exit.out" && [ "$(value "kind fini" "$T/exit.out")" = 1 ] &&
    ok "sys.exit(3): trace complete" || fail "sys.exit(3): trace incomplete"
a=$("$PY" "$PROGRAMS/workload.py")
b=$(EVALPROF="$T/w.evp" "$PY" "$PROGRAMS/workload.py")
[ "$a" = "$b" ] && ok "workload output identical traced and untraced ($a)" || fail "workload: '$a' vs '$b'"

# --- child processes ----------------------------------------------------------------
EVALPROF="$T/par.evp" "$PY" -c '
import subprocess, sys
r = subprocess.run([sys.executable, "-c", "import sys; print(sys._evalprof[\"path\"])"],
                   capture_output=True, text=True)
print(r.stdout.strip())' > "$T/child_path"
child=$(cat "$T/child_path")
case "$child" in
"$T/par.evp."[0-9]*) ok "a child interpreter writes FILE.<pid> ($(basename "$child"))" ;;
*) fail "child trace path '$child'" ;;
esac
"$CHECK" "$T/par.evp" > /dev/null && "$CHECK" "$child" > /dev/null &&
    ok "parent and child traces both check" || fail "parent or child trace does not check"

EVALPROF="$T/fork.evp" "$PY" -c '
import os
pid = os.fork()
if pid == 0:
    sum(range(100))
    os._exit(0)
os.waitpid(pid, 0)
sum(range(100))' 2>"$T/err"
! grep -v "^evalprof: wrote $T/fork.evp (" "$T/err" && ok "fork: no warning about threads" ||
    fail "fork printed: $(cat "$T/err")"
"$CHECK" "$T/fork.evp" > /dev/null && ok "fork: the parent's trace checks" || fail "fork: parent trace"
n=$(ls "$T" | grep -c '^fork\.evp\.')
[ "$n" = 0 ] && ok "fork: a forked child stops recording by default" || fail "fork: $n child traces"
# A forked child leaves through os._exit() at once: os._exit() closes its
# trace, so the records not yet written by the writer thread are kept.
EVALPROF="$T/ff.evp" EVALPROF_FORK=follow "$PY" -c '
import os, sys
pid = os.fork()
if pid == 0:
    for i in range(1000):
        pass
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)'
n=$(ls "$T" | grep -c '^ff\.evp\.[0-9]')
[ "$n" = 1 ] && ok "EVALPROF_FORK=follow: the child writes FILE.<pid>" || fail "EVALPROF_FORK=follow: $n child traces"
ops=$("$CHECK" "$T"/ff.evp.[0-9]* 2>&1 | awk '$1 == "kind" && $2 == "op" { print $3 }')
[ "${ops:-0}" -ge 2000 ] && ok "EVALPROF_FORK=follow: the child's loop is in its trace up to os._exit() ($ops ops)" ||
    fail "EVALPROF_FORK=follow: the child's trace holds ${ops:-no} op events, want >= 2000"

# os._exit() in the traced process itself: the trace ends with its end
# record (no warning) and holds the loop; the module's frame stays open.
EVALPROF="$T/ox.evp" "$PY" -c '
import os
for i in range(1000):
    pass
os._exit(5)'
rc=$?
[ "$rc" = 5 ] && ok "os._exit(5): exit status kept" || fail "os._exit(5): exit status $rc"
"$CHECK" "$T/ox.evp" > "$T/ox.out" 2>&1
ops=$(awk '$1 == "kind" && $2 == "op" { print $3 }' "$T/ox.out")
if ! grep -q 'warning' "$T/ox.out" && [ "$(awk '$1 == "unclosed" { print $2 }' "$T/ox.out")" = 1 ] &&
   [ "${ops:-0}" -ge 2000 ]; then
    ok "os._exit(): the trace is complete ($ops ops, the module frame left open)"
else
    fail "os._exit(): $(tr '\n' ' ' < "$T/ox.out")"
fi

finish
