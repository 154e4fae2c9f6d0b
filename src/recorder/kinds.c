/*
 * The event vocabulary as data: names, argument classes and nesting
 * effects of every kind evalprof knows (events.h).  Reports print these
 * names; the codec and the replay engine read the classes.
 */
#include <stdio.h>

#include "evalprof/events.h"

static const struct evp_kind_info kinds[EVP_EV__COUNT] = {
    [EVP_EV_INIT] = {"init", EVP_ARG_NONE, EVP_NEST_NONE,
                     "recording starts (interpreter start-up in mode A)"},
    [EVP_EV_FINI] = {"fini", EVP_ARG_NONE, EVP_NEST_NONE, "recording ends"},
    [EVP_EV_RUNTIME_OTHER] = {"runtime other", EVP_ARG_NONE, EVP_NEST_NONE,
                              "back in the runtime after an exit"},
    [EVP_EV_ENTER] = {"enter", EVP_ARG_FUNC, EVP_NEST_PUSH,
                      "a frame starts being evaluated"},
    [EVP_EV_EXIT] = {"exit", EVP_ARG_FUNC, EVP_NEST_POP,
                     "a frame stops being evaluated"},
    [EVP_EV_LOOP_ENTER] = {"loop enter", EVP_ARG_NONE, EVP_NEST_NONE,
                           "set-up done, top of the loop reached"},
    [EVP_EV_LOOP_SLOW] = {"loop slow", EVP_ARG_NONE, EVP_NEST_NONE,
                          "eval-breaker slow path taken"},
    [EVP_EV_LOOP_FAST] = {"loop fast", EVP_ARG_NONE, EVP_NEST_NONE,
                          "eval-breaker check passed on the fast path"},
    [EVP_EV_DISPATCH] = {"dispatch", EVP_ARG_NONE, EVP_NEST_NONE,
                         "about to dispatch the next instruction"},
    [EVP_EV_OP] = {"op", EVP_ARG_OP, EVP_NEST_NONE, "an instruction starts"},
    [EVP_EV_LOOP_EXCEPTION] = {"loop exception", EVP_ARG_NONE, EVP_NEST_NONE,
                               "exception unwinding starts"},
    [EVP_EV_LOOP_ERROR] = {"loop error", EVP_ARG_NONE, EVP_NEST_NONE,
                           "the error path is entered"},
    [EVP_EV_LOOP_EXITING] = {"loop exiting", EVP_ARG_NONE, EVP_NEST_NONE,
                             "the exiting path is entered"},
    [EVP_EV_LOOP_EXIT] = {"loop exit", EVP_ARG_NONE, EVP_NEST_NONE,
                          "the loop is left"},
    [EVP_EV_RECORDER] = {"recorder", EVP_ARG_NONE, EVP_NEST_NONE,
                         "time spent inside evalprof's recorder"},
    [EVP_EV_C_CALL] = {"c call", EVP_ARG_FUNC, EVP_NEST_PUSH,
                       "a C function is called"},
    [EVP_EV_C_RETURN] = {"c return", EVP_ARG_FUNC, EVP_NEST_POP,
                         "a C function returned"},
    [EVP_EV_C_RAISE] = {"c raise", EVP_ARG_FUNC, EVP_NEST_POP,
                        "a C function raised an exception"},
    [EVP_EV_RESUME] = {"resume", EVP_ARG_FUNC, EVP_NEST_PUSH,
                       "a suspended generator or coroutine frame resumes"},
    [EVP_EV_SUSPEND] = {"suspend", EVP_ARG_FUNC, EVP_NEST_POP,
                        "a generator or coroutine frame suspends"},
    [EVP_EV_LOG_WRITTEN] = {"log written", EVP_ARG_NONE, EVP_NEST_NONE,
                            "time a text tracer spent writing its log"},
};

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
