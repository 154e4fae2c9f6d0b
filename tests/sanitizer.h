/*
 * Whether a test is built with ThreadSanitizer, for the checks that must
 * differ under it (its late signal delivery, its refusal of threads
 * started after a threaded fork): EVP_UNDER_TSAN is 1 or 0, for GCC
 * (__SANITIZE_THREAD__) and Clang (__has_feature), as the recorder's
 * sampler tells it (src/recorder/sample.c).
 */
#ifndef EVP_TESTS_SANITIZER_H
#define EVP_TESTS_SANITIZER_H

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
