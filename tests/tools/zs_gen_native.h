/* SPDX-License-Identifier: BSD-3-Clause */
/* zs-gen --native: the native (C++) frames of a --native recording of a
 * Zeek 8.2 around the generated script frames, under real mangled names
 * (Zeek's interpreter, its values, libstdc++, libc), so that the
 * converter's handling of them (the interpreter hidden, C++ names
 * shortened) can be checked against a known truth. */
#ifndef ZS_GEN_NATIVE_H
#define ZS_GEN_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "zs_format.h"
#include "zs_writer.h"

/* The runs of native frames a stack is made of, each outermost first. */
typedef enum gen_native_part {
    GN_ENTRY,         /* _start to the event handler's call: before the outermost script frame */
    GN_TRIGGER,       /* the main loop evaluating a when condition: no script frame */
    GN_PLUMBING,      /* between two script frames: a statement calling the next function */
    GN_TAIL_EVAL,     /* under the innermost script frame: the interpreter only */
    GN_TAIL_TABLE,    /* the interpreter, then a table assignment into libstdc++ and malloc */
    GN_TAIL_INLINED,  /* a PC of the interpreter with a value's destructor inlined there,
                         the same PC as the when condition's */
    GN_TAIL_CALLBACK, /* under a BiF: a sort calling back into the interpreter (kept) */
    GN_NPARTS
} gen_native_part;

/* Writes the MODULE, SYMBOL, LOCATION and LINES records every part's
 * frames refer to, for process pid. 0, or -1 with err set. */
int gen_native_write(zs_writer *wr, uint32_t pid, zs_error *err);

/* Appends part's frames to out (room for GEN_NATIVE_MAX_PART); how many. */
enum { GEN_NATIVE_MAX_PART = 8 };
size_t gen_native_frames(gen_native_part part, zs_frame *out);

/* Appends to text (cap bytes, NUL-terminated) the names the converter
 * shows for part, each after a ';' (none before the first when text is
 * empty), as folded output writes them; with hide_leading_interpreter,
 * without the run of PCs it starts with that are Zeek's interpreter and
 * nothing else (what the converter hides under the innermost script frame
 * by default; a PC with a value's destructor inlined is kept whole). */
void gen_native_names(gen_native_part part, int hide_leading_interpreter, char *text, size_t cap);

/* Whether part is the interpreter's from end to end: hidden under the
 * innermost script frame, it leaves that script frame the leaf. */
int gen_native_all_interpreter(gen_native_part part);

/* The tail under a stack's innermost script frame: a BiF's, or one of the
 * script tails picked by which. */
gen_native_part gen_native_tail(int builtin, uint64_t which);

#endif
