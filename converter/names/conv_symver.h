/* SPDX-License-Identifier: BSD-3-Clause */
/* Native names without their symbol versions. Recorders before 2026-12-07
 * wrote a function by whichever of its aliases the library's symbol table
 * happened to sort first, versions and all: libc's clock_gettime was
 * "clock_gettime@@GLIBC_2.17" in one recording and
 * "clock_gettime@GLIBC_2.2.5" in another, two functions to a differential
 * profile. Recorders since write one plain name (a recording's header says
 * native_names=plain; recorder/native/rec_symbol_names.h); for the older
 * ones the converter drops the versions itself, from what the recording
 * alone shows, so that a recording's names never depend on what else is
 * converted with it. */
#ifndef CONV_SYMVER_H
#define CONV_SYMVER_H

#include <stddef.h>

/* For each of n native names (names[i], in the module whose path is
 * modules[i], "" for none): keep[i] = 1 where name i has a version other
 * than the default ("memcpy@GLIBC_2.2.5") and another name in its module,
 * a different function, has the same name without its version ("memcpy",
 * "memcpy@@GLIBC_2.14"); else 0. A name may be listed more than once. 0, or
 * -1 when out of memory. */
int conv_symver_shared(const char *const *names, const char *const *modules, size_t n,
                       unsigned char *keep);

/* name as shown (malloc'ed; NULL when out of memory): without its version
 * ("clock_gettime"), unless keep and the version is not the default. The
 * default version, "@@", always goes: it is the one the plain name means. */
char *conv_symver_shown(const char *name, int keep);

#endif
