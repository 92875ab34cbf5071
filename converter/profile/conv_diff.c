/* SPDX-License-Identifier: BSD-3-Clause */
#include "profile/conv_diff.h"

#include <math.h>
#include <stdlib.h>

/* Each function of p as an id of u, the functions of both profiles. */
static int64_t *ids_in(conv_profile *u, const conv_profile *p)
{
    int64_t *ids = malloc((p->nfunctions ? p->nfunctions : 1) * sizeof *ids);
    for (size_t i = 0; ids && i < p->nfunctions; i++) {
        const conv_function *f = &p->functions[i];
        ids[i] = f->native ? conv_profile_native_function(u, f->name, f->file)
                           : conv_profile_function(u, f->name, f->file, f->start_line);
        if (ids[i] < 0) {
            free(ids);
            return NULL;
        }
    }
    return ids;
}

static double pct(uint64_t n, uint64_t total) { return total ? 100.0 * (double)n / (double)total : 0; }

/* Adds p's flat and cum shares into rows, by the ids of its functions. */
static int add_shares(const conv_profile *p, const int64_t *ids, conv_diff_row *rows, int is_base)
{
    uint64_t *flat = calloc(p->nfunctions + 1, sizeof *flat), *cum = calloc(p->nfunctions + 1, sizeof *cum);
    if (!flat || !cum) {
        free(flat);
        free(cum);
        return -1;
    }
    uint64_t total = conv_profile_tally(p, flat, cum);
    for (size_t i = 0; i < p->nfunctions; i++) {
        conv_diff_row *r = &rows[ids[i]];
        if (is_base) {
            r->flat_base = pct(flat[i], total);
            r->cum_base = pct(cum[i], total);
        } else {
            r->flat_new = pct(flat[i], total);
            r->cum_new = pct(cum[i], total);
        }
        if (!is_base || !r->function)
            r->function = &p->functions[i];
    }
    free(flat);
    free(cum);
    return 0;
}

static int by_change(const void *a, const void *b)
{
    const conv_diff_row *x = a, *y = b;
    double fx = fabs(x->flat_new - x->flat_base), fy = fabs(y->flat_new - y->flat_base);
    if (fx != fy)
        return fx < fy ? 1 : -1;
    double cx = fabs(x->cum_new - x->cum_base), cy = fabs(y->cum_new - y->cum_base);
    return cx < cy ? 1 : cx > cy ? -1 : 0;
}

int conv_diff_rows(const conv_profile *base, const conv_profile *cur, conv_diff_row **rows,
                   size_t *n)
{
    conv_profile *u = conv_profile_new();
    int64_t *cur_ids = u ? ids_in(u, cur) : NULL, *base_ids = cur_ids ? ids_in(u, base) : NULL;
    *rows = base_ids ? calloc(u->nfunctions + 1, sizeof **rows) : NULL;
    int rc = -1;
    if (*rows && add_shares(cur, cur_ids, *rows, 0) == 0 && add_shares(base, base_ids, *rows, 1) == 0) {
        *n = u->nfunctions;
        qsort(*rows, *n, sizeof **rows, by_change);
        rc = 0;
    } else {
        free(*rows);
        *rows = NULL;
    }
    free(cur_ids);
    free(base_ids);
    conv_profile_free(u);
    return rc;
}

typedef struct matcher {
    const conv_tree *cur, *base;
    const int64_t *to_base; /* a function of cur -> the base's, or -1 */
    uint64_t *out;
} matcher;

/* node of cur matched to base node at (CONV_TREE_NONE: none), and its
 * callees. Recursion as deep as the stacks (at most ZS_MAX_FRAMES). */
static void match(const matcher *m, uint32_t node, uint32_t at)
{
    m->out[node] = at == CONV_TREE_NONE ? 0 : m->base->nodes[at].total;
    for (uint32_t c = m->cur->nodes[node].first_child; c != CONV_TREE_NONE;
         c = m->cur->nodes[c].next_sibling) {
        int64_t f = m->to_base[m->cur->nodes[c].function];
        int64_t next = at != CONV_TREE_NONE && f >= 0 ? conv_tree_find_child(m->base, at, (uint32_t)f) : -1;
        match(m, c, next >= 0 ? (uint32_t)next : CONV_TREE_NONE);
    }
}

int conv_diff_path_samples(const conv_profile *base, const conv_profile *cur, const conv_tree *t,
                           int reverse, uint64_t *out)
{
    conv_profile *u = conv_profile_new();
    int64_t *cur_ids = u ? ids_in(u, cur) : NULL, *base_ids = cur_ids ? ids_in(u, base) : NULL;
    int64_t *of_u = base_ids ? malloc((u->nfunctions + 1) * sizeof *of_u) : NULL;
    int64_t *to_base = of_u ? malloc((cur->nfunctions + 1) * sizeof *to_base) : NULL;
    conv_tree bt;
    int rc = -1;
    if (to_base && conv_tree_build(&bt, base, reverse) == 0) {
        for (size_t i = 0; i < u->nfunctions; i++)
            of_u[i] = -1;
        for (size_t i = 0; i < base->nfunctions; i++)
            of_u[base_ids[i]] = (int64_t)i;
        for (size_t i = 0; i < cur->nfunctions; i++)
            to_base[i] = of_u[cur_ids[i]];
        matcher m = {t, &bt, to_base, out};
        match(&m, 0, 0);
        conv_tree_free(&bt);
        rc = 0;
    }
    free(to_base);
    free(of_u);
    free(cur_ids);
    free(base_ids);
    conv_profile_free(u);
    return rc;
}
