/* The sampler's state and read helpers, shared with the models
 * (rec_model_*.c) and nothing else. */
#ifndef REC_SAMPLER_PRIV_H
#define REC_SAMPLER_PRIV_H

#include <limits.h>
#include <string.h>
#include <sys/uio.h>

#include "rec_sampler.h"

/* A std::vector header as read: begin, end, end of storage. */
typedef struct rec_vec {
    uint64_t begin, end, cap;
} rec_vec;

struct rec_sampler {
    pid_t pid;
    const zs_layout *layout;
    const rec_model *model;
    void *model_state;
    uint64_t call_stack;
    uint64_t frame_stack; /* the second vector of pointers, 0: the model has none */
    size_t max_frames;
    int nonblocking;

    /* Copied in the window. */
    rec_vec cs, fs, cs_again, fs_again;
    uint8_t *callinfo;    /* max_frames * callinfo_size */
    uint64_t *frame_ptrs; /* the second vector's elements */
    size_t n;             /* CallInfo entries copied */
    int64_t nfs;          /* of the second vector's, the top one copied */
    int cut;

    uint64_t network_time_addr;
    double network_time; /* Zeek's packet clock, read in the first call */
    uint64_t spec_cs_begin, spec_fs_begin;
    size_t spec_cs_n, spec_fs_n;
    uint64_t calls; /* process_vm_readv calls, for the benchmark */
    rec_sampler_rider rider;
    void *rider_ctx;
    ssize_t rider_got;
};

#define REC_IOV(ptr, len) ((struct iovec){(void *)(ptr), (len)})
#define REC_RIOV(addr, len) ((struct iovec){(void *)(uintptr_t)(addr), (len)})

static inline uint64_t rec_field(const uint8_t *p, int off)
{
    uint64_t v;
    memcpy(&v, p + off, 8);
    return v;
}

/* What a read that came short means: nonblocking, the stack moved. */
static inline rec_read_result rec_sampler_bad(const rec_sampler *s)
{
    return s->nonblocking ? REC_READ_TORN : REC_READ_FAILED;
}

size_t rec_iov_total(const struct iovec *v, size_t n);
/* process_vm_readv in as many calls as IOV_MAX needs; the bytes read in all. */
ssize_t rec_sampler_readv(rec_sampler *s, const struct iovec *l, const struct iovec *r, size_t n);
/* Nonblocking: the vector headers again, to append to the last call
 * (returns the iovecs added); rec_sampler_moved says whether they moved. */
size_t rec_sampler_reread(rec_sampler *s, struct iovec *l, struct iovec *r);
int rec_sampler_moved(const rec_sampler *s);

#endif
