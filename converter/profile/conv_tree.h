/* SPDX-License-Identifier: BSD-3-Clause */
/* Stacks merged into a call tree by function: the shape a flame graph
 * draws. Node 0 is the root ("all"); every other node is one function
 * reached by one path of calls, with the samples of that path and below. */
#ifndef CONV_TREE_H
#define CONV_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/conv_profile.h"
#include "zs_intern.h"

#define CONV_TREE_NONE UINT32_MAX

typedef struct conv_tree_node {
    uint32_t function;     /* index into the profile's functions; root: CONV_TREE_NONE */
    uint32_t parent;
    uint32_t first_child;  /* in no order; CONV_TREE_NONE when a leaf */
    uint32_t next_sibling;
    uint64_t total;        /* samples here and in every callee */
} conv_tree_node;

typedef struct conv_tree {
    conv_tree_node *nodes;
    size_t n, cap;
    zs_intern children; /* (parent, function) -> node */
} conv_tree;

/* Outermost frame first, or innermost first when reverse. 0, or -1 when
 * out of memory (t is then freed). */
int conv_tree_build(conv_tree *t, const conv_profile *p, int reverse);
void conv_tree_free(conv_tree *t);
/* The child of parent for function, or -1. */
int64_t conv_tree_find_child(const conv_tree *t, uint32_t parent, uint32_t function);

#endif
