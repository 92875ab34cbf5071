/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_cmdline.h"

#include <string.h>

/* An -O value that turns ZAM on: it names ZAM and is not the one that
 * turns ZAM's own optimizer off. */
static int zam_value(const char *v, size_t len)
{
    static const char off[] = "no-ZAM-opt";
    if (len == sizeof off - 1 && !strncmp(v, off, len))
        return 0;
    for (size_t i = 0; i + 3 <= len; i++)
        if (!strncmp(v + i, "ZAM", 3))
            return 1;
    return 0;
}

int zs_cmdline_zam(const char *cmdline)
{
    static const char longopt[] = "--optimize";
    const size_t nlong = sizeof longopt - 1;
    int value_next = 0;
    for (const char *p = cmdline ? cmdline : ""; *p;) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " ");
        if (!len)
            break;
        if (value_next && zam_value(p, len))
            return 1;
        value_next = (len == 2 && !strncmp(p, "-O", 2)) ||
                     (len == nlong && !strncmp(p, longopt, nlong));
        if (len > 2 && !strncmp(p, "-O", 2) && zam_value(p + 2, len - 2))
            return 1;
        if (len > nlong + 1 && !strncmp(p, longopt, nlong) && p[nlong] == '=' &&
            zam_value(p + nlong + 1, len - nlong - 1))
            return 1;
        p += len;
    }
    return 0;
}
