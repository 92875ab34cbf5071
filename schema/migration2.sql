-- SPDX-License-Identifier: BSD-3-Clause
-- Migration 2: processes (host, cluster node, pid), so that merged profiles
-- of several hosts and cluster nodes keep their pprof labels. Stacks point
-- at their process row; -1 for entries stored before (none are served: an
-- entry from another converter version is a miss).
CREATE TABLE processes (
    recording INTEGER NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    idx       INTEGER NOT NULL,
    host      TEXT    NOT NULL,
    node      TEXT    NOT NULL,
    pid       INTEGER NOT NULL,
    PRIMARY KEY (recording, idx)
) WITHOUT ROWID;

ALTER TABLE stacks ADD COLUMN process INTEGER NOT NULL DEFAULT -1;
