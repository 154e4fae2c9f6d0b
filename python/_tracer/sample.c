/*
 * evalprof._tracer: the sampled mode (docs/FORMAT.md "Samples").
 *
 * No hook of the interpreter is installed.  The recorder's per-thread
 * timer (recorder.h "sampling") interrupts each registered thread; the
 * signal handler, on the interrupted thread, calls on_sample() below,
 * which reads the thread's Python frames straight from memory, as
 * faulthandler does, and stores one sample: the function keys of the
 * stack (leaf first), the leaf's code unit and executed opcode, and the
 * state flags of format.h (in the eval function, in a C call, without
 * the GIL, and then blocked taking it or in another system call, stack
 * truncated, no Python frame).
 *
 * The walk reads the thread state, the frames and the code objects
 * through the interpreter's layout (layout.h: on 3.13+ the offsets the
 * interpreter publishes for tools), the same code on every version.  A
 * sample in JIT-compiled code (3.14+, PYTHON_JIT=1) is marked so, and its
 * instruction is the frame's last _SET_IP's (docs/FORMAT.md, bits 22-23).
 *
 * on_sample() is async-signal-safe: no Python API, no allocation, no
 * lock, no system call.  It finds its thread's state through an
 * initial-exec TLS pointer set when the thread registered, never through
 * PyThreadState_Get().  A code object becomes a per-thread key through a
 * fixed-size open-addressing table allocated at registration, keyed by
 * the code's address and checked against its qualname and filename
 * pointers and first line, so that a freed code object whose address is
 * reused by another gets a new key.  A key is the slot's index plus its
 * generation (bumped each time the slot is given to another code); on a
 * miss the handler gives the recorder the function's name, file and line
 * table (evp_rec_sample_func) before using the key.
 *
 * Threads register on the thread itself (the recorder's timer and ring
 * are the calling thread's):
 *   - the thread calling start();
 *   - threads started later through threading: the package wraps
 *     threading.Thread._bootstrap_inner to call sample_thread() first
 *     (once per thread);
 *   - threads started with _thread.start_new_thread directly: the
 *     package wraps that function in _thread, and the thread's function
 *     in one that calls sample_thread() first;
 *   - threads already running: each gets a one-shot C profile function
 *     (_PyEval_SetProfile on its thread state, only where the slot is
 *     free) that registers the thread at its first call or return and
 *     removes itself; a thread that runs no Python code after start()
 *     is not sampled.  On 3.12+ the interpreter instruments code for
 *     profiling until every such thread has had its first event.
 * A thread stops sampling when its thread state is cleared (the thread
 * ends): a capsule kept in its thread-state dict has the destructor.
 *
 * The frame chain is read while the thread may be changing it: on 3.11
 * and 3.12 the eval function publishes its C frame (tstate->cframe)
 * before it sets that frame's current_frame, so for a few instructions
 * the leaf pointer is stack garbage.  The walk therefore runs under a
 * fault guard: a SIGSEGV or SIGBUS handler, installed for the session,
 * jumps back out of a walk that faulted (the sample is dropped); any
 * other fault goes to the disposition that was there before.  A garbage
 * pointer that happens to be readable fails the code object's type
 * check and ends the walk.
 *
 * evalprof's own frames (code from files under the package directory,
 * e.g. the thread wrapper) are left out of the stacks, and a thread
 * interrupted in evalprof's own code (starting or stopping) takes no
 * sample.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unwind.h>
#include <unistd.h>

#include "tracer.h"
#include "layout.h"

#include "evalprof/format.h"

/* A field of the interpreter's memory at OFF bytes into P (layout.h). */
#define AT(p, off, T) (*(T const *)((const char *)(p) + (off)))

/* gilstate.c */
int evp_sample_gil_held(PyThreadState *ts);
const void *evp_sample_gil_lock(PyThreadState *ts, size_t *size);

/* ---- per-thread state ----------------------------------------------------
 */

#define SLOT_BITS 12
#define NSLOTS (1u << SLOT_BITS)
#define PROBES 8
#define GEN_MASK ((1u << (31 - SLOT_BITS)) - 1)
#define NAME_MAX_BYTES 1024

struct code_slot {
    PyCodeObject *co;              /* NULL: empty */
    PyObject *qualname, *filename; /* the validation tuple, with firstline */
    int firstline;
    uint32_t key;   /* the thread's key of this code */
    uint32_t gen;   /* times this slot was given to a code */
    uint8_t ignore; /* evalprof's own code: left out of stacks */
};

struct sample_thread {
    uint64_t session; /* evp_sample_session it was registered in */
    pid_t pid;        /* process that registered it (fork) */
    PyThreadState *ts;
    unsigned max_depth;
    struct code_slot slots[NSLOTS];
    char name[NAME_MAX_BYTES], file[NAME_MAX_BYTES]; /* UTF-8 scratch */
    /* the sample being taken (kept here, not in the handler's locals,
     * across the fault guard's jump) */
    uint32_t flags, unit1;
    unsigned op1;
    uint32_t keys[]; /* max_depth */
};

static __thread struct sample_thread *sample_tls
    __attribute__((tls_model("initial-exec")));

static uint64_t walk_faults; /* walks cut short by a fault */

/* Non-zero while sampling: the session a thread's state must match. */
static uint64_t evp_sample_session;
static uint64_t session_counter;
static unsigned session_depth; /* max_depth of the session */

/* Executed opcode -> its base is a call instruction (C_CALL). */
static uint8_t call_op[256];

/* Address ranges of _PyEval_EvalFrameDefault (hot and cold parts). */
static struct {
    uintptr_t lo, hi;
} eval_range[4];
static int n_eval_range = -1; /* -1: not looked for yet */

#define CAPSULE_NAME "evalprof._tracer.sample_thread"
#define DICT_KEY "evalprof.sample_thread"

/* ---- strings, as faulthandler reads them ---------------------------------
 */

/* Append code point CP to BUF as UTF-8; returns the new length. */
static size_t
put_utf8(char *buf, size_t n, size_t cap, Py_UCS4 cp)
{
    if (cp >= 0xd800 && cp <= 0xdfff)
        cp = 0xfffd; /* a lone surrogate */
    if (cp < 0x80) {
        if (n + 1 <= cap)
            buf[n++] = (char)cp;
    }
    else if (cp < 0x800) {
        if (n + 2 <= cap) {
            buf[n++] = (char)(0xc0 | cp >> 6);
            buf[n++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    else if (cp < 0x10000) {
        if (n + 3 <= cap) {
            buf[n++] = (char)(0xe0 | cp >> 12);
            buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
            buf[n++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    else if (n + 4 <= cap) {
        buf[n++] = (char)(0xf0 | cp >> 18);
        buf[n++] = (char)(0x80 | (cp >> 12 & 0x3f));
        buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
        buf[n++] = (char)(0x80 | (cp & 0x3f));
    }
    return n;
}

/*
 * The UTF-8 bytes of str S without calling Python: a compact ASCII
 * string's own data, a compact string's cached UTF-8, else its code
 * points encoded into BUF (up to NAME_MAX_BYTES bytes).  *LEN gets the
 * size.  Anything else (not a str, a legacy string) is "<?>".
 */
static const char *
str_bytes(PyObject *s, char *buf, size_t *len)
{
    static const char unknown[] = "<?>";
    if (s == NULL || !Py_IS_TYPE(s, &PyUnicode_Type))
        goto other;
    PyASCIIObject *a = (PyASCIIObject *)s;
    if (!a->state.compact)
        goto other;
    if (a->state.ascii) {
        *len = (size_t)a->length;
        return (const char *)(a + 1);
    }
    PyCompactUnicodeObject *c = (PyCompactUnicodeObject *)s;
    if (c->utf8 != NULL) {
        *len = (size_t)c->utf8_length;
        return c->utf8;
    }
    const void *data = c + 1;
    size_t n = 0;
    for (Py_ssize_t i = 0; i < a->length && n + 4 <= NAME_MAX_BYTES; i++) {
        Py_UCS4 cp;
        switch (a->state.kind) {
        case PyUnicode_1BYTE_KIND:
            cp = ((const Py_UCS1 *)data)[i];
            break;
        case PyUnicode_2BYTE_KIND:
            cp = ((const Py_UCS2 *)data)[i];
            break;
        case PyUnicode_4BYTE_KIND:
            cp = ((const Py_UCS4 *)data)[i];
            break;
        default:
            goto other;
        }
        n = put_utf8(buf, n, NAME_MAX_BYTES, cp);
    }
    *len = n;
    return buf;
other:
    *len = sizeof unknown - 1;
    return unknown;
}

/* ---- the code table ------------------------------------------------------
 */

static inline uint32_t
code_hash(PyCodeObject *co)
{
    uint64_t h = ((uintptr_t)co >> 4) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> (64 - SLOT_BITS));
}

/*
 * The slot keying CO for thread ST, keying it on a miss (and giving the
 * recorder its name, file and line table).  NULL when the recorder could
 * not take the function (ring full): the sample is dropped, and the next
 * one tries again.
 */
static struct code_slot *
code_slot(struct sample_thread *st, PyCodeObject *co)
{
    PyObject *qn = AT(co, evp_L.code_qualname, PyObject *);
    PyObject *fn = AT(co, evp_L.code_filename, PyObject *);
    int fl = AT(co, evp_L.code_firstlineno, int);
    uint32_t h = code_hash(co);
    struct code_slot *s = NULL;
    for (uint32_t i = 0; i < PROBES; i++) {
        struct code_slot *t = &st->slots[(h + i) & (NSLOTS - 1)];
        if (t->co == co) {
            if (t->qualname == qn && t->filename == fn && t->firstline == fl)
                return t;
            s = t; /* the same address, another code: key it again */
            break;
        }
        if (t->co == NULL) {
            s = t;
            break;
        }
    }
    if (s == NULL)
        s = &st->slots[h]; /* every probe taken: evict the first */
    s->gen = (s->gen + 1) & GEN_MASK;
    uint32_t idx = (uint32_t)(s - st->slots);
    s->co = NULL;
    s->key = (s->gen << SLOT_BITS | idx) + 1;
    s->qualname = qn;
    s->filename = fn;
    s->firstline = fl;

    size_t nlen, flen;
    const char *name = str_bytes(qn, st->name, &nlen);
    const char *file = str_bytes(fn, st->file, &flen);
    s->ignore = evp_S.ignore_len > 0 && flen >= evp_S.ignore_len &&
                memcmp(file, evp_S.ignore_prefix, evp_S.ignore_len) == 0;
    if (!s->ignore) {
        PyObject *lt = AT(co, evp_L.code_linetable, PyObject *);
        const uint8_t *ltb = NULL;
        size_t ltlen = 0;
        if (lt != NULL && Py_IS_TYPE(lt, &PyBytes_Type)) {
            ltb = (const uint8_t *)((PyBytesObject *)lt)->ob_sval;
            ltlen = (size_t)Py_SIZE(lt);
        }
        if (evp_rec_sample_func(s->key, name, nlen, file, flen,
                                fl > 0 ? (uint32_t)fl : 0, ltb, ltlen,
                                ltb ? EVP_LT_CPYTHON311 : EVP_LT_NONE) < 0)
            return NULL;
    }
    s->co = co;
    return s;
}

/* ---- the handler ---------------------------------------------------------
 */

static inline const void *
current_frame(const void *ts)
{
    if (evp_L.ts_cframe != SIZE_MAX) {
        const void *cf = AT(ts, evp_L.ts_cframe, void *);
        return cf != NULL ? AT(cf, evp_L.cframe_current_frame, void *) : NULL;
    }
    return AT(ts, evp_L.ts_current_frame, void *);
}

static inline uintptr_t
context_pc(void *ucontext)
{
    ucontext_t *uc = ucontext;
    if (uc == NULL)
        return 0;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    return 0;
#endif
}

/*
 * The unit starting the instruction whose code units hold unit U, of the N
 * units at CODE: U itself unless the version lets an instruction pointer
 * rest on an inline cache entry (layout.h, ip_in_caches).  Then, if no
 * unit of the few before U is an instruction with that many cache entries
 * (the usual case), U starts an instruction; else the code is decoded
 * from its start to U.  -1 when the decoding does not meet U (code
 * instrumented by sys.monitoring, whose opcodes are not the table's).
 */
static ptrdiff_t
instruction_at(const uint8_t *code, ptrdiff_t n, ptrdiff_t u)
{
    if (!evp_L.ip_in_caches)
        return u;
    int maybe = 0;
    for (ptrdiff_t k = 1; k <= 16 && k <= u && !maybe; k++)
        maybe = evp_L.caches[evp_L.deopt[code[2 * (u - k)]]] >= k;
    if (!maybe)
        return u;
    for (ptrdiff_t i = 0; i < n;) {
        ptrdiff_t next = i + 1 + evp_L.caches[evp_L.deopt[code[2 * i]]];
        if (u < next)
            return i;
        i = next;
    }
    return -1;
}

/*
 * Walk the thread's frames into ST->keys: returns the depth, or -1 when
 * the sample is to be dropped (a function the recorder could not take,
 * or evalprof's own code running).  *FLAGS, *OP1, *UNIT1 get the flags
 * it found and the leaf's opcode + 1 and code unit + 1.  Every read goes
 * through the interpreter's layout (evp_L), the same code on 3.11-3.15.
 */
static int
walk(struct sample_thread *st, int c_call_possible, uint32_t *flags,
     unsigned *op1, uint32_t *unit1)
{
    unsigned depth = 0;
    const void *f = current_frame(st->ts);
    /* the bound guards against a damaged chain, never met otherwise */
    for (unsigned walked = 0; f != NULL && walked < (1u << 22);
         f = AT(f, evp_L.frame_previous, void *), walked++) {
        int owner = AT(f, evp_L.frame_owner, char);
        if (owner >= evp_L.owner_not_python)
            continue;
        PyCodeObject *co =
            (PyCodeObject *)(AT(f, evp_L.frame_executable, uintptr_t) &
                             evp_L.executable_mask);
        if (co == NULL ||
            AT(co, evp_L.ob_type, const void *) != evp_L.code_type)
            break;
        const uint8_t *code = (const uint8_t *)co + evp_L.code_adaptive;
        const uint8_t *ip = AT(f, evp_L.frame_instr_ptr, const uint8_t *);
        ptrdiff_t unit = (ip - code) / 2;
        /* a frame not yet started (before its first RESUME, its
         * arguments being copied in), as _PyFrame_IsIncomplete tells */
        if (owner != evp_L.owner_generator &&
            (ip < code || unit < AT(co, evp_L.code_firsttraceable, int)))
            continue;
        if (depth == st->max_depth) {
            *flags |= EVP_SAMPLE_TRUNCATED;
            break;
        }
        struct code_slot *s = code_slot(st, co);
        if (s == NULL)
            return -1;
        if (s->ignore) {
            if (depth == 0)
                return -1; /* evalprof itself is running, not the program */
            continue;
        }
        if (depth == 0 && ip >= code) {
            ptrdiff_t n = AT(co, evp_L.code_size, Py_ssize_t);
            unit = unit < n ? instruction_at(code, n, unit) : -1;
            if (unit >= 0) {
                unsigned op = code[2 * unit];
                *unit1 = (uint32_t)unit + 1;
                *op1 = op + 1;
                if (c_call_possible && call_op[op])
                    *flags |= EVP_SAMPLE_C_CALL;
            }
        }
        st->keys[depth++] = s->key;
    }
    return (int)depth;
}

static void
on_sample(void *ucontext, uint32_t weight)
{
    struct sample_thread *st = sample_tls;
    if (st == NULL ||
        st->session != __atomic_load_n(&evp_sample_session, __ATOMIC_RELAXED))
        return;
    uint32_t flags = 0;
    if (!evp_sample_gil_held(st->ts))
        flags |= EVP_SAMPLE_NO_GIL | evp_rec_sample_blocked(ucontext);
    uintptr_t pc = context_pc(ucontext);
    int in_eval = 0;
    for (int i = 0; i < n_eval_range; i++)
        in_eval |= pc >= eval_range[i].lo && pc < eval_range[i].hi;
    if (in_eval)
        flags |= EVP_SAMPLE_IN_EVAL;

    st->flags = flags;
    st->op1 = 0;
    st->unit1 = 0;
    evp_jmp_buf jb;
    if (EVP_SETJMP(jb) != 0) {
        /* the walk read memory that is not there: no sample */
        evp_rec_fault_guard_arm(NULL);
        __atomic_fetch_add(&walk_faults, 1, __ATOMIC_RELAXED);
        return;
    }
    evp_rec_fault_guard_arm(&jb);
    if (pc != 0 && !in_eval) {
        int jit = evp_layout_jit(st->ts, pc);
        if (jit == 2)
            st->flags |= EVP_SAMPLE_IN_JIT | EVP_SAMPLE_TIER2;
        else if (jit == 1)
            st->flags |= EVP_SAMPLE_TIER2;
    }
    int depth =
        walk(st, pc != 0 && !in_eval && !(st->flags & EVP_SAMPLE_IN_JIT),
             &st->flags, &st->op1, &st->unit1);
    evp_rec_fault_guard_arm(NULL);
    if (depth < 0)
        return;
    if (depth == 0)
        st->flags |= EVP_SAMPLE_NO_FRAME;
    evp_rec_sample_put(evp_rec_now(), evp_sample_state(st->op1, 0, st->flags),
                       st->unit1, weight, st->keys, (unsigned)depth);
}

/* ---- where the eval function is ------------------------------------------
 */

static void
add_range(uintptr_t lo, uintptr_t hi)
{
    if (hi > lo &&
        n_eval_range < (int)(sizeof eval_range / sizeof eval_range[0])) {
        eval_range[n_eval_range].lo = lo;
        eval_range[n_eval_range].hi = hi;
        n_eval_range++;
    }
}

/*
 * The eval function's split-off parts (_PyEval_EvalFrameDefault.cold and
 * the like, local symbols that only the file's own symbol table names) in
 * the ELF file PATH loaded at BASE.  A stripped file has none to add.
 */
static void
add_split_parts(const char *path, uintptr_t base)
{
    static const char prefix[] = "_PyEval_EvalFrameDefault.";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat sb;
    if (fstat(fd, &sb) < 0 || sb.st_size < (off_t)sizeof(ElfW(Ehdr))) {
        close(fd);
        return;
    }
    size_t size = (size_t)sb.st_size;
    const uint8_t *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > size ||
        (size - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum)
        goto out;
    uintptr_t load = eh->e_type == ET_DYN ? base : 0;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(m + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const ElfW(Shdr) *ss = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset ||
            ss->sh_offset > size || ss->sh_size > size - ss->sh_offset)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(m + sh[i].sh_offset);
        size_t nsym = sh[i].sh_size / sizeof *sym;
        const char *str = (const char *)(m + ss->sh_offset);
        for (size_t k = 0; k < nsym; k++) {
            if (sym[k].st_name >= ss->sh_size ||
                ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC)
                continue;
            const char *nm = str + sym[k].st_name;
            size_t room = ss->sh_size - sym[k].st_name;
            if (room > sizeof prefix &&
                strncmp(nm, prefix, sizeof prefix - 1) == 0 &&
                memchr(nm, '\0', room) != NULL)
                add_range(load + sym[k].st_value,
                          load + sym[k].st_value + sym[k].st_size);
        }
    }
out:
    munmap((void *)m, size);
}

/* ---- the eval function in a stripped interpreter ----------------------- */

struct hdr_search {
    uintptr_t pc;          /* an address in the object searched */
    uintptr_t start, next; /* out: its function's start, the next one's */
};

/* Read a signed 32-bit value of the .eh_frame_hdr table. */
static inline int32_t
sdata4(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/*
 * dl_iterate_phdr callback: in the object holding S->pc, the function
 * containing it according to the unwind table's sorted index
 * (.eh_frame_hdr: entries of DW_EH_PE_datarel | DW_EH_PE_sdata4, as GCC
 * and the linkers write it): its start and the start of the next.
 */
static int
hdr_search_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct hdr_search *s = arg;
    const ElfW(Phdr) *eh = NULL;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && s->pc >= lo && s->pc - lo < ph->p_memsz)
            holds = 1;
        if (ph->p_type == PT_GNU_EH_FRAME)
            eh = ph;
    }
    if (!holds)
        return 0;
    if (eh == NULL)
        return 1;
    const uint8_t *h = (const uint8_t *)(info->dlpi_addr + eh->p_vaddr);
    /* version 1; eh_frame_ptr sdata4 pcrel; fde_count udata4; table
     * datarel sdata4 */
    if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
        return 1;
    uint32_t count;
    memcpy(&count, h + 8, sizeof count);
    const uint8_t *t = h + 12;
    uintptr_t base = (uintptr_t)h;
    uint32_t lo = 0, hi = count;
    while (hi - lo > 1) { /* the last entry starting at or below pc */
        uint32_t mid = lo + (hi - lo) / 2;
        if (base + (intptr_t)sdata4(t + 8 * (size_t)mid) <= s->pc)
            lo = mid;
        else
            hi = mid;
    }
    if (count == 0 || base + (intptr_t)sdata4(t) > s->pc)
        return 1;
    s->start = base + (intptr_t)sdata4(t + 8 * (size_t)lo);
    s->next = lo + 1 < count
                  ? base + (intptr_t)sdata4(t + 8 * (size_t)(lo + 1))
                  : s->start;
    return 1;
}

/* Functions this large on the calling stack are the evaluation loop's
 * (its body, or a part the compiler split off): no other function of
 * CPython comes near. */
#define EVAL_LOOP_MIN_BYTES (48u * 1024)

struct unwind_walk {
    uintptr_t lo, hi; /* the object holding the eval function */
    int frames;
};

static _Unwind_Reason_Code
unwind_cb(struct _Unwind_Context *ctx, void *arg)
{
    struct unwind_walk *w = arg;
    if (++w->frames > 64)
        return _URC_END_OF_STACK;
    uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
    if (ip == 0)
        return _URC_END_OF_STACK;
    struct hdr_search s = {.pc = ip - 1};
    dl_iterate_phdr(hdr_search_cb, &s);
    if (s.next > s.start && s.next - s.start >= EVAL_LOOP_MIN_BYTES) {
        for (int i = 0; i < n_eval_range; i++)
            if (eval_range[i].lo <= s.start && s.start < eval_range[i].hi)
                return _URC_NO_REASON; /* known already */
        add_range(s.start, s.next);
    }
    return _URC_NO_REASON;
}

static void
find_eval_function(void)
{
    if (n_eval_range >= 0)
        return;
    n_eval_range = 0;
    void *fn = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (fn == NULL || !dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) ||
        sym == NULL)
        return;
    add_range((uintptr_t)fn, (uintptr_t)fn + sym->st_size);
    const char *path = info.dli_fname;
    if (path == NULL || *path == '\0' || strchr(path, '/') == NULL)
        path = "/proc/self/exe"; /* the executable itself */
    add_split_parts(path, (uintptr_t)info.dli_fbase);
    /* A stripped interpreter names no split-off part: the loop that runs
     * the call to start() is on this very stack, the largest function
     * there, and the unwind table gives its extent. */
    struct unwind_walk w = {0};
    _Unwind_Backtrace(unwind_cb, &w);
}

/* ---- threads -------------------------------------------------------------
 */

static void
thread_capsule_free(PyObject *cap)
{
    struct sample_thread *st = PyCapsule_GetPointer(cap, CAPSULE_NAME);
    if (st == NULL) {
        PyErr_Clear();
        return;
    }
    if (sample_tls == st) {
        /* the thread itself, ending (or stop()): no handler of it may
         * see the state once it is freed */
        sample_tls = NULL;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (st->session == evp_sample_session)
            evp_rec_sample_thread_stop();
        free(st);
    }
    else if (st->pid != getpid()) {
        free(st); /* a forked child clearing threads it does not have */
    }
    /* else another thread clears it (the interpreter's finalization):
     * its owner may still take a signal, so it is left */
}

/*
 * Register the calling thread (thread state TS) for sampling, its stream
 * named NAME (NULL: "thread <tid>").  Returns 0 (also when it already
 * is), or -1 with an exception.
 */
static int
thread_begin(PyThreadState *ts, const char *name)
{
    if (!evp_sample_session)
        return 0;
    if (sample_tls != NULL && sample_tls->session == evp_sample_session)
        return 0;
    PyObject *dict = PyThreadState_GetDict();
    if (dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "evalprof: the thread has no state dict");
        return -1;
    }
    size_t sz = sizeof(struct sample_thread) +
                (size_t)session_depth * sizeof(uint32_t);
    struct sample_thread *st = calloc(1, sz);
    if (st == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    evp_rec_prefault(st, sz);
    st->session = evp_sample_session;
    st->pid = getpid();
    st->ts = ts;
    st->max_depth = session_depth;
    PyObject *cap = PyCapsule_New(st, CAPSULE_NAME, thread_capsule_free);
    if (cap == NULL) {
        free(st);
        return -1;
    }
    /* replaces (and frees) the state of an earlier session */
    int rc = PyDict_SetItemString(dict, DICT_KEY, cap);
    Py_DECREF(cap);
    if (rc < 0)
        return -1;
    sample_tls = st;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    rc = evp_rec_sample_thread_start(name);
    if (rc < 0) {
        sample_tls = NULL;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (PyDict_DelItemString(dict, DICT_KEY) < 0)
            PyErr_Clear();
        if (rc == -ENOTCONN)
            return 0; /* sampling ended meanwhile */
        errno = -rc;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    size_t gil_size;
    const void *gil = evp_sample_gil_lock(ts, &gil_size);
    evp_rec_sample_thread_gil(gil, gil_size);
    return 0;
}

/* The calling thread stops sampling (its state is freed). */
static void
thread_end(void)
{
    PyObject *dict = PyThreadState_GetDict();
    if (dict != NULL && PyDict_GetItemString(dict, DICT_KEY) != NULL &&
        PyDict_DelItemString(dict, DICT_KEY) < 0)
        PyErr_Clear();
}

static void
begin_named(PyThreadState *ts)
{
    char name[256];
    int rc = evp_python_thread_name(name, sizeof name)
                 ? thread_begin(ts, name)
                 : thread_begin(ts, NULL);
    if (rc < 0)
        PyErr_Clear(); /* this thread goes unsampled */
}

/* One-shot profile function of a thread already running at start(). */
static int
first_event(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    PyThreadState *ts = PyThreadState_Get();
    PyEval_SetProfile(NULL, NULL);
    begin_named(ts);
    return 0;
}

/* Give every other thread of the interpreter the one-shot profile
 * function (ON), or take it back from those that never ran it. */
static void
other_threads(int on)
{
    PyThreadState *self = PyThreadState_Get();
    PyInterpreterState *interp = PyThreadState_GetInterpreter(self);
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t != NULL;
         t = PyThreadState_Next(t)) {
        if (t == self)
            continue;
        if (on ? t->c_profilefunc == NULL : t->c_profilefunc == first_event) {
            if (_PyEval_SetProfile(t, on ? first_event : NULL, NULL) < 0)
                PyErr_Clear();
        }
    }
}

/* ---- the session ---------------------------------------------------------
 */

/* Which executed opcodes are calls: those whose base is named CALL... or
 * PRECALL (3.11), from the table of (opcode, base, name). */
void
evp_sample_call_ops(const struct evp_opcode_desc *d, size_t n)
{
    uint8_t base_is_call[256] = {0};
    for (size_t i = 0; i < n; i++) {
        if (d[i].opcode == d[i].base && d[i].opcode < 256)
            base_is_call[d[i].opcode] =
                strncmp(d[i].name, "CALL", 4) == 0 ||
                strcmp(d[i].name, "PRECALL") == 0 ||
                strcmp(d[i].name, "INSTRUMENTED_CALL") == 0 ||
                strcmp(d[i].name, "INSTRUMENTED_CALL_FUNCTION_EX") == 0;
    }
    memset(call_op, 0, sizeof call_op);
    for (size_t i = 0; i < n; i++) {
        if (d[i].opcode < 256 && d[i].base < 256)
            call_op[d[i].opcode] = base_is_call[d[i].base];
    }
}

/* A forked child that follows the fork samples the forking thread into a
 * ring of its own (src/recorder/sample.c), which knows none of the keys
 * the parent's ring was given: the thread's code cache starts afresh, so
 * each code is given to the recorder again.  (The slots hold no
 * references.)  The recorder calls this before its sampler starts again
 * in the child: a sample taken before the cache is emptied would name a
 * key the child's trace has no function for (a fork handler of this
 * file's own ran after the recorder's, and such a sample came out as
 * "<unknown>"). */
static void
after_fork_child(void)
{
    struct sample_thread *st = sample_tls;
    if (st != NULL)
        memset(st->slots, 0, sizeof st->slots);
}

int
evp_sample_start(unsigned rate_hz, int cpu_clock, unsigned max_depth,
                 int all_threads)
{
    char why[200];
    if (evp_layout_init(why, sizeof why) < 0) {
        PyErr_Format(PyExc_RuntimeError, "evalprof: cannot sample: %s", why);
        return -1;
    }
    find_eval_function();
    session_depth = max_depth ? max_depth : EVP_SAMPLE_MAX_DEPTH;
    struct evp_rec_sample_config cfg = {
        .rate_hz = rate_hz,
        .cpu_clock = cpu_clock,
        .max_depth = session_depth,
        .on_sample = on_sample,
        .tells_blocked = 1,
        .on_fork_child = after_fork_child,
    };
    int rc = evp_rec_sampler_start(&cfg);
    if (rc < 0) {
        errno = -rc;
        if (rc == -EINVAL)
            PyErr_Format(PyExc_ValueError,
                         "evalprof: bad sampling settings (rate %u Hz, at "
                         "most %u; max depth %u, at most %u)",
                         rate_hz, EVP_SAMPLE_RATE_MAX, session_depth,
                         EVP_SAMPLE_DEPTH_LIMIT);
        else
            PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    (void)evp_rec_fault_guard_install();
    char n[32];
    snprintf(n, sizeof n, "%d", n_eval_range);
    evp_rec_meta("sample.eval_ranges", n);
    evp_rec_meta("sample.layout", evp_L.published
                                      ? "_PyRuntime.debug_offsets"
                                      : "headers of the version built for");
    evp_rec_meta("sample.jit", evp_layout_jit_how());
    __atomic_store_n(&evp_sample_session, ++session_counter, __ATOMIC_RELAXED);
    PyThreadState *ts = PyThreadState_Get();
    char name[256];
    if (thread_begin(ts, evp_python_thread_name(name, sizeof name)
                             ? name
                             : "MainThread") < 0) {
        evp_sample_stop();
        return -1;
    }
    if (all_threads)
        other_threads(1);
    return 0;
}

void
evp_sample_stop(void)
{
    if (!evp_sample_session)
        return;
    other_threads(0);
    thread_end();
    __atomic_store_n(&evp_sample_session, 0, __ATOMIC_RELAXED);
    evp_rec_sampler_stop();
    (void)evp_rec_fault_guard_remove();
    if (walk_faults) {
        char n[24];
        snprintf(n, sizeof n, "%llu", (unsigned long long)walk_faults);
        evp_rec_meta("sample.walk_faults", n);
    }
    walk_faults = 0;
}

int
evp_sample_thread(const char *name)
{
    return thread_begin(PyThreadState_Get(), name);
}
