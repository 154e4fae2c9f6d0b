/*
 * Escaping of untrusted names for every place evalprof writes them: SVG
 * text and attributes (XML), string literals inside the SVG's embedded
 * script (JavaScript), terminals, and folded-stack lines.
 *
 * Function names come from traced programs and perf symbol tables, so they
 * may hold anything: markup ("<script>"), quotes, '&', control characters,
 * newlines and bytes that are not UTF-8.  The rules:
 *   - invalid UTF-8 bytes and control characters (below 0x20, and 0x7f)
 *     become the visible four characters "\xNN" everywhere, so every output
 *     is valid UTF-8 and one name stays on one line;
 *   - XML and HTML: & < > " ' become entities (and, for a whole page of
 *     evalprof's own in an iframe's srcdoc, those five alone);
 *   - JavaScript strings: \ " ' < > & and U+2028/U+2029 become \uNNNN (so
 *     neither "</script>" nor "]]>" can end the script early);
 *   - folded stacks: ';' becomes ':' (stackcollapse's rule);
 *   - JSON strings: " and \ escaped, control characters as \u00NN,
 *     invalid UTF-8 as U+FFFD.
 */
#include <stdio.h>
#include <string.h>

#include "esc.h"

int evp_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int k;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf) {
        k = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        k = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if ((size_t)k > n)
        return 0;
    unsigned cp = c & (0x7fu >> k);
    for (int i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

static void put_hex(FILE *out, unsigned char c)
{
    static const char hx[] = "0123456789abcdef";
    char b[4] = {'\\', 'x', hx[c >> 4], hx[c & 15]};
    fwrite(b, 1, 4, out);
}

/* The entity of a markup character (& < > " '): 1 when C is one. */
static int put_entity(FILE *out, unsigned char c)
{
    static const char *const ent[] = {"&amp;", "&lt;", "&gt;", "&quot;",
                                      "&#39;"};
    const char *p = c && c <= '>' ? strchr("&<>\"'", c) : NULL;
    if (!p)
        return 0;
    fputs(ent[p - "&<>\"'"], out);
    return 1;
}

void evp_esc_xml(FILE *out, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x80) {
            int k = evp_utf8_len(s + i, n - i);
            if (k) {
                fwrite(s + i, 1, (size_t)k, out);
                i += (size_t)k;
            } else {
                put_hex(out, c);
                i++;
            }
            continue;
        }
        if (!put_entity(out, c)) {
            if (c < 0x20 || c == 0x7f)
                put_hex(out, c);
            else
                putc(c, out);
        }
        i++;
    }
}

void evp_esc_js(FILE *out, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x80) {
            int k = evp_utf8_len(s + i, n - i);
            if (k == 3 && c == 0xe2 && s[i + 1] == 0x80 &&
                (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
                fprintf(out, "\\u%04x", s[i + 2] == 0xa8 ? 0x2028 : 0x2029);
                i += 3;
            } else if (k) {
                fwrite(s + i, 1, (size_t)k, out);
                i += (size_t)k;
            } else {
                /* the visible text "\xNN": a backslash, escaped */
                fprintf(out, "\\\\x%02x", c);
                i++;
            }
            continue;
        }
        if (c == '\\' || c == '"' || c == '\'' || c == '<' || c == '>' ||
            c == '&')
            fprintf(out, "\\u%04x", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\\\x%02x", c);
        else
            putc(c, out);
        i++;
    }
}

/* Width in columns of the byte at S[I] (advancing *STEP bytes). */
static size_t term_width(const unsigned char *s, size_t n, size_t i,
                         size_t *step)
{
    unsigned char c = s[i];
    int k = c >= 0x80 ? evp_utf8_len(s + i, n - i) : 1;
    *step = k ? (size_t)k : 1;
    return (k == 0 || c < 0x20 || c == 0x7f) ? 4 : 1;
}

size_t evp_esc_term(FILE *out, const char *str, size_t n, size_t maxcols)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t total = 0, step;
    for (size_t i = 0; i < n; i += step)
        total += term_width(s, n, i, &step);
    size_t limit = (maxcols && total > maxcols) ? maxcols - 2 : (size_t)-1;
    size_t cols = 0;
    for (size_t i = 0; i < n; i += step) {
        size_t w = term_width(s, n, i, &step);
        if (cols + w > limit)
            break;
        if (w == 4)
            put_hex(out, s[i]);
        else
            fwrite(s + i, 1, step, out);
        cols += w;
    }
    if (limit != (size_t)-1) {
        fputs("..", out);
        cols += 2;
    }
    return cols;
}

size_t evp_esc_folded(char *dst, const char *str, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t o = 0, i = 0;
    while (i < n) {
        unsigned char c = s[i];
        int k = c >= 0x80 ? evp_utf8_len(s + i, n - i) : 1;
        if (k == 0 || c < 0x20 || c == 0x7f) {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hx[c >> 4];
            dst[o++] = hx[c & 15];
            i++;
            continue;
        }
        if (c == ';') {
            dst[o++] = ':';
            i++;
            continue;
        }
        memcpy(dst + o, s + i, (size_t)k);
        o += (size_t)k;
        i += (size_t)k;
    }
    return o;
}

int evp_esc_term_cell(char *buf, size_t len, const char *s, size_t maxcols)
{
    FILE *m = fmemopen(buf, len, "w");
    int cols = 0;
    buf[0] = '\0';
    if (m) {
        cols = (int)evp_esc_term(m, s, strlen(s), maxcols);
        fclose(m);
    }
    return cols;
}

void evp_json_string(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    const unsigned char *end = s + strlen(str);
    putc('"', f);
    while (*s) {
        if (*s == '"' || *s == '\\') {
            putc('\\', f);
            putc(*s++, f);
        } else if (*s < 0x20 || *s == 0x7f) {
            fprintf(f, "\\u%04x", *s++);
        } else {
            int n = evp_utf8_len(s, (size_t)(end - s));
            if (!n) {
                fputs("\\ufffd", f);
                s++;
            } else {
                fwrite(s, 1, (size_t)n, f);
                s += n;
            }
        }
    }
    putc('"', f);
}

void evp_esc_html(FILE *out, const char *s, size_t n)
{
    /* HTML text and quoted attribute values need what XML needs: the five
     * markup characters as entities; controls and bad bytes as "\xNN" */
    evp_esc_xml(out, s, n);
}

void evp_esc_html_doc(FILE *out, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n; i++)
        if (!put_entity(out, s[i]))
            putc(s[i], out);
}
