/* SPDX-License-Identifier: BSD-3-Clause */
/* The unwinder: a forked child of the recorder that parses the target's
 * modules (ELF, .eh_frame, symbol tables, all written by anyone) inside the
 * sandbox of rec_sandbox.h, unwinds each stack copy it is sent with
 * elfutils' libdwfl and names the frames. It reads no process: the
 * recorder sends /proc/PID/maps, a descriptor for each module file and the
 * vdso's image, then one message per sample (rec_unwind_msg.h). */
#ifndef REC_UNWINDER_H
#define REC_UNWINDER_H

/* Whether a symbol is where HILTI's runtime enters a fiber (Spicy parsers
 * run on fibers with stacks of their own: hilti/rt/fiber.h): the frames
 * beyond it are not zeek's stack. */
int rec_unwinder_is_fiber_entry(const char *name);

/* Runs in the child until the recorder closes sock; never returns. Once
 * the queue is empty it waits batch_ms before the next message. */
void rec_unwinder_main(int sock, unsigned batch_ms);

#endif
