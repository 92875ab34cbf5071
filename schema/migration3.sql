-- SPDX-License-Identifier: BSD-3-Clause
-- Migration 3: native frames with their modules (--native recordings of
-- format 3), so that a cached profile still gives pprof its Mappings and
-- each native location its address. A location points at its mapping row
-- (mappings.idx + 1; 0: none, as every location stored before has).
CREATE TABLE mappings (
    recording   INTEGER NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    start       INTEGER NOT NULL,       -- uint64 addresses, stored as their int64 bit pattern
    limit_      INTEGER NOT NULL,
    file_offset INTEGER NOT NULL,
    file        TEXT    NOT NULL,       -- the path as /proc/PID/maps showed it
    build_id    TEXT    NOT NULL,       -- hex, '' when unknown
    PRIMARY KEY (recording, idx)
) WITHOUT ROWID;

ALTER TABLE locations ADD COLUMN mapping INTEGER NOT NULL DEFAULT 0;
ALTER TABLE locations ADD COLUMN address INTEGER NOT NULL DEFAULT 0;
