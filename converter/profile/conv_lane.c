/* SPDX-License-Identifier: BSD-3-Clause */
#include "profile/conv_lane.h"

#include <stdlib.h>
#include <string.h>

#include "zs_grow.h"

int conv_lane_add(conv_lane *l, const conv_lane_point *pt)
{
    if (zs_grow(&l->p, &l->cap, l->n + 1, sizeof *l->p, 64))
        return -1;
    l->p[l->n++] = *pt;
    return 0;
}

int conv_lane_merge(conv_lane *dst, conv_lane *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (conv_lane_add(dst, &src->p[i]))
            return -1;
    conv_lane_free(src);
    return 0;
}

void conv_lane_free(conv_lane *l)
{
    free(l->p);
    memset(l, 0, sizeof *l);
}

enum { TOP_SECONDS = 3 };

static double key_of(const conv_lane_point *p, int lag) { return lag ? p->lag_s : p->pps; }

/* The TOP_SECONDS points of [from, to) with the largest packets a second
 * (or lag), largest first; how many. */
static size_t top_seconds(const conv_lane *l, size_t from, size_t to, int lag, size_t *top)
{
    size_t n = 0;
    for (size_t i = from; i < to; i++) {
        const conv_lane_point *p = &l->p[i];
        if (lag ? !p->has_lag : !p->has_rates)
            continue;
        size_t at = n < TOP_SECONDS ? n++ : TOP_SECONDS;
        while (at > 0 && key_of(&l->p[top[at - 1]], lag) < key_of(p, lag)) {
            if (at < TOP_SECONDS)
                top[at] = top[at - 1];
            at--;
        }
        if (at < TOP_SECONDS)
            top[at] = i;
    }
    return n;
}

static void describe_process(FILE *out, const conv_lane *l, size_t from, size_t to, int64_t start_ns,
                             const char *indent)
{
    const conv_lane_point *first = &l->p[from], *last = &l->p[to - 1];
    double pps_max = 0, lag_max = -1, queue_max = -1;
    for (size_t i = from; i < to; i++) {
        const conv_lane_point *p = &l->p[i];
        if (p->has_rates && p->pps > pps_max)
            pps_max = p->pps;
        if (p->has_lag && p->lag_s > lag_max)
            lag_max = p->lag_s;
        if (p->has_queue && p->queue_bytes > queue_max)
            queue_max = p->queue_bytes;
    }
    /* The seconds the readings cover: one a second, or one a cut where the
     * recorder's cut came less often (at low rates). */
    size_t n = to - from;
    double seconds = n > 1 ? (double)(last->t_ns - first->t_ns) / 1e9 * (double)n / (double)(n - 1) : 1;
    fprintf(out, "%spid %u load: %.0f seconds", indent, first->pid, seconds);
    if (last->has_counters) {
        fprintf(out, ", %s %s source; %llu packets received, %llu dropped (as zeek last asked), at most "
                "%.0f a second", last->live ? "live" : "trace file", last->af_packet ? "AF_Packet" : "libpcap",
                (unsigned long long)last->received, (unsigned long long)last->dropped, pps_max);
        if (first->has_counters && last->t_ns > first->t_ns && last->received >= first->received)
            fprintf(out, ", %.1f on average",
                    (double)(last->received - first->received) / ((double)(last->t_ns - first->t_ns) / 1e9));
    } else {
        fprintf(out, "; no packet source found (not in the layout, or not open)");
    }
    if (lag_max >= 0)
        fprintf(out, "; lag at most %.2f s", lag_max);
    if (queue_max >= 0)
        fprintf(out, "; socket queue at most %.0f bytes", queue_max);
    fputc('\n', out);
    for (int lag = 0; lag <= 1; lag++) {
        size_t top[TOP_SECONDS], n = top_seconds(l, from, to, lag, top);
        if (!n)
            continue;
        fprintf(out, "%s  %s seconds:", indent, lag ? "laggiest" : "busiest");
        for (size_t k = 0; k < n; k++) {
            const conv_lane_point *p = &l->p[top[k]];
            double at = (double)(p->t_ns - start_ns) / 1e9;
            if (lag)
                fprintf(out, "%s %.0f s (lag %.2f s)", k ? "," : "", at, p->lag_s);
            else
                fprintf(out, "%s %.0f s (%.0f packets/s)", k ? "," : "", at, p->pps);
        }
        fputc('\n', out);
    }
}

void conv_lane_describe(FILE *out, const conv_lane *l, int64_t start_ns, const char *indent)
{
    for (size_t from = 0, to; l && from < l->n; from = to) {
        for (to = from + 1; to < l->n && l->p[to].pid == l->p[from].pid; to++)
            ;
        describe_process(out, l, from, to, start_ns, indent);
    }
}
