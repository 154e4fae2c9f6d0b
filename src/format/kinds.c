/*
 * The event vocabulary as data: names, argument classes and nesting
 * effects of every kind evalprof knows (evalprof/kinds.def).  Reports
 * print these names; the codec and the replay engine read the classes.
 * The one list (EVP_KINDS) makes both the descriptive table and the byte
 * table the hot decode loop indexes.
 */
#include <stdio.h>

#include "evalprof/format.h"

#define KIND_INFO(id, n, name, arg, nest, phase, doc)                          \
    [n] = {name, EVP_ARG_##arg, EVP_NEST_##nest, doc, phase},
#define KIND_ARG(id, n, name, arg, nest, phase, doc) [n] = EVP_ARG_##arg,

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
