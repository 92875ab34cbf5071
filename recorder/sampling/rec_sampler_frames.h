/* SPDX-License-Identifier: BSD-3-Clause */
/* The ptrace sampler's last read of the window, one per model: what each
 * frame is executing. For the window (rec_sampler.c) only. */
#ifndef REC_SAMPLER_FRAMES_H
#define REC_SAMPLER_FRAMES_H

#include "sampling/rec_sampler_reads.h"

/* Frame-stack model (3.0-8.0). */
rec_read_result rec_sampler_read_frame_stack(rec_sampler *s, rec_raw_sample *r);
/* Callinfo-frame model (8.1+). */
rec_read_result rec_sampler_read_callinfo_frames(rec_sampler *s, rec_raw_sample *r);

#endif
