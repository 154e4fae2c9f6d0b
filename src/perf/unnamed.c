/*
 * The evaluation loop of a stripped interpreter, for perf's samples.
 *
 * A stripped CPython (Debian's, for one) keeps only its dynamic symbols:
 * _PyEval_EvalFrameDefault is exported, but the compiler splits the
 * function and the part that runs the bytecode is a local function the
 * symbol table named, so perf prints its frames as "[unknown]".  Its
 * unwind table's sorted index (.eh_frame_hdr, the PT_GNU_EH_FRAME segment,
 * read through libelf) still gives where every function starts, hence its
 * extent, and no function of CPython comes near the eval loop's size: an
 * unnamed frame of such a file inside a function of
 * EVP_PERF_EVAL_MIN_BYTES or more is the eval loop, named
 * "_PyEval_EvalFrameDefault.unnamed" (EVP_PERF_UNNAMED_EVAL), which every
 * view and the cross-check count as the eval function.  (The sampled mode
 * finds the same code the same way, in python/_tracer/sample.c.)
 *
 * perf prints a frame's address as the process saw it or relative to the
 * file's mapping, depending on how the stack was unwound; the named
 * frames of the same file ("sym+0xoff") tell which: each gives the shift
 * between the printed address and the file's own (the dynamic symbol's
 * value plus the offset), and the shift most of them agree on is used.
 * A file with a symbol table of its own, or that is no CPython (no
 * exported _PyEval_EvalFrameDefault), is left alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "perf.h"

#define EVAL_FN "_PyEval_EvalFrameDefault"
/* named frames looked at per file to find the address shift */
#define PROBES 16

struct probe {
    uint64_t ip, off;
    char *sym;
};

struct range {
    uint64_t lo, hi;
};

struct dso {
    char *path;
    size_t len;
    int unknown;   /* has unnamed frames */
    int state;     /* 0 not opened, 1 usable, -1 left alone */
    int64_t shift; /* printed address - file address */
    struct probe probe[PROBES];
    int nprobe;
    struct range *eval; /* eval-loop functions found so far */
    size_t neval, capeval;
    struct range *other; /* functions known not to be */
    size_t nother, capother;
    int fd;
    Elf *elf;
    /* the unwind index: COUNT (start, FDE) pairs of signed 32-bit values
     * relative to BASE, sorted by start */
    const unsigned char *table;
    uint32_t count;
    uint64_t base;
    uint64_t named;
};

struct evp_perf_unnamed {
    struct dso *d;
    size_t n, cap;
};

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static int hexval(const char *s, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    if (n == 0 || n > 16)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        x = x << 4 | (uint64_t)d;
    }
    *v = x;
    return 0;
}

static struct dso *find(struct evp_perf_unnamed *u, const char *p, size_t n)
{
    for (size_t i = 0; i < u->n; i++)
        if (u->d[i].len == n && memcmp(u->d[i].path, p, n) == 0)
            return &u->d[i];
    return NULL;
}

static struct dso *add(struct evp_perf_unnamed *u, const char *p, size_t n)
{
    struct dso *d = find(u, p, n);
    if (d)
        return d;
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 8;
        struct dso *nd = realloc(u->d, cap * sizeof *nd);
        if (!nd)
            return NULL;
        u->d = nd;
        u->cap = cap;
    }
    d = &u->d[u->n];
    memset(d, 0, sizeof *d);
    d->fd = -1;
    d->path = strndup(p, n);
    if (!d->path)
        return NULL;
    d->len = n;
    u->n++;
    return d;
}

/* One callchain line "ip sym[+0xoff] (dso)": learn from it. */
static int scan_line(struct evp_perf_unnamed *u, const char *l, size_t n)
{
    size_t i = 0;
    while (i < n && is_space(l[i]))
        i++;
    if (i == 0)
        return 0; /* a header, not a stack line */
    size_t ip0 = i;
    while (i < n && !is_space(l[i]))
        i++;
    uint64_t ip;
    if (hexval(l + ip0, i - ip0, &ip))
        return 0;
    while (i < n && is_space(l[i]))
        i++;
    size_t close = n;
    while (close > i && l[close - 1] != ')')
        close--;
    if (close == i)
        return 0;
    close--;
    size_t open = close;
    while (open > i && !(l[open - 1] == ' ' && l[open] == '('))
        open--;
    if (open == i || l[open] != '(')
        return 0;
    const char *dso = l + open + 1;
    size_t dlen = close - open - 1;
    if (dlen == 0 || dso[0] != '/')
        return 0; /* [kernel.kallsyms], [unknown], inlined */
    const char *sym = l + i;
    size_t slen = open - 1 - i;
    if (slen == 9 && memcmp(sym, "[unknown]", 9) == 0) {
        struct dso *d = add(u, dso, dlen);
        if (!d)
            return -ENOMEM;
        d->unknown = 1;
        return 0;
    }
    /* "sym+0xoff" */
    size_t plus = slen;
    while (plus > 0 && sym[plus - 1] != '+')
        plus--;
    uint64_t off;
    if (plus < 2 || slen - plus < 3 || sym[plus] != '0' ||
        sym[plus + 1] != 'x' || hexval(sym + plus + 2, slen - plus - 2, &off))
        return 0;
    struct dso *d = add(u, dso, dlen);
    if (!d)
        return -ENOMEM;
    if (d->nprobe < PROBES) {
        struct probe *p = &d->probe[d->nprobe];
        p->sym = strndup(sym, plus - 1);
        if (!p->sym)
            return -ENOMEM;
        p->ip = ip;
        p->off = off;
        d->nprobe++;
    }
    return 0;
}

/* D's unwind index: the PT_GNU_EH_FRAME segment, version 1, its table
 * of (start, FDE) pairs encoded as GCC and the linkers write it
 * (DW_EH_PE_datarel | DW_EH_PE_sdata4, relative to the segment). */
static int open_index(struct dso *d)
{
    size_t n;
    if (elf_getphdrnum(d->elf, &n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(d->elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
            continue;
        Elf_Data *raw = elf_getdata_rawchunk(d->elf, (int64_t)ph.p_offset,
                                             ph.p_filesz, ELF_T_BYTE);
        if (!raw || raw->d_size < 12)
            return -1;
        const unsigned char *h = raw->d_buf;
        if (h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
            return -1;
        uint32_t count;
        memcpy(&count, h + 8, sizeof count);
        if (count == 0 || (raw->d_size - 12) / 8 < count)
            return -1;
        d->table = h + 12;
        d->count = count;
        d->base = ph.p_vaddr;
        return 0;
    }
    return -1;
}

static uint64_t entry_start(const struct dso *d, uint32_t k)
{
    int32_t v;
    memcpy(&v, d->table + 8 * (size_t)k, sizeof v);
    return d->base + (uint64_t)(int64_t)v;
}

/* The function holding file address A by the unwind index: its start and
 * the next function's start.  0, or -1 when A is before the first. */
static int function_at(const struct dso *d, uint64_t a, uint64_t *lo,
                       uint64_t *hi)
{
    uint32_t l = 0, h = d->count;
    if (a < entry_start(d, 0))
        return -1;
    while (h - l > 1) { /* the last entry starting at or below A */
        uint32_t m = l + (h - l) / 2;
        if (entry_start(d, m) <= a)
            l = m;
        else
            h = m;
    }
    if (l + 1 >= d->count)
        return -1; /* the last function: its end is unknown */
    *lo = entry_start(d, l);
    *hi = entry_start(d, l + 1);
    return 0;
}

/* Open D's file: usable when it is a stripped CPython whose address
 * shift its named frames agree on. */
static void open_dso(struct dso *d)
{
    d->state = -1;
    if (!d->unknown || d->nprobe == 0)
        return;
    if (elf_version(EV_CURRENT) == EV_NONE)
        return;
    d->fd = open(d->path, O_RDONLY | O_CLOEXEC);
    if (d->fd < 0)
        return;
    d->elf = elf_begin(d->fd, ELF_C_READ_MMAP, NULL);
    if (!d->elf || elf_kind(d->elf) != ELF_K_ELF)
        return;
    Elf_Scn *scn = NULL, *dynsym = NULL;
    GElf_Shdr sh, dynsh = {0};
    while ((scn = elf_nextscn(d->elf, scn)) != NULL) {
        if (!gelf_getshdr(scn, &sh))
            return;
        if (sh.sh_type == SHT_SYMTAB)
            return; /* perf names what there is to name */
        if (sh.sh_type == SHT_DYNSYM) {
            dynsym = scn;
            dynsh = sh;
        }
    }
    Elf_Data *data = dynsym ? elf_getdata(dynsym, NULL) : NULL;
    if (!data || dynsh.sh_entsize == 0)
        return;
    size_t nsym = dynsh.sh_size / dynsh.sh_entsize;
    int is_python = 0;
    /* shifts the probes give, and how many agree on each */
    int64_t shift[PROBES];
    int votes[PROBES] = {0}, nshift = 0;
    for (size_t k = 0; k < nsym; k++) {
        GElf_Sym s;
        if (!gelf_getsym(data, (int)k, &s) || s.st_shndx == SHN_UNDEF ||
            GELF_ST_TYPE(s.st_info) != STT_FUNC)
            continue;
        const char *name = elf_strptr(d->elf, dynsh.sh_link, s.st_name);
        if (!name)
            continue;
        if (strcmp(name, EVAL_FN) == 0)
            is_python = 1;
        for (int p = 0; p < d->nprobe; p++) {
            if (strcmp(name, d->probe[p].sym) != 0)
                continue;
            int64_t sh1 =
                (int64_t)(d->probe[p].ip - (s.st_value + d->probe[p].off));
            int j = 0;
            while (j < nshift && shift[j] != sh1)
                j++;
            if (j == nshift)
                shift[nshift++] = sh1;
            votes[j]++;
        }
    }
    if (!is_python || nshift == 0)
        return;
    int best = 0;
    for (int j = 1; j < nshift; j++)
        if (votes[j] > votes[best])
            best = j;
    d->shift = shift[best];
    if (open_index(d) == 0)
        d->state = 1;
}

static int in(const struct range *r, size_t n, uint64_t a)
{
    for (size_t i = 0; i < n; i++)
        if (a >= r[i].lo && a < r[i].hi)
            return 1;
    return 0;
}

static int remember(struct range **v, size_t *n, size_t *cap, uint64_t lo,
                    uint64_t hi)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        struct range *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = (struct range){lo, hi};
    return 0;
}

struct evp_perf_unnamed *evp_perf_unnamed_scan(const char *text, size_t len)
{
    struct evp_perf_unnamed *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (scan_line(u, text + i, end - i) < 0) {
            evp_perf_unnamed_free(u);
            return NULL;
        }
        i = end + 1;
    }
    int any = 0;
    for (size_t k = 0; k < u->n; k++) {
        open_dso(&u->d[k]);
        any |= u->d[k].state == 1;
    }
    if (!any) {
        evp_perf_unnamed_free(u);
        return NULL;
    }
    return u;
}

const char *evp_perf_unnamed_name(struct evp_perf_unnamed *u, const char *dso,
                                  size_t dso_len, const char *pc, size_t pc_len)
{
    struct dso *d = u ? find(u, dso, dso_len) : NULL;
    uint64_t ip;
    if (!d || d->state != 1 || hexval(pc, pc_len, &ip))
        return NULL;
    uint64_t a = ip - (uint64_t)d->shift;
    if (in(d->eval, d->neval, a)) {
        d->named++;
        return EVP_PERF_UNNAMED_EVAL;
    }
    if (in(d->other, d->nother, a))
        return NULL;
    uint64_t lo, hi;
    if (function_at(d, a, &lo, &hi) < 0 || hi <= lo)
        return NULL;
    if (hi - lo >= EVP_PERF_EVAL_MIN_BYTES) {
        if (remember(&d->eval, &d->neval, &d->capeval, lo, hi) < 0)
            return NULL;
        d->named++;
        return EVP_PERF_UNNAMED_EVAL;
    }
    remember(&d->other, &d->nother, &d->capother, lo, hi);
    return NULL;
}

const char *evp_perf_unnamed_report(const struct evp_perf_unnamed *u,
                                    uint64_t *frames)
{
    if (!u)
        return NULL;
    for (size_t i = 0; i < u->n; i++)
        if (u->d[i].named) {
            *frames = u->d[i].named;
            return u->d[i].path;
        }
    return NULL;
}

void evp_perf_unnamed_free(struct evp_perf_unnamed *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->n; i++) {
        struct dso *d = &u->d[i];
        for (int p = 0; p < d->nprobe; p++)
            free(d->probe[p].sym);
        free(d->eval);
        free(d->other);
        if (d->elf)
            elf_end(d->elf);
        if (d->fd >= 0)
            close(d->fd);
        free(d->path);
    }
    free(u->d);
    free(u);
}
