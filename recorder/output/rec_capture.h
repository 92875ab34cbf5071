/* SPDX-License-Identifier: BSD-3-Clause */
/* The snapshot side of the recorder: resolves every Func and statement the
 * first time a sample shows it, through a reader that copies each region it
 * reads from the live process into the recording. The converter later runs
 * the same resolver over those regions and gets the same answers. Runs
 * after the target resumed, never inside the stop window. */
#ifndef REC_CAPTURE_H
#define REC_CAPTURE_H

#include <stddef.h>
#include <sys/types.h>

#include "zs_error.h"
#include "zs_format.h"
#include "zs_layout.h"
#include "zs_writer.h"

typedef struct rec_capture rec_capture;

rec_capture *rec_capture_new(pid_t pid, const zs_layout *layout, zs_writer *w);
int rec_capture_frames(rec_capture *c, const zs_frame *frames, size_t n, zs_error *err);
uint64_t rec_capture_bytes(const rec_capture *c);
void rec_capture_free(rec_capture *c);

#endif
