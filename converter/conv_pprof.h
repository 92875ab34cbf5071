/* The pprof output: the aggregated profile as a gzipped profile.proto that
 * `go tool pprof` and other pprof clients read. */
#ifndef CONV_PPROF_H
#define CONV_PPROF_H

#include "conv_profile.h"
#include "zs_error.h"

/* Writes p to path, replacing it atomically: a reader sees the old file or
 * the complete new one, never a partial profile. 0 or -1 (err filled). */
int conv_write_pprof(const conv_profile *p, const char *path, zs_error *err);

#endif
