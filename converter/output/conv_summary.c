/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_summary.h"
#include "output/conv_packages.h"

#include <stdlib.h>
#include <string.h>

#include "output/conv_shorten.h"
#include "profile/conv_diff.h"

/* The function column's bound: a C++ name still longer once shortened (a
 * lambda in a template in a namespace) is cut in its middle, so that the
 * columns after it stay where they are. Script names (a handler body with
 * its file:line) are shorter than this. */
enum { NAME_MAX_CHARS = 64 };

typedef struct row {
    uint32_t function;
    uint64_t flat, cum;
} row;

static int by_flat_then_cum(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->flat != y->flat)
        return x->flat < y->flat ? 1 : -1;
    if (x->cum != y->cum)
        return x->cum < y->cum ? 1 : -1;
    return x->function < y->function ? -1 : x->function > y->function;
}

static double pct(uint64_t n, uint64_t total) { return total ? 100.0 * (double)n / (double)total : 0; }

/* f's name as the function column shows it (malloc'd; NULL on no
 * memory): a C++ name without its template arguments and parameters
 * (conv_shorten.h), any name within the column's bound. */
static char *column_name(const conv_function *f)
{
    char *short_name = conv_function_is_native(f) ? conv_short_name(f->name) : strdup(f->name);
    char *fit = short_name ? conv_fit_name(short_name, NAME_MAX_CHARS) : NULL;
    free(short_name);
    return fit;
}

static int by_count(const void *a, const void *b)
{
    const row *x = a, *y = b;
    return x->cum != y->cum ? (x->cum < y->cum ? 1 : -1) : (x->function > y->function) - (x->function < y->function);
}

/* Samples per process: which worker is busy. Shown when there are several. */
static int write_processes(const conv_profile *p, uint64_t total, FILE *out)
{
    if (p->nprocesses < 2)
        return 0;
    row *rows = calloc(p->nprocesses, sizeof *rows);
    if (!rows)
        return -1;
    for (size_t i = 0; i < p->nprocesses; i++)
        rows[i].function = (uint32_t)i;
    for (size_t i = 0; i < p->nstacks; i++)
        rows[p->stacks[i].process].cum += p->stacks[i].count;
    qsort(rows, p->nprocesses, sizeof *rows, by_count);
    fprintf(out, "\nBy process:\n%10s %7s  %-8s %-16s %s\n", "samples", "share", "pid", "node", "host");
    for (size_t i = 0; i < p->nprocesses; i++) {
        const conv_process *q = &p->processes[rows[i].function];
        fprintf(out, "%10llu %6.2f%%  %-8u %-16s %s\n", (unsigned long long)rows[i].cum,
                pct(rows[i].cum, total), q->pid, *q->node ? q->node : "-", *q->host ? q->host : "-");
    }
    free(rows);
    return 0;
}

/* Samples per outermost frame: the event handler (body) or hook that
 * Zeek's event loop was running, everything it called included. */
static int write_handlers(const conv_profile *p, uint64_t total, size_t top, FILE *out)
{
    row *rows = calloc(p->nfunctions ? p->nfunctions : 1, sizeof *rows);
    if (!rows)
        return -1;
    for (size_t i = 0; i < p->nfunctions; i++)
        rows[i].function = (uint32_t)i;
    /* With native frames (--native) the outermost frames are zeek's own
     * (main, the event loop): the handler is the outermost script frame. */
    uint64_t script = 0, under = 0, outside = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const conv_stack *st = &p->stacks[i];
        int first = -1, leaf_native = 0;
        for (uint32_t k = 0; k < st->nlocs; k++) {
            int native = conv_function_is_native(&p->functions[p->locations[st->locs[k]].function]);
            if (!native && first < 0)
                first = (int)k;
            leaf_native = native;
        }
        if (first >= 0)
            rows[p->locations[st->locs[first]].function].cum += st->count;
        if (first < 0 && st->nlocs && leaf_native)
            outside += st->count;
        else if (leaf_native)
            under += st->count;
        else
            script += st->count;
    }
    qsort(rows, p->nfunctions, sizeof *rows, by_count);
    if (under + outside)
        fprintf(out, "\nscript %.1f %%, native under scripts %.1f %%, native outside scripts %.1f %%\n",
                pct(script, total), pct(under, total), pct(outside, total));
    fprintf(out, "\nBy event handler (outermost frame, callees included):\n%10s %7s  %s\n",
            "samples", "share", "handler");
    for (size_t i = 0; i < p->nfunctions && rows[i].cum && (!top || i < top); i++)
        fprintf(out, "%10llu %6.2f%%  %s\n", (unsigned long long)rows[i].cum, pct(rows[i].cum, total),
                p->functions[rows[i].function].name);
    free(rows);
    return 0;
}

static int write_summary(const conv_profile *p, size_t top, FILE *out)
{
    const conv_meta *m = &p->meta;
    row *rows = calloc(p->nfunctions ? p->nfunctions : 1, sizeof *rows);
    uint64_t *flat = calloc(p->nfunctions + 1, sizeof *flat), *cum = calloc(p->nfunctions + 1, sizeof *cum);
    if (!rows || !flat || !cum) {
        free(rows);
        free(flat);
        free(cum);
        return -1;
    }
    uint64_t total = conv_profile_tally(p, flat, cum);
    for (size_t i = 0; i < p->nfunctions; i++)
        rows[i] = (row){(uint32_t)i, flat[i], cum[i]};
    free(flat);
    free(cum);
    qsort(rows, p->nfunctions, sizeof *rows, by_flat_then_cum);

    double secs = (double)m->duration_ns / 1e9;
    fprintf(out, "Zeek %s on %s, recorded by zeek-spy %s\n", m->zeek_version ? m->zeek_version : "?",
            m->host ? m->host : "?", m->recorder_version ? m->recorder_version : "?");
    /* Samples marked on or off the CPU (format 7, BPF): which of them this
     * is of. The ptrace sampler's are all wall-clock: nothing to say. */
    if (m->marked == CONV_MARKED_CPU_ONLY)
        fprintf(out, "on-CPU samples only: recorded with --cpu-only, no off-CPU samples taken\n");
    else if (m->marked && m->cpu_view)
        fprintf(out, "on-CPU view: on-CPU samples only; %llu off-CPU samples left out\n",
                (unsigned long long)m->off_cpu);
    else if (m->marked)
        fprintf(out, "wall-clock view: on- and off-CPU samples; %llu of them (%.1f%%) off-CPU\n",
                (unsigned long long)m->off_cpu, pct(m->off_cpu, total));
    fprintf(out, "%llu samples over %.2f s (%.1f Hz); %llu skipped ticks; %llu unresolved samples",
            (unsigned long long)total, secs, secs > 0 ? (double)total / secs : 0,
            (unsigned long long)m->skipped, (unsigned long long)m->unresolved);
    if (m->torn)
        fprintf(out, "; %llu torn reads discarded", (unsigned long long)m->torn);
    fprintf(out, "\n\n%10s %7s %10s %7s  %-48s %s\n", "flat", "flat%", "cum", "cum%", "function",
            "file:line");
    size_t shown = top && top < p->nfunctions ? top : p->nfunctions;
    for (size_t i = 0; i < shown; i++) {
        const row *r = &rows[i];
        const conv_function *f = &p->functions[r->function];
        char *name = column_name(f);
        if (!name) {
            free(rows);
            return -1;
        }
        fprintf(out, "%10llu %6.2f%% %10llu %6.2f%%  %-48s ", (unsigned long long)r->flat,
                pct(r->flat, total), (unsigned long long)r->cum, pct(r->cum, total), name);
        free(name);
        /* A function ZAM inlined has no first line known (0): its file alone. */
        if (*f->file && !conv_function_names_body(f) && !conv_function_is_native(f) && f->start_line)
            fprintf(out, "%s:%d\n", f->file, f->start_line);
        else if (*f->file && !conv_function_names_body(f) && !conv_function_is_native(f))
            fprintf(out, "%s\n", f->file);
        else
            fputc('\n', out);
    }
    if (shown < p->nfunctions)
        fprintf(out, "(%zu more functions; --top 0 shows all)\n", p->nfunctions - shown);
    free(rows);
    if (write_processes(p, total, out) || write_handlers(p, total, top, out))
        return -1;
    /* Recordings of format 8 on (they carry the load): the packages and
     * the load. Older ones' summaries stay as they were (tests/golden). */
    if (p->lane) {
        if (conv_write_packages(p, total, top, out))
            return -1;
        fputs("\nLoad, second by second (seconds from the first sample):\n", out);
        conv_lane_describe(out, p->lane, m->start_wall_ns, "");
        if (!p->lane->n)
            fputs("no load records (the recorder found no packet source)\n", out);
    }
    return ferror(out) ? -1 : 0;
}

/* --base: the functions whose share moved most, in points of each
 * profile's samples. */
static int write_changes(const conv_profile *base, const conv_profile *p, size_t top, FILE *out)
{
    conv_diff_row *rows;
    size_t n;
    if (conv_diff_rows(base, p, &rows, &n))
        return -1;
    fprintf(out, "\nLargest changes against the base (%llu samples; shares of each profile's "
            "samples, change in points):\n", (unsigned long long)base->meta.samples);
    fprintf(out, "%7s %7s %8s  %7s %7s %8s  %s\n", "flat%", "base", "change", "cum%", "base",
            "change", "function");
    size_t shown = top && top < n ? top : n;
    for (size_t i = 0; i < shown; i++) {
        const conv_diff_row *r = &rows[i];
        char *name = column_name(r->function);
        if (!name) {
            free(rows);
            return -1;
        }
        fprintf(out, "%6.2f%% %6.2f%% %+8.2f  %6.2f%% %6.2f%% %+8.2f  %s\n", r->flat_new, r->flat_base,
                r->flat_new - r->flat_base, r->cum_new, r->cum_base, r->cum_new - r->cum_base, name);
        free(name);
    }
    if (shown < n)
        fprintf(out, "(%zu more functions; --top 0 shows all)\n", n - shown);
    free(rows);
    return 0;
}

int conv_write_summary(const conv_profile *p, const conv_write_options *o, FILE *out, zs_error *err)
{
    if (write_summary(p, o->top, out) || (o->base && write_changes(o->base, p, o->top, out)))
        return conv_output_errno(err);
    return ferror(out) ? conv_output_errno(err) : 0;
}
