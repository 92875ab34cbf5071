/* SPDX-License-Identifier: BSD-3-Clause */
#include "profile/conv_lane.h"

#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"

int conv_lane_add(conv_lane *l, const conv_lane_point *pt)
{
    if (zs_grow(&l->p, &l->cap, l->n + 1, sizeof *l->p, 64))
        return -1;
    l->p[l->n++] = *pt;
    return 0;
}

int conv_lane_merge(conv_lane *dst, conv_lane *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (conv_lane_add(dst, &src->p[i]))
            return -1;
    conv_lane_free(src);
    return 0;
}

void conv_lane_free(conv_lane *l)
{
    free(l->p);
    memset(l, 0, sizeof *l);
}
