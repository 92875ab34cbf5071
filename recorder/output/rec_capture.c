/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/rec_capture.h"

#include <stdlib.h>

#include "output/rec_addrset.h"
#include "frames/rec_memory.h"
#include "zs_resolver.h"

struct rec_capture {
    pid_t pid;
    const zs_layout *layout;
    zs_writer *writer;
    zs_memory live;
    rec_addrset seen_objects; /* Funcs and statements already resolved */
    rec_addrset seen_regions; /* (address, length) already in the recording */
    uint64_t bytes;
    int write_failed;
    zs_error write_err;
};

rec_capture *rec_capture_new(pid_t pid, const zs_layout *layout, zs_writer *w)
{
    rec_capture *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->pid = pid;
    c->layout = layout;
    c->writer = w;
    c->live = rec_live_memory(&c->pid);
    return c;
}

static int capturing_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    rec_capture *c = ctx;
    if (c->write_failed || zs_mem_read(&c->live, addr, buf, len))
        return -1;
    uint64_t key = addr * 0x9e3779b97f4a7c15ULL ^ len;
    int added = rec_addrset_add(&c->seen_regions, key);
    if (added > 0) {
        if (zs_writer_snapshot(c->writer, (uint32_t)c->pid, addr, buf, len, &c->write_err)) {
            c->write_failed = 1;
            return -1;
        }
        c->bytes += len;
    }
    return 0;
}

int rec_capture_frames(rec_capture *c, const zs_frame *frames, size_t n, zs_error *err)
{
    zs_memory mem = {capturing_read, c};
    for (size_t i = 0; i < n; i++) {
        if (zs_frame_is_native(&frames[i]))
            continue; /* named by its SYMBOL record, nothing to capture */
        /* Funcs and statements live as long as the scripts: one resolution
         * each is enough. A failed read is not an error here: the converter
         * will show the frame as unresolved. */
        if (rec_addrset_add(&c->seen_objects, frames[i].func) > 0) {
            zs_func_info f;
            if (zs_resolve_func(&mem, c->layout, frames[i].func, &f) == 0)
                zs_func_info_free(&f);
        }
        if (frames[i].stmt && rec_addrset_add(&c->seen_objects, frames[i].stmt) > 0) {
            zs_location loc;
            zs_frame_info fi;
            if (!zs_stmt_is_zam(frames[i].stmt)) {
                if (zs_resolve_location(&mem, c->layout, frames[i].stmt, &loc) == 0)
                    zs_location_free(&loc);
            } else if (zs_resolve_frame(&mem, c->layout, &frames[i], &fi) == 0) {
                zs_frame_info_free(&fi); /* a ZAM instruction: its chain, its body's extent */
            }
        }
        if (c->write_failed) {
            *err = c->write_err;
            return -1;
        }
    }
    return 0;
}

uint64_t rec_capture_bytes(const rec_capture *c) { return c->bytes; }

void rec_capture_free(rec_capture *c)
{
    if (!c)
        return;
    rec_addrset_free(&c->seen_objects);
    rec_addrset_free(&c->seen_regions);
    free(c);
}
