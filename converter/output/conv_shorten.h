/* SPDX-License-Identifier: BSD-3-Clause */
/* Short labels for C++ names. A demangled libstdc++ or Zeek name runs to
 * hundreds of characters, most of them template arguments and parameter
 * types, which break the summary's columns and fill a flame graph's
 * frames; a reader needs the scopes and the function. The full name stays
 * where a reader looks it up: pprof, folded, speedscope, the SVG tooltip. */
#ifndef CONV_SHORTEN_H
#define CONV_SHORTEN_H

#include <stddef.h>

/* A malloc'd short form of name, a demangled C++ function name:
 * template argument lists become "<...>", the function's parameter list
 * and what follows it (const, [clone .cold]) go, as does a return type
 * before the name; a parameter list of an enclosing function ("f(...)::")
 * and of a lambda ("{lambda(...)#1}") becomes "(...)"; operator names
 * (operator<, operator<<, operator(), operator new[]) and "(anonymous
 * namespace)" stay whole. A name that is no C++ name ("main",
 * "[vdso]", "clock_gettime@@GLIBC_2.17") comes back as it is.
 * NULL on no memory. */
char *conv_short_name(const char *name);

/* A malloc'd copy of s of at most max_chars characters (code points; an
 * invalid byte counts as one; max_chars >= 5): a longer s keeps its start
 * and its end around "...", where a scope's name and the function's are.
 * NULL on no memory. */
char *conv_fit_name(const char *s, size_t max_chars);

#endif
