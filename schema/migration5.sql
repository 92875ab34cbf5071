-- SPDX-License-Identifier: BSD-3-Clause
-- Migration 5: recordings whose sampler marks each sample on or off the CPU
-- (format 7, BPF). A profile is of one view: every sample (wall) or the
-- on-CPU samples alone (cpu; the key says so too); marked says the samples
-- were marked, off_cpu how many of them (of those the other filters kept)
-- were taken off the CPU: in samples for the wall view, left out of the
-- cpu view. The rows stored before are the ptrace sampler's: wall, unmarked.
ALTER TABLE recordings ADD COLUMN view TEXT NOT NULL DEFAULT 'wall';
ALTER TABLE recordings ADD COLUMN marked INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recordings ADD COLUMN off_cpu INTEGER NOT NULL DEFAULT 0;
