/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_packages.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

void conv_script_package(const char *file, char *buf, size_t size)
{
    const char *from = file, *at;
    while ((at = strstr(from, "share/zeek/")))
        from = at + strlen("share/zeek/");
    while (!strncmp(from, "./", 2))
        from += 2;
    const char *end = strrchr(from, '/');
    if (!strncmp(from, "site/packages/", 14) && strchr(from + 14, '/'))
        end = strchr(from + 14, '/');
    if (!end || end == from) {
        snprintf(buf, size, ".");
        return;
    }
    snprintf(buf, size, "%.*s", (int)(end - from), from);
}

typedef struct package_row {
    char name[256];
    uint64_t self, total;
    uint64_t seen_in; /* the stack last counted in total (+1) */
} package_row;

static int by_self(const void *a, const void *b)
{
    const package_row *x = a, *y = b;
    if (x->self != y->self)
        return x->self < y->self ? 1 : -1;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* A script frame's function with a file: a package's (BiFs have none,
 * native functions are not scripts). */
static int in_package(const conv_function *f)
{
    return *f->file && !conv_function_is_native(f);
}

int conv_write_packages(const conv_profile *p, uint64_t total, size_t top, FILE *out)
{
    /* Each function's package row, found once. */
    int64_t *row_of = malloc((p->nfunctions ? p->nfunctions : 1) * sizeof *row_of);
    package_row *rows = calloc(p->nfunctions + 1, sizeof *rows);
    size_t nrows = 0;
    if (!row_of || !rows) {
        free(row_of);
        free(rows);
        return -1;
    }
    for (size_t i = 0; i < p->nfunctions; i++) {
        row_of[i] = -1;
        if (!in_package(&p->functions[i]))
            continue;
        char name[256];
        conv_script_package(p->functions[i].file, name, sizeof name);
        size_t k = 0;
        while (k < nrows && strcmp(rows[k].name, name))
            k++;
        if (k == nrows)
            snprintf(rows[nrows++].name, sizeof rows[k].name, "%s", name);
        row_of[i] = (int64_t)k;
    }
    uint64_t outside = 0;
    for (size_t s = 0; s < p->nstacks; s++) {
        const conv_stack *st = &p->stacks[s];
        int64_t innermost = -1;
        for (uint32_t k = 0; k < st->nlocs; k++) {
            int64_t r = row_of[p->locations[st->locs[k]].function];
            if (r < 0)
                continue;
            innermost = r;
            if (rows[r].seen_in != s + 1) {
                rows[r].seen_in = s + 1;
                rows[r].total += st->count;
            }
        }
        if (innermost >= 0)
            rows[innermost].self += st->count;
        else
            outside += st->count;
    }
    qsort(rows, nrows, sizeof *rows, by_self);
    fprintf(out, "\nBy script package (self: its scripts innermost, their BiFs and C++ included; "
            "total: on the stack):\n%10s %7s %10s %7s  %s\n", "self", "self%", "total", "total%", "package");
    size_t shown = top && top < nrows ? top : nrows;
    for (size_t i = 0; i < shown; i++)
        fprintf(out, "%10llu %6.2f%% %10llu %6.2f%%  %s\n", (unsigned long long)rows[i].self,
                total ? 100.0 * (double)rows[i].self / (double)total : 0, (unsigned long long)rows[i].total,
                total ? 100.0 * (double)rows[i].total / (double)total : 0, rows[i].name);
    if (shown < nrows)
        fprintf(out, "(%zu more packages; --top 0 shows all)\n", nrows - shown);
    fprintf(out, "%10llu %6.2f%% %10s %7s  (no script on the stack)\n", (unsigned long long)outside,
            total ? 100.0 * (double)outside / (double)total : 0, "", "");
    free(row_of);
    free(rows);
    return 0;
}
