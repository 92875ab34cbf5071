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
    const zs_notes *notes;  /* in: progress of long reads (NULL: none) */
    int want_timeline;      /* in: keep every sample's time (profile->timeline) */
    uint64_t samples;       /* samples read (before filtering) */
    int truncated;          /* last zstd frame cut short */
    uint64_t truncated_at;  /* its file offset */
    int has_trailer;
    uint64_t skipped_records;
} conv_read_report;

/* One recording, read once from its first record to its last: the header
 * first (enough for the cache key, so that a cache hit reads no further),
 * then, if still wanted, the rest into a profile. */
typedef struct conv_reading conv_reading;

/* Opens path and reads its header; want_key: also make its cache key (the
 * recording id and the file's size), failing when there is no header.
 * NULL with err set on failure. */
conv_reading *conv_read_open(const char *path, int want_key, zs_error *err);
/* The cache key; NULL when it was not asked for or cannot be made. */
const char *conv_read_key(const conv_reading *r);
/* Reads the rest of the recording into *out (the caller's to free).
 * report->notes and want_timeline are read; the rest of *report
 * is filled. Once per reading. 0, or -1 with err set. */
int conv_read_profile(conv_reading *r, const conv_filter *filter, conv_profile **out,
                      conv_read_report *report, zs_error *err);
void conv_read_close(conv_reading *r);

/* conv_read_open, conv_read_profile and conv_read_close in one. */
int conv_read_recording(const char *path, const conv_filter *filter, conv_profile **out,
                        conv_read_report *report, zs_error *err);

#endif
