/* SPDX-License-Identifier: BSD-3-Clause */
#include "profile/conv_tree.h"
#include "zs_grow.h"

#include <stdlib.h>
#include <string.h>

/* (parent, function) as one 64-bit key: zs_mix64 is a bijection, so its
 * hash alone tells children apart and the index needs no equality test. */
static uint64_t child_hash(uint32_t parent, uint32_t function)
{
    return zs_mix64((uint64_t)parent << 32 | function);
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
    uint64_t h = child_hash(parent, function);
    int64_t i = zs_intern_find(&t->children, h, NULL, NULL, NULL);
    if (i >= 0)
        return i;
    i = add_node(t, parent, function);
    if (i >= 0 && zs_intern_add(&t->children, h, (uint32_t)i))
        return -1;
    return i;
}

int64_t conv_tree_find_child(const conv_tree *t, uint32_t parent, uint32_t function)
{
    return zs_intern_find(&t->children, child_hash(parent, function), NULL, NULL, NULL);
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
    zs_intern_free(&t->children);
    memset(t, 0, sizeof *t);
}
