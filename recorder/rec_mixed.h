/* One stack of native and script frames: each script frame takes the place
 * of its interpreter activation (the native frame where Zeek pushed its
 * CallInfo), counted innermost to outermost alike. When the counts disagree
 * (a sample caught between the activation and the push, inlined entries, a
 * cut stack) the sample keeps its script frames and the native leaf only:
 * never a wrong interleaving. */
#ifndef REC_MIXED_H
#define REC_MIXED_H

#include <stddef.h>
#include <stdint.h>

#include "zs_format.h"

typedef struct rec_mixed_native {
    uint64_t id; /* symbol id */
    int entry;   /* an interpreter activation (rec_mixed_is_entry) */
} rec_mixed_native;

/* Whether a (mangled) symbol is one of Zeek's interpreter entry points. */
int rec_mixed_is_entry(const char *name);

/* script and native outermost first; out gets at most max frames,
 * outermost first. truncated_id >= 0: the native stack is missing its
 * outermost frames (deeper than the copy), and the stack starts with that
 * marker symbol; the script frames then align from the innermost. *mismatch
 * is set when the fallback was used. */
size_t rec_mixed_stack(const zs_frame *script, size_t nscript, int script_cut,
                       const rec_mixed_native *native, size_t nnative, int64_t truncated_id,
                       zs_frame *out, size_t max, int *mismatch);

#endif
