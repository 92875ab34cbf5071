/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_speedscope.h"

#include <errno.h>
#include <stdlib.h>

#include "output/conv_escape.h"
#include "zs_version.h"

/* Samples of one process in time order: indexes into the timeline. A
 * recording is written in time order, so sorting is rare (merged parts
 * given out of order). */
static int by_time(const void *a, const void *b, void *ctx)
{
    const conv_timeline *t = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (t->t_ns[x] != t->t_ns[y])
        return t->t_ns[x] < t->t_ns[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static size_t samples_of(const conv_profile *p, size_t process, uint32_t *into)
{
    const conv_timeline *t = p->timeline;
    size_t n = 0;
    int sorted = 1;
    for (size_t i = 0; i < t->n; i++) {
        if (p->stacks[t->stack[i]].process != process)
            continue;
        if (n && t->t_ns[i] < t->t_ns[into[n - 1]])
            sorted = 0;
        into[n++] = (uint32_t)i;
    }
    if (!sorted)
        qsort_r(into, n, sizeof *into, by_time, (void *)t);
    return n;
}

static void put_frames(const conv_profile *p, FILE *out)
{
    fputs("\"shared\":{\"frames\":[", out);
    for (size_t i = 0; i < p->nfunctions; i++) {
        const conv_function *f = &p->functions[i];
        fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
        conv_put_json(out, f->name);
        if (*f->file) {
            fputs(",\"file\":", out);
            conv_put_json(out, f->file);
            if (f->start_line) /* 0: not known (a function ZAM inlined) */
                fprintf(out, ",\"line\":%d", f->start_line);
        }
        fputc('}', out);
    }
    fputs("]}", out);
}

/* Times in microseconds from the first sample of the whole profile: the
 * recording's resolution, and small numbers for speedscope's axis. */
static double us(int64_t ns, int64_t origin) { return (double)(ns - origin) / 1000.0; }

static void put_profile(const conv_profile *p, size_t process, const uint32_t *idx, size_t n,
                        int64_t origin, FILE *out)
{
    const conv_timeline *t = p->timeline;
    const conv_process *q = &p->processes[process];
    const char *host = *q->host ? q->host : p->meta.host ? p->meta.host : "";
    char name[64];
    snprintf(name, sizeof name, "zeek pid %u", q->pid);
    /* "zeek pid 4242 (worker-1) on sensor-1": built from hostile parts, so
     * escaped piece by piece. */
    fputs("{\"type\":\"sampled\",\"name\":", out);
    fputc('"', out);
    fputs(name, out);
    if (*q->node) {
        fputs(" (", out);
        conv_put_json_chars(out, q->node);
        fputc(')', out);
    }
    if (*host) {
        fputs(" on ", out);
        conv_put_json_chars(out, host);
    }
    fputc('"', out);
    /* Each sample stands for the time until the next sample of its
     * process; the last one for one sampling period. The weights then add
     * up to the real span, gaps (skipped ticks, pauses) included. */
    double period = (double)p->meta.period_ns / 1000.0;
    double start = n ? us(t->t_ns[idx[0]], origin) : 0;
    double end = n ? us(t->t_ns[idx[n - 1]], origin) + period : 0;
    fprintf(out, ",\"unit\":\"microseconds\",\"startValue\":%.3f,\"endValue\":%.3f,\n\"samples\":[",
            start, end);
    for (size_t i = 0; i < n; i++) {
        const conv_stack *s = &p->stacks[t->stack[idx[i]]];
        fputs(i ? ",[" : "[", out);
        for (uint32_t k = 0; k < s->nlocs; k++)
            fprintf(out, k ? ",%u" : "%u", p->locations[s->locs[k]].function);
        fputc(']', out);
        if (i % 16 == 15)
            fputc('\n', out);
    }
    fputs("],\n\"weights\":[", out);
    for (size_t i = 0; i < n; i++) {
        double w = i + 1 < n ? (double)(t->t_ns[idx[i + 1]] - t->t_ns[idx[i]]) / 1000.0 : period;
        fprintf(out, i ? ",%.3f" : "%.3f", w);
        if (i % 16 == 15)
            fputc('\n', out);
    }
    fputs("]}", out);
}

/* 0, or -1 with errno set (EINVAL: the profile has no timeline; out of
 * memory; write error). */
static int write_speedscope(const conv_profile *p, FILE *out)
{
    const conv_timeline *t = p->timeline;
    if (!t) {
        errno = EINVAL;
        return -1;
    }
    uint32_t *idx = malloc((t->n ? t->n : 1) * sizeof *idx);
    if (!idx) {
        errno = ENOMEM;
        return -1;
    }
    int64_t origin = 0;
    for (size_t i = 0; i < t->n; i++)
        if (!i || t->t_ns[i] < origin)
            origin = t->t_ns[i];

    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n", out);
    fputs("\"exporter\":\"zeek-spy-convert " ZS_RECORDER_VERSION "\",\"name\":\"Zeek ", out);
    conv_put_json_chars(out, p->meta.zeek_version ? p->meta.zeek_version : "?");
    fputs(" on ", out);
    conv_put_json_chars(out, p->meta.host ? p->meta.host : "?");
    fputs("\",\"activeProfileIndex\":0,\n", out);
    put_frames(p, out);
    fputs(",\n\"profiles\":[", out);
    int first = 1;
    for (size_t q = 0; q < p->nprocesses; q++) {
        size_t n = samples_of(p, q, idx);
        if (!n)
            continue; /* a process all of whose samples were filtered out */
        fputs(first ? "\n" : ",\n", out);
        put_profile(p, q, idx, n, origin, out);
        first = 0;
    }
    fputs("]}\n", out);
    free(idx);
    return ferror(out) ? -1 : 0;
}

int conv_write_speedscope(const conv_profile *p, const conv_write_options *o, FILE *out,
                          zs_error *err)
{
    (void)o;
    return write_speedscope(p, out) ? conv_output_errno(err) : 0;
}
