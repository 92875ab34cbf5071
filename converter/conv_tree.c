#include "conv_tree.h"
#include "zs_grow.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint32_t parent, uint32_t function, size_t mask)
{
    uint64_t h = ((uint64_t)parent << 32 | function) * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 17) & mask;
}

static int grow_slots(conv_tree *t)
{
    if (t->nslots >= 2 * (t->n + 1))
        return 0;
    size_t cap = t->nslots ? 2 * t->nslots : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 1; i < t->n; i++) {
        size_t j = slot_of(t->nodes[i].parent, t->nodes[i].function, cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = cap;
    return 0;
}

static int64_t add_node(conv_tree *t, uint32_t parent, uint32_t function)
{
    if (zs_grow(&t->nodes, &t->cap, t->n + 1, sizeof *t->nodes, 256))
        return -1;
    conv_tree_node *n = &t->nodes[t->n];
    *n = (conv_tree_node){function, parent, CONV_TREE_NONE, CONV_TREE_NONE, 0};
    if (parent != CONV_TREE_NONE) {
        n->next_sibling = t->nodes[parent].first_child;
        t->nodes[parent].first_child = (uint32_t)t->n;
    }
    return (int64_t)t->n++;
}

/* The child of parent for function, created when new. */
static int64_t child(conv_tree *t, uint32_t parent, uint32_t function)
{
    if (grow_slots(t))
        return -1;
    size_t mask = t->nslots - 1, j = slot_of(parent, function, mask);
    for (; t->slots[j]; j = (j + 1) & mask) {
        const conv_tree_node *n = &t->nodes[t->slots[j] - 1];
        if (n->parent == parent && n->function == function)
            return t->slots[j] - 1;
    }
    int64_t i = add_node(t, parent, function);
    if (i >= 0)
        t->slots[j] = (uint32_t)i + 1;
    return i;
}

int conv_tree_build(conv_tree *t, const conv_profile *p, int reverse)
{
    memset(t, 0, sizeof *t);
    if (add_node(t, CONV_TREE_NONE, CONV_TREE_NONE) < 0)
        goto fail;
    for (size_t i = 0; i < p->nstacks; i++) {
        const conv_stack *s = &p->stacks[i];
        uint32_t at = 0;
        t->nodes[0].total += s->count;
        for (uint32_t k = 0; k < s->nlocs; k++) {
            uint32_t loc = s->locs[reverse ? s->nlocs - 1 - k : k];
            int64_t c = child(t, at, p->locations[loc].function);
            if (c < 0)
                goto fail;
            at = (uint32_t)c;
            t->nodes[at].total += s->count;
        }
    }
    return 0;
fail:
    conv_tree_free(t);
    return -1;
}

void conv_tree_free(conv_tree *t)
{
    free(t->nodes);
    free(t->slots);
    memset(t, 0, sizeof *t);
}
