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
void rec_stacks_free(rec_stacks *s);

#endif
