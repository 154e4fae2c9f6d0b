/*
 * `perf script` text to samples and folded stacks, natively.
 *
 * Follows the conventions of Brendan Gregg's stackcollapse-perf.pl so that
 * its output can be compared line for line:
 *   - a sample header is "comm [pid/]tid [cpu] time: [period] event:"; the
 *     command name may contain spaces and becomes the first frame, with
 *     spaces turned into '_' (optionally "-pid" or "-pid/tid" appended);
 *   - only the first event type met is kept, unless one is named;
 *   - callchain lines are "ip symbol+0xoff (dso)": the offset is dropped,
 *     "[unknown]" becomes "[dso basename]" (or "[unknown]"; or, in a
 *     stripped interpreter's eval loop, EVP_PERF_UNNAMED_EVAL: unnamed.c), ';'
 * becomes
 *     ':', everything from the first '(' (other than "(anonymous
 *     namespace)") is dropped unless the name looks like a Go method, and
 *     quotes are deleted; "a->b" inline chains become "a;b_[i]";
 *   - values are the periods (1 when perf printed none), keys sorted.
 * Two differences: a last sample not followed by a blank line is kept, and
 * control characters and invalid UTF-8 in names are written "\xNN" (the
 * reference copies the bytes), so folded output is always UTF-8 text.
 *
 * Numbers in a header are range-checked (perf never prints a pid above
 * 2^31-1, and a period above 2^53 could not be summed exactly): one out of
 * range is taken for damage, not skipped, and stops the parse with
 * -ERANGE and the line, so that no share is drawn from a corrupt file.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "itab.h"
#include "views.h"
#include "perf.h"

struct pframe {
    size_t off, len; /* in the scratch buffer */
    const char *dso;
    size_t dso_len;
};

struct parser {
    char *scratch;
    size_t slen, scap;
    struct pframe *pf; /* leaf first, as printed */
    size_t npf, cappf;
    struct evp_perf_frame *fr;
    size_t capfr;
    char *pname;
    size_t pname_len, pname_cap;
    int have_pname;
    struct evp_perf_sample s;
    /* the first number out of range on the current line */
    const char *bad_what, *bad_num;
    size_t bad_len;
    uint64_t bad_max;
};

/* Largest values taken from a header: ids fit pid_t; counts stay exact
 * when summed as doubles (the flame graph does); seconds fit nanoseconds
 * in 64 bits. */
#define MAX_ID 2147483647u
#define MAX_PERIOD (1ull << 53)
#define MAX_SEC 18446744072ull

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' ||
           c == '\n';
}

static int is_word(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static int scratch_put(struct parser *p, const char *s, size_t n)
{
    if (!n)
        return 0;
    if (evp_grow((void **)&p->scratch, &p->scap, p->slen + n, 1, 256))
        return -ENOMEM;
    memcpy(p->scratch + p->slen, s, n);
    p->slen += n;
    return 0;
}

static const char *memmem_s(const char *h, size_t hn, const char *n)
{
    size_t nn = strlen(n);
    if (nn > hn)
        return NULL;
    for (size_t i = 0; i + nn <= hn; i++)
        if (h[i] == n[0] && memcmp(h + i, n, nn) == 0)
            return h + i;
    return NULL;
}

static int ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

/* Does the name look like a Go method, "pkg.(*T).M" (/\.\(.*\)\./)? */
static int go_method(const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '.' || s[i + 1] != '(')
            continue;
        for (size_t j = n; j-- > i + 2;)
            if (s[j] == '.' && s[j - 1] == ')')
                return 1;
        return 0;
    }
    return 0;
}

/*
 * Tidy one function name (one part of an "a->b" chain) into the scratch
 * buffer and record it as a frame.  INLINED: not the first part.
 */
static int add_func(struct parser *p, const struct evp_collapse_opts *o,
                    const char *f, size_t n, const char *pc, size_t pclen,
                    const char *mod, size_t modlen, int inlined)
{
    size_t start = p->slen;
    const char *named = NULL;
    if (n == 9 && memcmp(f, "[unknown]", 9) == 0 && o->unnamed)
        named = evp_perf_unnamed_name(o->unnamed, mod, modlen, pc, pclen);
    if (named) {
        if (scratch_put(p, named, strlen(named)))
            return -ENOMEM;
    } else if (n == 9 && memcmp(f, "[unknown]", 9) == 0) {
        const char *base = "unknown";
        size_t blen = 7;
        if (!(modlen == 9 && memcmp(mod, "[unknown]", 9) == 0)) {
            base = mod;
            blen = modlen;
            for (size_t i = modlen; i-- > 0;)
                if (mod[i] == '/') {
                    base = mod + i + 1;
                    blen = modlen - i - 1;
                    break;
                }
        }
        if (scratch_put(p, "[", 1) || scratch_put(p, base, blen))
            return -ENOMEM;
        if (o->addrs) {
            if (scratch_put(p, " <", 2) || scratch_put(p, pc, pclen) ||
                scratch_put(p, ">", 1))
                return -ENOMEM;
        }
        if (scratch_put(p, "]", 1))
            return -ENOMEM;
    } else {
        if (scratch_put(p, f, n))
            return -ENOMEM;
    }
    /* tidy_generic */
    char *s = p->scratch + start;
    size_t len = p->slen - start;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ';')
            s[i] = ':';
    if (!go_method(s, len)) {
        for (size_t i = 0; i < len; i++) {
            if (s[i] != '(')
                continue;
            if (len - i - 1 >= 20 &&
                memcmp(s + i + 1, "anonymous namespace)", 20) == 0)
                continue;
            len = i;
            break;
        }
    }
    size_t w = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] != '"' && s[i] != '\'')
            s[w++] = s[i];
    len = w;
    /* tidy_java */
    if (p->pname_len >= 4 && memcmp(p->pname, "java", 4) == 0 && len &&
        s[0] == 'L' && memchr(s, '/', len)) {
        memmove(s, s + 1, len - 1);
        len--;
    }
    p->slen = start + len;
    const char *ann = NULL;
    if (inlined) {
        if (!memmem_s(s, len, "_[i]"))
            ann = "_[i]";
    } else if (o->annotate_kernel && modlen &&
               (mod[0] == '[' || ends_with(mod, modlen, "vmlinux")) &&
               !memmem_s(mod, modlen, "unknown")) {
        ann = "_[k]";
    } else if (o->annotate_jit && memmem_s(mod, modlen, "/tmp/perf-") &&
               ends_with(mod, modlen, ".map")) {
        if (!memmem_s(s, len, "_[j]"))
            ann = "_[j]";
    }
    if (ann && scratch_put(p, ann, 4))
        return -ENOMEM;
    if (evp_grow((void **)&p->pf, &p->cappf, p->npf + 1, sizeof *p->pf, 64))
        return -ENOMEM;
    p->pf[p->npf++] = (struct pframe){start, p->slen - start, mod, modlen};
    return 0;
}

/* A callchain line: "^\s*(\w+)\s*(.+) \((.*)\)" (not anchored at the end). */
static int stack_line(struct parser *p, const struct evp_collapse_opts *o,
                      const char *l, size_t n)
{
    size_t i = 0;
    while (i < n && is_space(l[i]))
        i++;
    size_t pc0 = i;
    while (i < n && is_word(l[i]))
        i++;
    if (i == pc0)
        return 1;
    size_t pclen = i - pc0;
    while (i < n && is_space(l[i]))
        i++;
    const char *r = l + i;
    size_t rn = n - i;
    /* The last ')' ends the dso; the last " (" with a ')' after it and at
     * least one character before it ends the symbol (greedy .+). */
    size_t close = rn;
    for (size_t j = rn; j-- > 0;)
        if (r[j] == ')') {
            close = j;
            break;
        }
    if (close == rn)
        return 1;
    size_t k = (size_t)-1;
    for (size_t j = close; j-- > 1;)
        if (r[j] == ' ' && r[j + 1] == '(' && j + 2 <= close) {
            k = j;
            break;
        }
    if (k == (size_t)-1)
        return 1;
    if (!p->have_pname)
        return 0; /* a filtered sample */
    const char *f = r;
    size_t fn = k;
    const char *mod = r + k + 2;
    size_t modlen = close - (k + 2);
    /* strip "+0x[0-9a-f]+$" */
    {
        size_t j = fn;
        while (j > 0 && (isdigit((unsigned char)f[j - 1]) ||
                         (f[j - 1] >= 'a' && f[j - 1] <= 'f')))
            j--;
        if (j < fn && j >= 3 && f[j - 1] == 'x' && f[j - 2] == '0' &&
            f[j - 3] == '+')
            fn = j - 3;
    }
    if (fn && f[0] == '(')
        return 0; /* process names */
    p->s.raw_frames++;
    /* "a->b->c": parts in order; frames are kept leaf first, so push the
     * parts last to first. */
    size_t parts[64][2], np = 0, b = 0;
    for (size_t j = 0; j + 1 < fn && np < 63; j++)
        if (f[j] == '-' && f[j + 1] == '>') {
            parts[np][0] = b;
            parts[np][1] = j - b;
            np++;
            b = j + 2;
            j++;
        }
    parts[np][0] = b;
    parts[np][1] = fn - b;
    np++;
    for (size_t q = np; q-- > 0;) {
        int rc = add_func(p, o, f + parts[q][0], parts[q][1], l + pc0, pclen,
                          mod, modlen, q > 0);
        if (rc)
            return rc;
    }
    return 0;
}

/* Digits from *I on, into *V: 0, or 1 when the number is above MAX (*V
 * is then MAX). */
static int digits(const char *l, size_t n, size_t *i, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;
    int over = 0;
    for (; *i < n && isdigit((unsigned char)l[*i]); (*i)++) {
        unsigned d = (unsigned)(l[*i] - '0');
        if (over || x > (max - d) / 10)
            over = 1;
        else
            x = x * 10 + d;
    }
    *v = over ? max : x;
    return over;
}

/* Note the number WHAT (L[START..END)) as out of range, unless one was
 * already. */
static void out_of_range(struct parser *p, const char *what, const char *l,
                         size_t start, size_t end, uint64_t max)
{
    if (p->bad_what)
        return;
    p->bad_what = what;
    p->bad_num = l + start;
    p->bad_len = end - start;
    p->bad_max = max;
}

/* The header's ids: the command name, then whitespace, pid[/tid],
 * whitespace (the reference regex is (\S.+?)\s+(\d+)/?(\d+)?\s+).  Returns
 * the length of the command name, 0 when the line is no header; *AFTER is
 * where the rest of the header starts. */
static size_t header_ids(struct parser *p, const char *l, size_t n, long *pid,
                         long *tid, size_t *after)
{
    for (size_t i = 2; i < n; i++) {
        if (!is_space(l[i]))
            continue;
        size_t j = i;
        while (j < n && is_space(l[j]))
            j++;
        if (j >= n || !isdigit((unsigned char)l[j]))
            continue;
        uint64_t a, b = 0;
        size_t a0 = j, b0;
        int over_a = digits(l, n, &j, MAX_ID, &a), over_b = 0;
        size_t a1 = j;
        int slash = 0;
        while (j < n && l[j] == '/') {
            j++;
            slash = 1;
        }
        int two = slash && j < n && isdigit((unsigned char)l[j]);
        b0 = j;
        if (two)
            over_b = digits(l, n, &j, MAX_ID, &b);
        if (j >= n || !is_space(l[j]))
            continue;
        if (over_a)
            out_of_range(p, two ? "pid" : "tid", l, a0, a1, MAX_ID);
        if (over_b)
            out_of_range(p, "tid", l, b0, j, MAX_ID);
        *pid = two ? (long)a : -1;
        *tid = two ? (long)b : (long)a;
        *after = j;
        return i;
    }
    return 0;
}

/* Event and period: the line ends with ":\s*(\d+)*\s+(\S+):\s*".  *EV is
 * NULL when it does not; *PERIOD 0 when no count was printed. */
static void header_event(struct parser *p, const char *l, size_t n,
                         size_t after, const char **ev, size_t *evlen,
                         uint64_t *period)
{
    *ev = NULL;
    *evlen = 0;
    *period = 0;
    size_t e = n;
    while (e > after && is_space(l[e - 1]))
        e--;
    if (!(e > after && l[e - 1] == ':'))
        return;
    size_t t = e - 1;
    size_t s0 = t;
    while (s0 > after && !is_space(l[s0 - 1]))
        s0--;
    if (!(s0 < t && s0 > after))
        return;
    size_t q = s0;
    size_t ws = 0;
    while (q > after && is_space(l[q - 1]))
        q--, ws++;
    size_t d = q;
    while (d > after && isdigit((unsigned char)l[d - 1]))
        d--;
    size_t r = d;
    while (r > after && is_space(l[r - 1]))
        r--;
    if (ws && r > 0 && l[r - 1] == ':') {
        *ev = l + s0;
        *evlen = t - s0;
        size_t d0 = d;
        if (digits(l, q, &d, MAX_PERIOD, period))
            out_of_range(p, "period", l, d0, q, MAX_PERIOD);
    }
}

/* Time: the token before the event part ending in ':' ("123.456789:"),
 * after an optional "[cpu]". */
static void header_time(struct parser *p, const char *l, size_t n, size_t after)
{
    struct evp_perf_sample *s = &p->s;
    s->has_time = 0;
    size_t q = after;
    while (q < n) {
        while (q < n && is_space(l[q]))
            q++;
        size_t t0 = q;
        while (q < n && !is_space(l[q]))
            q++;
        if (q > t0 + 1 && l[q - 1] == ':' && isdigit((unsigned char)l[t0])) {
            uint64_t sec, ns = 0;
            size_t z = t0;
            int over = digits(l, q - 1, &z, MAX_SEC, &sec);
            size_t sec_end = z;
            if (z < q - 1 && l[z] == '.') {
                z++;
                unsigned nd = 0;
                for (; z < q - 1 && isdigit((unsigned char)l[z]); z++)
                    if (nd < 9) {
                        ns = ns * 10 + (uint64_t)(l[z] - '0');
                        nd++;
                    }
                while (nd++ < 9)
                    ns *= 10;
            }
            if (z == q - 1 && over) {
                out_of_range(p, "time", l, t0, sec_end, MAX_SEC);
            } else if (z == q - 1) {
                s->time_ns = sec * 1000000000ull + ns;
                s->has_time = 1;
            }
            return;
        }
        if (t0 < n && l[t0] == '[')
            continue; /* [cpu] */
        if (q > t0 && l[q - 1] != ':')
            continue;
        return;
    }
}

static void copy_event(char *dst, size_t cap, const char *ev, size_t len)
{
    size_t c = len < cap - 1 ? len : cap - 1;
    memcpy(dst, ev, c);
    dst[c] = 0;
}

/* Is EV the event kept (the one named, else the first met)?  Samples of
 * other events are counted in ST. */
static int event_kept(const struct evp_collapse_opts *o,
                      struct evp_collapse_stats *st, const char *ev,
                      size_t evlen)
{
    const char *want = o->event && *o->event ? o->event : st->event;
    if (!*want) {
        copy_event(st->event, sizeof st->event, ev, evlen);
        want = st->event;
    }
    if (strlen(want) == evlen && memcmp(want, ev, evlen) == 0)
        return 1;
    if (!st->other_event[0])
        copy_event(st->other_event, sizeof st->other_event, ev, evlen);
    st->filtered++;
    return 0;
}

/* The process-name frame: the command name with spaces made '_', and
 * "-pid" or "-pid/tid" when asked for. */
static int set_pname(struct parser *p, const struct evp_collapse_opts *o,
                     const char *comm, size_t comm_len, long pid, long tid)
{
    char num[48];
    size_t extra = 0;
    if (o->tid && pid >= 0)
        extra = (size_t)snprintf(num, sizeof num, "-%ld/%ld", pid, tid);
    else if (o->tid)
        extra = (size_t)snprintf(num, sizeof num, "-?/%ld", tid);
    else if (o->pid && pid >= 0)
        extra = (size_t)snprintf(num, sizeof num, "-%ld", pid);
    else if (o->pid)
        extra = (size_t)snprintf(num, sizeof num, "-?");
    if (evp_grow((void **)&p->pname, &p->pname_cap, comm_len + extra + 1, 1,
                 64))
        return -ENOMEM;
    memcpy(p->pname, comm, comm_len);
    memcpy(p->pname + comm_len, num, extra);
    p->pname_len = comm_len + extra;
    for (size_t z = 0; z < p->pname_len; z++)
        if (p->pname[z] == ' ')
            p->pname[z] = '_';
    p->have_pname = 1;
    return 0;
}

/* A sample header: 1 when the line is none, else 0 with *KEEP saying
 * whether its event is the one kept, -ERANGE when a number in it is out
 * of range (noted in P), or -ENOMEM. */
static int header_line(struct parser *p, const struct evp_collapse_opts *o,
                       const char *l, size_t n, struct evp_collapse_stats *st,
                       int *keep)
{
    long pid = -1, tid = -1;
    size_t after = 0;
    size_t comm_len = header_ids(p, l, n, &pid, &tid, &after);
    if (!comm_len)
        return 1;
    const char *ev;
    size_t evlen;
    uint64_t period;
    header_event(p, l, n, after, &ev, &evlen, &period);
    header_time(p, l, n, after);
    if (p->bad_what)
        return -ERANGE;
    *keep = !ev || event_kept(o, st, ev, evlen);
    if (!*keep)
        return 0;
    p->s.period = period ? period : 1;
    p->s.pid = pid;
    p->s.tid = tid;
    p->s.comm = l;
    p->s.comm_len = comm_len;
    return set_pname(p, o, l, comm_len, pid, tid);
}

static int emit(struct parser *p,
                int (*cb)(void *ctx, const struct evp_perf_sample *s),
                void *ctx, struct evp_collapse_stats *st)
{
    if (evp_grow((void **)&p->fr, &p->capfr, p->npf, sizeof *p->fr, 64))
        return -ENOMEM;
    for (size_t i = 0; i < p->npf; i++) {
        const struct pframe *f = &p->pf[p->npf - 1 - i];
        p->fr[i] = (struct evp_perf_frame){p->scratch + f->off, f->len, f->dso,
                                           f->dso_len};
    }
    p->s.frames = p->fr;
    p->s.nframes = p->npf;
    p->s.pname = p->pname;
    p->s.pname_len = p->pname_len;
    st->samples++;
    if (p->s.raw_frames > st->max_raw_frames)
        st->max_raw_frames = p->s.raw_frames;
    int rc = cb(ctx, &p->s);
    p->npf = 0;
    p->slen = 0;
    p->have_pname = 0;
    return rc;
}

int evp_perf_parse(const char *buf, size_t len,
                   const struct evp_collapse_opts *o,
                   int (*cb)(void *ctx, const struct evp_perf_sample *s),
                   void *ctx, struct evp_collapse_stats *st)
{
    static const struct evp_collapse_opts defaults;
    struct parser p;
    memset(&p, 0, sizeof p);
    memset(st, 0, sizeof *st);
    if (!o)
        o = &defaults;
    /* frames point into the scratch buffer even when empty ("b->" has an
     * empty part): it must exist from the start */
    int rc = evp_grow((void **)&p.scratch, &p.scap, 1, 1, 256);
    size_t lineno = 0;
    size_t pos = 0;
    while (pos < len && !rc) {
        const char *l = buf + pos;
        const char *nl = memchr(l, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - l) : len - pos;
        pos += n + (nl ? 1 : 0);
        lineno++;
        st->lines++;
        if (!st->first_binary && memchr(l, 0, n))
            st->first_binary = lineno; /* text never holds a NUL */
        if ((n && l[0] == '#') || n == 0)
            st->ignored++;
        if (n && l[0] == '#')
            continue;
        if (n == 0) {
            if (p.have_pname)
                rc = emit(&p, cb, ctx, st);
            p.have_pname = 0;
            p.npf = 0;
            p.slen = 0;
            continue;
        }
        if (!is_space(l[0])) {
            int keep = 0;
            int h = header_line(&p, o, l, n, st, &keep);
            if (h < 0) {
                rc = h;
                break;
            }
            if (h == 0) {
                if (!keep)
                    p.have_pname = 0;
                p.s.line = lineno;
                p.s.raw_frames = 0;
                continue;
            }
        }
        int s = stack_line(&p, o, l, n);
        if (s < 0) {
            rc = s;
            break;
        }
        if (s == 1) {
            if (!st->unrecognized)
                st->first_unrecognized = lineno;
            st->unrecognized++;
        }
    }
    if (!rc && p.have_pname)
        rc = emit(&p, cb, ctx, st);
    if (rc == -ERANGE && p.bad_what) {
        st->bad_line = lineno;
        st->bad_what = p.bad_what;
        st->bad_max = p.bad_max;
        size_t c = p.bad_len < sizeof st->bad_num - 1 ? p.bad_len
                                                      : sizeof st->bad_num - 1;
        memcpy(st->bad_num, p.bad_num, c);
        st->bad_num[c] = 0;
    }
    free(p.scratch);
    free(p.pf);
    free(p.fr);
    free(p.pname);
    return rc;
}

int evp_perf_sample_key(const struct evp_perf_sample *s, char **buf,
                        size_t *cap, size_t *len)
{
    /* Frames are escaped for folded output (control characters and
     * invalid UTF-8 as "\xNN", ';' as ':'), so that a folded file is
     * always one line of valid UTF-8 text per stack. */
    size_t need = 4 * s->pname_len + 1;
    for (size_t i = 0; i < s->nframes; i++)
        need += 4 * s->frames[i].len + 1;
    if (evp_grow((void **)buf, cap, need, 1, 256))
        return -ENOMEM;
    char *b = *buf;
    size_t k = evp_esc_folded(b, s->pname, s->pname_len);
    for (size_t i = 0; i < s->nframes; i++) {
        b[k++] = ';';
        k += evp_esc_folded(b + k, s->frames[i].name, s->frames[i].len);
    }
    *len = k;
    return 0;
}
