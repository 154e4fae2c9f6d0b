/*
 * Escaping of untrusted names (esc.c): every place evalprof writes a name
 * that came from a traced program or a perf symbol table goes through one
 * of these, so that no output (SVG, HTML, JavaScript, JSON, a terminal, a
 * folded-stack line) can be broken or hijacked by what the name holds.
 */
#ifndef EVP_ESC_H
#define EVP_ESC_H

#include <stddef.h>
#include <stdio.h>

/* Bytes of the valid UTF-8 sequence at S (1-4), 0 when invalid. */
int evp_utf8_len(const unsigned char *s, size_t n);
/* XML text or attribute value. */
void evp_esc_xml(FILE *out, const char *s, size_t n);
/* Inside a "..." JavaScript string literal. */
void evp_esc_js(FILE *out, const char *s, size_t n);
/* For a terminal; at most MAXCOLS columns (0: no limit), cut with "..".
 * Returns the columns written. */
size_t evp_esc_term(FILE *out, const char *s, size_t n, size_t maxcols);
/* The same into BUF (LEN bytes, 288 hold 70 columns), for a table cell;
 * returns the columns. */
int evp_esc_term_cell(char *buf, size_t len, const char *s, size_t maxcols);
/* A folded-stack frame into DST (room for 4*N bytes); returns its length. */
size_t evp_esc_folded(char *dst, const char *s, size_t n);

/* HTML text or a quoted attribute value (the XML rules). */
void evp_esc_html(FILE *out, const char *s, size_t n);
/* A whole document that evalprof wrote itself (every name in it already
 * escaped) as a quoted attribute value, such as an iframe's srcdoc: only
 * & < > " ' become entities, every other byte (newlines) is kept. */
void evp_esc_html_doc(FILE *out, const char *s, size_t n);

/* Write STR as a JSON string: quoted, escaped, invalid UTF-8 replaced. */
void evp_json_string(FILE *f, const char *str);

#endif
