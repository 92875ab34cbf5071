/* SPDX-License-Identifier: BSD-3-Clause */
/* Which samples a conversion keeps: by pid, by cluster node, by a time
 * window given as seconds from the start, wall-clock time, or Zeek's
 * network time, and by the view: every sample, or those taken on the CPU. */
#ifndef CONV_FILTER_H
#define CONV_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "read/conv_when.h"
#include "zs_error.h"

typedef enum conv_clock {
    CONV_CLOCK_OFFSET, /* seconds since the recording started */
    CONV_CLOCK_WALL,   /* unix time */
    CONV_CLOCK_NET,    /* Zeek's network_time */
} conv_clock;

typedef struct conv_bound {
    int set;
    conv_clock clock;
    double seconds;
} conv_bound;

/* --view: which samples of a recording whose sampler marks each one on or
 * off the CPU (format 7, --sampler bpf) make the profile. */
typedef enum conv_view {
    CONV_VIEW_WALL, /* every sample, on- and off-CPU: shares of wall-clock time,
                       as the ptrace sampler's (the default) */
    CONV_VIEW_CPU,  /* on-CPU samples only; refused for a recording without marks */
} conv_view;

typedef struct conv_filter {
    uint32_t *pids; /* keep only these pids (npids == 0: all) */
    size_t npids, pids_cap;
    char **nodes;   /* keep only these cluster nodes (nnodes == 0: all) */
    size_t nnodes, nodes_cap;
    conv_bound from, to; /* keep from <= t < to */
    conv_view view;      /* not a filter of conv_filter_active: each view has
                            its own cache entries (conv_read.h, CONV_READ_CPU_VIEW) */
    conv_when when;      /* --when: by the load of each sample's second (n 0: all) */
} conv_filter;

/* "120" or "120.5" (offset), "2026-11-30T03:45:00" or "@1796010300" (wall,
 * UTC / unix seconds), "net:1700000000.25" (network time). */
int conv_bound_parse(const char *opt, const char *text, conv_bound *b, zs_error *err);
/* "wall" or "cpu". */
int conv_view_parse(const char *text, conv_view *v, zs_error *err);
const char *conv_view_name(conv_view v);
int conv_filter_add_pid(conv_filter *f, uint32_t pid);
int conv_filter_add_node(conv_filter *f, const char *node);
/* Whether it keeps fewer samples than the whole recording's by pid, node,
 * time or load (the view aside). */
int conv_filter_active(const conv_filter *f);
int conv_filter_needs_nettime(const conv_filter *f);
/* offset_s, wall_s and net_s of one sample (net_s < 0: unknown). */
int conv_filter_keeps_time(const conv_filter *f, double offset_s, double wall_s, double net_s);
int conv_filter_keeps_process(const conv_filter *f, uint32_t pid, const char *node);
void conv_filter_free(conv_filter *f);

#endif
