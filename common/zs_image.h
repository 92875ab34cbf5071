/* SPDX-License-Identifier: BSD-3-Clause */
/* A sparse memory image of one process rebuilt from snapshot records: the
 * converter's zs_memory. Regions may overlap; a read succeeds when one
 * region covers it whole, exactly as the capturing reader recorded it. */
#ifndef ZS_IMAGE_H
#define ZS_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "zs_memory.h"

typedef struct zs_image zs_image;

zs_image *zs_image_new(void);
int zs_image_add(zs_image *img, uint64_t addr, const void *data, size_t len);
/* Sorts the regions; call after the last add and before reading. */
void zs_image_seal(zs_image *img);
zs_memory zs_image_memory(zs_image *img);
size_t zs_image_bytes(const zs_image *img);
void zs_image_free(zs_image *img);

#endif
