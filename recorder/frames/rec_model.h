/* SPDX-License-Identifier: BSD-3-Clause */
/* One interpreter model: how a Zeek build keeps its script call stack, as
 * the recorder decodes it. A sampler copies the raw bytes into a capture
 * record (rec_raw_sample.h); the model turns that record into frames, and
 * tells, on a running process, that the layout fits. Adding a model is one
 * file implementing this table, a line in rec_model.c, its layout fields
 * and its last read in each sampler. */
#ifndef REC_MODEL_H
#define REC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "frames/rec_raw_sample.h"
#include "zs_format.h"
#include "zs_layout.h"
#include "zs_memory.h"

typedef struct rec_model {
    zs_model id;
    /* The Func of frame i (outermost first). */
    uint64_t (*frame_func)(const zs_layout *l, const rec_raw_sample *r, size_t i);
    /* All frames, outermost first. */
    void (*frames)(const zs_layout *l, const rec_raw_sample *r, zs_frame *out);
    /* Where frame i lives on zeek's C++ stack; NULL for a model whose
     * Frames are on the heap (or missing) and say nothing of it. */
    uint64_t (*frame_addr)(const zs_layout *l, const rec_raw_sample *r, size_t i);
    /* The plausibility check, on the running process: the Func of the
     * outermost call, given its CallInfo as read. */
    int (*outermost_func)(const zs_layout *l, zs_memory *mem, const uint8_t *callinfo,
                          uint64_t *func);
} rec_model;

/* NULL for a model the recorder does not know. */
const rec_model *rec_model_of(zs_model id);

/* The frames of r, outermost first (r->n of them; *cut: deeper than that). */
size_t rec_model_frames(const zs_layout *l, const rec_raw_sample *r, zs_frame *out, int *cut);
/* Where each frame of r lives on zeek's C++ stack (8.1+), outermost first;
 * the count, 0 for a model whose Frames say nothing of the native stack. */
size_t rec_model_frame_addrs(const zs_layout *l, const rec_raw_sample *r, uint64_t *out);
/* The outermost of those addresses, 0 when there is none. */
uint64_t rec_model_outermost_frame(const zs_layout *l, const rec_raw_sample *r);

static inline uint64_t rec_field(const uint8_t *p, int off)
{
    uint64_t v;
    __builtin_memcpy(&v, p + off, 8);
    return v;
}

extern const rec_model rec_model_frame_stack;
extern const rec_model rec_model_callinfo_frame;

#endif
