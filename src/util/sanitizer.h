/*
 * Whether this translation unit is built with ThreadSanitizer, for the
 * few places that must behave otherwise under it (its signal delivery,
 * its refusal of threads started after a threaded fork): EVP_UNDER_TSAN
 * is 1 or 0, for GCC (__SANITIZE_THREAD__) and Clang (__has_feature).
 */
#ifndef EVP_UTIL_SANITIZER_H
#define EVP_UTIL_SANITIZER_H

#if defined(__SANITIZE_THREAD__)
#define EVP_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EVP_UNDER_TSAN 1
#endif
#endif
#ifndef EVP_UNDER_TSAN
#define EVP_UNDER_TSAN 0
#endif

#endif
