/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_image.h"

#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"
#include "zs_bsearch.h"

typedef struct region {
    uint64_t addr;
    size_t len;
    uint8_t *data;
} region;

struct zs_image {
    region *regions;
    size_t count, cap;
    size_t bytes;
    size_t max_len; /* bounds the backwards scan in a lookup */
    int sealed;
};

zs_image *zs_image_new(void) { return calloc(1, sizeof(zs_image)); }

int zs_image_add(zs_image *img, uint64_t addr, const void *data, size_t len)
{
    if (len == 0 || addr + len < addr)
        return 0;
    if (zs_grow(&img->regions, &img->cap, img->count + 1, sizeof *img->regions, 256))
        return -1;
    uint8_t *copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, data, len);
    img->regions[img->count++] = (region){addr, len, copy};
    img->bytes += len;
    if (len > img->max_len)
        img->max_len = len;
    img->sealed = 0;
    return 0;
}

static int by_addr(const void *a, const void *b)
{
    const region *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void zs_image_seal(zs_image *img)
{
    if (!img->sealed && img->count)
        qsort(img->regions, img->count, sizeof *img->regions, by_addr);
    img->sealed = 1;
}

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    zs_image *img = ctx;
    if (!img->sealed)
        zs_image_seal(img);
    if (addr + len < addr)
        return -1;
    /* The last region starting at or before addr, then back while a region
     * could still reach addr. */
    size_t lo = zs_upper_bound(img->regions, img->count, sizeof *img->regions, offsetof(region, addr), addr);
    for (size_t i = lo; i-- > 0;) {
        const region *r = &img->regions[i];
        if (addr - r->addr > img->max_len)
            break;
        if (addr + len <= r->addr + r->len) {
            memcpy(buf, r->data + (addr - r->addr), len);
            return 0;
        }
    }
    return -1;
}

zs_memory zs_image_memory(zs_image *img) { return (zs_memory){image_read, img}; }

size_t zs_image_bytes(const zs_image *img) { return img->bytes; }

void zs_image_free(zs_image *img)
{
    if (!img)
        return;
    for (size_t i = 0; i < img->count; i++)
        free(img->regions[i].data);
    free(img->regions);
    free(img);
}
