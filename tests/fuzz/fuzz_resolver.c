/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: bytes -> a snapshot image + a built-in layout -> the resolver,
 * as the converter runs it on a hostile recording's snapshot.
 *
 * Input (little-endian):
 *   byte 0          which built-in layout (index into VERSIONS, modulo)
 *   byte 1          number of frames to resolve (modulo MAX_FRAMES + 1)
 *   frames          that many (u64 func, u64 stmt)
 *   regions         until the end: u64 address, u16 length, that many bytes
 *                   (the last one clamped to what is left)
 *
 * Checks beyond "no crash": every frame gets a name, an unresolved frame has
 * no file, a second resolution gives the same answer (the converter relies on
 * the snapshot answering like the live process did), and the number of
 * memory reads per frame stays bounded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_image.h"
#include "zs_layout.h"
#include "zs_resolver.h"

static const char *const VERSIONS[] = {
    "3.0.1", "3.0.14", "3.1.5", "3.2.4", "4.0.9", "4.1.1", "5.1.3", "5.2.2", "8.0.10", "8.2.2",
};
enum { NVERSIONS = sizeof VERSIONS / sizeof VERSIONS[0], MAX_FRAMES = 8 };

/* One Func: name + bodies (at most ZS_MAX_BODIES), each body a Location
 * with a file name read in 64-byte chunks (at most ZS_MAX_STRING bytes);
 * then the frame's statement. */
enum { MAX_READS_PER_FRAME = 8 + (ZS_MAX_BODIES + 1) * (3 + ZS_MAX_STRING / 64 + 1) };

typedef struct counter {
    zs_memory inner;
    size_t reads;
} counter;

static int counting_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    counter *c = ctx;
    c->reads++;
    return zs_mem_read(&c->inner, addr, buf, len);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_resolver: invariant broken: %s\n", what);
        abort();
    }
}

static int same(const zs_frame_info *a, const zs_frame_info *b)
{
    return !strcmp(a->name, b->name) && !strcmp(a->file, b->file) &&
           a->start_line == b->start_line && a->line == b->line && a->unresolved == b->unresolved;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const zs_layout *l = zs_layout_builtin(VERSIONS[data[0] % NVERSIONS]);
    check(l != NULL, "built-in layout");
    size_t nframes = data[1] % (MAX_FRAMES + 1);
    const uint8_t *p = data + 2, *end = data + size;
    zs_frame frames[MAX_FRAMES];
    size_t n = 0;
    for (; n < nframes && end - p >= 16; n++, p += 16)
        frames[n] = (zs_frame){get_u64(p), get_u64(p + 8)};

    zs_image *img = zs_image_new();
    if (!img)
        return 0;
    while (end - p >= 10) {
        uint64_t addr = get_u64(p);
        size_t len = (size_t)p[8] | (size_t)p[9] << 8;
        p += 10;
        if (len > (size_t)(end - p))
            len = (size_t)(end - p);
        if (zs_image_add(img, addr, p, len))
            goto out;
        p += len;
    }
    zs_image_seal(img);

    counter c = {zs_image_memory(img), 0};
    zs_memory m = {counting_read, &c};
    for (size_t i = 0; i < n; i++) {
        zs_frame_info a, b;
        c.reads = 0;
        if (zs_resolve_frame(&m, l, &frames[i], &a))
            continue; /* out of memory */
        check(c.reads <= MAX_READS_PER_FRAME, "bounded reads per frame");
        check(a.name && a.file, "a frame always has a name and a file");
        check(!a.unresolved || !a.file[0], "an unresolved frame has no file");
        if (zs_resolve_frame(&m, l, &frames[i], &b) == 0) {
            check(same(&a, &b), "resolution is deterministic");
            zs_frame_info_free(&b);
        }
        zs_frame_info_free(&a);

        zs_location loc;
        if (zs_resolve_location(&m, l, frames[i].stmt, &loc) == 0)
            check(loc.file != NULL, "a resolved location has a file");
        zs_location_free(&loc);
    }
out:
    zs_image_free(img);
    return 0;
}
