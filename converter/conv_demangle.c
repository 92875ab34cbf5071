#include "conv_demangle.h"

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
