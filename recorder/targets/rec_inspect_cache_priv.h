/* SPDX-License-Identifier: BSD-3-Clause */
/* rec_inspect's side of its verdict cache. */
#ifndef REC_INSPECT_CACHE_PRIV_H
#define REC_INSPECT_CACHE_PRIV_H

#include <sys/stat.h>

#include "targets/rec_inspect.h"

/* The answer rec_inspect gave to this question about this file (its return
 * value, with *v and *err as it left them), or 1 when not known. */
int rec_inspect_cache_find(rec_inspect_cache *c, const struct stat *st, const rec_inspect_request *req,
                           rec_inspect_verdict *v, zs_error *err);
/* Remembers an answer that stands for the file (a verdict, or a refusal of
 * the file itself), not one that says only that this attempt failed. */
void rec_inspect_cache_keep(rec_inspect_cache *c, const struct stat *st, const rec_inspect_request *req,
                            int rc, const rec_inspect_verdict *v, const zs_error *err);

#endif
