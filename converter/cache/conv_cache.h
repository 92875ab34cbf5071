/* SPDX-License-Identifier: BSD-3-Clause */
/* The converter's sqlite cache: per recording, the resolved and aggregated
 * conv_profile, so that converting the same recording again skips reading
 * and resolving it. Schema: schema/cache.sql (versioned by PRAGMA
 * user_version, upgraded by the migrations in conv_cache.c).
 *
 * Safe with several converters on one cache at once (WAL, busy timeout, one
 * transaction per store). A cache file that is corrupt or newer than this
 * code is set aside with one warning (a note) and rebuilt, never fatal. */
#ifndef CONV_CACHE_H
#define CONV_CACHE_H

#include "profile/conv_profile.h"
#include "zs_error.h"

typedef struct conv_cache conv_cache;

/* path NULL -> default: $XDG_CACHE_HOME/zeek-spy/cache.sqlite, else
 * ~/.cache/zeek-spy/cache.sqlite (missing directories are created, mode
 * 0700). NULL with err set (ZS_E_CACHE) when no cache can be had at all;
 * the caller then goes on without one. A cache set aside is told to notes
 * (may be NULL). */
conv_cache *conv_cache_open(const char *path, const zs_notes *notes, zs_error *err);

/* The entry stored under key: 1 found (*out = a new profile, the caller's to
 * free), 0 not found (also when a different converter version stored it),
 * -1 error. */
int conv_cache_load(conv_cache *c, const char *key, conv_profile **out, zs_error *err);

/* Stores p under key, replacing any entry with that key, all or nothing.
 * 0 or -1. */
int conv_cache_store(conv_cache *c, const char *key, const conv_profile *p, zs_error *err);

void conv_cache_close(conv_cache *c);

/* The cache file's path (the default one resolved). */
const char *conv_cache_path(const conv_cache *c);

#endif
