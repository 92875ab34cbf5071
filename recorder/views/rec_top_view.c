/* SPDX-License-Identifier: BSD-3-Clause */
#include "views/rec_top_view.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NAME_WIDTH = 44 };

typedef struct page {
    rec_top_text *t;
    int width, height; /* 0: plain text */
    int lines;
    int failed;
} page;

static int reserve(rec_top_text *t, size_t more)
{
    if (t->len + more + 1 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + more + 1)
        cap *= 2;
    char *b = realloc(t->buf, cap);
    if (!b)
        return -1;
    t->buf = b;
    t->cap = cap;
    return 0;
}

/* One line; on a terminal cut to the width (every byte is one column: the
 * names are ASCII) and cleared to its end, and none past the last row. */
static void line(page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(page *p, const char *fmt, ...)
{
    if (p->failed || (p->height && p->lines >= p->height))
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(p->t, (size_t)n + 8)) {
        p->failed = 1;
        return;
    }
    if (p->height && p->lines > 0) {
        memcpy(p->t->buf + p->t->len, "\r\n", 2); /* no newline after the last row: no scroll */
        p->t->len += 2;
    }
    va_start(ap, fmt);
    vsnprintf(p->t->buf + p->t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    p->t->len += (size_t)(p->width && n > p->width ? p->width : n);
    if (p->height) {
        memcpy(p->t->buf + p->t->len, "\033[K", 3);
        p->t->len += 3;
    } else {
        p->t->buf[p->t->len++] = '\n';
    }
    p->lines++;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0;
}

int rec_top_format(rec_top_text *t, const rec_top_header *h, const rec_top_row *rows,
                   size_t nrows, int width, int height)
{
    page p = {.t = t, .width = width, .height = height};
    t->len = 0;
    if (height) {
        if (reserve(t, 3))
            return -1;
        memcpy(t->buf, "\033[H", 3);
        t->len = 3;
    }
    char who[96];
    if (h->pid)
        snprintf(who, sizeof who, "pid %d (Zeek %s)", (int)h->pid, h->version);
    else
        snprintf(who, sizeof who, "several processes");
    line(&p, "zeek-spy-record --top: %s, %.0f s%s", who, h->elapsed_s,
         h->keys ? "   (q quits)" : "");
    line(&p, "last %.0f s: %.1f samples/s, %llu samples, %llu skipped ticks;  since start: "
         "%llu samples, %llu skipped ticks",
         h->window_s, h->window_s > 0 ? (double)h->wsamples / h->window_s : 0,
         (unsigned long long)h->wsamples, (unsigned long long)h->wskipped,
         (unsigned long long)h->samples, (unsigned long long)h->skipped);
    if (h->stops)
        line(&p, "stop time per sample: p50 %.0f us, p99 %.0f us", h->stop_p50_us, h->stop_p99_us);
    else
        line(&p, "stop time per sample: no stops measured yet");
    line(&p, "%s", "");
    char last[32];
    snprintf(last, sizeof last, "last %u s", h->window_len);
    line(&p, "  %-16s  %s", last, "since start");
    line(&p, "  %6s %7s  %6s %7s  %-*s %s", "%self", "%total", "%self", "%total", NAME_WIDTH,
         "function", "location");
    for (size_t i = 0; i < nrows; i++) {
        const rec_top_row *r = &rows[i];
        line(&p, "  %6.1f %7.1f  %6.1f %7.1f  %-*s%s%s", pct(r->wself, h->wsamples),
             pct(r->wtotal, h->wsamples), pct(r->self, h->samples), pct(r->total, h->samples),
             r->where[0] ? NAME_WIDTH : 0, r->name, r->where[0] ? " " : "", r->where);
    }
    if (p.failed)
        return -1;
    if (height) {
        if (reserve(t, 3))
            return -1;
        memcpy(t->buf + t->len, "\033[J", 3); /* clear what the last snapshot left below */
        t->len += 3;
    } else {
        if (reserve(t, 1))
            return -1;
        t->buf[t->len++] = '\n'; /* a blank line between snapshots */
    }
    t->buf[t->len] = '\0';
    return 0;
}
