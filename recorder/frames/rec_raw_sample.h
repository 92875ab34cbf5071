/* SPDX-License-Identifier: BSD-3-Clause */
/* The capture record: everything a sampler takes from one target at one
 * tick, as raw bytes, and nothing decoded. A producer (the ptrace stop
 * window, rec_sampler.h) fills it; everything after (the model's frames,
 * ZAM's instruction, the native unwind and the merge, the snapshot, the
 * pending order, the writer, --top, --dump) reads only this record, so
 * that a second producer of the same record needs no change downstream. */
#ifndef REC_RAW_SAMPLE_H
#define REC_RAW_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "zs_layout.h"

typedef enum rec_read_result {
    REC_READ_OK = 0,
    REC_READ_FAILED = 1, /* memory unreadable (target exiting?) */
    REC_READ_TORN = 2,   /* nonblocking: the stack changed while being read */
} rec_read_result;

/* A std::vector header as read: begin, end, end of storage. */
typedef struct rec_raw_vec {
    uint64_t begin, end, cap;
} rec_raw_vec;

/* The registers and the top of the stack of the thread, for native frames
 * and ZAM's instruction. */
typedef struct rec_raw_native {
    int taken; /* regs and stack hold this tick's */
    struct user_regs_struct regs;
    uint8_t *stack; /* from regs.rsp up; REC_NATIVE_STACK_MAX bytes of room */
    size_t stack_len;
} rec_raw_native;

/* How much of the stack a producer copies (rec_stack_copy_size). */
enum {
    REC_NATIVE_STACK_BYTES = 16 << 10, /* copied from the stack pointer up, before the
                                          stack's base is known */
    REC_NATIVE_STACK_MAX = 64 << 10,   /* to the stack's base, at most */
    REC_NATIVE_STACK_BASE_SLACK = 256, /* the base: this far above the outermost frame */
    REC_NATIVE_STACK_MIN = 4 << 10,    /* 8.1+: sized from the outermost Frame, at least */
    REC_NATIVE_STACK_SLACK = 2 << 10,  /* and this far above it */
    REC_NATIVE_STACK_PAGE = 4 << 10,
};

/* What the unwinds so far say of the stack, for sizing the next copy. */
typedef struct rec_stack_plan {
    uint64_t base;   /* above the outermost frame of whole unwinds (0: not known yet) */
    int last_beyond; /* the last unwind needed more stack than it was given */
} rec_stack_plan;

typedef struct rec_raw_sample {
    pid_t pid;
    rec_read_result result;
    unsigned reads; /* process_vm_readv calls it took */

    /* The script call stack: the vector headers (the second only in the
     * frame-stack model), Zeek's packet clock, the CallInfo array (the
     * outermost n entries) and the model's last read: the innermost
     * Frame's next_stmt (frame-stack model), or each Frame's fields
     * [frame_lo, frame_lo + frame_span) (callinfo-frame model). */
    rec_raw_vec cs, fs;
    double network_time;
    size_t n;   /* CallInfo entries copied */
    int cut;    /* the stack was deeper than the room: n is the outermost */
    int64_t nfs; /* of the second vector's elements, the top one copied at nfs - 1 */
    uint8_t *callinfo;    /* room for max_frames * callinfo_size */
    uint64_t *frame_ptrs; /* room for max_frames */
    uint64_t next_stmt;
    uint8_t *frame_fields; /* room for max_frames * frame_span */
    int32_t frame_lo;
    size_t frame_span, max_frames;

    rec_raw_native native;
} rec_raw_sample;

/* The bytes of a Frame the callinfo-frame model copies: both members it
 * needs, function and next_stmt, in one read from *lo. */
size_t rec_raw_frame_span(int32_t function, int32_t next_stmt, int32_t *lo);

/* Room for stacks of max_frames under layout l, with a stack copy when
 * with_stack. -1 on no memory. */
int rec_raw_sample_init(rec_raw_sample *r, const zs_layout *l, size_t max_frames, int with_stack);
void rec_raw_sample_free(rec_raw_sample *r);

/* Whether a copy from rsp ends at the stack's known base. */
int rec_stack_to_base(const rec_stack_plan *p, uint64_t rsp);
/* How much stack to copy from rsp; outermost_frame: the outermost script
 * frame's Frame on 8.1+, else 0. */
size_t rec_stack_copy_size(const rec_stack_plan *p, uint64_t rsp, uint64_t outermost_frame);

#endif
