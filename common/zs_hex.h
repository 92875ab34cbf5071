/* SPDX-License-Identifier: BSD-3-Clause */
/* Bytes as lowercase hex (build-ids, recording ids). */
#ifndef ZS_HEX_H
#define ZS_HEX_H

#include <stddef.h>

/* Writes the hex of the first bytes of data that fit in out (two characters
 * a byte, whole bytes only) and a terminating NUL; size 0 writes nothing.
 * Returns the number of bytes written out. */
size_t zs_hex(char *out, size_t size, const void *data, size_t n);

#endif
