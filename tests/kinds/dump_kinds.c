/*
 * Print the C side's view of every event kind, one tab-separated line
 * each, for check_kinds.py: the enum name and number, then what the kinds
 * table (evp_kind_info, evp_kind_cost_key) and replay.h's nesting and
 * phase tests say of it.
 */
#include <stdio.h>

#include "evalprof/replay.h"

static const char *const arg_names[] = {"none", "func", "op"};
static const char *const nest_names[] = {"none", "push", "pop"};

static void dump(const char *id, unsigned k)
{
    const struct evp_kind_info *ki = evp_kind_info(k);
    char key[64];
    evp_kind_cost_key(key, sizeof key, k);
    printf("%s\t%u\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", id, k, ki->name,
           arg_names[ki->arg], nest_names[ki->nest], ki->phase,
           evp_kind_pushes(k), evp_kind_pops(k), evp_kind_is_phase(k), key,
           ki->doc);
}

#define DUMP(id, n, name, arg, nest, phase, doc) dump(#id, EVP_EV_##id);

int main(void)
{
    printf("count\t%d\t%d\n", EVP_EV__COUNT, EVP_EV_CLASSIC_COUNT);
    EVP_KINDS(DUMP)
    /* numbers past the table are nothing */
    for (unsigned k = EVP_EV__COUNT; k < 70; k++)
        if (evp_kind_info(k) || evp_kind_pushes(k) || evp_kind_pops(k) ||
            evp_kind_is_phase(k))
            printf("unknown kind %u has properties\n", k);
    if (evp_kind_pushes(0xffff) || evp_kind_pops(0xffff) ||
        evp_kind_is_phase(0xffff))
        printf("unknown kind 65535 has properties\n");
    return 0;
}
