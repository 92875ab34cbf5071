/* SPDX-License-Identifier: BSD-3-Clause */
/* One stack of native and script frames: each script frame takes the place
 * of its interpreter activation (the native frame where Zeek pushed its
 * CallInfo): from 8.1 on the one whose stack frame holds the script frame's
 * Frame, up to 8.0 counted innermost to outermost alike. The interpreter's own
 * plumbing between two activations (Stmt::Exec, Expr::Eval, ...) stays where
 * it ran, between the two script frames: the converter hides it by default
 * and shows it with --interpreter-frames. When they disagree (a sample caught
 * between the activation and the push, inlined entries, a cut stack)
 * the sample keeps its script frames and the native leaf only: never a wrong
 * interleaving. */
#ifndef REC_MIXED_H
#define REC_MIXED_H

#include <stddef.h>
#include <stdint.h>

#include "zs_format.h"

/* One frame of the native source, as the recording will hold it (a
 * native location: zs_native_frame of its id, rec_native.h), with what the
 * merge needs to place the script frames among them. */
typedef struct rec_mixed_native {
    zs_frame frame;
    int entry;        /* an interpreter activation (rec_mixed_is_entry) */
    uint64_t sp, cfa; /* the frame's extent on the stack, [sp, cfa); 0, 0
                         when unknown */
} rec_mixed_native;

/* Whether a (mangled) symbol is one of Zeek's interpreter entry points. */
int rec_mixed_is_entry(const char *name);

/* A native stack that does not run from the thread's entry: the marker
 * frame (a location id) it starts at, -1 when not so. */
typedef struct rec_mixed_cut {
    int64_t truncated; /* deeper than the copy: its outermost frames missing */
    int64_t fiber;     /* a Spicy fiber's stack, from the fiber's entry on */
} rec_mixed_cut;

/* script and native outermost first; out gets at most max frames,
 * outermost first. script_addrs (NULL: none) is where each script frame's
 * Frame lives (Zeek 8.1+, rec_sampler_frame_addrs): each script frame then
 * takes the place of the native frame whose [sp, cfa) holds its Frame,
 * whatever that frame is named; a Frame in no native frame, or two Frames
 * in one, is a mismatch. Without them the i-th activation from the
 * innermost takes the i-th script frame, counted. Cut short, the stack
 * starts at the marker and the script frames outside the copy (by address:
 * above it; counted: the outermost ones without an activation) come first.
 * On a fiber, the fiber's frames follow the script frames after the marker
 * (they hold no activation of them). A whole merge that would not fit in
 * max drops the plumbing rather than the innermost script frames.
 * *mismatch is set when the fallback was used. */
size_t rec_mixed_stack(const zs_frame *script, const uint64_t *script_addrs, size_t nscript,
                       int script_cut, const rec_mixed_native *native, size_t nnative,
                       rec_mixed_cut cut, zs_frame *out, size_t max, int *mismatch);

#endif
