/* SPDX-License-Identifier: BSD-3-Clause */
/* Every sample's time and stack, in recording order: what a time-ordered
 * view (speedscope) needs and the aggregated profile does not keep. Only
 * collected when an output asks for it, at 12 bytes a sample (10 million
 * samples: 120 MB). */
#ifndef CONV_TIMELINE_H
#define CONV_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct conv_timeline {
    int64_t *t_ns;   /* unix time of the sample, ns */
    uint32_t *stack; /* index into the profile's stacks (which names the process) */
    size_t n, cap;
} conv_timeline;

/* 0, or -1 when out of memory. */
int conv_timeline_add(conv_timeline *t, int64_t t_ns, uint32_t stack);
void conv_timeline_free(conv_timeline *t);

#endif
