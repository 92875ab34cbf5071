/* SPDX-License-Identifier: BSD-3-Clause */
/* A BPF record as a capture record: the kernel side's reads (rec_bpf_event.h)
 * copied into a rec_raw_sample, so that everything after the sampler (the
 * models, pending order, the writer, --top) takes them as it takes the
 * ptrace window's. */
#ifndef REC_BPF_SAMPLE_H
#define REC_BPF_SAMPLE_H

#include <stddef.h>

#include "bpf/rec_bpf_event.h"
#include "frames/rec_raw_sample.h"
#include "zs_layout.h"

/* Fills r from ev (as rec_bpf_poll handed it over: its bytes checked to be
 * there) for a target of layout l, and returns r->result: REC_READ_FAILED when a read the
 * frames need failed in the kernel (a page not resident: counted, never
 * guessed) or the record does not match the layout. The registers and the
 * stack copy, when the record has them, are r->native's: its stack then
 * points into ev (no copy), valid while ev is, and is to be set back to
 * NULL (rec_bpf_sample_release) before ev goes. r's own room for a stack
 * (rec_raw_sample_init's with_stack) is not used: give it none. */
rec_read_result rec_bpf_sample_fill(const rec_bpf_event *ev, const zs_layout *l, rec_raw_sample *r);

/* Drops what r borrowed from the record. */
void rec_bpf_sample_release(rec_raw_sample *r);

#endif
