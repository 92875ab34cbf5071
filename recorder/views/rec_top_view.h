/* SPDX-License-Identifier: BSD-3-Clause */
/* Formats one --top snapshot from counts already ranked: for a terminal
 * (cursor home, each line cut to the width and cleared to its end, the
 * rest of the screen cleared) or as plain text (no escape codes). */
#ifndef REC_TOP_VIEW_H
#define REC_TOP_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rec_top_row {
    const char *name;    /* printable ASCII only: the caller made it so */
    const char *where;   /* "file:line", or "" */
    uint64_t wself, wtotal; /* in the window */
    uint64_t self, total;   /* since start */
} rec_top_row;

typedef struct rec_top_header {
    pid_t pid;           /* 0: several processes */
    const char *version; /* Zeek version of pid, or "" */
    double elapsed_s, window_s; /* window_s: how long the window really spans */
    unsigned window_len; /* --top-window, for the column titles */
    uint64_t wsamples, samples, wskipped, skipped;
    uint64_t stops;      /* stops measured; 0 in nonblocking mode */
    double stop_p50_us, stop_p99_us;
    int keys;            /* q is read: say so */
} rec_top_header;

typedef struct rec_top_text {
    char *buf;
    size_t len, cap;
} rec_top_text;

/* Replaces t's contents with the snapshot. width and height 0: plain text.
 * -1 only when out of memory (the buffer is kept and grown, never shrunk). */
int rec_top_format(rec_top_text *t, const rec_top_header *h, const rec_top_row *rows,
                   size_t nrows, int width, int height);

#endif
