/* SPDX-License-Identifier: BSD-3-Clause */
#include "frames/rec_memory.h"

int rec_readv(pid_t pid, const struct iovec *local, const struct iovec *remote, size_t n)
{
    size_t want = 0;
    for (size_t i = 0; i < n; i++)
        want += remote[i].iov_len;
    ssize_t got = process_vm_readv(pid, local, n, remote, n, 0);
    return got >= 0 && (size_t)got == want ? 0 : -1;
}

static int live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return rec_readv(*(pid_t *)ctx, &local, &remote, 1);
}

zs_memory rec_live_memory(pid_t *pid) { return (zs_memory){live_read, pid}; }
