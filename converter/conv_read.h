/* Reads one recording into a resolved, aggregated conv_profile: raw stacks
 * are counted while streaming, then resolved once each against the snapshot
 * image of their process, so work grows with distinct stacks, not samples. */
#ifndef CONV_READ_H
#define CONV_READ_H

#include <stddef.h>
#include <stdint.h>

#include "conv_filter.h"
#include "conv_profile.h"
#include "zs_error.h"


typedef struct conv_read_report {
    int show_progress;      /* in: a progress line on stderr for long reads */
    int want_timeline;      /* in: keep every sample's time (profile->timeline) */
    uint64_t samples;       /* samples read (before filtering) */
    int truncated;          /* last zstd frame cut short */
    uint64_t truncated_at;  /* its file offset */
    int has_trailer;
    uint64_t skipped_records;
} conv_read_report;

/* The cache key of a recording: its recording id and size (a recording that
 * is still growing gets a new key). Fills key; 0 or -1. */
int conv_recording_key(const char *path, char *key, size_t size, zs_error *err);

/* report->show_progress and want_timeline are read; the rest of *report
 * is filled. */
int conv_read_recording(const char *path, const conv_filter *filter, conv_profile **out,
                        conv_read_report *report, zs_error *err);

#endif
