/* SPDX-License-Identifier: BSD-3-Clause */
/* Reads from a live process with process_vm_readv: the recorder's memory
 * source (a zs_memory) and the raw vector form the stop window uses. */
#ifndef REC_MEMORY_H
#define REC_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "zs_memory.h"

/* One process_vm_readv call over several remote regions; 0 only when every
 * byte arrived. */
int rec_readv(pid_t pid, const struct iovec *local, const struct iovec *remote, size_t n);

/* A zs_memory over the live process; ctx points at a pid_t that must live on. */
zs_memory rec_live_memory(pid_t *pid);

#endif
