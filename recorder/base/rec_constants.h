/* SPDX-License-Identifier: BSD-3-Clause */
/* The recorder's constants that more than one file needs, and the ties
 * between the sizes of the queues a sample passes through. */
#ifndef REC_CONSTANTS_H
#define REC_CONSTANTS_H

#define REC_PROG "zeek-spy-record"

enum {
    /* A target that has not reached its stop this long after an interrupt
     * (uninterruptible sleep on a slow disk, a stopped VM) costs ticks:
     * they are skipped and counted, not credited to the late stop. */
    REC_STOP_DEADLINE_NS = 1000000000,
    /* Samples of one target on their way to the recording (rec_pending.c):
     * a tick finding them all still there is skipped. The BPF sampler
     * polls once a second, or as often as keeps a poll's samples to a
     * quarter of this. */
    REC_PENDING_SAMPLES = 512,
    /* Unwinds out at once: of the samples waiting in that ring, and of
     * those written before their answers came, whose native frames follow
     * them (1 s at 1 kHz, 10 s at 100 Hz: an unwinder reading a real zeek's
     * tables at the start takes about one). The ones taken while the
     * unwinder is that far behind go without native frames. */
    REC_UNWINDS_OUT = 1024,
    /* Captures rec_native.c remembers as asked and not answered (what each
     * answer is checked against), and the captures the socket to the
     * unwinder must hold without blocking the loop: every unwind out, and
     * the one capture kept unsent meanwhile. */
    REC_NATIVE_ASKED = 1056,
    REC_NATIVE_SOCKET_CAPTURES = 1032,
    /* The unwinder, once it has caught up, waits for this many captures
     * (but no longer than BATCH_MAX_MS) before it works again: one wake-up
     * for a batch rather than one a sample. */
    REC_NATIVE_BATCH = 16,
    REC_NATIVE_BATCH_MAX_MS = 100,
};

/* At a frame cut (once a second) or with its ring full, a sample whose
 * unwind has not come back this long after its tick is written without
 * native frames: well past a batch's wait, short of the second a cut
 * bounds the loss of a killed recorder to. */
#define REC_UNWIND_LATE_NS (300 * 1000000ULL)

_Static_assert(REC_UNWINDS_OUT + 1 <= REC_NATIVE_ASKED, "every unwind out is remembered");
_Static_assert(REC_UNWINDS_OUT + 1 <= REC_NATIVE_SOCKET_CAPTURES,
               "every unwind out fits in the socket");
_Static_assert(2 * REC_NATIVE_BATCH <= REC_UNWINDS_OUT, "a batch waiting is not the unwinder behind");
_Static_assert(REC_UNWIND_LATE_NS > 2 * REC_NATIVE_BATCH_MAX_MS * 1000000ULL,
               "an unwinder waiting for its batch is not late");

#endif
