/* One interpreter model: how a Zeek build keeps its script call stack, as
 * the recorder reads it. The sampler does the reads every model shares (the
 * call_stack vector and its CallInfo array, a second vector of pointers
 * where the layout names one, network_time) and asks the model for the
 * rest: its last read of the stop window, how those reads become frames,
 * and how to tell, on a running process, that the layout fits. Adding a
 * model is one file implementing this table, a line in rec_model.c and its
 * layout fields. */
#ifndef REC_MODEL_H
#define REC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "zs_format.h"
#include "zs_layout.h"
#include "zs_memory.h"

typedef struct rec_sampler rec_sampler;

typedef enum rec_read_result {
    REC_READ_OK = 0,
    REC_READ_FAILED = 1, /* memory unreadable (target exiting?) */
    REC_READ_TORN = 2,   /* nonblocking: the stack changed while being read */
} rec_read_result;

typedef struct rec_model {
    zs_model id;
    /* Its own buffers, for stacks of up to max_frames (NULL: out of memory). */
    void *(*state_new)(const zs_layout *l, size_t max_frames);
    void (*state_free)(void *state);
    /* The window's last read, once the shared ones are in: what each frame
     * is executing. */
    rec_read_result (*read_frames)(rec_sampler *s);
    /* After the reads: the Func of frame i (outermost first). */
    uint64_t (*frame_func)(const rec_sampler *s, size_t i);
    /* After the reads: all frames, outermost first. */
    void (*frames)(const rec_sampler *s, zs_frame *out);
    /* Where frame i lives on zeek's C++ stack; NULL for a model whose
     * Frames are on the heap (or missing) and say nothing of it. */
    uint64_t (*frame_addr)(const rec_sampler *s, size_t i);
    /* The plausibility check, on the running process: the Func of the
     * outermost call, given its CallInfo as read. */
    int (*outermost_func)(const zs_layout *l, zs_memory *mem, const uint8_t *callinfo,
                          uint64_t *func);
} rec_model;

/* NULL for a model the recorder does not know. */
const rec_model *rec_model_of(zs_model id);

extern const rec_model rec_model_frame_stack;
extern const rec_model rec_model_callinfo_frame;

#endif
