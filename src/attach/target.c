/*
 * A running CPython read from outside (evalprof/attach.h, "the target").
 *
 * Opening.  The interpreter is the mapped ELF file that defines
 * _PyRuntime (the executable, or libpython3.X.so; read through
 * /proc/PID/root, so that a process in another mount namespace or a
 * private root is read from its own files), its version is Py_Version
 * in the target's memory (3.11+; an older CPython is named from its
 * file's name and refused), and its layout is the table of that minor
 * version (layouts.c) resolved against the target: on 3.13+ every field
 * the interpreter publishes comes from its own _PyRuntime.debug_offsets
 * (cookie "xdebugpy", a version of the same minor, not free-threaded),
 * the rest from the table.
 *
 * Reading.  Every pointer the target holds is read with a bounded
 * process_vm_readv and checked before it is followed: a code object must
 * have PyCode_Type as its type, a name must be a str, a frame chain is
 * cut after 2^16 frames.  Read while the target runs, a stack can change
 * under the walk; a frame that cannot be read ends the walk there
 * (walk_errors counts those).  Code objects are cached by address and
 * checked each time against their name, file, line table and first line,
 * so that a freed code object whose address another one reuses is read
 * again, under a new key.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>
#include <elf.h>

#include "evalprof/format.h"
#include "evalprof/trace.h"
#include "linetable.h"
#include "target.h"

#define MAX_STR 4096u
#define MAX_LINETABLE (1u << 20)
#define MAX_CODE_UNITS (1u << 20)
#define MAX_THREADS 65536u
#define MAX_INTERPS 256u
/* functions this large are the eval loop's (sample.c says why) */
#define EVAL_LOOP_MIN_BYTES (48u * 1024)

const struct evp_target_info *evp_target_info(const struct evp_target *t)
{
    return &t->info;
}

/* ---- finding the interpreter ------------------------------------------- */

/* The file PATH of the target, as the target sees it. */
static void target_path(pid_t pid, const char *path, char *out, size_t n)
{
    snprintf(out, n, "/proc/%d/root%s", (int)pid, path);
}

enum {
    S_RUNTIME,
    S_VERSION,
    S_CODE_TYPE,
    S_UNICODE_TYPE,
    S_BYTES_TYPE,
    S_ADD_PENDING,
    S_RUN_SIMPLE,
    S_EVAL,
    S_EVALPROF,
    S_COPY_TRACED,
    S_COPY_SAMPLED,
    S_COPY_COUNTED,
    S__COUNT
};
static const char *const sym_names[S__COUNT] = {
    "_PyRuntime",
    "Py_Version",
    "PyCode_Type",
    "PyUnicode_Type",
    "PyBytes_Type",
    "Py_AddPendingCall",
    "PyRun_SimpleString",
    "_PyEval_EvalFrameDefault",
    "_PyEvalprof_RegisterCode",
    "evp_eval_frame_traced",
    "evp_eval_frame_sampled",
    "evp_eval_frame_counted",
};

/* The version an interpreter file's name says ("python3.10", "libpython3.9
 * .so"): 1 with *MINOR, 0. */
static int version_from_name(const char *path, unsigned *major, unsigned *minor)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *p = strstr(b, "python");
    if (!p)
        return 0;
    return sscanf(p + 6, "%u.%u", major, minor) == 2;
}

static int find_runtime(struct evp_target *t, uint64_t *syms, uint64_t *sizes,
                        char *why, size_t n)
{
    struct evp_proc *p = &t->p;
    /* files whose name says python first, then the others */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < p->nmaps; i++) {
            const struct evp_map *m = &p->maps[i];
            if (!m->path || m->off != 0)
                continue;
            const char *base = strrchr(m->path, '/');
            int named = strstr(base ? base : m->path, "python") != NULL;
            if (named != (pass == 0))
                continue;
            /* one look at each file */
            int seen = 0;
            for (size_t j = 0; j < i && !seen; j++)
                seen = p->maps[j].path && p->maps[j].off == 0 &&
                       strcmp(p->maps[j].path, m->path) == 0;
            if (seen)
                continue;
            char file[PATH_MAX + 64];
            target_path(p->pid, m->path, file, sizeof file);
            struct evp_elf e;
            if (evp_elf_open(&e, file) < 0 && evp_elf_open(&e, m->path) < 0)
                continue;
            evp_elf_symbols(&e, sym_names, S__COUNT, syms, sizes);
            if (!syms[S_RUNTIME]) {
                evp_elf_close(&e);
                continue;
            }
            t->elf = e;
            t->bias = evp_elf_bias(&e, m->lo);
            snprintf(t->info.runtime_file, sizeof t->info.runtime_file, "%s",
                     m->path);
            return 0;
        }
    }
    char comm[256] = "";
    evp_proc_exe(p->pid, comm, sizeof comm);
    snprintf(why, n,
             "process %d (%s) is not a Python process: none of the files "
             "it has mapped defines CPython's runtime (_PyRuntime)",
             (int)p->pid, *comm ? comm : "?");
    return -ENOEXEC;
}

/* Fill t->off from the table, and on 3.13+ from the target's own offsets. */
static int resolve_layout(struct evp_target *t, char *why, size_t n)
{
    const struct evp_pylayout *L = t->L;
    for (int i = 0; i < EVP_PF__COUNT; i++)
        t->off[i] = L->value[i];
    if (!L->slots)
        return 0;
    size_t bytes = (size_t)L->slots * 8;
    uint64_t *d = malloc(bytes);
    if (!d)
        return -ENOMEM;
    int rc = evp_proc_get(&t->p, t->runtime, d, bytes);
    if (rc < 0) {
        snprintf(why, n, "cannot read process %d's debug offsets: %s",
                 (int)t->p.pid, strerror(-rc));
        free(d);
        return rc;
    }
    if (memcmp(d, "xdebugpy", 8) != 0) {
        snprintf(why, n,
                 "process %d's interpreter publishes no debug offsets "
                 "(_PyRuntime.debug_offsets has no \"xdebugpy\" cookie)",
                 (int)t->p.pid);
        free(d);
        return -EPROTONOSUPPORT;
    }
    if (((d[1] >> 16) & 0xff) != L->minor || (d[1] >> 24) != 3) {
        snprintf(why, n,
                 "process %d's debug offsets are those of version %#llx, not "
                 "of CPython 3.%u as its Py_Version says",
                 (int)t->p.pid, (unsigned long long)d[1], L->minor);
        free(d);
        return -EPROTONOSUPPORT;
    }
    if (d[2]) {
        snprintf(why, n,
                 "process %d runs a free-threaded CPython 3.%u, which "
                 "evalprof does not read",
                 (int)t->p.pid, L->minor);
        free(d);
        return -EPROTONOSUPPORT;
    }
    for (int i = 0; i < EVP_PF__COUNT; i++)
        if (L->slot[i] >= 0 && (unsigned)L->slot[i] < L->slots)
            t->off[i] = d[L->slot[i]];
    t->info.published = 1;
    free(d);
    return 0;
}

/* Which executed opcodes are calls, and their names, from evalprof's
 * built-in table of the version. */
static void opcode_tables(struct evp_target *t)
{
    char v[16];
    snprintf(v, sizeof v, "3.%u", t->info.minor);
    uint8_t base_is_call[256] = {0};
    unsigned op, base;
    const char *name;
    for (size_t i = 0; evp_builtin_opcode(v, i, &op, &base, &name); i++) {
        if (op >= 256)
            continue;
        t->opnames[op] = name;
        if (op == base)
            base_is_call[op] = strncmp(name, "CALL", 4) == 0 ||
                               strcmp(name, "PRECALL") == 0 ||
                               strncmp(name, "INSTRUMENTED_CALL", 17) == 0;
    }
    for (size_t i = 0; evp_builtin_opcode(v, i, &op, &base, &name); i++)
        if (op < 256 && base < 256)
            t->call_op[op] = base_is_call[base];
}

static void add_eval(struct evp_target *t, uint64_t lo, uint64_t size)
{
    if (lo && size && t->neval < (int)(sizeof t->eval / sizeof t->eval[0])) {
        t->eval[t->neval].lo = t->bias + lo;
        t->eval[t->neval].hi = t->bias + lo + size;
        t->neval++;
    }
}

int evp_target_open(pid_t pid, struct evp_target **out, char *why, size_t n)
{
    struct evp_target *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(why, n, "out of memory");
        return -ENOMEM;
    }
    int rc = evp_proc_open(&t->p, pid, why, n);
    if (rc < 0) {
        free(t);
        return rc;
    }
    t->info.pid = pid;
    evp_proc_exe(pid, t->info.exe, sizeof t->info.exe);
    evp_proc_cmdline(pid, t->info.cmdline, sizeof t->info.cmdline);
    evp_proc_uid(pid, &t->info.uid);
    uint64_t syms[S__COUNT], sizes[S__COUNT];
    if ((rc = find_runtime(t, syms, sizes, why, n)) < 0)
        goto fail;
    t->runtime = t->bias + syms[S_RUNTIME];
    unsigned major = 0, minor = 0;
    uint64_t ver = 0;
    if (!syms[S_VERSION] ||
        evp_proc_get(&t->p, t->bias + syms[S_VERSION], &ver, sizeof ver) < 0) {
        if (version_from_name(t->info.runtime_file, &major, &minor))
            snprintf(why, n,
                     "process %d runs CPython %u.%u, which evalprof does not "
                     "read; supported: CPython %s",
                     (int)pid, major, minor, evp_pylayout_versions());
        else
            snprintf(why, n,
                     "process %d runs a CPython older than 3.11 (it has no "
                     "Py_Version); supported: CPython %s",
                     (int)pid, evp_pylayout_versions());
        rc = -EPROTONOSUPPORT;
        goto fail;
    }
    major = (unsigned)(ver >> 24) & 0xff;
    minor = (unsigned)(ver >> 16) & 0xff;
    t->info.version_hex = (unsigned long)ver;
    t->info.minor = minor;
    unsigned level = (unsigned)(ver >> 4) & 0xf, serial = (unsigned)ver & 0xf;
    snprintf(t->info.version, sizeof t->info.version, "%u.%u.%u%s", major,
             minor, (unsigned)(ver >> 8) & 0xff,
             level == 0xa   ? "a"
             : level == 0xb ? "b"
             : level == 0xc ? "rc"
                            : "");
    if (level != 0xf && level >= 0xa) {
        size_t l = strlen(t->info.version);
        snprintf(t->info.version + l, sizeof t->info.version - l, "%u", serial);
    }
    t->L = major == 3 ? evp_pylayout_find(minor) : NULL;
    if (!t->L) {
        snprintf(why, n,
                 "process %d runs CPython %s, which evalprof does not read; "
                 "supported: CPython %s",
                 (int)pid, t->info.version, evp_pylayout_versions());
        rc = -EPROTONOSUPPORT;
        goto fail;
    }
    if ((rc = resolve_layout(t, why, n)) < 0)
        goto fail;
    t->code_type = syms[S_CODE_TYPE] ? t->bias + syms[S_CODE_TYPE] : 0;
    t->unicode_type = syms[S_UNICODE_TYPE] ? t->bias + syms[S_UNICODE_TYPE] : 0;
    t->bytes_type = syms[S_BYTES_TYPE] ? t->bias + syms[S_BYTES_TYPE] : 0;
    t->add_pending_call =
        syms[S_ADD_PENDING] ? t->bias + syms[S_ADD_PENDING] : 0;
    t->run_simple_string =
        syms[S_RUN_SIMPLE] ? t->bias + syms[S_RUN_SIMPLE] : 0;
    t->info.instrumented = syms[S_EVALPROF] != 0;
    if (!t->code_type) {
        snprintf(why, n, "process %d's interpreter has no PyCode_Type symbol",
                 (int)pid);
        rc = -EPROTONOSUPPORT;
        goto fail;
    }
    add_eval(t, syms[S_EVAL], sizes[S_EVAL]);
    for (int s = S_COPY_TRACED; s <= S_COPY_COUNTED; s++)
        add_eval(t, syms[s], sizes[s]);
    opcode_tables(t);
    uint64_t interp = 0;
    if (evp_proc_ptr(&t->p, t->runtime + t->off[EVP_PF_RT_INTERP_HEAD],
                     &interp) < 0 ||
        interp == 0) {
        snprintf(why, n,
                 "process %d has no interpreter running (not yet initialized, "
                 "or finalized)",
                 (int)pid);
        rc = -ENOENT;
        goto fail;
    }
    *out = t;
    return 0;
fail:
    evp_elf_close(&t->elf);
    evp_proc_close(&t->p);
    free(t);
    return rc;
}

void evp_target_close(struct evp_target *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ncodes; i++) {
        free(t->codes[i].name);
        free(t->codes[i].file);
        free(t->codes[i].lt_unit);
        free(t->codes[i].lt_line);
        free(t->codes[i].lines);
    }
    free(t->codes);
    free(t->index);
    evp_elf_close(&t->elf);
    evp_proc_close(&t->p);
    free(t);
}

int evp_target_freeze(struct evp_target *t, char *why, size_t n)
{
    int rc = evp_proc_freeze(&t->p, why, n);
    t->frozen = rc == 0;
    return rc;
}

void evp_target_thaw(struct evp_target *t)
{
    evp_proc_thaw(&t->p);
    t->frozen = 0;
}

const char *evp_target_opname(const struct evp_target *t, int opcode)
{
    return opcode >= 0 && opcode < 256 ? t->opnames[opcode] : NULL;
}

/* ---- strings and code objects --------------------------------------------
 */

static size_t put_utf8(char *buf, size_t n, size_t cap, uint32_t cp)
{
    if (cp >= 0xd800 && cp <= 0xdfff)
        cp = 0xfffd;
    if (cp < 0x80 && n + 1 <= cap) {
        buf[n++] = (char)cp;
    } else if (cp >= 0x80 && cp < 0x800 && n + 2 <= cap) {
        buf[n++] = (char)(0xc0 | cp >> 6);
        buf[n++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp >= 0x800 && cp < 0x10000 && n + 3 <= cap) {
        buf[n++] = (char)(0xe0 | cp >> 12);
        buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
        buf[n++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp >= 0x10000 && n + 4 <= cap) {
        buf[n++] = (char)(0xf0 | cp >> 18);
        buf[n++] = (char)(0x80 | (cp >> 12 & 0x3f));
        buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
        buf[n++] = (char)(0x80 | (cp & 0x3f));
    }
    return n;
}

/* The str at ADDR as UTF-8 (malloc'ed), or NULL when it is not a str
 * that can be read (a legacy string, a damaged pointer). */
static char *read_str(struct evp_target *t, uint64_t addr)
{
    const uint64_t *o = t->off;
    uint8_t h[128];
    size_t hn = o[EVP_PF_U_COMPACT_SIZE];
    if (addr == 0 || hn > sizeof h || evp_proc_get(&t->p, addr, h, hn) < 0)
        return NULL;
    uint64_t type;
    memcpy(&type, h + o[EVP_PF_OB_TYPE], 8);
    if (t->unicode_type && type != t->unicode_type)
        return NULL;
    uint32_t state;
    int64_t length;
    memcpy(&state, h + o[EVP_PF_U_STATE], 4);
    memcpy(&length, h + o[EVP_PF_U_LENGTH], 8);
    const struct evp_pylayout *L = t->L;
    if (length < 0 || !(state & L->u_compact_bit))
        return NULL;
    unsigned kind = (state & L->u_kind_mask) / L->u_kind_one;
    size_t len = (size_t)length;
    if (state & L->u_ascii_bit) {
        if (len > MAX_STR)
            len = MAX_STR;
        char *s = malloc(len + 1);
        if (!s ||
            evp_proc_get(&t->p, addr + o[EVP_PF_U_ASCII_SIZE], s, len) < 0) {
            free(s);
            return NULL;
        }
        s[len] = '\0';
        return s;
    }
    if (kind != 1 && kind != 2 && kind != 4)
        return NULL;
    if (len > MAX_STR)
        len = MAX_STR;
    uint8_t *raw = malloc(len * kind + 1);
    char *s = malloc(4 * len + 1);
    if (!raw || !s ||
        evp_proc_get(&t->p, addr + o[EVP_PF_U_COMPACT_SIZE], raw, len * kind) <
            0) {
        free(raw);
        free(s);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t cp =
            kind == 1   ? raw[i]
            : kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
                        : (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
                              (uint32_t)raw[4 * i + 2] << 16 |
                              (uint32_t)raw[4 * i + 3] << 24;
        k = put_utf8(s, k, 4 * len, cp);
    }
    s[k] = '\0';
    free(raw);
    return s;
}

struct lt_build {
    uint32_t *unit, *line;
    size_t n, cap;
    int failed;
};

static void lt_range(void *ctx, long unit, long line)
{
    struct lt_build *b = ctx;
    if (b->failed)
        return;
    if (b->n && b->line[b->n - 1] == (uint32_t)line)
        return;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 16;
        uint32_t *u = realloc(b->unit, nc * sizeof *u);
        if (u)
            b->unit = u;
        uint32_t *l = u ? realloc(b->line, nc * sizeof *l) : NULL;
        if (!u || !l) {
            b->failed = 1;
            return;
        }
        b->line = l;
        b->cap = nc;
    }
    b->unit[b->n] = (uint32_t)unit;
    b->line[b->n] = (uint32_t)line;
    b->n++;
}

/* Read the line table at ADDR (a bytes object) into C. */
static void read_lines(struct evp_target *t, struct evp_tcode *c, uint64_t addr)
{
    const uint64_t *o = t->off;
    uint8_t h[64];
    if (addr == 0 || o[EVP_PF_B_SVAL] > sizeof h ||
        evp_proc_get(&t->p, addr, h, o[EVP_PF_B_SVAL]) < 0)
        return;
    uint64_t type;
    int64_t size;
    memcpy(&type, h + o[EVP_PF_OB_TYPE], 8);
    memcpy(&size, h + o[EVP_PF_B_SIZE], 8);
    if ((t->bytes_type && type != t->bytes_type) || size <= 0 ||
        size > MAX_LINETABLE)
        return;
    uint8_t *tab = malloc((size_t)size);
    if (!tab ||
        evp_proc_get(&t->p, addr + o[EVP_PF_B_SVAL], tab, (size_t)size) < 0) {
        free(tab);
        return;
    }
    struct lt_build b = {0};
    if (evp_rec_lt311_decode(tab, (size_t)size, c->firstline, lt_range, &b) <
            0 ||
        b.failed) {
        free(b.unit);
        free(b.line);
        free(tab);
        return;
    }
    free(tab);
    c->lt_unit = b.unit;
    c->lt_line = b.line;
    c->nlt = b.n;
    /* the trace's form: "unit:line,unit:line" */
    size_t cap = b.n * 24 + 1;
    char *s = malloc(cap), *q = s;
    if (s) {
        for (size_t i = 0; i < b.n; i++)
            q += snprintf(q, cap - (size_t)(q - s), "%s%u:%u", i ? "," : "",
                          b.unit[i], b.line[i]);
        c->lines = s;
    }
}

/* The line of unit U in C, 0 when unknown. */
static uint32_t line_of(const struct evp_tcode *c, int64_t u)
{
    if (!c->nlt || u < 0)
        return 0;
    size_t lo = 0, hi = c->nlt;
    if (c->lt_unit[0] > (uint64_t)u)
        return 0;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->lt_unit[mid] <= (uint64_t)u)
            lo = mid;
        else
            hi = mid;
    }
    return c->lt_line[lo];
}

static uint64_t addr_hash(uint64_t a)
{
    uint64_t h = (a >> 4) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 31);
}

/* The cache's entry for the code object at ADDR, whose header H (the
 * first CO_CODE_ADAPTIVE bytes) was just read; NULL when out of memory. */
static struct evp_tcode *code_entry(struct evp_target *t, uint64_t addr,
                                    const uint8_t *h)
{
    const uint64_t *o = t->off;
    uint64_t qn, fn, lt;
    int32_t fl, ft;
    int64_t size;
    memcpy(&qn, h + o[EVP_PF_CO_QUALNAME], 8);
    memcpy(&fn, h + o[EVP_PF_CO_FILENAME], 8);
    memcpy(&lt, h + o[EVP_PF_CO_LINETABLE], 8);
    memcpy(&fl, h + o[EVP_PF_CO_FIRSTLINENO], 4);
    memcpy(&ft, h + o[EVP_PF_CO_FIRSTTRACEABLE], 4);
    memcpy(&size, h + o[EVP_PF_CO_SIZE], 8);
    size_t slot = 0;
    if (t->index_cap) {
        size_t mask = t->index_cap - 1;
        for (slot = addr_hash(addr) & mask; t->index[slot];
             slot = (slot + 1) & mask) {
            struct evp_tcode *c = &t->codes[t->index[slot] - 1];
            if (c->addr != addr)
                continue;
            if (c->qualname == qn && c->filename == fn && c->linetable == lt &&
                c->firstline == fl)
                return c;
            break; /* another code at that address: key it anew */
        }
    }
    /* grow the index at half full (re-hashing the live entries) */
    if (2 * (t->ncodes + 1) > t->index_cap) {
        size_t nc = t->index_cap ? t->index_cap * 2 : 1024;
        uint32_t *ni = calloc(nc, sizeof *ni);
        if (!ni)
            return NULL;
        for (size_t i = 0; i < t->index_cap; i++) {
            if (!t->index[i])
                continue;
            size_t j = addr_hash(t->codes[t->index[i] - 1].addr) & (nc - 1);
            while (ni[j])
                j = (j + 1) & (nc - 1);
            ni[j] = t->index[i];
        }
        free(t->index);
        t->index = ni;
        t->index_cap = nc;
        size_t mask = nc - 1;
        for (slot = addr_hash(addr) & mask; t->index[slot];
             slot = (slot + 1) & mask)
            if (t->codes[t->index[slot] - 1].addr == addr)
                break;
    }
    if (t->ncodes == t->codes_cap) {
        size_t nc = t->codes_cap ? t->codes_cap * 2 : 256;
        struct evp_tcode *ncd = realloc(t->codes, nc * sizeof *ncd);
        if (!ncd)
            return NULL;
        t->codes = ncd;
        t->codes_cap = nc;
    }
    struct evp_tcode *c = &t->codes[t->ncodes];
    memset(c, 0, sizeof *c);
    c->addr = addr;
    c->qualname = qn;
    c->filename = fn;
    c->linetable = lt;
    c->firstline = fl;
    c->firsttraceable = ft;
    c->size = size;
    c->name = read_str(t, qn);
    c->file = read_str(t, fn);
    if (!c->name)
        c->name = strdup("<?>");
    if (!c->file)
        c->file = strdup("<?>");
    if (!c->name || !c->file) {
        free(c->name);
        free(c->file);
        return NULL;
    }
    read_lines(t, c, lt);
    t->ncodes++;
    c->key = (uint32_t)t->ncodes;
    t->index[slot] = c->key;
    return c;
}

/*
 * The code unit starting the instruction that holds unit U (3.11, 3.12:
 * an instruction pointer may rest on a cache entry: layout.c of the
 * extension says when), reading the code at CODE (N units) as needed;
 * -1 when the decoding does not meet U.
 */
static int64_t instruction_at(struct evp_target *t, uint64_t code, int64_t n,
                              int64_t u)
{
    const struct evp_pylayout *L = t->L;
    if (!L->caches || u < 0 || u >= n)
        return u;
    int64_t back = u < 16 ? u : 16;
    uint8_t w[32];
    if (back && evp_proc_get(&t->p, code + 2 * (uint64_t)(u - back), w,
                             (size_t)back * 2) < 0)
        return u;
    int maybe = 0;
    for (int64_t k = 1; k <= back && !maybe; k++)
        maybe = L->caches[L->deopt[w[2 * (back - k)]]] >= k;
    if (!maybe)
        return u;
    if (n > MAX_CODE_UNITS)
        return -1;
    uint8_t *all = malloc((size_t)n * 2);
    if (!all || evp_proc_get(&t->p, code, all, (size_t)n * 2) < 0) {
        free(all);
        return -1;
    }
    int64_t r = -1;
    for (int64_t i = 0; i < n;) {
        int64_t next = i + 1 + L->caches[L->deopt[all[2 * i]]];
        if (u < next) {
            r = i;
            break;
        }
        i = next;
    }
    free(all);
    return r;
}

/* ---- threads ---------------------------------------------------------------
 */

/* The state a thread's registers tell, stopped (x86-64): its program
 * counter, and the call it was stopped in, if any. */
static void frozen_regs(struct evp_target *t, struct evp_tthread *th,
                        uint64_t *arg0)
{
#if defined(__x86_64__)
    struct user_regs_struct r;
    if (!t->frozen || !evp_proc_is_seized(&t->p, th->tid) ||
        ptrace(PTRACE_GETREGS, th->tid, 0, &r) != 0)
        return;
    th->pc = r.rip;
    /* stopped in a call, or on its way back from one (a thread woken at
     * the end of a wait but not yet run again, on a busy machine):
     * orig_rax holds its number, rdi its first argument still; a thread
     * stopped while running user code has -1 there */
    if ((long)r.orig_rax >= 0) {
        th->syscall = (long)r.orig_rax;
        *arg0 = r.rdi;
    }
#else
    (void)t;
    (void)th;
    (void)arg0;
#endif
}

static int in_eval(const struct evp_target *t, uint64_t pc)
{
    for (int i = 0; i < t->neval; i++)
        if (pc >= t->eval[i].lo && pc < t->eval[i].hi)
            return 1;
    /* a stripped interpreter's loop has no name: a function this large
     * in the runtime's file is the loop */
    if (pc < t->bias)
        return 0;
    uint64_t start, next;
    if (evp_elf_function(&t->elf, pc - t->bias, &start, &next) == 0 &&
        next > start && next - start >= EVAL_LOOP_MIN_BYTES &&
        pc - t->bias < next)
        return 1;
    return 0;
}

/* Walk the frames from F into TH (MAX_DEPTH at most), appending them to
 * S's pool from *USED on (the pool grows as needed). */
static void walk(struct evp_target *t, uint64_t f, unsigned max_depth,
                 struct evp_tthread *th, struct evp_tsnapshot *s, size_t *used,
                 int resolve_all)
{
    const uint64_t *o = t->off;
    const struct evp_pylayout *L = t->L;
    size_t fsize = 0;
    const int fr[] = {EVP_PF_FR_PREVIOUS, EVP_PF_FR_EXECUTABLE,
                      EVP_PF_FR_INSTR_PTR, EVP_PF_FR_OWNER};
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++)
        if (o[fr[i]] + 8 > fsize)
            fsize = o[fr[i]] + 8;
    size_t csize = o[EVP_PF_CO_CODE_ADAPTIVE];
    uint8_t fb[128], cb[512];
    if (fsize > sizeof fb || csize > sizeof cb) {
        t->walk_errors++;
        return;
    }
    for (unsigned walked = 0; f && walked < (1u << 16); walked++) {
        if (evp_proc_get(&t->p, f, fb, fsize) < 0) {
            t->walk_errors++;
            break;
        }
        uint64_t prev, exe, ip;
        memcpy(&prev, fb + o[EVP_PF_FR_PREVIOUS], 8);
        memcpy(&exe, fb + o[EVP_PF_FR_EXECUTABLE], 8);
        memcpy(&ip, fb + o[EVP_PF_FR_INSTR_PTR], 8);
        int owner = (signed char)fb[o[EVP_PF_FR_OWNER]];
        f = prev;
        if (owner >= L->owner_not_python)
            continue;
        /* 3.14+ tag the reference's low bits; objects are 8-aligned */
        uint64_t co = exe & ~(uint64_t)7;
        if (co == 0 || evp_proc_get(&t->p, co, cb, csize) < 0) {
            t->walk_errors++;
            break;
        }
        uint64_t type;
        memcpy(&type, cb + o[EVP_PF_OB_TYPE], 8);
        if (type != t->code_type) {
            t->walk_errors++;
            break;
        }
        struct evp_tcode *c = code_entry(t, co, cb);
        if (!c)
            break;
        uint64_t code = co + o[EVP_PF_CO_CODE_ADAPTIVE];
        int64_t unit = ip >= code ? (int64_t)((ip - code) / 2) : -1;
        if (owner != L->owner_generator &&
            (ip < code || unit < c->firsttraceable))
            continue; /* a frame not yet started */
        if (th->nframes == max_depth) {
            th->flags |= EVP_SAMPLE_TRUNCATED;
            break;
        }
        if (*used == s->pool_cap_) {
            size_t nc = s->pool_cap_ ? s->pool_cap_ * 2 : 256;
            struct evp_tframe *nf = realloc(s->pool_, nc * sizeof *nf);
            if (!nf)
                break;
            s->pool_ = nf;
            s->pool_cap_ = nc;
        }
        struct evp_tframe *fp = &s->pool_[*used];
        int leaf = th->nframes == 0;
        if (unit >= 0 && (leaf || resolve_all))
            unit = instruction_at(t, code, c->size, unit);
        fp->name = c->name;
        fp->file = c->file;
        fp->firstline = c->firstline > 0 ? (uint32_t)c->firstline : 0;
        fp->unit = unit >= 0 && unit < c->size ? (int32_t)unit : -1;
        fp->line = fp->unit >= 0 ? line_of(c, fp->unit) : 0;
        fp->opcode = -1;
        fp->code = co;
        fp->key = c->key;
        if (fp->unit >= 0 && (leaf || resolve_all)) {
            uint8_t w[2];
            if (evp_proc_get(&t->p, code + 2 * (uint64_t)fp->unit, w, 2) == 0)
                fp->opcode = w[0];
        }
        (*used)++;
        th->nframes++;
    }
}

void evp_tsnapshot_free(struct evp_tsnapshot *s)
{
    free(s->threads);
    free(s->pool_);
    free(s->starts_);
    *s = (struct evp_tsnapshot)EVP_TSNAPSHOT_INIT;
}

/* Room for one thread more in S: 0 or -ENOMEM. */
static int thread_room(struct evp_tsnapshot *s)
{
    if (s->nthreads < s->threads_cap_)
        return 0;
    size_t nc = s->threads_cap_ ? s->threads_cap_ * 2 : 16;
    struct evp_tthread *nt = realloc(s->threads, nc * sizeof *nt);
    if (!nt)
        return -ENOMEM;
    s->threads = nt;
    size_t *ns = realloc(s->starts_, nc * sizeof *ns);
    if (!ns)
        return -ENOMEM;
    s->starts_ = ns;
    s->threads_cap_ = nc;
    return 0;
}

/* One thread state TS of an interpreter whose GIL is at GIL (0: unknown),
 * LOCKED and held by HOLDER: its state and stack into S. */
static int read_thread(struct evp_target *t, uint64_t ts, const uint8_t *tb,
                       int ni, uint64_t gil, int locked, uint64_t holder,
                       unsigned max_depth, struct evp_tsnapshot *s,
                       size_t *used)
{
    const uint64_t *o = t->off;
    if (thread_room(s) < 0)
        return -ENOMEM;
    struct evp_tthread *th = &s->threads[s->nthreads];
    memset(th, 0, sizeof *th);
    uint64_t tid, ident, frame = 0;
    memcpy(&tid, tb + o[EVP_PF_TS_NATIVE_TID], 8);
    memcpy(&ident, tb + o[EVP_PF_TS_THREAD_ID], 8);
    th->tid = (pid_t)tid;
    th->ident = ident;
    th->tstate = ts;
    th->main = th->tid == t->p.pid;
    th->interp = ni;
    th->syscall = -1;
    if (o[EVP_PF_TS_CFRAME] != EVP_PF_NONE) {
        uint64_t cf;
        memcpy(&cf, tb + o[EVP_PF_TS_CFRAME], 8);
        if (cf)
            evp_proc_ptr(&t->p, cf + o[EVP_PF_CF_CURRENT_FRAME], &frame);
    } else {
        memcpy(&frame, tb + o[EVP_PF_TS_CURRENT_FRAME], 8);
    }
    uint64_t arg0 = 0;
    if (t->frozen) {
        frozen_regs(t, th, &arg0);
    } else if (th->tid > 0) {
        long nr;
        if (evp_proc_syscall(t->p.pid, th->tid, &nr, &arg0) == 1 && nr >= 0)
            th->syscall = nr;
    }
    size_t start = *used;
    s->starts_[s->nthreads] = start;
    walk(t, frame, max_depth, th, s, used, t->frozen);
    int holds = gil && locked > 0 && holder == ts;
    if (!holds)
        th->flags |= EVP_SAMPLE_NO_GIL;
    if (!holds && th->syscall >= 0) {
        /* a call restarted after a stop (a timed futex wait evalprof
         * stopped before) runs as restart_syscall, the registers still
         * holding the first call's arguments */
        if ((th->syscall == SYS_futex || th->syscall == SYS_restart_syscall) &&
            gil && arg0 >= gil && arg0 < gil + o[EVP_PF_GIL_SIZE])
            th->flags |= EVP_SAMPLE_GIL_WAIT;
        else
            th->flags |= EVP_SAMPLE_SYSCALL;
    }
    if (th->nframes == 0)
        th->flags |= EVP_SAMPLE_NO_FRAME;
    if (!th->pc) {
        th->flags |= EVP_SAMPLE_NO_PC;
    } else if (holds) {
        if (in_eval(t, th->pc)) {
            th->flags |= EVP_SAMPLE_IN_EVAL;
        } else if (th->nframes) {
            int op = s->pool_[start].opcode;
            if (op >= 0 && t->call_op[op])
                th->flags |= EVP_SAMPLE_C_CALL;
        }
    }
    s->nthreads++;
    return 0;
}

int evp_target_snapshot(struct evp_target *t, unsigned max_depth,
                        struct evp_tsnapshot *s, char *why, size_t n)
{
    const uint64_t *o = t->off;
    if (!max_depth)
        max_depth = 512;
    s->nthreads = 0;
    size_t used = 0;
    uint64_t errs0 = t->walk_errors;
    uint64_t interp = 0;
    if (evp_proc_ptr(&t->p, t->runtime + o[EVP_PF_RT_INTERP_HEAD], &interp) <
        0) {
        snprintf(why, n, "process %d exited", (int)t->p.pid);
        return -ESRCH;
    }
    size_t tssize = 0;
    const int tf[] = {EVP_PF_TS_NEXT,       EVP_PF_TS_INTERP,
                      EVP_PF_TS_NATIVE_TID, EVP_PF_TS_THREAD_ID,
                      EVP_PF_TS_CFRAME,     EVP_PF_TS_CURRENT_FRAME};
    for (size_t i = 0; i < sizeof tf / sizeof tf[0]; i++)
        if (o[tf[i]] != EVP_PF_NONE && o[tf[i]] + 8 > tssize)
            tssize = o[tf[i]] + 8;
    uint8_t tb[512];
    if (tssize > sizeof tb) {
        snprintf(why, n, "the thread state's layout is out of range");
        return -EPROTO;
    }
    for (unsigned ni = 0; interp && ni < MAX_INTERPS; ni++) {
        uint64_t gil = 0;
        if (o[EVP_PF_RT_GIL] != EVP_PF_NONE)
            gil = t->runtime + o[EVP_PF_RT_GIL];
        else if (o[EVP_PF_IS_CEVAL_GIL] != EVP_PF_NONE)
            evp_proc_ptr(&t->p, interp + o[EVP_PF_IS_CEVAL_GIL], &gil);
        int32_t locked = 0;
        uint64_t holder = 0;
        if (gil) {
            evp_proc_get(&t->p, gil + o[EVP_PF_GIL_LOCKED], &locked,
                         sizeof locked);
            evp_proc_ptr(&t->p, gil + o[EVP_PF_GIL_LAST_HOLDER], &holder);
        }
        uint64_t ts = 0;
        evp_proc_ptr(&t->p, interp + o[EVP_PF_IS_THREADS_HEAD], &ts);
        for (unsigned k = 0; ts && k < MAX_THREADS; k++) {
            if (evp_proc_get(&t->p, ts, tb, tssize) < 0) {
                t->walk_errors++;
                break;
            }
            if (read_thread(t, ts, tb, (int)ni, gil, locked, holder, max_depth,
                            s, &used) < 0) {
                snprintf(why, n, "out of memory");
                return -ENOMEM;
            }
            uint64_t next;
            memcpy(&next, tb + o[EVP_PF_TS_NEXT], 8);
            if (next == ts)
                break;
            ts = next;
        }
        if (evp_proc_ptr(&t->p, interp + o[EVP_PF_IS_NEXT], &interp) < 0)
            break;
    }
    /* the pool may have moved as it grew: point each thread into it */
    for (size_t i = 0; i < s->nthreads; i++)
        s->threads[i].frames =
            s->threads[i].nframes ? s->pool_ + s->starts_[i] : NULL;
    s->walk_errors = t->walk_errors - errs0;
    return 0;
}

int evp_target_main_tstate(struct evp_target *t, uint64_t *out)
{
    const uint64_t *o = t->off;
    uint64_t interp = 0, ts = 0;
    int rc =
        evp_proc_ptr(&t->p, t->runtime + o[EVP_PF_RT_INTERP_HEAD], &interp);
    if (rc < 0)
        return rc;
    if (!interp)
        return -ENOENT;
    if ((rc = evp_proc_ptr(&t->p, interp + o[EVP_PF_IS_THREADS_HEAD], &ts)) < 0)
        return rc;
    for (unsigned k = 0; ts && k < MAX_THREADS; k++) {
        uint64_t tid = 0, next = 0;
        if (evp_proc_ptr(&t->p, ts + o[EVP_PF_TS_NATIVE_TID], &tid) < 0 ||
            evp_proc_ptr(&t->p, ts + o[EVP_PF_TS_NEXT], &next) < 0)
            return -EFAULT;
        if ((pid_t)tid == t->p.pid) {
            *out = ts;
            return 0;
        }
        ts = next;
    }
    return -ENOENT;
}

/* ---- names ------------------------------------------------------------------
 */

const char *evp_tthread_state_name(uint32_t flags)
{
    if (flags & EVP_SAMPLE_GIL_WAIT)
        return "waiting for the GIL";
    if ((flags & EVP_SAMPLE_NO_GIL) && (flags & EVP_SAMPLE_SYSCALL))
        return "blocked in a system call, GIL released";
    if (flags & EVP_SAMPLE_NO_GIL)
        return "running without the GIL";
    if (flags & EVP_SAMPLE_NO_FRAME)
        return "holding the GIL, no Python frame";
    if (flags & EVP_SAMPLE_IN_EVAL)
        return "running Python code (in the eval loop)";
    if (flags & EVP_SAMPLE_C_CALL)
        return "in a C call";
    if (flags & EVP_SAMPLE_NO_PC)
        return "running, holding the GIL";
    return "running Python code (in the runtime: a C function the "
           "instruction calls)";
}

const char *evp_syscall_name(long nr)
{
    static const struct {
        long nr;
        const char *name;
    } calls[] = {
#define C(x) {SYS_##x, #x},
        C(read) C(write) C(poll) C(select) C(nanosleep) C(clock_nanosleep)
            C(futex) C(epoll_wait) C(epoll_pwait) C(ppoll) C(pselect6) C(accept)
                C(accept4) C(recvfrom) C(recvmsg) C(sendto) C(sendmsg)
                    C(connect) C(wait4) C(waitid) C(pause) C(rt_sigsuspend)
                        C(rt_sigtimedwait) C(semop) C(semtimedop) C(flock)
                            C(fcntl) C(ioctl) C(openat) C(readv) C(writev)
                                C(pread64) C(pwrite64) C(fsync) C(fdatasync)
                                    C(msgrcv) C(io_getevents) C(sched_yield)
                                        C(restart_syscall) C(close) C(mmap)
                                            C(munmap)
#ifdef SYS_epoll_pwait2
                                                C(epoll_pwait2)
#endif
#ifdef SYS_io_uring_enter
                                                    C(io_uring_enter)
#endif
#undef C
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (calls[i].nr == nr)
            return calls[i].name;
    return NULL;
}
