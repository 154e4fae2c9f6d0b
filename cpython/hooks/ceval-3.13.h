/*
 * evalprof_ceval.h for CPython 3.13: evalprof's hooks in the generated
 * interpreter loop.
 *
 * cpython/apply-hooks.py copies this file to Python/evalprof_ceval.h and
 * includes it in Python/ceval.c right after ceval_macros.h.  It redefines
 * a few of ceval_macros.h's macros, which generated_cases.c.h expands at
 * every instruction boundary, and defines the EVP_HOOK_* statements that
 * apply-hooks.py places at labels of _PyEval_EvalFrameDefault()
 * (start_frame, resume_frame, error, exception_unwind, exit_unwind).
 * docs/EVENTS.md describes where each event sits and why.
 *
 * apply-hooks.py checks, before including this file, that each macro it
 * redefines still has the shape written here; a CPython whose macros
 * changed is refused rather than silently mis-instrumented.
 *
 * The eval function exists twice (evalprof_ceval_common.h says why and
 * how): untraced, as CPython wrote it, every hook compiled to nothing;
 * traced, with every hook.  Frame bookkeeping lives in a few locals of
 * the eval function (EVP_LOCALS), so nested C-level calls of the eval
 * function keep their own.
 */
#ifndef Py_EVALPROF_CEVAL_H
#define Py_EVALPROF_CEVAL_H

#include "evalprof_ceval_common.h"

#if defined(Py_STATS)
#error \
    "evalprof hooks do not support Py_STATS builds (INSTRUCTION_STATS is taken)"
#endif
#if defined(Py_GIL_DISABLED)
#error "evalprof hooks do not support free-threaded builds"
#endif
/* With _Py_TIER2 (or the JIT) built in, traces of micro-ops skip the
 * tier-1 hooks: docs/EVENTS.md says what is and is not seen. */

/* ---- frames ------------------------------------------------------- */

/*
 * Calls are counted as cProfile counts them (docs/EVENTS.md, "Calls"):
 * the run of a generator's, coroutine's or async generator's code that
 * only creates it (its prologue and RETURN_GENERATOR, in a frame the
 * thread owns) is not a call of its own, and its time stays with the
 * caller; the frame the generator owns gets "enter" at its first start
 * (resumed just after RETURN_GENERATOR), "resume" at every later one,
 * and "suspend" when it is left suspended (yield, await).
 */
#define EVP_GEN_FLAGS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)

/* FRAME runs the code of a generator function only to create it. */
static inline int
evp_creates_gen(_PyInterpreterFrame *f)
{
    return (_PyFrame_GetCode(f)->co_flags & EVP_GEN_FLAGS) &&
           f->owner != FRAME_OWNED_BY_GENERATOR;
}

/* enter or resume (and optionally loop enter) for FRAME; nothing for a
 * frame that only creates a generator. */
static EVP_COLD void
evp_frame_enter(_PyInterpreterFrame *f, int loop_enter)
{
    if (evp_creates_gen(f)) {
        return;
    }
    unsigned kind = EVP_EV_ENTER;
    if (f->owner == FRAME_OWNED_BY_GENERATOR &&
        f->instr_ptr[-1].op.code != RETURN_GENERATOR) {
        kind = EVP_EV_RESUME;
    }
    if (evp_wants(kind)) {
        evp_rec_emit(kind, 0, _PyEvalprof_CodeId(_PyFrame_GetCode(f)));
    }
    if (loop_enter) {
        evp_emit_if(EVP_EV_LOOP_ENTER);
    }
}

/* resume_frame's loop enter: not for a frame that creates a generator. */
#define EVP_FRAME_COUNTS(f) (!evp_creates_gen(f))

/*
 * FRAME stops being evaluated: "loop exit" now, "exit" (or "suspend")
 * once the frame has been popped (evp_pop_done), so that the clean-up of
 * the frame counts as the callee's.  Popped silently: the __init__ shim
 * frame that CALL_ALLOC_AND_ENTER_INIT pushes (code object SHIM,
 * _Py_InitCleanup, which ceval.c declares after this file), part of its
 * CALL and never entered, and a frame that only created a generator.
 */
static EVP_COLD void
evp_frame_leave(_PyInterpreterFrame *f, const void *shim, int *popped,
                uint32_t *fid)
{
    PyCodeObject *co = _PyFrame_GetCode(f);
    if ((const void *)co == shim || evp_creates_gen(f)) {
        *popped = 2;
        return;
    }
    evp_emit_if(EVP_EV_LOOP_EXIT);
    *popped = 1;
    if (f->owner == FRAME_OWNED_BY_GENERATOR &&
        _PyFrame_GetGenerator(f)->gi_frame_state < FRAME_EXECUTING) {
        *popped = 3; /* YIELD_VALUE set FRAME_SUSPENDED(_YIELD_FROM) */
    }
    *fid = evp_wants(*popped == 3 ? EVP_EV_SUSPEND : EVP_EV_EXIT)
               ? _PyEvalprof_CodeId(co)
               : 0;
}

/* The thread's top frame, for the sampled copy's prologue, and a frame's
 * instruction pointer, for its phases that end at the next instruction
 * (each instruction stores it as it starts). */
#define EVP_TOP_FRAME(tstate) ((tstate)->current_frame)
#define EVP_FRAME_IP(f) ((const void *)(f)->instr_ptr)

/* A returning frame's loop exit is bound to its caller, which is the
 * thread's top frame while the frame is cleared (RETURN_VALUE and the
 * others pop it first): no store at the frame switch after it, and none
 * pending there (evalprof_ceval_common.h). */
#define EVP_SAMPLE_LEAVE_TO_CALLER 1
#define EVP_SAMPLE_POPS 0

/* ---- locals and label hooks (placed by apply-hooks.py) -------------- */

/*
 * First thing in _PyEval_EvalFrameDefault (both copies): the copy, then
 * the frame entered from C.
 *   evp_c_frame  frame whose enter was emitted here (start_frame skips it)
 *   evp_popped   0, 1 = a frame was popped and its exit is pending,
 *                2 = a silent pop (the __init__ shim, a generator's
 *                creation), 3 = its suspend is pending
 *   evp_pop_fid  function id of that pending exit
 * The untraced copy declares them too (its hooks, compiled to nothing,
 * still name them); the compiler drops them.
 */
#define EVP_LOCALS \
    EVP_CHOOSE_COPY(); \
    _PyInterpreterFrame *evp_c_frame = NULL; \
    int evp_popped = 0; \
    uint32_t evp_pop_fid = 0; \
    if (EVP_ON()) { \
        evp_c_frame = frame; \
        evp_frame_enter(frame, 0); \
    }

/* start_frame: a frame pushed by DISPATCH_INLINED (or entered from C). */
#define EVP_HOOK_START_FRAME() \
    do { \
        if (EVP_ON()) { \
            if (frame != evp_c_frame) { \
                evp_frame_enter(frame, 0); \
            } \
            evp_c_frame = NULL; \
        } \
        EVP_SAMPLE_RELEASE(); \
        EVP_SAMPLE_PHASE(EVP_EV_ENTER); \
    } while (0)

/* resume_frame, error:, exception_unwind: evalprof_ceval_common.h */

#define EVP_HOOK_EXIT_UNWIND() \
    do { \
        EVP_HOOK_EMIT(EVP_EV_LOOP_EXITING); \
        EVP_SAMPLE_RELEASE(); \
    } while (0)

/* exit_unwind after the frame was popped: its exit, and runtime other
 * when the eval function is about to return NULL to C. */
#define EVP_HOOK_UNWOUND() \
    do { \
        if (EVP_ON()) { \
            if (evp_popped) { \
                evp_pop_done(&evp_popped, evp_pop_fid); \
            } \
            if (frame == &entry_frame) { \
                EVP_EMIT_IF(EVP_EV_RUNTIME_OTHER); \
            } \
        } \
        EVP_SAMPLE_RESUMED(-1); \
        if (EVP_COPY_SAMPLED && frame == &entry_frame) { \
            EVP_SAMPLE_PHASE(EVP_EV_RUNTIME_OTHER); \
        } \
    } while (0)

/* ---- redefined ceval_macros.h macros -------------------------------- */

/*
 * op: the handlers are CPython's, exactly as generated; the op hook lives
 * in the dispatch table.  In the traced copy DISPATCH_GOTO() jumps
 * through evp_dispatch_table, which is that copy's opcode_targets while
 * op events are not recorded, else evp_traced_targets (Python/
 * evalprof_targets.h, which apply-hooks.py derives from opcode_targets.h).
 * Its entries lead each instruction to its own EVP_TRACED_op block
 * (Python/evalprof_entries.h, placed after the handlers and marked cold),
 * which records the op event, oparg valid, and jumps straight to the
 * handler's TARGET_op.  Every handler keeps its own indirect jump, so
 * dispatch is measured as it really happens.  The untraced copy has
 * neither table nor entries and jumps through its own opcode_targets, as
 * CPython does (evalprof_ceval_common.h defines the table and
 * DISPATCH_GOTO).
 *
 * Each call of the traced copy makes the table match the recorder's
 * mask; a traced entry that finds op events off (the trace closed, a
 * forked child) switches back to the plain table at once.  DEOPT_IF jumps
 * to the PREDICTED label inside the base handler and DISPATCH_SAME_OPARG
 * uses the plain table: either way the instruction counts once.
 * INSTRUMENTED_LINE, INSTRUMENTED_INSTRUCTION (sys.monitoring prefixes to
 * the real instruction, which is counted) and INTERPRETER_EXIT (the way
 * back to C, recorded as runtime other) keep their plain entries.
 */

/*
 * op at (lines recorded, docs/EVENTS.md): the instruction at INSTR of
 * FRAME, whose code unit travels with the op, and before the first op at
 * of a function its line table.  A frame whose instructions belong to
 * another function's time (a generator's creation, the __init__ shim
 * SHIM) records a plain op: its units would be read against the wrong
 * function's lines.
 */
static EVP_COLD void
evp_op_at(_PyInterpreterFrame *f, const _Py_CODEUNIT *instr, unsigned op,
          uint32_t oparg, const void *shim)
{
    PyCodeObject *co = _PyFrame_GetCode(f);
    ptrdiff_t unit = instr - _PyCode_CODE(co);
    uint32_t id;
    if ((const void *)co == shim || evp_creates_gen(f) || unit < 0 ||
        unit >= (1 << 24) || (id = _PyEvalprof_CodeLines(co)) == 0) {
        evp_rec_emit(EVP_EV_OP, op, oparg);
        return;
    }
    evp_rec_emit(EVP_EV_OP_AT, op, (uint32_t)unit << 8 | (oparg & 0xff));
}

/* The traced entry reads the mask with an atomic load: with a plain one,
 * GCC may hoist the read above every dispatch's indirect jump (into the
 * untraced path) to share it with the traced entries.  The sampled copy
 * reaches its entries only with EVALPROF_COUNTS (its own table's entries
 * are then these: evalprof_ceval_common.h), and there they count the
 * opcode. */
#define EVP_OP_ENTRY(op) \
    do { \
        if (EVP_COPY_SAMPLED) { \
            EVP_SAMPLE_COUNT(op); \
        } \
        else if (evp_rec_wants(EVP_EV_OP)) { \
            evp_rec_emit(EVP_EV_OP, (op), (uint32_t)oparg); \
        } \
        else if (evp_rec_wants(EVP_EV_OP_AT)) { \
            evp_op_at(frame, next_instr, (op), (uint32_t)oparg, \
                      &_Py_InitCleanup); \
        } \
        else { \
            evp_dispatch_table = opcode_targets; \
        } \
    } while (0)

/* The sampled copy's dispatch table and error: hook: evalprof_ceval_common.h
 */

/* INTERPRETER_EXIT runs in the entry frame when the eval function returns
 * to C: runtime other.  A frame's first instruction, RESUME (or its
 * forms), leaves the instruction pointer where the frame's loop enter
 * found it: the sampled copy ends that phase here, once per call. */
#undef INSTRUCTION_STATS
#define INSTRUCTION_STATS(op) \
    do { \
        if ((op) == RESUME || (op) == RESUME_CHECK || \
            (op) == INSTRUMENTED_RESUME) { \
            EVP_SAMPLE_PHASE(EVP_EV_OP); \
        } \
        if ((op) == INTERPRETER_EXIT) { \
            EVP_EMIT_IF(EVP_EV_RUNTIME_OTHER); \
        } \
    } while (0)

#ifdef LLTRACE
#define EVP_LLTRACE_INSTRUCTION() \
    do { \
        if (lltrace >= 5) { \
            lltrace_instruction(frame, stack_pointer, next_instr, opcode, \
                                oparg); \
        } \
    } while (0)
#else
#define EVP_LLTRACE_INSTRUCTION() ((void)0)
#endif

/* dispatch: DISPATCH() and EXTENDED_ARG, not in the entry frame (that is
 * the way out of the eval function, shown as runtime other). */
#undef PRE_DISPATCH_GOTO
#define PRE_DISPATCH_GOTO() \
    do { \
        if (EVP_WANTS(EVP_EV_DISPATCH) && frame != &entry_frame) { \
            evp_event(EVP_EV_DISPATCH); \
        } \
        EVP_SAMPLE_PHASE(EVP_EV_DISPATCH); \
        EVP_LLTRACE_INSTRUCTION(); \
    } while (0)

/* Used only to re-run an instruction that has just specialized itself:
 * the same instruction, counted once (the plain table, no dispatch). */
#undef DISPATCH_SAME_OPARG
#define DISPATCH_SAME_OPARG() \
    { \
        opcode = next_instr->op.code; \
        EVP_LLTRACE_INSTRUCTION(); \
        goto *EVP_PLAIN_TARGETS[opcode]; \
    }

/* The eval breaker: loop slow when set, loop fast when not. */
#undef CHECK_EVAL_BREAKER
#define CHECK_EVAL_BREAKER() \
    _Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY(); \
    QSBR_QUIESCENT_STATE(tstate); \
    if (_Py_atomic_load_uintptr_relaxed(&tstate->eval_breaker) & \
        _PY_EVAL_EVENTS_MASK) { \
        EVP_EMIT_IF(EVP_EV_LOOP_SLOW); \
        if (_Py_HandlePending(tstate) != 0) { \
            GOTO_ERROR(error); \
        } \
    } \
    else { \
        EVP_EMIT_IF(EVP_EV_LOOP_FAST); \
    }

/*
 * RESUME_CHECK (the specialized RESUME of every warm function) folds the
 * eval-breaker test into "DEOPT_IF(eval_breaker != version, RESUME)":
 * passing it is the breaker's fast path.  Failing it re-runs RESUME, whose
 * CHECK_EVAL_BREAKER reports slow or fast.  The comparison with RESUME is
 * a constant, folded away in every other DEOPT_IF.
 */
#undef DEOPT_IF
#define DEOPT_IF(COND, INSTNAME) \
    if ((COND)) { \
        /* This is only a single jump on release builds! */ \
        UPDATE_MISS_STATS((INSTNAME)); \
        assert(_PyOpcode_Deopt[opcode] == (INSTNAME)); \
        GO_TO_INSTRUCTION(INSTNAME); \
    } \
    if ((INSTNAME) == RESUME) { \
        EVP_EMIT_IF(EVP_EV_LOOP_FAST); \
    }

/*
 * Two specializations do the work of the next instruction too and skip
 * it (BINARY_OP_INPLACE_ADD_UNICODE its STORE_FAST, CALL_LIST_APPEND its
 * POP_TOP): count the skipped instruction, so op counts match the
 * bytecode that ran.
 */
static EVP_COLD void
evp_skipped_op(_PyInterpreterFrame *f, const _Py_CODEUNIT *next, int n,
               const void *shim)
{
    for (int i = 0; i < n; i++) {
        if (evp_wants(EVP_EV_OP)) {
            evp_rec_emit(EVP_EV_OP, next[i].op.code, next[i].op.arg);
        }
        else if (evp_wants(EVP_EV_OP_AT)) {
            evp_op_at(f, next + i, next[i].op.code, next[i].op.arg, shim);
        }
    }
}

/* The sampled copy counts them alike. */
static EVP_COLD void
evp_count_skipped(const _Py_CODEUNIT *next, int n)
{
    for (int i = 0; i < n; i++) {
        evp_count_op(next[i].op.code);
    }
}

#undef SKIP_OVER
#define SKIP_OVER(x) \
    ((EVP_COPY_TRACED \
          ? evp_skipped_op(frame, next_instr, (x), &_Py_InitCleanup) \
      : EVP_COUNTING() ? evp_count_skipped(next_instr, (x)) \
                       : (void)0), \
     next_instr += (x))

/*
 * Frames end through _Py_LeaveRecursiveCallPy (RETURN_VALUE, RETURN_CONST,
 * RETURN_GENERATOR, YIELD_VALUE, their INSTRUMENTED_ forms, exit_unwind)
 * while `frame` is still the one that ends.  The function of that name
 * stays callable as (_Py_LeaveRecursiveCallPy)(tstate).
 */
#define _Py_LeaveRecursiveCallPy(TSTATE) \
    do { \
        if (EVP_ON()) { \
            evp_frame_leave(frame, &_Py_InitCleanup, &evp_popped, \
                            &evp_pop_fid); \
        } \
        EVP_SAMPLE_LEAVE(EVP_EV_LOOP_EXIT); \
        (_Py_LeaveRecursiveCallPy)(TSTATE); \
    } while (0)

/*
 * LLTRACE_RESUME_FRAME() follows every frame switch inside the loop: a
 * pop (returns and yields, after _Py_LeaveRecursiveCallPy: the pending
 * exit) or a push by _PUSH_FRAME (CALL_PY_EXACT_ARGS, FOR_ITER_GEN, ...:
 * enter and loop enter, as these never pass start_frame).  The sampled
 * copy stores nothing here: a pop's loop exit is bound to the caller,
 * and a pushed frame's first instruction, RESUME, stores phase op (its
 * set-up was its caller's instruction, and nothing runs between).
 */
#define EVP_FRAME_SWITCH() \
    do { \
        if (EVP_ON()) { \
            if (evp_popped) { \
                evp_pop_done(&evp_popped, evp_pop_fid); \
            } \
            else { \
                evp_frame_enter(frame, 1); \
            } \
        } \
    } while (0)

#undef LLTRACE_RESUME_FRAME
#ifdef LLTRACE
#define LLTRACE_RESUME_FRAME() \
    do { \
        EVP_FRAME_SWITCH(); \
        lltrace = maybe_lltrace_resume_frame(frame, &entry_frame, GLOBALS()); \
        if (lltrace < 0) { \
            goto exit_unwind; \
        } \
    } while (0)
#else
#define LLTRACE_RESUME_FRAME() EVP_FRAME_SWITCH()
#endif

#endif /* !Py_EVALPROF_CEVAL_H */
