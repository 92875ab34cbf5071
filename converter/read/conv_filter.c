/* SPDX-License-Identifier: BSD-3-Clause */
#include "read/conv_filter.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zs_grow.h"
#include "zs_parse.h"

int conv_bound_parse(const char *opt, const char *text, conv_bound *b, zs_error *err)
{
    b->set = 1;
    if (!strncmp(text, "net:", 4)) {
        b->clock = CONV_CLOCK_NET;
        if (zs_parse_double(text + 4, &b->seconds) || b->seconds < 0)
            return zs_fail(err, ZS_E_USAGE, "%s: '%s' is not net:SECONDS", opt, text);
        return 0;
    }
    if (text[0] == '@') {
        b->clock = CONV_CLOCK_WALL;
        if (zs_parse_double(text + 1, &b->seconds))
            return zs_fail(err, ZS_E_USAGE, "%s: '%s' is not @UNIXTIME", opt, text);
        return 0;
    }
    if (strchr(text, 'T') || strchr(text + 1, '-')) {
        struct tm tm = {0};
        const char *rest = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!rest || (*rest && strcmp(rest, "Z")))
            return zs_fail(err, ZS_E_USAGE, "%s: '%s' is not YYYY-MM-DDTHH:MM:SS (UTC)", opt, text);
        b->clock = CONV_CLOCK_WALL;
        b->seconds = (double)timegm(&tm);
        return 0;
    }
    b->clock = CONV_CLOCK_OFFSET;
    if (zs_parse_double(text, &b->seconds) || b->seconds < 0)
        return zs_fail(err, ZS_E_USAGE,
                       "%s: '%s' is not seconds, YYYY-MM-DDTHH:MM:SS, @UNIXTIME or net:SECONDS",
                       opt, text);
    return 0;
}

int conv_view_parse(const char *text, conv_view *v, zs_error *err)
{
    if (!strcmp(text, "wall"))
        *v = CONV_VIEW_WALL;
    else if (!strcmp(text, "cpu"))
        *v = CONV_VIEW_CPU;
    else
        return zs_fail(err, ZS_E_USAGE, "--view: '%s' is not wall or cpu", text);
    return 0;
}

const char *conv_view_name(conv_view v) { return v == CONV_VIEW_CPU ? "cpu" : "wall"; }

int conv_filter_add_pid(conv_filter *f, uint32_t pid)
{
    if (zs_grow(&f->pids, &f->pids_cap, f->npids + 1, sizeof *f->pids, 8))
        return -1;
    f->pids[f->npids++] = pid;
    return 0;
}

int conv_filter_add_node(conv_filter *f, const char *node)
{
    if (zs_grow(&f->nodes, &f->nodes_cap, f->nnodes + 1, sizeof *f->nodes, 8))
        return -1;
    if (!(f->nodes[f->nnodes] = strdup(node)))
        return -1;
    f->nnodes++;
    return 0;
}

int conv_filter_active(const conv_filter *f)
{
    return f && (f->npids || f->nnodes || f->from.set || f->to.set || f->when.n);
}

int conv_filter_needs_nettime(const conv_filter *f)
{
    return f && ((f->from.set && f->from.clock == CONV_CLOCK_NET) ||
                 (f->to.set && f->to.clock == CONV_CLOCK_NET));
}

static double on_clock(conv_clock c, double offset_s, double wall_s, double net_s)
{
    return c == CONV_CLOCK_OFFSET ? offset_s : c == CONV_CLOCK_WALL ? wall_s : net_s;
}

int conv_filter_keeps_time(const conv_filter *f, double offset_s, double wall_s, double net_s)
{
    if (!f)
        return 1;
    if (f->from.set) {
        double t = on_clock(f->from.clock, offset_s, wall_s, net_s);
        if ((f->from.clock == CONV_CLOCK_NET && net_s < 0) || t < f->from.seconds)
            return 0;
    }
    if (f->to.set) {
        double t = on_clock(f->to.clock, offset_s, wall_s, net_s);
        if ((f->to.clock == CONV_CLOCK_NET && net_s < 0) || t >= f->to.seconds)
            return 0;
    }
    return 1;
}

int conv_filter_keeps_process(const conv_filter *f, uint32_t pid, const char *node)
{
    if (!f)
        return 1;
    int ok = !f->npids;
    for (size_t i = 0; i < f->npids && !ok; i++)
        ok = f->pids[i] == pid;
    if (!ok)
        return 0;
    ok = !f->nnodes;
    for (size_t i = 0; i < f->nnodes && !ok; i++)
        ok = node && !strcmp(f->nodes[i], node);
    return ok;
}

void conv_filter_free(conv_filter *f)
{
    for (size_t i = 0; i < f->nnodes; i++)
        free(f->nodes[i]);
    free(f->nodes);
    free(f->pids);
    memset(f, 0, sizeof *f);
}
