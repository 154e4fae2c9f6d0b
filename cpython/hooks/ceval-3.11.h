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
 * The eval function exists twice (evalprof_ceval_common.h says why and
 * how): untraced, as CPython wrote it, every hook compiled to nothing;
 * traced, with every hook.
 */
#ifndef Py_EVALPROF_CEVAL_H
#define Py_EVALPROF_CEVAL_H

#include "evalprof_ceval_common.h"

#if defined(Py_STATS)
#error \
    "evalprof hooks do not support Py_STATS builds (INSTRUCTION_START counts)"
#endif

/* ---- frames ------------------------------------------------------- */

/*
 * Calls are counted as cProfile counts them (docs/EVENTS.md, "Calls"):
 * the run of a generator's, coroutine's or async generator's code that
 * only creates it (its prologue and RETURN_GENERATOR, in a frame the
 * thread owns) is not a call of its own, and its time stays with the
 * caller; the frame the generator owns gets "enter" at its first start
 * (its last instruction RETURN_GENERATOR), "resume" at every later one,
 * and "suspend" when it is left suspended (yield, await).
 */
#define EVP_GEN_FLAGS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)

/* FRAME runs the code of a generator function only to create it. */
static inline int
evp_creates_gen(_PyInterpreterFrame *f)
{
    return (f->f_code->co_flags & EVP_GEN_FLAGS) &&
           f->owner != FRAME_OWNED_BY_GENERATOR;
}

/* resume_frame's loop enter: not for a frame that creates a generator. */
#define EVP_FRAME_COUNTS(f) (!evp_creates_gen(f))

/* enter or resume for FRAME; nothing for a frame that only creates a
 * generator. */
static EVP_COLD void
evp_frame_enter(_PyInterpreterFrame *f)
{
    if (evp_creates_gen(f)) {
        return;
    }
    unsigned kind = EVP_EV_ENTER;
    if (f->owner == FRAME_OWNED_BY_GENERATOR &&
        _Py_OPCODE(*f->prev_instr) != RETURN_GENERATOR) {
        kind = EVP_EV_RESUME;
    }
    if (evp_wants(kind)) {
        evp_rec_emit(kind, 0, _PyEvalprof_CodeId(f->f_code));
    }
}

/* "loop exit" now; "exit" (or "suspend") once the frame is popped
 * (evp_pop_done), so that the frame's clean-up counts as the callee's.
 * A frame that only created a generator is popped silently. */
static EVP_COLD void
evp_frame_leave(_PyInterpreterFrame *f, int *popped, uint32_t *fid)
{
    if (evp_creates_gen(f)) {
        *popped = 2;
        return;
    }
    evp_emit_if(EVP_EV_LOOP_EXIT);
    *popped = 1;
    if (f->owner == FRAME_OWNED_BY_GENERATOR &&
        _PyFrame_GetGenerator(f)->gi_frame_state < FRAME_EXECUTING) {
        *popped = 3; /* YIELD_VALUE set FRAME_SUSPENDED */
    }
    *fid = evp_wants(*popped == 3 ? EVP_EV_SUSPEND : EVP_EV_EXIT)
               ? _PyEvalprof_CodeId(f->f_code)
               : 0;
}

/* The thread's top frame, for the sampled copy's prologue. */
#define EVP_TOP_FRAME(tstate) ((tstate)->cframe->current_frame)
#define EVP_FRAME_IP(f) ((const void *)(f)->prev_instr)

/* A returning frame is cleared while it is still the thread's top frame
 * (pop_frame), and its caller resumes through resume_frame: the pop is
 * pending there (evalprof_ceval_common.h). */
#define EVP_SAMPLE_LEAVE_TO_CALLER 0
#define EVP_SAMPLE_POPS 1

/* ---- locals and label hooks (placed by apply-hooks.py) -------------- */

/*
 * First thing in _PyEval_EvalFrameDefault (both copies): the copy, then
 * the frame entered from C.
 *   evp_c_frame  frame whose enter was emitted here (start_frame skips it)
 *   evp_popped   a frame was popped and its exit (1) or suspend (3)
 *                is pending; 2: popped silently (a generator's creation)
 *   evp_pop_fid  function id of that pending exit
 *   evp_skip_op  the next instruction handler re-runs a counted one
 * The untraced copy declares them too (its hooks, compiled to nothing,
 * still name them); the compiler drops them.
 */
#define EVP_LOCALS \
    EVP_CHOOSE_COPY(); \
    _PyInterpreterFrame *evp_c_frame = NULL; \
    int evp_popped = 0; \
    uint32_t evp_pop_fid = 0; \
    int evp_skip_op = 0; \
    (void)evp_skip_op; \
    if (EVP_ON()) { \
        evp_c_frame = frame; \
        evp_frame_enter(frame); \
    }

/* start_frame: entered from C (already announced) or an inlined call
 * (CALL, CALL_PY_EXACT_ARGS, CALL_PY_WITH_DEFAULTS,
 * BINARY_SUBSCR_GETITEM). */
#define EVP_HOOK_START_FRAME() \
    do { \
        if (EVP_ON()) { \
            if (frame != evp_c_frame) { \
                evp_frame_enter(frame); \
            } \
            evp_c_frame = NULL; \
        } \
        EVP_SAMPLE_RELEASE(); \
        EVP_SAMPLE_PHASE(EVP_EV_ENTER); \
    } while (0)

/* resume_frame: evalprof_ceval_common.h */

/* handle_eval_breaker: the breaker was set. */
#define EVP_HOOK_EVAL_BREAKER() EVP_HOOK_EMIT(EVP_EV_LOOP_SLOW)

/* RESUME_QUICK tests the breaker inline (for oparg < 2) and jumps to
 * handle_eval_breaker when set; reaching its DISPATCH is the fast path. */
#define EVP_HOOK_RESUME_QUICK() \
    do { \
        if (oparg < 2) { \
            EVP_EMIT_IF(EVP_EV_LOOP_FAST); \
        } \
    } while (0)

/* miss: a specialized instruction failed a guard and its base handler
 * runs next: one instruction, counted once (as the specialized form). */
#define EVP_HOOK_MISS() \
    do { \
        if ((EVP_COPY_TRACED && evp_wants_ops()) || EVP_COUNTING()) { \
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
/*
 * op at (lines recorded, docs/EVENTS.md): the instruction at INSTR of
 * FRAME, whose code unit travels with the op, and before the first op at
 * of a function its line table.  A frame that only creates a generator
 * records a plain op: its time is its caller's, whose lines its units
 * would be read against.
 */
static EVP_COLD void
evp_op_at(_PyInterpreterFrame *f, const _Py_CODEUNIT *instr, unsigned op,
          uint32_t oparg)
{
    PyCodeObject *co = f->f_code;
    ptrdiff_t unit = instr - _PyCode_CODE(co);
    if (evp_creates_gen(f) || unit < 0 || unit >= (1 << 24) ||
        _PyEvalprof_CodeLines(co) == 0) {
        evp_rec_emit(EVP_EV_OP, op, oparg);
        return;
    }
    evp_rec_emit(EVP_EV_OP_AT, op, (uint32_t)unit << 8 | (oparg & 0xff));
}

/* An op of instruction INSTR of FRAME, plain or with its offset. */
static EVP_COLD void
evp_op_of(_PyInterpreterFrame *f, const _Py_CODEUNIT *instr, unsigned op,
          uint32_t oparg)
{
    if (evp_wants(EVP_EV_OP)) {
        evp_rec_emit(EVP_EV_OP, op, oparg);
    }
    else if (evp_wants(EVP_EV_OP_AT)) {
        evp_op_at(f, instr, op, oparg);
    }
}

static EVP_COLD void
evp_fused_op(_PyInterpreterFrame *f, const _Py_CODEUNIT *instr)
{
    evp_op_of(f, instr, _PyOpcode_Deopt[_Py_OPCODE(*instr)],
              _Py_OPARG(*instr));
}

#define EVP_HOOK_FUSED_OP() \
    do { \
        if (EVP_COPY_TRACED && evp_wants_ops()) { \
            evp_fused_op(frame, next_instr); \
        } \
        else if (EVP_COUNTING()) { \
            evp_count_op(_PyOpcode_Deopt[_Py_OPCODE(*next_instr)]); \
        } \
    } while (0)

/* error:, exception_unwind: evalprof_ceval_common.h */

/* Just before _Py_LeaveRecursiveCallTstate in RETURN_VALUE, YIELD_VALUE
 * and RETURN_GENERATOR: the frame stops being evaluated. */
#define EVP_HOOK_LEAVE() \
    do { \
        if (EVP_ON()) { \
            evp_frame_leave(frame, &evp_popped, &evp_pop_fid); \
        } \
        EVP_SAMPLE_LEAVE(EVP_EV_LOOP_EXIT); \
    } while (0)

/* exit_unwind: no handler in this frame; it ends. */
#define EVP_HOOK_EXIT_UNWIND() \
    do { \
        if (EVP_ON()) { \
            EVP_EMIT_IF(EVP_EV_LOOP_EXITING); \
            evp_frame_leave(frame, &evp_popped, &evp_pop_fid); \
        } \
        EVP_SAMPLE_LEAVE(EVP_EV_LOOP_EXITING); \
        EVP_SAMPLE_RELEASE(); \
    } while (0)

/* Just before the eval function returns to C: the pending exit, then
 * runtime other. */
#define EVP_HOOK_C_RETURN() \
    do { \
        if (EVP_ON()) { \
            evp_pop_done(&evp_popped, evp_pop_fid); \
            EVP_EMIT_IF(EVP_EV_RUNTIME_OTHER); \
        } \
        EVP_SAMPLE_PHASE(EVP_EV_RUNTIME_OTHER); \
    } while (0)

/* resume_with_error: the caller of a frame that exit_unwind popped. */
#define EVP_HOOK_RESUME_WITH_ERROR() \
    do { \
        if (EVP_ON() && evp_popped) { \
            evp_pop_done(&evp_popped, evp_pop_fid); \
        } \
        EVP_SAMPLE_RESUMED(-1); \
        EVP_SAMPLE_RELEASE(); \
    } while (0)

/* ---- redefined macros of ceval.c ------------------------------------ */

/*
 * op: the handlers are CPython's, unchanged; the op hook lives in the
 * dispatch table.  In the traced copy DISPATCH_GOTO() jumps through
 * evp_dispatch_table, which is that copy's opcode_targets while op events
 * are not recorded, else evp_traced_targets (Python/evalprof_targets.h,
 * which apply-hooks.py derives from opcode_targets.h).  Its entries lead
 * each instruction to its own EVP_TRACED_op block (Python/
 * evalprof_entries.h, placed after the handlers and marked cold), which
 * records the op event, oparg valid, and jumps straight to the handler's
 * TARGET_op.  Every handler keeps its own indirect jump, so dispatch is
 * measured as it really happens.  The untraced copy has neither table
 * nor entries and jumps through its own opcode_targets, as CPython does
 * (evalprof_ceval_common.h defines the table and DISPATCH_GOTO).
 *
 * Each call of the traced copy makes the table match the recorder's
 * mask; a traced entry that finds op events off (the trace closed, a
 * forked child) switches back to the plain table at once.  A specialized
 * instruction that fails a guard goes to miss:, which dispatches its base
 * handler: miss: marks that entry as already counted (evp_skip_op).
 * DISPATCH_SAME_OPARG uses the plain table.  DO_TRACING keeps its plain
 * entry.
 */

/* The traced entry reads the mask with an atomic load: with a plain one,
 * GCC may hoist the read above every dispatch's indirect jump (into the
 * untraced path) to share it with the traced entries.  The sampled copy
 * reaches its entries only with EVALPROF_COUNTS (its own table's entries
 * are then these: evalprof_ceval_common.h), and there they count the
 * opcode. */
#define EVP_OP_ENTRY(op) \
    do { \
        if (EVP_COPY_SAMPLED) { \
            if (evp_skip_op) { \
                evp_skip_op = 0; \
            } \
            else { \
                EVP_SAMPLE_COUNT(op); \
            } \
        } \
        else if (evp_rec_wants(EVP_EV_OP)) { \
            if (evp_skip_op) { \
                evp_skip_op = 0; \
            } \
            else { \
                evp_rec_emit(EVP_EV_OP, (op), (uint32_t)oparg); \
            } \
        } \
        else if (evp_rec_wants(EVP_EV_OP_AT)) { \
            if (evp_skip_op) { \
                evp_skip_op = 0; \
            } \
            else { \
                evp_op_at(frame, next_instr, (op), (uint32_t)oparg); \
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
        if (EVP_COPY_SAMPLED) { \
            if (EVP_COUNTING()) { \
                evp_count_op(_PyOpcode_Deopt[_Py_OPCODE(next_instr[1])]); \
            } \
        } \
        else if (evp_rec_wants(EVP_EV_OP) || evp_rec_wants(EVP_EV_OP_AT)) { \
            evp_fused_op(frame, next_instr + 1); \
        } \
    } while (0)

/* Every handler starts with CPython's INSTRUCTION_START, its store of
 * frame->prev_instr: the sampler's handler reads the opcode being run
 * there, and the sampled copy adds nothing to it. */

#ifdef LLTRACE
#define EVP_LLTRACE_INSTRUCTION() \
    do { \
        if (lltrace) { \
            lltrace_instruction(frame, stack_pointer, next_instr); \
        } \
    } while (0)
#else
#define EVP_LLTRACE_INSTRUCTION() ((void)0)
#endif

/* dispatch: DISPATCH(), EXTENDED_ARG and the tracing path. */
#undef PRE_DISPATCH_GOTO
#define PRE_DISPATCH_GOTO() \
    do { \
        if (EVP_WANTS(EVP_EV_DISPATCH)) { \
            evp_event(EVP_EV_DISPATCH); \
        } \
        EVP_SAMPLE_PHASE(EVP_EV_DISPATCH); \
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
        goto *EVP_PLAIN_TARGETS[opcode]; \
    }

/* The breaker's fast path (the slow path is handle_eval_breaker). */
#undef CHECK_EVAL_BREAKER
#define CHECK_EVAL_BREAKER() \
    _Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY(); \
    if (_Py_atomic_load_relaxed_int32(eval_breaker)) { \
        goto handle_eval_breaker; \
    } \
    EVP_EMIT_IF(EVP_EV_LOOP_FAST);

/*
 * The PRECALL_NO_KW_* / PRECALL_BUILTIN_* specializations make the call
 * themselves and skip the CALL after them: count that CALL here, where
 * the call starts.
 */
static EVP_COLD void
evp_skipped_call(_PyInterpreterFrame *f, const _Py_CODEUNIT *next)
{
    const _Py_CODEUNIT *call = next + INLINE_CACHE_ENTRIES_PRECALL;
    evp_op_of(f, call, CALL, _Py_OPARG(*call));
}

#undef SKIP_CALL
#define SKIP_CALL() \
    do { \
        if (EVP_COPY_TRACED) { \
            evp_skipped_call(frame, next_instr); \
        } \
        else if (EVP_COUNTING()) { \
            evp_count_op(CALL); \
        } \
        JUMPBY(INLINE_CACHE_ENTRIES_PRECALL + 1 + INLINE_CACHE_ENTRIES_CALL); \
    } while (0)

#endif /* !Py_EVALPROF_CEVAL_H */
