/*
 * Number and time formatting shared by the views, matching the
 * discussion's reports: counts with thousands separators ("94,807"),
 * times in microseconds with one truncated decimal ("1,782.7") or in the
 * unit a column's values call for (evp_fmt_col_unit), wall-clock
 * times as
 * "2021-03-31 20:27:25.663947 UTC" (truncated to the microsecond, as the
 * discussion's analyzer prints them).
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "views.h"

const char *evp_fmt_unit(int unit)
{
    switch (unit) {
    case EVP_UNIT_NS:
        return "ns";
    case EVP_UNIT_MS:
        return "ms";
    default:
        return "µs";
    }
}

int evp_fmt_col_unit(int unit, uint64_t lo)
{
    if (unit != EVP_UNIT_AUTO)
        return unit;
    if (lo == 0 || lo == UINT64_MAX)
        return EVP_UNIT_US;
    if (lo < 1000)
        return EVP_UNIT_NS;
    return lo < 1000000 ? EVP_UNIT_US : EVP_UNIT_MS;
}

void evp_fmt_col_see(uint64_t *lo, uint64_t ns)
{
    if (ns && ns < *lo)
        *lo = ns;
}

/* Tenths are truncated, not rounded: the discussion's reports show
 * 22,118,598 ns as "22,118.5 µs". */
char *evp_fmt_us(char *buf, size_t len, uint64_t ns, int unit)
{
    if (unit == EVP_UNIT_NS)
        return evp_num_group(buf, len, ns);
    uint64_t tenths = unit == EVP_UNIT_MS ? ns / 100000 : ns / 100;
    evp_num_group(buf, len, tenths / 10);
    size_t n = strlen(buf);
    if (n + 2 < len) {
        buf[n++] = '.';
        buf[n++] = (char)('0' + tenths % 10);
        buf[n] = '\0';
    }
    return buf;
}

char *evp_fmt_us_double(char *buf, size_t len, double us, int unit)
{
    if (!(us > 0))
        us = 0;
    if (us > 1.8e15)
        us = 1.8e15;
    return evp_fmt_us(buf, len,
                      (uint64_t)(us * 1000.0 + (unit == EVP_UNIT_NS ? 0.5 : 0)),
                      unit);
}

char *evp_fmt_wall(char *buf, size_t len, int64_t epoch_ns)
{
    if (epoch_ns < 0) {
        snprintf(buf, len, "(unknown)");
        return buf;
    }
    time_t s = (time_t)(epoch_ns / 1000000000);
    long us = (long)(epoch_ns % 1000000000 / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char d[32];
    strftime(d, sizeof d, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, len, "%s.%06ld UTC", d, us);
    return buf;
}

void evp_fmt_dashes(FILE *out, int n)
{
    putc(' ', out);
    for (int i = 0; i < n; i++)
        putc('-', out);
}

void evp_fmt_rule(FILE *out, const int *w, size_t n)
{
    for (int i = 0; i < w[0]; i++)
        putc('-', out);
    for (size_t i = 1; i < n; i++)
        evp_fmt_dashes(out, w[i]);
    putc('\n', out);
}

/* ---- the states of a sampled thread -------------------------------------- */

int evp_sample_cat(uint32_t state, uint32_t stack)
{
    if (state & EVP_SAMPLE_NO_GIL)
        return state & EVP_SAMPLE_GIL_WAIT  ? EVP_SCAT_GIL_WAIT
               : state & EVP_SAMPLE_SYSCALL ? EVP_SCAT_SYSCALL
                                            : EVP_SCAT_NO_GIL;
    if (state & EVP_SAMPLE_NO_PC)
        return (state & EVP_SAMPLE_NO_FRAME) || !stack ? EVP_SCAT_NO_FRAME
                                                       : EVP_SCAT_NO_PC;
    if (state & EVP_SAMPLE_IN_JIT)
        return EVP_SCAT_JIT;
    if (state & EVP_SAMPLE_C_CALL)
        return EVP_SCAT_C_CALL;
    if (state & EVP_SAMPLE_IN_EVAL)
        return EVP_SCAT_EVAL;
    if (state & EVP_SAMPLE_TIER2)
        return EVP_SCAT_JIT_CALLED;
    if ((state & EVP_SAMPLE_NO_FRAME) || !stack)
        return EVP_SCAT_NO_FRAME;
    return EVP_SCAT_OTHER;
}

int evp_sample_jit_told(struct evp_trace *const *t, size_t runs)
{
    for (size_t i = 0; i < runs; i++) {
        const char *how = evp_trace_meta(t[i], "sample.jit");
        if (how && strncmp(how, "none", 4) != 0)
            return 1;
    }
    return 0;
}

const char *evp_sample_cat_name(int cat)
{
    static const char *const names[EVP_SCAT__COUNT] = {
        "in the eval loop",
        "C call (GIL held)",
        "waiting for the GIL",
        "no GIL, in a system call",
        "no GIL, not blocked",
        "runtime other (frame)",
        "no Python frame",
        "GIL held: eval loop, C call or runtime (not told: sampler thread)",
        "in JIT-compiled code",
        "runtime, called from JIT code"};
    return cat >= 0 && cat < EVP_SCAT__COUNT ? names[cat] : "?";
}

const char *evp_sample_cat_leaf(int cat)
{
    static const char *const leaves[EVP_SCAT__COUNT] = {
        "[eval loop]", "[C call]",          "[GIL wait]",      "[syscall]",
        "[no GIL]",    "[runtime other]",   "[runtime other]", "[GIL held]",
        "[JIT code]",  "[runtime from JIT]"};
    return cat >= 0 && cat < EVP_SCAT__COUNT ? leaves[cat] : "[?]";
}

size_t evp_view_leaf_name(const struct evp_trace *t, uint32_t key, char *buf,
                          size_t len)
{
    unsigned v = key & EVP_KEY_VAL;
    int n;
    if (key == EVP_KEY_RECORDER) {
        n = snprintf(buf, len, "%s", EVP_RECORDER_FRAME);
    } else if ((key & EVP_KEY_TAG) == EVP_KEY_UNKNOWN) {
        n = snprintf(buf, len, "%s", EVP_STACK_UNKNOWN_NAME);
    } else if ((key & EVP_KEY_TAG) == EVP_KEY_SCAT) {
        n = snprintf(buf, len, "%s", evp_sample_cat_leaf((int)v));
    } else if ((key & EVP_KEY_TAG) == EVP_KEY_PHASE) {
        n = snprintf(buf, len, "[%s]", evp_kind_name(v));
    } else {
        const char *op = evp_trace_opname(t, v);
        n = op ? snprintf(buf, len, "op:%s", op)
               : snprintf(buf, len, "op:%u", v);
    }
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

void evp_view_func_key(const struct evp_trace *t, uint32_t id, char *buf,
                       size_t len)
{
    const struct evp_func *f = evp_trace_func(t, id);
    if (!f)
        snprintf(buf, len, "<func %u>", id);
    else if (*f->file)
        snprintf(buf, len, "%s (%s:%u)", f->name, f->file, f->line);
    else
        snprintf(buf, len, "%s", f->name);
}

int evp_sample_ip_current(const struct evp_trace *t, uint32_t state)
{
    if (state & EVP_SAMPLE_IN_JIT)
        return 0;
    if (!(state & EVP_SAMPLE_TIER2))
        return 1;
    int op = evp_sample_opcode(state);
    const char *nm = op >= 0 ? evp_trace_opname(t, (unsigned)op) : NULL;
    return !nm || strcmp(nm, "ENTER_EXECUTOR") != 0;
}

void evp_view_op_name(const struct evp_trace *t, unsigned op, char *buf,
                      size_t len)
{
    const char *nm = evp_trace_opname(t, op);
    if (nm)
        snprintf(buf, len, "%s", nm);
    else
        snprintf(buf, len, "<%u>", op);
}

/*
 * CPython renamed, merged and removed instructions between 3.11 and 3.15;
 * where one version's instruction does what another's does under another
 * name, the newer name is the name both are compared by.  PREFIX rows
 * rename a family's specialized forms too (BINARY_SUBSCR_DICT of 3.13 is
 * BINARY_OP_SUBSCR_DICT of 3.14).
 */
static const struct {
    const char *old, *now;
    int prefix; /* OLD_... -> NOW_... as well */
} op_renames[] = {
    /* 3.14: subscripts are a BINARY_OP (NB_SUBSCR) */
    {"BINARY_SUBSCR", "BINARY_OP_SUBSCR", 1},
    /* 3.14: RETURN_CONST removed (LOAD_CONST, RETURN_VALUE) */
    {"RETURN_CONST", "RETURN_VALUE", 0},
    /* 3.14: LOAD_FAST's borrowing forms, small ints' own load */
    {"LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_FAST_LOAD_FAST", 0},
    {"LOAD_FAST_BORROW", "LOAD_FAST", 0},
    {"LOAD_SMALL_INT", "LOAD_CONST", 0},
    /* 3.12: PRECALL merged into CALL, LOAD_METHOD into LOAD_ATTR, the
     * direction of a conditional jump no longer in its name, KW_NAMES
     * before a CALL (3.13: CALL_KW) */
    {"PRECALL", "CALL", 1},
    {"LOAD_METHOD", "LOAD_ATTR_METHOD", 1},
    {"POP_JUMP_FORWARD_IF_", "POP_JUMP_IF_", 1},
    {"POP_JUMP_BACKWARD_IF_", "POP_JUMP_IF_", 1},
    {"KW_NAMES", "CALL_KW", 0},
};

void evp_view_op_family(char *name, size_t len, int base)
{
    char buf[128];
    const char *nm = name;
    if (strncmp(nm, "INSTRUMENTED_", 13) == 0)
        nm += 13; /* sys.monitoring's form of the instruction */
    snprintf(buf, sizeof buf, "%s", nm);
    for (size_t i = 0; i < sizeof op_renames / sizeof op_renames[0]; i++) {
        size_t k = strlen(op_renames[i].old);
        int whole = strcmp(buf, op_renames[i].old) == 0;
        int family = op_renames[i].prefix && !whole &&
                     strncmp(buf, op_renames[i].old, k) == 0 &&
                     (buf[k] == '_' || op_renames[i].old[k - 1] == '_');
        if (whole || family) {
            char tail[128];
            snprintf(tail, sizeof tail, "%s", buf + k);
            snprintf(buf, sizeof buf, "%s%s", op_renames[i].now, tail);
            break;
        }
    }
    if (base) {
        /* the renamed families' bases */
        if (strncmp(buf, "BINARY_OP_SUBSCR", 16) == 0)
            snprintf(buf, sizeof buf, "BINARY_OP");
        else if (strncmp(buf, "LOAD_ATTR_METHOD", 16) == 0)
            snprintf(buf, sizeof buf, "LOAD_ATTR");
    }
    snprintf(name, len, "%s", buf);
}

/* Columns of S, escaped text: one per UTF-8 character. */
static int text_cols(const char *s, size_t n)
{
    int cols = 0;
    for (size_t i = 0; i < n; i++)
        cols += ((unsigned char)s[i] & 0xc0) != 0x80;
    return cols;
}

/* Bytes of the first COLS columns of escaped text S. */
static size_t text_bytes(const char *s, int cols)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80 && cols-- == 0)
            break;
    return i;
}

int evp_view_func_cell(char *buf, size_t len, const char *s, int maxcols)
{
    int cols = evp_esc_term_cell(buf, len, s, 0);
    size_t n = strlen(buf);
    const char *open = strstr(buf, " (");
    if (!maxcols || cols <= maxcols)
        return cols;
    if (!open || buf[n - 1] != ')' || maxcols < 8)
        return evp_esc_term_cell(buf, len, s, (size_t)maxcols);
    /* the tail kept: from the path's last "/" (or its start) to ")" */
    const char *tail = strrchr(open, '/');
    if (!tail)
        tail = open + 2;
    /* keep the name whole, then as much of the path's end as fits; a
     * name too long for that leaves half the cell to the path's end */
    size_t tl = n - (size_t)(tail - buf);
    int room = maxcols - 1, tc = text_cols(tail, tl), kt = tc;
    int nc = text_cols(buf, (size_t)(open + 2 - buf));
    if (nc + kt > room)
        kt = room - nc;
    if (kt < maxcols / 2 && kt < tc)
        kt = tc < maxcols / 2 ? tc : maxcols / 2;
    tail += text_bytes(tail, tc - kt);
    tl = n - (size_t)(tail - buf);
    int hc = room - kt;
    char cut[1200];
    size_t hl = text_bytes(buf, hc);
    if (hl + 3 + tl >= sizeof cut || hl + 3 + tl >= len)
        return evp_esc_term_cell(buf, len, s, (size_t)maxcols);
    memcpy(cut, buf, hl);
    memcpy(cut + hl, "…", 3);
    memcpy(cut + hl + 3, tail, tl + 1);
    memcpy(buf, cut, hl + 3 + tl + 1);
    return maxcols;
}

static int cmp_shown(const void *a, const void *b, void *arg)
{
    const char **shown = arg;
    return strcmp(shown[*(const size_t *)a], shown[*(const size_t *)b]);
}

/* Sorted by the cell they print, labels that print alike are neighbours:
 * a run of them holding two different labels shows them all whole, and
 * that goes on until a pass changes nothing (a label made whole may now
 * print as another's cut cell).  O(n log n) a pass: a trace may name
 * hundreds of thousands of functions. */
void evp_view_cells_unique(size_t n, const char **shown, int *cols,
                           const char *const *full, const int *fullcols)
{
    size_t *ix = malloc((n ? n : 1) * sizeof *ix);
    if (!ix)
        return; /* out of memory: cells as they are */
    int moved = 1;
    while (moved) {
        moved = 0;
        for (size_t i = 0; i < n; i++)
            ix[i] = i;
        qsort_r(ix, n, sizeof *ix, cmp_shown, shown);
        for (size_t a = 0, b; a < n; a = b) {
            int cut = 0, differ = 0;
            for (b = a; b < n && strcmp(shown[ix[a]], shown[ix[b]]) == 0; b++) {
                cut |= shown[ix[b]] != full[ix[b]];
                differ |= strcmp(full[ix[a]], full[ix[b]]) != 0;
            }
            if (!cut || !differ)
                continue; /* whole labels that differ never print alike */
            for (size_t k = a; k < b; k++) {
                size_t i = ix[k];
                if (shown[i] != full[i]) {
                    shown[i] = full[i], cols[i] = fullcols[i];
                    moved = 1;
                }
            }
        }
    }
    free(ix);
}

/* ---- diagnostics -------------------------------------------------------- */

void evp_diag_fail(struct evp_diag *d, const char *fmt, ...)
{
    if (!d || d->reason[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->reason, sizeof d->reason, fmt, ap);
    va_end(ap);
}

void evp_diag_note(struct evp_diag *d, const char *fmt, ...)
{
    if (!d)
        return;
    size_t used = strnlen(d->note, sizeof d->note),
           room = sizeof d->note - used;
    if (room < 2)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->note + used, room - 1, fmt, ap);
    va_end(ap);
    size_t end = n < 0                  ? used
                 : (size_t)n < room - 1 ? used + (size_t)n
                                        : sizeof d->note - 2;
    d->note[end] = '\n';
    d->note[end + 1] = '\0';
}

int evp_diag_replay(struct evp_diag *d, const char *view,
                    const struct evp_trace *t, int rc)
{
    if (rc == -ENOMEM)
        evp_diag_fail(d, "%s: out of memory", view);
    else if (rc < 0)
        evp_diag_fail(d, "%s: trace could not be replayed",
                      evp_trace_info(t)->path);
    return rc;
}
