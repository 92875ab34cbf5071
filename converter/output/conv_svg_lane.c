/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_svg_lane.h"

#include <time.h>

#include "output/conv_escape.h"

enum { CAPTION_H = 16, ROW_H = 30, LABEL_W = 150, ROW_GAP = 4 };
enum { ROW_PPS, ROW_LAG, ROW_QUEUE, NROWS };

static const struct {
    const char *label, *max_format, *colour;
    double max_scale;
} ROWS[NROWS] = {
    [ROW_PPS] = {"packets/s", "max %.0f", "#1f6fb4", 1},
    [ROW_LAG] = {"lag", "max %.2f s", "#c0392b", 1},
    [ROW_QUEUE] = {"socket queue", "max %.0f KiB", "#8e44ad", 1.0 / 1024},
};

static int has(const conv_lane_point *p, int row)
{
    return row == ROW_PPS ? p->has_rates : row == ROW_LAG ? p->has_lag : p->has_queue;
}

static double value(const conv_lane_point *p, int row)
{
    return row == ROW_PPS ? p->pps : row == ROW_LAG ? p->lag_s : p->queue_bytes;
}

static int rows_present(const conv_lane *lane, int *present)
{
    int n = 0;
    for (int r = 0; r < NROWS; r++) {
        present[r] = 0;
        for (size_t i = 0; i < lane->n && !present[r]; i++)
            present[r] = has(&lane->p[i], r);
        n += present[r];
    }
    return n;
}

int conv_svg_lane_height(const conv_lane *lane)
{
    int present[NROWS];
    int n = lane && lane->n ? rows_present(lane, present) : 0;
    return n ? CAPTION_H + n * (ROW_H + ROW_GAP) + ROW_GAP : 0;
}

static void put_time(FILE *out, int64_t t_ns)
{
    char s[32];
    time_t t = (time_t)(t_ns / 1000000000LL);
    struct tm tm;
    if (gmtime_r(&t, &tm) && strftime(s, sizeof s, "%H:%M:%S", &tm))
        fputs(s, out);
}

void conv_svg_lane_draw(FILE *out, const conv_lane *lane, int y, int x0, int x1, const char *when)
{
    int present[NROWS];
    if (!lane || !lane->n || !rows_present(lane, present))
        return;
    int64_t t0 = lane->p[0].t_ns - 1000000000LL, t1 = lane->p[0].t_ns;
    for (size_t i = 0; i < lane->n; i++) {
        if (lane->p[i].t_ns - 1000000000LL < t0)
            t0 = lane->p[i].t_ns - 1000000000LL;
        if (lane->p[i].t_ns > t1)
            t1 = lane->p[i].t_ns;
    }
    int cx = x0 + LABEL_W;
    double scale = (double)(x1 - cx) / (double)(t1 - t0);
    fprintf(out, "<g id=\"lane\"><text class=\"sub\" x=\"%d\" y=\"%d\">load, ", x0, y + 12);
    put_time(out, t0);
    fputs(" to ", out);
    put_time(out, t1);
    fprintf(out, " UTC (%.0f s), a line a process", (double)(t1 - t0) / 1e9);
    if (when) {
        fputs("; shaded: the seconds --when '", out);
        conv_put_xml(out, when, 200);
        fputs("' selected", out);
    }
    fputs("</text>\n", out);
    int ry = y + CAPTION_H + ROW_GAP;
    for (int r = 0; r < NROWS; r++) {
        if (!present[r])
            continue;
        double max = 0;
        for (size_t i = 0; i < lane->n; i++)
            if (has(&lane->p[i], r) && value(&lane->p[i], r) > max)
                max = value(&lane->p[i], r);
        fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f0f0ea\"/>\n", cx, ry,
                x1 - cx, ROW_H);
        for (size_t i = 0; when && i < lane->n; i++)
            if (lane->p[i].selected)
                fprintf(out, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#f6c9c0\"/>\n",
                        cx + (double)(lane->p[i].t_ns - 1000000000LL - t0) * scale, ry,
                        1e9 * scale, ROW_H);
        fprintf(out, "<text class=\"sub\" x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>"
                "<text class=\"sub\" x=\"%d\" y=\"%d\">",
                x0, ry + 12, ROWS[r].colour, ROWS[r].label, x0, ry + 26);
        fprintf(out, ROWS[r].max_format, max * ROWS[r].max_scale);
        fputs("</text>\n", out);
        /* A polyline a process: the lane's points are by process, then time. */
        int open = 0;
        for (size_t i = 0; i < lane->n; i++) {
            const conv_lane_point *p = &lane->p[i];
            if (open && p->pid != lane->p[i - 1].pid) {
                fputs("\"/>\n", out);
                open = 0;
            }
            if (!has(p, r))
                continue;
            if (!open) {
                fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                        ROWS[r].colour);
                open = 1;
            }
            double v = max > 0 ? value(p, r) / max : 0;
            fprintf(out, "%.1f,%.1f ", cx + (double)(p->t_ns - 500000000LL - t0) * scale,
                    ry + ROW_H - 2 - v * (ROW_H - 4));
        }
        if (open)
            fputs("\"/>\n", out);
        ry += ROW_H + ROW_GAP;
    }
    fputs("</g>\n", out);
}
