/* SPDX-License-Identifier: BSD-3-Clause */
/* --dump: one look at a zeek that seems hung. Stops it once, copies its
 * script stack, lets it go, then names the frames from its live memory and
 * prints them innermost first, with Zeek's network time. */
#ifndef REC_DUMP_H
#define REC_DUMP_H

#include <stdio.h>
#include <sys/types.h>

#include "targets/rec_target.h"
#include "zs_error.h"

int rec_dump(pid_t pid, const rec_layout_choice *choice, FILE *out, zs_error *err);

#endif
