/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: an executable's bytes -> zs_elf_lookup_fd (symbols, build-id,
 * PIE and first PT_LOAD) and zs_elf_read_fd (a symbol's bytes, and an
 * address the input picks), as the recorder's inspector runs them on every
 * process's executable under --all.
 *
 * Invariants: a failure says why; the build-id is hex and terminated; a
 * symbol found has the name asked for; a read that succeeds filled exactly
 * the bytes asked for (ASan sees reads past the mapping). */
#include <string.h>

#include "fuzz_input_fd.h"
#include "zs_elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = fuzz_input_fd(data, size);
    zs_elf_symbol syms[] = {{"version"}, {"call_stack"}, {"_ZN4zeek6detail10call_stackE"},
                            {"g_frame_stack"}, {"_ZN4zeek9run_state12network_timeE"}};
    size_t n = sizeof syms / sizeof syms[0];
    zs_elf_info info;
    zs_error err = {0};
    if (zs_elf_lookup_fd(fd, "fuzz", syms, n, &info, &err)) {
        fuzz_check(err.code != 0 && err.detail[0], "fuzz_elf", "a refused file says why");
        return 0;
    }
    size_t id = strnlen(info.build_id, sizeof info.build_id);
    fuzz_check(id < sizeof info.build_id, "fuzz_elf", "the build-id is terminated");
    fuzz_check(strspn(info.build_id, "0123456789abcdef") == id && id % 2 == 0, "fuzz_elf",
               "the build-id is hex");
    fuzz_check(info.first_vaddr % 4096 == 0, "fuzz_elf", "first_vaddr is page-aligned");
    unsigned char buf[64];
    for (size_t k = 0; k < n; k++) {
        if (!syms[k].found)
            continue;
        size_t len = syms[k].size && syms[k].size < sizeof buf ? (size_t)syms[k].size : sizeof buf;
        memset(buf, 0, sizeof buf);
        zs_error rerr = {0};
        if (zs_elf_read_fd(fd, "fuzz", syms[k].value, buf, len, &rerr))
            fuzz_check(rerr.code != 0 && rerr.detail[0], "fuzz_elf", "a failed read says why");
    }
    /* Addresses near the ends of the address space, and one from the input. */
    uint64_t picked = 0;
    if (size >= 8)
        memcpy(&picked, data + size - 8, 8);
    const uint64_t addrs[] = {picked, UINT64_MAX - 7, UINT64_MAX - 63, 0};
    for (size_t a = 0; a < sizeof addrs / sizeof addrs[0]; a++) {
        zs_error rerr = {0};
        zs_elf_read_fd(fd, "fuzz", addrs[a], buf, sizeof buf, &rerr);
    }
    return 0;
}
