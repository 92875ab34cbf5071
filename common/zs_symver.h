/* SPDX-License-Identifier: BSD-3-Clause */
/* A symbol version in a native name, as a .symtab spells it: the default
 * "clock_gettime@@GLIBC_2.17", another "clock_gettime@GLIBC_2.2.5". The
 * recorder chooses the names it writes by them (rec_symbol_names.h), the
 * converter shows older recordings' names without them (conv_symver.h). */
#ifndef ZS_SYMVER_H
#define ZS_SYMVER_H

#include <string.h>

/* Where name's version starts (its first '@'), or NULL when it has none:
 * a version ends the name and is made of letters, digits, '_', '.' and
 * '-' only, after a non-empty name (an '@' anywhere else is the name's). */
static inline const char *zs_symver_at(const char *name)
{
    const char *at = strchr(name, '@');
    if (!at || at == name)
        return NULL;
    const char *v = at + 1 + (at[1] == '@');
    if (!*v)
        return NULL;
    for (const char *c = v; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '.' || *c == '-'))
            return NULL;
    return at;
}

/* Whether the version at zs_symver_at(name) is the default one ("@@"). */
static inline int zs_symver_is_default(const char *at) { return at[1] == '@'; }

#endif
