/*
 * evalprof_ceval.h for CPython 3.11: evalprof's hooks in the hand-written
 * interpreter loop.
 *
 * cpython/apply-hooks.py copies this file to Python/evalprof_ceval.h and
 * includes it in Python/ceval.c just before _PyEval_EvalFrameDefault(),
 * after ceval.c's own macro definitions.  It redefines the macros that
 * every instruction passes through (DISPATCH_GOTO, DISPATCH's
 * PRE_DISPATCH_GOTO, CHECK_EVAL_BREAKER, ...) and defines the EVP_HOOK_*
 * statements that apply-hooks.py places at the loop's labels
 * (start_frame, resume_frame, handle_eval_breaker, miss, error,
 * exception_unwind, exit_unwind, resume_with_error) and next to the
 * returns of RETURN_VALUE, YIELD_VALUE and RETURN_GENERATOR.
 * docs/EVENTS.md describes where each event sits and why.
 *
 * apply-hooks.py checks that each macro redefined here still has the
 * shape written here; a CPython whose macros changed is refused.
 *
 * Cost when not tracing: nothing for the op hook (a second dispatch table,
 * below); each other hook is one test of the recorder's kind mask and a
 * not-taken branch.
 */
#ifndef Py_EVALPROF_CEVAL_H
#define Py_EVALPROF_CEVAL_H

#include "pycore_evalprof.h"
#include "evalprof/recorder.h"

/* ---- small helpers (always inlined) --------------------------------- */

/*
 * The checks read the recorder's kind mask with a plain load, which GCC
 * turns into one test-with-memory and a branch: every instruction passes
 * one (the dispatch hook), and an atomic load would add a third machine
 * instruction to it.  The mask changes only when a trace opens
 * or closes (or in a forked child); a check that sees a stale value then
 * is harmless, as the recorder drops events outside a session.
 */
static inline int
evp_wants(unsigned kind)
{
    return EVP_UNLIKELY((evp_rec_mask_ >> kind) & 1);
}

/* True while any kind is being recorded. */
static inline int
evp_on(void)
{
    return EVP_UNLIKELY(evp_rec_mask_ != 0);
}

/*
 * What the hooks do once they know an event is wanted is out of line and
 * cold: inlined at every hook site, the recorder's store path (and the
 * registers it needs) makes GCC spill hot values in the untraced path.
 * Only the op entries, the most frequent events, store inline.
 */
#define EVP_COLD __attribute__((noinline, cold))

static EVP_COLD void
evp_event(unsigned kind)
{
    evp_rec_emit(kind, 0, 0);
}

static inline void
evp_emit_if(unsigned kind)
{
    if (evp_wants(kind)) {
        evp_event(kind);
    }
}

static EVP_COLD void
evp_frame_enter(_PyInterpreterFrame *f)
{
    if (evp_wants(EVP_EV_ENTER)) {
        evp_rec_emit(EVP_EV_ENTER, 0, _PyEvalprof_CodeId(f->f_code));
    }
}

/* "loop exit" now; "exit" once the frame is popped (evp_pop_done), so
 * that the frame's clean-up counts as the callee's. */
static EVP_COLD void
evp_frame_leave(_PyInterpreterFrame *f, int *popped, uint32_t *fid)
{
    evp_emit_if(EVP_EV_LOOP_EXIT);
    *popped = 1;
    *fid = evp_wants(EVP_EV_EXIT) ? _PyEvalprof_CodeId(f->f_code) : 0;
}

static EVP_COLD void
evp_pop_done(int *popped, uint32_t fid)
{
    if (*popped && evp_wants(EVP_EV_EXIT)) {
        evp_rec_emit(EVP_EV_EXIT, 0, fid);
    }
    *popped = 0;
}

/* ---- locals and label hooks (placed by apply-hooks.py) -------------- */

/*
 * First thing in _PyEval_EvalFrameDefault: the frame entered from C.
 *   evp_c_frame  frame whose enter was emitted here (start_frame skips it)
 *   evp_popped   a frame was popped and its exit is pending
 *   evp_pop_fid  function id of that pending exit
 *   evp_skip_op  the next instruction handler re-runs a counted one
 */
#define EVP_LOCALS \
    _PyInterpreterFrame *evp_c_frame = NULL; \
    int evp_popped = 0; \
    uint32_t evp_pop_fid = 0; \
    int evp_skip_op = 0; \
    if (evp_on()) { \
        evp_c_frame = frame; \
        evp_frame_enter(frame); \
    }

/* start_frame: entered from C (already announced) or an inlined call
 * (CALL, CALL_PY_EXACT_ARGS, CALL_PY_WITH_DEFAULTS,
 * BINARY_SUBSCR_GETITEM). */
#define EVP_HOOK_START_FRAME() \
    do { \
        if (evp_on()) { \
            if (frame != evp_c_frame) { \
                evp_frame_enter(frame); \
            } \
            evp_c_frame = NULL; \
        } \
    } while (0)

/* resume_frame: top of the loop after start_frame, or the caller after an
 * inlined callee returned (then the callee's pending exit). */
#define EVP_HOOK_RESUME_FRAME() \
    do { \
        if (evp_on()) { \
            if (evp_popped) { \
                evp_pop_done(&evp_popped, evp_pop_fid); \
            } \
            else { \
                evp_emit_if(EVP_EV_LOOP_ENTER); \
            } \
        } \
    } while (0)

/* handle_eval_breaker: the breaker was set. */
#define EVP_HOOK_EVAL_BREAKER() \
    do { \
        if (evp_on()) { \
            evp_emit_if(EVP_EV_LOOP_SLOW); \
        } \
    } while (0)

/* RESUME_QUICK tests the breaker inline (for oparg < 2) and jumps to
 * handle_eval_breaker when set; reaching its DISPATCH is the fast path. */
#define EVP_HOOK_RESUME_QUICK() \
    do { \
        if (oparg < 2) { \
            evp_emit_if(EVP_EV_LOOP_FAST); \
        } \
    } while (0)

/* miss: a specialized instruction failed a guard and its base handler
 * runs next: one instruction, counted once (as the specialized form). */
#define EVP_HOOK_MISS() \
    do { \
        if (evp_wants(EVP_EV_OP)) { \
            evp_skip_op = 1; \
        } \
    } while (0)

/*
 * The fused COMPARE_OP_*_JUMP run the next instruction (a POP_JUMP) in the
 * same handler after their guards, reading it with NEXTOPARG: count that
 * instruction there, by its base name, so op counts match the bytecode
 * that ran.  The hook sits right after that NEXTOPARG, where next_instr
 * still points at the instruction; reading it from memory again keeps
 * opcode and oparg out of the untraced path.  (Superinstructions have no
 * guard: EVP_OP_ENTRY_PAIR counts their second half on entry.)
 */
static EVP_COLD void
evp_fused_op(const _Py_CODEUNIT *instr)
{
    evp_rec_emit(EVP_EV_OP, _PyOpcode_Deopt[_Py_OPCODE(*instr)],
                 _Py_OPARG(*instr));
}

#define EVP_HOOK_FUSED_OP() \
    do { \
        if (evp_wants(EVP_EV_OP)) { \
            evp_fused_op(next_instr); \
        } \
    } while (0)

#define EVP_HOOK_ERROR() \
    do { \
        if (evp_on()) { \
            evp_emit_if(EVP_EV_LOOP_ERROR); \
        } \
    } while (0)

#define EVP_HOOK_EXCEPTION_UNWIND() \
    do { \
        if (evp_on()) { \
            evp_emit_if(EVP_EV_LOOP_EXCEPTION); \
        } \
    } while (0)

/* Just before _Py_LeaveRecursiveCallTstate in RETURN_VALUE, YIELD_VALUE
 * and RETURN_GENERATOR: the frame stops being evaluated. */
#define EVP_HOOK_LEAVE() \
    do { \
        if (evp_on()) { \
            evp_frame_leave(frame, &evp_popped, &evp_pop_fid); \
        } \
    } while (0)

/* exit_unwind: no handler in this frame; it ends. */
#define EVP_HOOK_EXIT_UNWIND() \
    do { \
        if (evp_on()) { \
            evp_emit_if(EVP_EV_LOOP_EXITING); \
            evp_frame_leave(frame, &evp_popped, &evp_pop_fid); \
        } \
    } while (0)

/* Just before the eval function returns to C: the pending exit, then
 * runtime other. */
#define EVP_HOOK_C_RETURN() \
    do { \
        if (evp_on()) { \
            evp_pop_done(&evp_popped, evp_pop_fid); \
            evp_emit_if(EVP_EV_RUNTIME_OTHER); \
        } \
    } while (0)

/* resume_with_error: the caller of a frame that exit_unwind popped. */
#define EVP_HOOK_RESUME_WITH_ERROR() \
    do { \
        if (evp_on() && evp_popped) { \
            evp_pop_done(&evp_popped, evp_pop_fid); \
        } \
    } while (0)

/* ---- redefined macros of ceval.c ------------------------------------ */

/*
 * op: the untraced program runs CPython's handlers unchanged; the op hook
 * lives in the dispatch table.  DISPATCH_GOTO() jumps through
 * evp_dispatch_table, which is CPython's opcode_targets while op events
 * are not recorded, else evp_traced_targets (Python/evalprof_targets.h,
 * which apply-hooks.py derives from opcode_targets.h).  Its entries lead
 * each instruction to its own EVP_TRACED_op block (Python/
 * evalprof_entries.h, placed after the handlers and marked cold), which
 * records the op event, oparg valid, and jumps straight to the handler's
 * TARGET_op.  Every handler keeps its own indirect jump, so dispatch is
 * measured as it really happens, and an untraced instruction pays
 * nothing for its op hook.
 *
 * Each call of the eval function makes the table match the recorder's
 * mask; a traced entry that finds op events off (the trace closed, a
 * forked child) switches back to the plain table at once.  A specialized
 * instruction that fails a guard goes to miss:, which dispatches its base
 * handler: miss: marks that entry as already counted (evp_skip_op).
 * DISPATCH_SAME_OPARG uses the plain table.  DO_TRACING keeps its plain
 * entry.
 */
#if !USE_COMPUTED_GOTOS
#  error "evalprof hooks need computed gotos (GCC or clang)"
#endif

/* The traced entry reads the mask with an atomic load: with a plain one,
 * GCC may hoist the read above every dispatch's indirect jump (into the
 * untraced path) to share it with the traced entries. */
#define EVP_OP_ENTRY(op) \
    do { \
        if (evp_rec_wants(EVP_EV_OP)) { \
            if (evp_skip_op) { \
                evp_skip_op = 0; \
            } \
            else { \
                evp_rec_emit(EVP_EV_OP, (op), (uint32_t)oparg); \
            } \
        } \
        else { \
            evp_dispatch_table = opcode_targets; \
        } \
    } while (0)

/* A superinstruction (LOAD_FAST__LOAD_FAST and friends) also runs the
 * instruction in the next code unit, which cannot fail: count both on
 * entry, the second by its base name. */
#define EVP_OP_ENTRY_PAIR(op) \
    do { \
        EVP_OP_ENTRY(op); \
        if (evp_rec_wants(EVP_EV_OP)) { \
            evp_fused_op(next_instr + 1); \
        } \
    } while (0)

/*
 * The table dispatch uses.  A global, not a local of the eval function:
 * one more variable live across the whole loop makes GCC spill hot ones.
 * Reading it costs what reading the address of CPython's own table costs
 * (a load).  NULL until the first call of the eval function publishes one
 * of its two tables.
 */
static void **evp_dispatch_table;

#undef DISPATCH_GOTO
#define DISPATCH_GOTO() goto *evp_dispatch_table[opcode]

/* After the opcode tables, inside _PyEval_EvalFrameDefault. */
#define EVP_TARGETS \
    if (EVP_UNLIKELY(evp_dispatch_table == NULL) || \
        evp_wants(EVP_EV_OP) != \
            (evp_dispatch_table == evp_traced_targets)) { \
        evp_dispatch_table = evp_wants(EVP_EV_OP) ? evp_traced_targets \
                                                  : opcode_targets; \
    }

#ifdef LLTRACE
#  define EVP_LLTRACE_INSTRUCTION() \
    do { \
        if (lltrace) { \
            lltrace_instruction(frame, stack_pointer, next_instr); \
        } \
    } while (0)
#else
#  define EVP_LLTRACE_INSTRUCTION() ((void)0)
#endif

/* dispatch: DISPATCH(), EXTENDED_ARG and the tracing path. */
#undef PRE_DISPATCH_GOTO
#define PRE_DISPATCH_GOTO() \
    do { \
        if (evp_wants(EVP_EV_DISPATCH)) { \
            evp_event(EVP_EV_DISPATCH); \
        } \
        EVP_LLTRACE_INSTRUCTION(); \
    } while (0)

/* Used only to re-run an adaptive instruction that has just specialized
 * itself: the same instruction, counted once (the plain table). */
#undef DISPATCH_SAME_OPARG
#define DISPATCH_SAME_OPARG() \
    { \
        opcode = _Py_OPCODE(*next_instr); \
        EVP_LLTRACE_INSTRUCTION(); \
        opcode |= cframe.use_tracing OR_DTRACE_LINE; \
        goto *opcode_targets[opcode]; \
    }

/* The breaker's fast path (the slow path is handle_eval_breaker). */
#undef CHECK_EVAL_BREAKER
#define CHECK_EVAL_BREAKER() \
    _Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY(); \
    if (_Py_atomic_load_relaxed_int32(eval_breaker)) { \
        goto handle_eval_breaker; \
    } \
    evp_emit_if(EVP_EV_LOOP_FAST);

/*
 * The PRECALL_NO_KW_* / PRECALL_BUILTIN_* specializations make the call
 * themselves and skip the CALL after them: count that CALL here, where
 * the call starts.
 */
static EVP_COLD void
evp_skipped_call(const _Py_CODEUNIT *next)
{
    if (evp_wants(EVP_EV_OP)) {
        evp_rec_emit(EVP_EV_OP, CALL,
                     _Py_OPARG(next[INLINE_CACHE_ENTRIES_PRECALL]));
    }
}

#undef SKIP_CALL
#define SKIP_CALL() \
    do { \
        evp_skipped_call(next_instr); \
        JUMPBY(INLINE_CACHE_ENTRIES_PRECALL + 1 + INLINE_CACHE_ENTRIES_CALL); \
    } while (0)

#endif /* !Py_EVALPROF_CEVAL_H */
