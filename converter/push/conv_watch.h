/* SPDX-License-Identifier: BSD-3-Clause */
/* --watch: push each recording of a directory once it is complete. */
#ifndef CONV_WATCH_H
#define CONV_WATCH_H

#include "zs_error.h"

/* Pushes one recording; 0 once accepted (and marked FILE.pushed). */
typedef int (*conv_watch_push)(void *ctx, const char *path, zs_error *err);

/* Every every_s seconds, each recording (*.zspy) in DIR without a
 * FILE.pushed marker that is ready: finished by the recorder (its trailer
 * written), or left unfinished by a recorder that died (no process holds
 * it open any more). In name order (a rotation's parts in theirs); a part
 * whose push failed is tried again later (20 s, doubling up to 10 minutes,
 * however often DIR is looked at). Returns 0 when SIGINT or SIGTERM comes,
 * 1 when DIR cannot be read. */
int conv_watch(const char *prog, const char *dir, double every_s, int quiet, conv_watch_push push,
               void *ctx);

#endif
