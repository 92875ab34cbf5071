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

#endif
