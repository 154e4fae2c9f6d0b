/*
 * Figures for people: integers with thousands separators, the way every
 * report prints counts ("94,807") and the integer part of times
 * ("1,782.7 µs").  One formatter for the views, the perf reports and the
 * flame graph's labels.
 */
#ifndef EVP_NUM_H
#define EVP_NUM_H

#include <stddef.h>
#include <stdint.h>

/* V in decimal with a ',' between groups of three digits ("1,234,567")
 * into BUF of LEN bytes, cut to fit and NUL-terminated when LEN > 0;
 * returns BUF. */
char *evp_num_group(char *buf, size_t len, uint64_t v);

#endif /* EVP_NUM_H */
