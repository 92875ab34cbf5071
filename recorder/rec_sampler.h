/* The stop window's work: copy the raw pointers of the script call stack
 * out of the target in at most three process_vm_readv calls, into buffers
 * sized once. Turning them into frames happens after the target resumed. */
#ifndef REC_SAMPLER_H
#define REC_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "rec_model.h"
#include "rec_target.h"
#include "zs_format.h"

typedef struct rec_sampler rec_sampler;

rec_sampler *rec_sampler_new(const rec_target *t, size_t max_frames, int nonblocking);
void rec_sampler_free(rec_sampler *s);
/* process_vm_readv calls made so far (at most 3 a sample, usually 2). */
uint64_t rec_sampler_calls(const rec_sampler *s);
/* Zeek's network_time as of the last read (0 when unknown). */
double rec_sampler_network_time(const rec_sampler *s);

/* Just before the stop: the same first read while the target runs, so the
 * kernel's walk of the target's page tables is warm inside the window. */
void rec_sampler_warm(rec_sampler *s);

/* A region another part of the window wants copied (--native: the stack):
 * it fills one iovec pair and returns its length, 0 for nothing. Asked
 * first with early set, for the window's first read (every sample has
 * one, a sample outside scripts nothing else): it rides there when its
 * extent is known already. Else it is asked again once the CallInfo array
 * is in, given the outermost Frame's address (0: none), and rides as the
 * last iovec of the model's last call (the models whose Frames are on the
 * stack). Riding spares the window a process_vm_readv of its own. */
typedef size_t (*rec_sampler_rider)(void *ctx, uint64_t outermost_frame, int early,
                                    struct iovec *local, struct iovec *remote);
void rec_sampler_set_rider(rec_sampler *s, rec_sampler_rider fn, void *ctx);
/* The bytes the rider got in the last read (a partial read where the
 * region ends on an unmapped page), -1 when it did not ride. */
ssize_t rec_sampler_rider_got(const rec_sampler *s);

/* Inside the stop window (or, nonblocking, while the target runs). */
rec_read_result rec_sampler_read(rec_sampler *s);

/* After: the frames of the last read, outermost first. Returns the count;
 * *cut is set when the stack was deeper than max_frames. */
size_t rec_sampler_frames(const rec_sampler *s, zs_frame *out, int *cut);

/* Where each frame of the last read lives on zeek's C++ stack (8.1+:
 * CallInfo.frame, inside the native activation that runs it), outermost
 * first, as rec_sampler_frames gives the frames. Returns the count; 0 for
 * a model whose Frames say nothing about the native stack. */
size_t rec_sampler_frame_addrs(const rec_sampler *s, uint64_t *out);

/* The outermost of those addresses, 0 when there is none. */
uint64_t rec_sampler_outermost_frame(const rec_sampler *s);

#endif
