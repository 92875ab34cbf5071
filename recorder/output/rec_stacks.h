/* SPDX-License-Identifier: BSD-3-Clause */
/* Interns sampled stacks: each distinct (pid, frames) gets an id once and is
 * written to the recording once; every later sample of it costs a few bytes.
 * A lookup of a known stack allocates nothing. */
#ifndef REC_STACKS_H
#define REC_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "zs_format.h"

typedef struct rec_stacks rec_stacks;

rec_stacks *rec_stacks_new(void);
/* Returns the id, and *is_new = 1 the first time; -1 on no memory. */
int64_t rec_stacks_intern(rec_stacks *s, uint32_t pid, const zs_frame *frames, size_t n, int *is_new);
size_t rec_stacks_count(const rec_stacks *s);
/* For the stack interned as id: an earlier stack of the same pid whose
 * outermost frames it shares most of, and how many it shares (*shared: at
 * least 2, else -1 is returned). A stack is written as those frames of
 * its base and the rest: most stacks of a real zeek differ from an earlier
 * one only near the leaf. */
int64_t rec_stacks_base(const rec_stacks *s, uint64_t id, size_t *shared);
/* Forgets the stacks of a process that is gone (their ids stay used: a
 * recording part never gives an id two meanings). */
void rec_stacks_forget_pid(rec_stacks *s, uint32_t pid);
void rec_stacks_free(rec_stacks *s);

#endif
