/* C++ names for native frames: the recorder writes symbols as the binary
 * has them (mangled, as perf does); people read them demangled. */
#ifndef CONV_DEMANGLE_H
#define CONV_DEMANGLE_H

/* A malloc'ed demangled copy of name, or of name itself when it is not a
 * mangled C++ name (C functions, "[module+0x...]"). NULL on out-of-memory. */
char *conv_demangle(const char *name);

#endif
