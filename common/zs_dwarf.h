/* SPDX-License-Identifier: BSD-3-Clause */
/* Layout discovery from DWARF (libdw): the executable's own debug info, or
 * its separate debug file found by build-id under /usr/lib/debug. */
#ifndef ZS_DWARF_H
#define ZS_DWARF_H

#include "zs_error.h"
#include "zs_layout.h"

/* Computes every offset and size of *out from the classes and members named
 * as in Zeek's sources, picks the model from what CallInfo holds, and the
 * symbol names from the executable's symbols. exe_path may be /proc/PID/exe.
 * -1 with a message naming what is missing when the DWARF lacks it. */
int zs_dwarf_layout(const char *exe_path, const char *build_id, const char *zeek_version,
                    zs_layout *out, zs_error *err);

/* Where the executable and its separate debug files are, for a caller that
 * opened them already (a sandboxed inspector that may no longer open
 * /proc/PID/exe or /proc/PID/root itself). */
typedef struct zs_dwarf_source {
    int fd;                /* the executable, open for reading */
    const char *name;      /* names it in messages */
    const char *real_path; /* its path, for a .gnu_debuglink next to it; NULL: realpath(name) */
    int root_fd;           /* the process's root directory (O_PATH), or -1 */
    int own_only;          /* only the executable's own DWARF, no separate debug files */
} zs_dwarf_source;

/* zs_dwarf_layout on an open executable. Malformed DWARF, or DWARF beyond
 * the scan's bounds (DIEs, time), fails with ZS_E_EXE_REFUSED: the caller
 * must refuse the executable, not fall back to another layout source. */
int zs_dwarf_layout_from(const zs_dwarf_source *src, const char *build_id,
                         const char *zeek_version, zs_layout *out, zs_error *err);

#endif
