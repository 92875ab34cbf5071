/* SPDX-License-Identifier: BSD-3-Clause */
/* The ELF and DWARF fuzz targets parse files, not buffers: each input is
 * written to one memory file (memfd) that is rewritten per input, so that
 * no disk is touched and the code under test reads it through an fd as the
 * recorder's inspector does. */
#ifndef FUZZ_INPUT_FD_H
#define FUZZ_INPUT_FD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* An fd holding exactly data[0..size); the same fd every call. */
static int fuzz_input_fd(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0 && (fd = memfd_create("fuzz-input", MFD_CLOEXEC)) < 0) {
        perror("memfd_create");
        abort();
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
        perror("fuzz input");
        abort();
    }
    return fd;
}

static void fuzz_check(int cond, const char *target, const char *what)
{
    if (!cond) {
        fprintf(stderr, "%s: invariant broken: %s\n", target, what);
        abort();
    }
}

#endif
