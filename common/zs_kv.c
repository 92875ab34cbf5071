/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "zs_format.h"

const char *zs_kv_get(const zs_kv *items, size_t count, const char *key)
{
    for (size_t i = 0; i < count; i++)
        if (!strcmp(items[i].key, key))
            return items[i].value;
    return NULL;
}
