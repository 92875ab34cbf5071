/* SPDX-License-Identifier: BSD-3-Clause */
/* The ptrace sampler's state and the reads of its window that every model
 * shares: process_vm_readv split at IOV_MAX and counted, the nonblocking
 * re-read of the vector headers, the stack copy riding on a read. Below
 * both the window (rec_sampler.c) and the models' last reads
 * (rec_sampler_frames.c), and for them only; it calls neither. */
#ifndef REC_SAMPLER_READS_H
#define REC_SAMPLER_READS_H

#include <sys/uio.h>

#include "frames/rec_model.h"
#include "sampling/rec_sampler.h"

struct rec_sampler {
    pid_t pid;
    const zs_layout *layout;
    const rec_model *model;
    uint64_t call_stack;
    uint64_t frame_stack; /* the second vector of pointers, 0: the model has none */
    uint64_t network_time_addr;
    int nonblocking;
    rec_raw_vec cs_again, fs_again; /* nonblocking: the headers re-read last */
    uint64_t spec_cs_begin, spec_fs_begin;
    size_t spec_cs_n, spec_fs_n;
    /* The stack copy of the window under way: where it rides, what it got. */
    const rec_stack_plan *stack;
    ssize_t stack_got; /* -1: it did not ride */
};

#define REC_IOV(ptr, len) ((struct iovec){(void *)(ptr), (len)})
#define REC_RIOV(addr, len) ((struct iovec){(void *)(uintptr_t)(addr), (len)})

/* What a read that came short means: nonblocking, the stack moved. */
static inline rec_read_result rec_sampler_bad(const rec_sampler *s)
{
    return s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
}

size_t rec_iov_total(const struct iovec *v, size_t n);
/* process_vm_readv in as many calls as IOV_MAX needs, each counted in
 * r->reads; the bytes read in all. */
ssize_t rec_sampler_readv(rec_sampler *s, rec_raw_sample *r, const struct iovec *l,
                          const struct iovec *rv, size_t n);
/* Nonblocking: the vector headers again, to append to the last call
 * (returns the iovecs added); rec_sampler_moved says whether they moved. */
size_t rec_sampler_reread(rec_sampler *s, struct iovec *l, struct iovec *r);
int rec_sampler_moved(const rec_sampler *s, const rec_raw_sample *r);
/* The stack copy, when it is to ride on this read: fills one iovec pair
 * and returns its length, 0 for nothing. early: the window's first read,
 * where it rides once the stack's base is known; else the model's last
 * read, with the outermost Frame's address (0: none). */
size_t rec_sampler_stack_iov(const rec_sampler *s, rec_raw_sample *r, uint64_t outermost_frame,
                             int early, struct iovec *local, struct iovec *remote);

#endif
