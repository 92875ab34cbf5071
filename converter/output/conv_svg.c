/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_svg.h"
#include "profile/conv_diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output/conv_escape.h"
#include "output/conv_shorten.h"
#include "output/conv_svg_lane.h"
#include "conv_svg_script.h"
#include "profile/conv_tree.h"

/* Geometry, in px. CHAR is the advance of the 11 px monospace labels, so
 * that labels are cut to fit without measuring text (the script uses it
 * too, from the <svg> element). The root is drawn at the top and callees
 * below it (an icicle, as flamegraph.pl --inverted and speedscope draw
 * it): a --native stack is a hundred frames deep or more, and a graph
 * growing upwards from its root puts the root and the first frames of
 * every hot path thousands of px down, the first screen empty. DETAILS_Y
 * is the line under the legend where hovering and searching report, on
 * that first screen too. */
enum { WIDTH = 1200, XPAD = 10, FRAME_H = 16, DETAILS_Y = 84, TOP = 96, BOTTOM = 24 };
static const double CHAR = 6.7;
/* Frames under 1/10000 of the samples (0.1 px at full width) are left out:
 * with thousands of stacks they are most of the file and none of the view. */
enum { ELIDE_BELOW = 10000 };

typedef enum kind { K_ALL, K_HANDLER, K_SCRIPT, K_BIF, K_IDLE, K_UNRESOLVED, K_NATIVE, NKINDS } kind;

static const struct {
    const char *class_name, *label;
    int r, g, b, dr, dg, db; /* base colour and how far a name's hash moves it */
} KINDS[NKINDS] = {
    [K_ALL] = {"all", "all", 205, 205, 205, 0, 0, 0},
    [K_HANDLER] = {"h", "event handler", 70, 125, 215, 40, 50, 25},
    [K_SCRIPT] = {"s", "script function", 80, 175, 80, 60, 45, 30},
    [K_BIF] = {"b", "BiF", 235, 140, 40, 15, 60, 30},
    [K_IDLE] = {"i", "empty_call_stack", 165, 165, 165, 25, 25, 25},
    [K_UNRESOLVED] = {"u", "unresolved", 215, 70, 70, 30, 40, 20},
    /* Native (C++) frames are not recorded yet; their colour is kept for them. */
    [K_NATIVE] = {"n", "native", 160, 110, 200, 30, 30, 30},
};

typedef struct drawing {
    const conv_profile *p;
    const conv_tree *t;
    const uint8_t *kinds; /* per function */
    char **labels;        /* per function: its short C++ name (conv_shorten.h), NULL
                             when the label is the name */
    int reverse;
    int depth;            /* deepest drawn frame, the root being 0 */
    int top;              /* the root's y: under the legend and the load lane */
    uint64_t total;
    size_t elided, elided_samples;
    FILE *out;
    /* --base: each node's samples on the same path in the base, and the
     * change (in points) that is drawn at full colour. NULL: no base. */
    const uint64_t *base_at;
    uint64_t base_total;
    double full_change;
} drawing;

static kind kind_of(const conv_function *f, int outermost)
{
    if (!strcmp(f->name, CONV_EMPTY_STACK))
        return K_IDLE;
    if (conv_function_is_native(f))
        return K_NATIVE;
    if (!*f->file)
        return strncmp(f->name, "[unresolved ", 12) ? K_BIF : K_UNRESOLVED;
    /* Zeek's event loop calls handlers (and hooks): the outermost frames. */
    return outermost || conv_function_names_body(f) ? K_HANDLER : K_SCRIPT;
}

static uint8_t *classify(const conv_profile *p)
{
    uint8_t *outer = calloc(p->nfunctions + 1, 1);
    if (!outer)
        return NULL;
    for (size_t i = 0; i < p->nstacks; i++)
        for (uint32_t k = 0; k < p->stacks[i].nlocs; k++) {
            /* The outermost script frame: native ones (main, the event
             * loop) come before it in a native + script stack. */
            uint32_t f = p->locations[p->stacks[i].locs[k]].function;
            if (!conv_function_is_native(&p->functions[f])) {
                outer[f] = 1;
                break;
            }
        }
    for (size_t i = 0; i < p->nfunctions; i++)
        outer[i] = (uint8_t)kind_of(&p->functions[i], outer[i]);
    return outer;
}

static int drawn(const drawing *d, uint64_t samples)
{
    return samples * ELIDE_BELOW >= d->total && samples > 0;
}

static const char *name_of(const drawing *d, uint32_t node)
{
    uint32_t f = d->t->nodes[node].function;
    return f == CONV_TREE_NONE ? "all" : d->p->functions[f].name;
}

/* What a frame's box shows: a native function's short name (a C++ name
 * of hundreds of characters fills no box), else the name. The tooltip and
 * the search keep the full name. */
static const char *label_of(const drawing *d, uint32_t node)
{
    uint32_t f = d->t->nodes[node].function;
    return f != CONV_TREE_NONE && d->labels[f] ? d->labels[f] : name_of(d, node);
}

/* The short labels of the native functions whose name they shorten; NULL
 * on no memory. */
static char **make_labels(const conv_profile *p)
{
    char **labels = calloc(p->nfunctions + 1, sizeof *labels);
    for (size_t i = 0; labels && i < p->nfunctions; i++) {
        if (!conv_function_is_native(&p->functions[i]))
            continue;
        char *s = conv_short_name(p->functions[i].name);
        if (!s) {
            for (size_t k = 0; k < i; k++)
                free(labels[k]);
            free(labels);
            return NULL;
        }
        if (!strcmp(s, p->functions[i].name)) {
            free(s);
            s = NULL;
        }
        labels[i] = s;
    }
    return labels;
}

static void free_labels(char **labels, size_t n)
{
    for (size_t i = 0; labels && i < n; i++)
        free(labels[i]);
    free(labels);
}

/* Children in name order, as flame graphs draw them: position carries no
 * meaning, but must be stable from one graph to the next. */
static int by_name(const void *a, const void *b, void *ctx)
{
    const drawing *d = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(name_of(d, x), name_of(d, y));
    return c ? c : (x > y) - (x < y);
}

static size_t count_nodes(const drawing *d, uint32_t node)
{
    size_t n = 1;
    for (uint32_t c = d->t->nodes[node].first_child; c != CONV_TREE_NONE; c = d->t->nodes[c].next_sibling)
        n += count_nodes(d, c);
    return n;
}

/* The deepest frame that will be drawn, and what is left out: a frame too
 * narrow to draw takes its callees with it. */
static void measure(drawing *d, uint32_t node, int depth)
{
    const conv_tree_node *n = &d->t->nodes[node];
    if (!drawn(d, n->total)) {
        d->elided += count_nodes(d, node);
        d->elided_samples += n->total;
        return;
    }
    if (depth > d->depth)
        d->depth = depth;
    for (uint32_t c = n->first_child; c != CONV_TREE_NONE; c = d->t->nodes[c].next_sibling)
        measure(d, c, depth + 1);
}

static double pct(uint64_t n, uint64_t total) { return total ? 100.0 * (double)n / (double)total : 0; }

/* --base: the change of a node's share of its profile, in points. */
static double change_at(const drawing *d, uint32_t node)
{
    return pct(d->t->nodes[node].total, d->total) - pct(d->base_at[node], d->base_total);
}

static void put_colour(drawing *d, uint32_t node, kind k)
{
    if (d->base_at) { /* red grew, blue shrank, white unchanged */
        double c = change_at(d, node) / d->full_change;
        int fade = (int)(210 * (c > 1 ? 1 : c < -1 ? 1 : c < 0 ? -c : c));
        fprintf(d->out, "rgb(%d,%d,%d)", c < 0 ? 250 - fade : 250, 250 - fade, c > 0 ? 250 - fade : 250);
        return;
    }
    /* A name's hash varies the shade, so neighbours of one kind stay apart
     * and a function keeps its colour from one graph to the next. */
    uint32_t h = 2166136261u;
    for (const char *s = name_of(d, node); *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    double v = (double)(h % 1000) / 1000.0;
    fprintf(d->out, "rgb(%d,%d,%d)", KINDS[k].r + (int)(v * KINDS[k].dr),
            KINDS[k].g + (int)(v * KINDS[k].dg), KINDS[k].b + (int)(v * KINDS[k].db));
}

static void frame(drawing *d, uint32_t node, int depth, uint64_t offset)
{
    const conv_tree_node *n = &d->t->nodes[node];
    uint32_t fi = n->function;
    const conv_function *f = fi == CONV_TREE_NONE ? NULL : &d->p->functions[fi];
    kind k = f ? (kind)d->kinds[fi] : K_ALL;
    double scale = (double)(WIDTH - 2 * XPAD) / (double)d->total;
    double x = XPAD + (double)offset * scale, w = (double)n->total * scale;
    int y = d->top + depth * FRAME_H;
    FILE *out = d->out;

    const char *name = label_of(d, node);
    fprintf(out, "<g class=\"fr %s\"%s data-o=\"%llu\" data-n=\"%llu\"", KINDS[k].class_name,
            f ? "" : " id=\"root\"", (unsigned long long)offset, (unsigned long long)n->total);
    if (name != name_of(d, node)) { /* the script's label after a zoom */
        fputs(" data-l=\"", out);
        conv_put_xml(out, name, SIZE_MAX);
        fputc('"', out);
    }
    fputs("><title>", out);
    conv_put_xml(out, name_of(d, node), SIZE_MAX);
    if (f && *f->file && !conv_function_names_body(f)) {
        fputc('\n', out);
        conv_put_xml(out, f->file, SIZE_MAX);
        if (f->start_line) /* 0: not known (a function ZAM inlined) */
            fprintf(out, ":%d", f->start_line);
    }
    fprintf(out, "\n%s, %llu samples, %.2f%%", KINDS[k].label, (unsigned long long)n->total,
            pct(n->total, d->total));
    if (d->base_at)
        fprintf(out, "\nbase %.2f%%, change %+.2f points", pct(d->base_at[node], d->base_total),
                change_at(d, node));
    fputs("</title>", out);
    fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"", x, y, w, FRAME_H - 1);
    put_colour(d, node, k);
    fprintf(out, "\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
    /* Cut to fit, as the script does after a zoom: readable without it. */
    int fits = (int)((w - 6) / CHAR);
    if (fits >= 3) {
        if (conv_text_chars(name) <= (size_t)fits) {
            conv_put_xml(out, name, SIZE_MAX);
        } else {
            conv_put_xml(out, name, (size_t)fits - 2);
            fputs("..", out);
        }
    }
    fputs("</text></g>\n", out);
}

static int draw(drawing *d, uint32_t node, int depth, uint64_t offset)
{
    frame(d, node, depth, offset);
    size_t nc = 0;
    for (uint32_t c = d->t->nodes[node].first_child; c != CONV_TREE_NONE; c = d->t->nodes[c].next_sibling)
        nc++;
    uint32_t *kids = malloc((nc ? nc : 1) * sizeof *kids);
    if (!kids)
        return -1;
    nc = 0;
    for (uint32_t c = d->t->nodes[node].first_child; c != CONV_TREE_NONE; c = d->t->nodes[c].next_sibling)
        kids[nc++] = c;
    qsort_r(kids, nc, sizeof *kids, by_name, d);
    int rc = 0;
    for (size_t i = 0; i < nc && !rc; i++) {
        uint64_t total = d->t->nodes[kids[i]].total;
        if (drawn(d, total))
            rc = draw(d, kids[i], depth + 1, offset);
        offset += total;
    }
    free(kids);
    return rc;
}

/* "pid 4242 (worker-1) on sensor-1, pid 4243 ...": at most 8, then a count. */
static void put_processes(FILE *out, const conv_profile *p)
{
    size_t shown = p->nprocesses < 8 ? p->nprocesses : 8;
    for (size_t i = 0; i < shown; i++) {
        const conv_process *q = &p->processes[i];
        fprintf(out, "%spid %u", i ? ", " : "", q->pid);
        if (*q->node) {
            fputs(" (", out);
            conv_put_xml(out, q->node, 64);
            fputc(')', out);
        }
    }
    if (shown < p->nprocesses)
        fprintf(out, " and %zu more", p->nprocesses - shown);
    if (!p->nprocesses)
        fputs("no processes", out);
}

static void header(drawing *d, int height)
{
    const conv_profile *p = d->p;
    const conv_meta *m = &p->meta;
    FILE *out = d->out;
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" data-w=\"%d\" data-xpad=\"%d\" data-char=\"%.2f\" "
            "onload=\"zsInit(evt)\">\n",
            WIDTH, height, WIDTH, height, WIDTH, XPAD, CHAR);
    fputs("<style type=\"text/css\">\n"
          "text { font-family: monospace; font-size: 11px; fill: #000; }\n"
          ".title { font-family: sans-serif; font-size: 17px; }\n"
          ".sub { font-family: sans-serif; font-size: 12px; fill: #444; }\n"
          ".btn { font-family: sans-serif; font-size: 12px; fill: #14c; cursor: pointer; }\n"
          "g.fr { cursor: pointer; }\n"
          "g.fr:hover rect { stroke: #000; stroke-width: 0.5; }\n"
          "g.anc rect { opacity: 0.55; }\n"
          "g.fr text { pointer-events: none; }\n"
          "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n",
          out);
    fputs(CONV_SVG_SCRIPT, out);
    fputs("]]></script>\n", out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fdfdf8\"/>\n", WIDTH, height);

    double secs = (double)m->duration_ns / 1e9;
    fprintf(out, "<text class=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">Zeek ", WIDTH / 2);
    conv_put_xml(out, m->zeek_version ? m->zeek_version : "?", 200);
    fputs(" on ", out);
    conv_put_xml(out, m->host ? m->host : "?", 200);
    fprintf(out, ": %llu samples over %.2f s</text>\n", (unsigned long long)d->total, secs);
    fprintf(out, "<text class=\"sub\" x=\"%d\" y=\"42\" text-anchor=\"middle\">", WIDTH / 2);
    put_processes(out, p);
    if (m->start_wall_ns > 0) {
        char when[64];
        time_t t = (time_t)(m->start_wall_ns / 1000000000LL);
        struct tm tm;
        if (gmtime_r(&t, &tm) && strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm))
            fprintf(out, "; from %s", when);
    }
    fputs("; recorded by zeek-spy ", out);
    conv_put_xml(out, m->recorder_version ? m->recorder_version : "?", 64);
    fprintf(out, "%s</text>\n", d->reverse ? "; reversed: innermost frames at the root" : "");

    /* The legend: the kinds this profile has, or what the colours of a
     * differential graph say. */
    int present[NKINDS] = {0}, x = XPAD;
    if (d->base_at) {
        fprintf(out, "<rect x=\"%d\" y=\"54\" width=\"12\" height=\"12\" fill=\"rgb(250,40,40)\"/>"
                "<text class=\"sub\" x=\"%d\" y=\"64\">grew</text>"
                "<rect x=\"%d\" y=\"54\" width=\"12\" height=\"12\" fill=\"rgb(40,40,250)\"/>"
                "<text class=\"sub\" x=\"%d\" y=\"64\">shrank, against the base (%llu samples): "
                "full colour at %.2f points of the samples; width by this profile</text>\n",
                x, x + 16, x + 60, x + 76, (unsigned long long)d->base_total, d->full_change);
    }
    for (size_t i = 0; i < p->nfunctions && !d->base_at; i++)
        present[d->kinds[i]] = 1;
    for (int k = K_HANDLER; k < NKINDS; k++) {
        if (!present[k])
            continue;
        fprintf(out, "<rect x=\"%d\" y=\"54\" width=\"12\" height=\"12\" fill=\"rgb(%d,%d,%d)\"/>"
                "<text class=\"sub\" x=\"%d\" y=\"64\">%s</text>\n",
                x, KINDS[k].r, KINDS[k].g, KINDS[k].b, x + 16, KINDS[k].label);
        x += 16 + (int)strlen(KINDS[k].label) * 7 + 18;
    }
    fprintf(out, "<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"64\" style=\"opacity:0\">Reset zoom</text>\n"
            "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"64\" text-anchor=\"end\">Search</text>\n"
            "<text id=\"clear\" class=\"btn\" x=\"%d\" y=\"64\" text-anchor=\"end\" style=\"opacity:0\">Clear</text>\n",
            WIDTH / 2 + 120, WIDTH - XPAD, WIDTH - XPAD - 60);
    fprintf(out, "<text id=\"details\" class=\"sub\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, DETAILS_Y);
    fprintf(out, "<text id=\"matched\" class=\"sub\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
            WIDTH - XPAD, DETAILS_Y);
}

static void footer(drawing *d, int height)
{
    FILE *out = d->out;
    fprintf(out, "<text id=\"elided\" class=\"sub\" x=\"%d\" y=\"%d\">", XPAD, height - 6);
    if (!d->total)
        fputs("No samples: the recording (or the --pid/--node/--from/--to filter) left none.", out);
    else if (d->elided)
        fprintf(out, "%zu frames under 0.01%% of the samples are not drawn (%zu samples, %.3f%%).",
                d->elided, d->elided_samples, pct(d->elided_samples, d->total));
    else
        fputs("Every frame is drawn. Click a frame to zoom, Search (or Ctrl-F) to highlight.", out);
    fputs("</text>\n</svg>\n", out);
}

/* --base: each node's samples in the base, and the largest change drawn
 * (the colour's full scale, at least half a point: smaller changes are
 * mostly sampling noise). 0, or -1 on no memory. */
static int against_base(drawing *d, const conv_profile *base, uint64_t **base_at)
{
    *base_at = malloc((d->t->n ? d->t->n : 1) * sizeof **base_at);
    if (!*base_at || conv_diff_path_samples(base, d->p, d->t, d->reverse, *base_at))
        return -1;
    d->base_at = *base_at;
    d->base_total = base->meta.samples ? base->meta.samples : 1;
    d->full_change = 0.5;
    for (size_t i = 0; i < d->t->n; i++)
        if (drawn(d, d->t->nodes[i].total) && fabs(change_at(d, (uint32_t)i)) > d->full_change)
            d->full_change = fabs(change_at(d, (uint32_t)i));
    return 0;
}

/* 0, or -1 with errno set (out of memory, write error). */
static int write_svg(const conv_profile *p, const conv_profile *base, int reverse, const char *when,
                     FILE *out)
{
    conv_tree t;
    uint64_t *base_at = NULL;
    drawing d = {.p = p, .t = &t, .reverse = reverse, .out = out};
    uint8_t *kinds = classify(p);
    char **labels = make_labels(p);
    if (!kinds || !labels || conv_tree_build(&t, p, d.reverse)) {
        free(kinds);
        free_labels(labels, p->nfunctions);
        errno = ENOMEM;
        return -1;
    }
    d.kinds = kinds;
    d.labels = labels;
    d.total = t.nodes[0].total;
    if (base && against_base(&d, base, &base_at)) {
        free(base_at);
        conv_tree_free(&t);
        free(kinds);
        free_labels(labels, p->nfunctions);
        errno = ENOMEM;
        return -1;
    }
    if (d.total)
        measure(&d, 0, 0);
    int lane_h = conv_svg_lane_height(p->lane);
    d.top = TOP + lane_h;
    int height = d.top + (d.depth + 1) * FRAME_H + BOTTOM;
    header(&d, height);
    if (lane_h)
        conv_svg_lane_draw(out, p->lane, TOP - 4, XPAD, WIDTH - XPAD, when);
    int rc = d.total ? draw(&d, 0, 0, 0) : 0;
    footer(&d, height);
    free(base_at);
    conv_tree_free(&t);
    free(kinds);
    free_labels(labels, p->nfunctions);
    if (rc) {
        errno = ENOMEM;
        return -1;
    }
    return ferror(out) ? -1 : 0;
}

int conv_write_svg(const conv_profile *p, const conv_write_options *o, FILE *out, zs_error *err)
{
    return write_svg(p, o->base, o->reverse, o->when, out) ? conv_output_errno(err) : 0;
}
