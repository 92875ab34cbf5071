/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: an executable's bytes -> zs_dwarf_layout_from (the classes
 * and members of Zeek's interpreter found in its DWARF), as the recorder's
 * inspector runs it on an executable that exports Zeek's symbols. Only the
 * input's own DWARF is read (no separate debug files from this host).
 *
 * Invariants: a failure says why; a layout found passes zs_layout_check and
 * survives format -> parse. */
#include <string.h>

#include "fuzz_input_fd.h"
#include "zs_dwarf.h"
#include "zs_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_dwarf_source src = {.fd = fuzz_input_fd(data, size), .name = "fuzz",
                           .real_path = "/nonexistent/fuzz", .root_fd = -1, .own_only = 1};
    zs_layout l;
    zs_error err = {0};
    /* The version string only matters when no call_stack symbol is there:
     * the input's last byte picks one. */
    const char *version = size && data[size - 1] & 1 ? "3.0.1" : "8.0.10";
    if (zs_dwarf_layout_from(&src, "", version, &l, &err)) {
        fuzz_check(err.code != 0 && err.detail[0], "fuzz_dwarf", "a refusal says why");
        return 0;
    }
    fuzz_check(zs_layout_check(&l, "fuzz", &err) == 0, "fuzz_dwarf", "a layout found passes the check");
    char *text = zs_layout_format(&l);
    if (!text)
        return 0;
    zs_layout back;
    fuzz_check(zs_layout_parse(text, strlen(text), "formatted", &back, &err) == 0, "fuzz_dwarf",
               "a found layout formats and parses");
    fuzz_check(zs_layout_equal(&l, &back), "fuzz_dwarf", "format -> parse gives the same layout");
    free(text);
    return 0;
}
