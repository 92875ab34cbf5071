/* SPDX-License-Identifier: BSD-3-Clause */
/* C++ names for native frames: the recorder writes symbols as the binary
 * has them (mangled, as perf does); people read them demangled. */
#ifndef CONV_DEMANGLE_H
#define CONV_DEMANGLE_H

/* A malloc'ed demangled copy of name, or of name itself when it is not a
 * mangled C++ name (C functions, "[module]"). NULL on out-of-memory. */
char *conv_demangle(const char *name);

/* A native frame's name as the outputs show it (malloc'ed; NULL on
 * out-of-memory): its symbol demangled; code no symbol covers is one
 * function of its module, "[libfoo.so.1]", "[vdso]", also where an older
 * recorder named it by its offset ("[libfoo.so.1+0x1c0]", "[[vdso]+0x7bd]"). */
char *conv_native_name(const char *symbol);

#endif
