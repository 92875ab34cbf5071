#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The on-CPU view of a recording against Zeek's own --profile-scripts of
the same run: for the script functions with the most CPU in Zeek's log,
each one's share of zeek's CPU time by both.

    profile_scripts_compare.py BUILD_DIR RECORDING PROF_LOG [--rate HZ] [--top N]

Record the whole run, e.g.

    zeek-spy-record -r 100 -o run.zspy -- zeek -C -r trace.pcap --profile-scripts=prof.log local

Zeek's share of a function: its tot_CPU over zeek's CPU time (the
recording's on-CPU samples over the rate). Ours: the on-CPU samples with the
function anywhere on the stack. Zeek's log has a row for each body of an
event handler or hook and one more, "N-locations", for all of them
together: only that one is counted (summing both counts a handler twice).
A report, not a gate; prints the worst difference in points.
"""
import argparse
import collections
import os
import subprocess
import sys


def zeek_profile(path):
    """{function: tot_CPU seconds} of the script functions in a
    --profile-scripts log, one figure a function."""
    per_body, together = collections.Counter(), {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 6:
                continue
            name, where, kind, tot = cols[0], cols[1], cols[2], float(cols[4])
            if kind in ("BiF", "TOTAL") or name in ("total", "non-scripts") or name.startswith("all-"):
                continue
            if where.endswith("-locations"):
                together[name] = tot
            else:
                per_body[name] += tot
    totals = dict(per_body)
    totals.update(together)  # a handler's bodies together, where Zeek sums them
    return totals


def on_cpu_stacks(build, recording):
    out = subprocess.run([os.path.join(build, "zeek-spy-convert"), "--no-cache", "-q", "--view", "cpu",
                          "-f", "folded", "-o", "-", recording], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("zeek-spy-convert failed: %s" % out.stderr.strip())
    for line in out.stdout.splitlines():
        stack, _, count = line.rpartition(" ")
        yield [frame.split(" ")[0] for frame in stack.split(";")], int(count)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("recording")
    ap.add_argument("prof_log")
    ap.add_argument("--rate", type=float, default=100, help="the recording's -r (default 100)")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    zeek = zeek_profile(a.prof_log)
    with_function, samples = collections.Counter(), 0
    for names, count in on_cpu_stacks(a.build, a.recording):
        samples += count
        for name in set(names) & zeek.keys():
            with_function[name] += count
    if not samples:
        sys.exit("%s: no on-CPU samples" % a.recording)
    cpu_s = samples / a.rate
    print("%d on-CPU samples (%.2f s of zeek's CPU at %g Hz)" % (samples, cpu_s, a.rate))
    print("%-44s %8s %8s %6s" % ("function", "zeek %", "spy %", "diff"))
    worst = 0.0
    for name, tot in sorted(zeek.items(), key=lambda kv: -kv[1])[:a.top]:
        theirs, ours = 100 * tot / cpu_s, 100 * with_function[name] / samples
        worst = max(worst, abs(ours - theirs))
        print("%-44s %8.2f %8.2f %+6.2f" % (name[:44], theirs, ours, ours - theirs))
    print("worst difference: %.2f points" % worst)


if __name__ == "__main__":
    main()
