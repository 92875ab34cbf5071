#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The BPF tick's cost under two builds of the recorder, in alternating
rounds on one target: on a VM the tick's cost drifts by 2x between hours
(each tick finds its code, the maps and zeek's pages cold), so a change to
the kernel side is judged against the build before it, minutes apart, not
against figures from another day.

    bpf_tick_ab.py BUILD_A BUILD_B [--rounds N] [--seconds S] [--rate HZ] [--native]
                   [--switch] [-- ZEEK COMMAND...]

Each round records the target with --cpu-only (the tick alone) for S
seconds under each build, A first in even rounds and B first in odd ones,
and reads zs_tick's run time per run from the kernel's counters
(kernel.bpf_stats_enabled, in the recorder's fdinfo). Script frames only
unless --native. Prints each round, the medians, and the median of the
rounds' B/A ratios. --switch: without --cpu-only, and the same for the
sched_switch program (zs_switch: zeek's leaves and returns, and a bit test
for every other switch of the host).

Default target: the test double of Zeek 8.2, stripped. A real zeek:
everything after -- is the command, launched once in a scratch directory
(it must outlast the rounds). Needs root. A report, not a gate.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sampler_bench import bpf_program_stats, set_bpf_stats  # noqa: E402


def run_ns(build, pid, seconds, rate, native, program, out):
    """program's mean run time (ns) and runs over one recording."""
    cmd = [os.path.join(build, "zeek-spy-record"), "-q", "-r", str(rate), "-p", str(pid),
           "-d", str(seconds), "-o", out] + ([] if native else ["--no-native"]) + \
        ([] if program == "zs_switch" else ["--cpu-only"])
    set_bpf_stats(1)
    try:
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        time.sleep(max(seconds - 0.5, 0.5))
        progs = bpf_program_stats(p.pid)
        _, err = p.communicate(timeout=60)
    finally:
        set_bpf_stats(0)
    if p.returncode != 0:
        sys.exit("bpf_tick_ab: %s failed: %s" % (cmd[0], err.strip()))
    t, c = progs.get(program, (0, 0))
    if not c:
        sys.exit("bpf_tick_ab: %s: no %s runs (is the BPF sampler available?)" % (cmd[0], program))
    return t / c, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_a")
    ap.add_argument("build_b")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--native", action="store_true", help="native frames too (the stack copy)")
    ap.add_argument("--switch", action="store_true", help="the sched_switch program instead")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if os.geteuid() != 0:
        sys.exit("bpf_tick_ab: needs root (BPF and kernel.bpf_stats_enabled)")
    tmp = tempfile.mkdtemp(prefix="zs-tick-ab-")
    total = a.rounds * 2 * (a.seconds + 1) + 10
    double = os.path.join(a.build_a, "tests", "target", "zeek-double-8.2-stripped")
    cmd = command or [double, "--seconds", str(int(total)), "--quiet"]
    target = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
    program = "zs_switch" if a.switch else "zs_tick"
    rows = []
    try:
        time.sleep(1.5)
        for r in range(a.rounds):
            got = {}
            for name in ("a", "b") if r % 2 == 0 else ("b", "a"):
                build = a.build_a if name == "a" else a.build_b
                got[name] = run_ns(build, target.pid, a.seconds, a.rate, a.native, program,
                                   os.path.join(tmp, "%s%d.zspy" % (name, r)))
            if target.poll() is not None:
                print("bpf_tick_ab: the target exited during round %d (not counted): give it more to do" % r)
                break
            rows.append(got)
            print("round %d: A %.0f ns (%d runs), B %.0f ns (%d runs), B/A %.2f"
                  % (r, got["a"][0], got["a"][1], got["b"][0], got["b"][1], got["b"][0] / got["a"][0]),
                  flush=True)
    finally:
        target.kill()
        target.wait()
        shutil.rmtree(tmp, True)
    if not rows:
        sys.exit("bpf_tick_ab: no round completed")
    med = lambda k: statistics.median(row[k][0] for row in rows)  # noqa: E731
    ratio = statistics.median(row["b"][0] / row["a"][0] for row in rows)
    print("bpf_tick_ab: %s, %s, %d Hz, %s, %d rounds of %g s: A median %.0f ns a run, B median %.0f ns, "
          "B/A median %.2f" % (program, os.path.basename(cmd[0]), a.rate,
                               "native frames" if a.native else "script frames", a.rounds, a.seconds, med("a"),
                               med("b"), ratio))


if __name__ == "__main__":
    main()
