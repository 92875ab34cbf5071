/* SPDX-License-Identifier: BSD-3-Clause */
#include "names/conv_demangle.h"

#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (the C++ ABI's), called from C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *conv_demangle(const char *name)
{
    if (!strncmp(name, "_Z", 2)) {
        int status = -1;
        char *d = __cxa_demangle(name, NULL, NULL, &status);
        if (d && status == 0)
            return d;
        free(d);
    }
    return strdup(name);
}

/* The length of MODULE in "[MODULE+0xHEX]", or 0 when name is not such
 * an offset name. */
static size_t offset_name_module(const char *name)
{
    size_t len = strlen(name), digits = 0;
    if (len < 7 || name[0] != '[' || name[len - 1] != ']')
        return 0;
    while (digits < len - 2 && strchr("0123456789abcdef", name[len - 2 - digits]))
        digits++;
    if (!digits || len < digits + 6)
        return 0;
    size_t plus = len - 1 - digits - 3; /* where "+0x" starts */
    return strncmp(name + plus, "+0x", 3) ? 0 : plus - 1;
}

char *conv_native_name(const char *symbol)
{
    /* Earlier recorders named code without a symbol by its module and
     * offset: every address a function of its own, which splits one
     * unnamed function into many rows. Its address stays in its location. */
    size_t module = offset_name_module(symbol);
    if (!module)
        return conv_demangle(symbol);
    const char *m = symbol + 1;
    if (module >= 2 && m[0] == '[' && m[module - 1] == ']') /* "[vdso]" is named so already */
        return strndup(m, module);
    char *name = malloc(module + 3);
    if (name) {
        name[0] = '[';
        memcpy(name + 1, m, module);
        strcpy(name + 1 + module, "]");
    }
    return name;
}
