/* SPDX-License-Identifier: BSD-3-Clause */
/* The ptrace sampler's stop window: copy the raw pointers of the script
 * call stack out of the stopped target in at most three process_vm_readv
 * calls (and, asked for, its registers and the top of its stack, riding
 * on those reads) into a capture record (rec_raw_sample.h). Nothing is
 * decoded here: that happens after the target resumed, from the record. */
#ifndef REC_SAMPLER_H
#define REC_SAMPLER_H

#include <stdint.h>

#include "frames/rec_raw_sample.h"
#include "targets/rec_target.h"

typedef struct rec_sampler rec_sampler;

/* NULL on no memory. The target must outlive the sampler. */
rec_sampler *rec_sampler_new(const rec_target *t, int nonblocking);
void rec_sampler_free(rec_sampler *s);

/* Just before the stop: the same first read while the target runs, so the
 * kernel's walk of the target's page tables is warm inside the window. */
void rec_sampler_warm(rec_sampler *s, rec_raw_sample *r);

/* Inside the stop window (or, nonblocking, while the target runs): fills
 * r, and returns r->result. With stack (blocking only, and r with room for
 * a copy), also the registers and the stack copy, sized by it
 * (r->native.taken says whether they were taken); without, r->native is
 * left untouched. */
rec_read_result rec_sampler_take(rec_sampler *s, rec_raw_sample *r, const rec_stack_plan *stack);

#endif
