#include "conv_timeline.h"

#include <stdlib.h>
#include <string.h>

int conv_timeline_add(conv_timeline *t, int64_t t_ns, uint32_t stack)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        int64_t *times = realloc(t->t_ns, cap * sizeof *times);
        if (!times)
            return -1;
        t->t_ns = times;
        uint32_t *stacks = realloc(t->stack, cap * sizeof *stacks);
        if (!stacks)
            return -1;
        t->stack = stacks;
        t->cap = cap;
    }
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
