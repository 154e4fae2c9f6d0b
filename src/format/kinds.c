/*
 * The event vocabulary as data: names, argument classes and nesting
 * effects of every kind evalprof knows (events.h).  Reports print these
 * names; the codec and the replay engine read the classes.  One list
 * (EVP_KINDS below) makes both the descriptive table and the byte table
 * the hot decode loop indexes.
 */
#include <stdio.h>

#include "evalprof/format.h"

/* kind, report name, argument class, nesting, one-line description */
#define EVP_KINDS(X)                                                           \
    X(EVP_EV_INIT, "init", NONE, NONE,                                         \
      "recording starts (interpreter start-up in mode A)")                     \
    X(EVP_EV_FINI, "fini", NONE, NONE, "recording ends")                       \
    X(EVP_EV_RUNTIME_OTHER, "runtime other", NONE, NONE,                       \
      "back in the runtime after an exit")                                     \
    X(EVP_EV_ENTER, "enter", FUNC, PUSH, "a frame starts being evaluated")     \
    X(EVP_EV_EXIT, "exit", FUNC, POP, "a frame stops being evaluated")         \
    X(EVP_EV_LOOP_ENTER, "loop enter", NONE, NONE,                             \
      "set-up done, top of the loop reached")                                  \
    X(EVP_EV_LOOP_SLOW, "loop slow", NONE, NONE,                               \
      "eval-breaker slow path taken")                                          \
    X(EVP_EV_LOOP_FAST, "loop fast", NONE, NONE,                               \
      "eval-breaker check passed on the fast path")                            \
    X(EVP_EV_DISPATCH, "dispatch", NONE, NONE,                                 \
      "about to dispatch the next instruction")                                \
    X(EVP_EV_OP, "op", OP, NONE, "an instruction starts")                      \
    X(EVP_EV_LOOP_EXCEPTION, "loop exception", NONE, NONE,                     \
      "exception unwinding starts")                                            \
    X(EVP_EV_LOOP_ERROR, "loop error", NONE, NONE,                             \
      "the error path is entered")                                             \
    X(EVP_EV_LOOP_EXITING, "loop exiting", NONE, NONE,                         \
      "the exiting path is entered")                                           \
    X(EVP_EV_LOOP_EXIT, "loop exit", NONE, NONE, "the loop is left")           \
    X(EVP_EV_RECORDER, "recorder", NONE, NONE,                                 \
      "time spent inside evalprof's recorder")                                 \
    X(EVP_EV_C_CALL, "c call", FUNC, PUSH, "a C function is called")           \
    X(EVP_EV_C_RETURN, "c return", FUNC, POP, "a C function returned")         \
    X(EVP_EV_C_RAISE, "c raise", FUNC, POP,                                    \
      "a C function raised an exception")                                      \
    X(EVP_EV_RESUME, "resume", FUNC, PUSH,                                     \
      "a suspended generator or coroutine frame resumes")                      \
    X(EVP_EV_SUSPEND, "suspend", FUNC, POP,                                    \
      "a generator or coroutine frame suspends")                               \
    X(EVP_EV_LOG_WRITTEN, "log written", NONE, NONE,                           \
      "time a text tracer spent writing its log")

#define KIND_INFO(k, name, arg, nest, doc)                                     \
    [k] = {name, EVP_ARG_##arg, EVP_NEST_##nest, doc},
#define KIND_ARG(k, name, arg, nest, doc) [k] = EVP_ARG_##arg,

static const struct evp_kind_info kinds[EVP_EV__COUNT] = {EVP_KINDS(KIND_INFO)};

const uint8_t evp_arg_class_of[EVP_EV__COUNT] = {EVP_KINDS(KIND_ARG)};

const struct evp_kind_info *evp_kind_info(unsigned kind)
{
    return kind < EVP_EV__COUNT ? &kinds[kind] : NULL;
}

const char *evp_kind_name(unsigned kind)
{
    static __thread char buf[24];
    if (kind < EVP_EV__COUNT)
        return kinds[kind].name;
    snprintf(buf, sizeof buf, "kind %u", kind);
    return buf;
}

void evp_kind_cost_key(char *buf, size_t len, unsigned kind)
{
    int n = snprintf(buf, len, "event_cost.kind.%s", evp_kind_name(kind));
    for (int i = (int)sizeof "event_cost.kind." - 1; i < n && (size_t)i < len;
         i++)
        if (buf[i] == ' ')
            buf[i] = '_';
}
