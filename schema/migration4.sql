-- SPDX-License-Identifier: BSD-3-Clause
-- Migration 4: native frames with source lines (--native recordings whose
-- modules had DWARF on the sensor). A native function now names its source
-- file, so the file no longer tells native from script functions: a flag
-- does, set for the native functions stored before (file '[native]'). A
-- location may be a function inlined into the next outer location of its
-- stack, at the same address (pprof makes them one Location of several
-- Lines).
ALTER TABLE functions ADD COLUMN native INTEGER NOT NULL DEFAULT 0;
UPDATE functions SET native = 1 WHERE file = '[native]';
ALTER TABLE locations ADD COLUMN inlined INTEGER NOT NULL DEFAULT 0;
