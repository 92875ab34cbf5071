/* SPDX-License-Identifier: BSD-3-Clause */
#include "names/conv_symver.h"

#include <stdlib.h>
#include <string.h>

#include "zs_symver.h"

typedef struct entry {
    const char *name, *module;
    size_t plain; /* the bytes of name before its version */
    size_t at;    /* its index in the caller's arrays */
} entry;

static int by_module_then_plain(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    int c = strcmp(x->module, y->module);
    if (c)
        return c;
    if (x->plain != y->plain)
        return x->plain < y->plain ? -1 : 1;
    return memcmp(x->name, y->name, x->plain);
}

int conv_symver_shared(const char *const *names, const char *const *modules, size_t n,
                       unsigned char *keep)
{
    memset(keep, 0, n);
    entry *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const char *at = zs_symver_at(names[i]);
        v[m++] = (entry){names[i], modules[i], at ? (size_t)(at - names[i]) : strlen(names[i]), i};
    }
    qsort(v, m, sizeof *v, by_module_then_plain);
    /* In each run of one module and one plain name, two different names
     * are two functions (one recorder named one address one way). */
    for (size_t i = 0, j; i < m; i = j) {
        int distinct = 0;
        for (j = i + 1; j < m && !by_module_then_plain(&v[i], &v[j]); j++)
            distinct |= strcmp(v[i].name, v[j].name) != 0;
        for (size_t k = i; distinct && k < j; k++) {
            const char *at = zs_symver_at(v[k].name);
            if (at && !zs_symver_is_default(at))
                keep[v[k].at] = 1;
        }
    }
    free(v);
    return 0;
}

char *conv_symver_shown(const char *name, int keep)
{
    const char *at = zs_symver_at(name);
    if (!at || (keep && !zs_symver_is_default(at)))
        return strdup(name);
    return strndup(name, (size_t)(at - name));
}
