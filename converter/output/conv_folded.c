/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_folded.h"

/* ';' separates frames and the last ' ' the count: a name must not break the
 * line's structure. Spaces inside names are fine (the count is after the
 * last one). */
static void put_name(const char *s, FILE *out)
{
    for (; *s; s++)
        fputc(*s == ';' ? ':' : (*s == '\n' ? ' ' : *s), out);
}

int conv_write_folded(const conv_profile *p, const conv_write_options *o, FILE *out, zs_error *err)
{
    (void)o;
    for (size_t i = 0; i < p->nstacks; i++) {
        const conv_stack *s = &p->stacks[i];
        for (uint32_t k = 0; k < s->nlocs; k++) {
            if (k)
                fputc(';', out);
            put_name(p->functions[p->locations[s->locs[k]].function].name, out);
        }
        fprintf(out, " %llu\n", (unsigned long long)s->count);
    }
    return ferror(out) ? conv_output_errno(err) : 0;
}
