-- SPDX-License-Identifier: BSD-3-Clause
-- zeek-spy-convert's cache, schema version 1 (PRAGMA user_version).
--
-- One row in `recordings` per cached recording, keyed by a text key the
-- converter derives from the recording. Below it, the recording's resolved,
-- aggregated profile exactly as the converter holds it in memory
-- (converter/conv_profile.h): interned functions, interned locations
-- (function + line), and distinct stacks with their sample counts. Each child
-- row carries its index in the profile's array (`idx`), so a load rebuilds
-- the same indexes in one ordered scan of each table.
--
-- This file is migration 1 (an empty database -> version 1). A later schema
-- change adds migration 2, 3, ... to the migrations array in
-- converter/conv_cache.c; this file is never edited once released, because
-- existing caches were built from it.
--
-- Embedded into the converter at build time (schema/cache_schema.cmake): keep
-- it plain SQL.

CREATE TABLE recordings (
    id               INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: a stray child row cannot collide
    key              TEXT    NOT NULL UNIQUE,
    converter        TEXT    NOT NULL,  -- converter version that resolved it; another version misses
    stored_at        INTEGER NOT NULL,  -- unix time, for pruning
    zeek_version     TEXT,              -- conv_meta; NULL when unknown
    host             TEXT,
    recorder_version TEXT,
    start_wall_ns    INTEGER NOT NULL,
    duration_ns      INTEGER NOT NULL,
    period_ns        INTEGER NOT NULL,
    samples          INTEGER NOT NULL,  -- uint64 counters, stored as their int64 bit pattern
    skipped          INTEGER NOT NULL,
    unresolved       INTEGER NOT NULL,
    torn             INTEGER NOT NULL
);

CREATE TABLE functions (
    recording  INTEGER NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    file       TEXT    NOT NULL,        -- '' for BiFs and pseudo-frames
    start_line INTEGER NOT NULL,
    PRIMARY KEY (recording, idx)
) WITHOUT ROWID;

CREATE TABLE locations (
    recording INTEGER NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    idx       INTEGER NOT NULL,
    function  INTEGER NOT NULL,         -- functions.idx of the same recording
    line      INTEGER NOT NULL,
    PRIMARY KEY (recording, idx)
) WITHOUT ROWID;

CREATE TABLE stacks (
    recording INTEGER NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    idx       INTEGER NOT NULL,
    pid       INTEGER NOT NULL,
    count     INTEGER NOT NULL,         -- samples
    locs      BLOB    NOT NULL,         -- locations.idx values, outermost first, uint32 little-endian each
    PRIMARY KEY (recording, idx)
) WITHOUT ROWID;

PRAGMA user_version = 1;
