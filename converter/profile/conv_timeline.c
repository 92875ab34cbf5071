/* SPDX-License-Identifier: BSD-3-Clause */
#include "profile/conv_timeline.h"

#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"

int conv_timeline_add(conv_timeline *t, int64_t t_ns, uint32_t stack)
{
    /* Two arrays of one capacity, which moves on once both have grown. */
    size_t cap = t->cap, stack_cap = t->cap;
    if (zs_grow(&t->t_ns, &cap, t->n + 1, sizeof *t->t_ns, 4096) ||
        zs_grow(&t->stack, &stack_cap, cap, sizeof *t->stack, 4096))
        return -1;
    t->cap = cap;
    t->t_ns[t->n] = t_ns;
    t->stack[t->n++] = stack;
    return 0;
}

void conv_timeline_free(conv_timeline *t)
{
    if (!t)
        return;
    free(t->t_ns);
    free(t->stack);
    memset(t, 0, sizeof *t);
}
