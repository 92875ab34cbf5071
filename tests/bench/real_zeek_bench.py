#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What profiling costs a real zeek reading real traffic, side by side in one
run: zeek alone, with the script-only recorder (--no-native) and with native
frames (--native) (or the recorder options of each --mode), runs alternating (each round rotates the order, so that no
mode always runs first), medians over the rounds.

For each zeek binary given (e.g. one with DWARF and a copy stripped of it, as
packages are) and each mode:
  - zeek's wall time and its own CPU time (user + sys), as ratios to the
    runs without a profiler;
  - the recorder's CPU time, its unwinder's included, per sample and as a
    share of a core;
  - recording bytes per sample, distinct stacks;
  - from the recorder's report: stop time p50/p99, unwinds failed, not
    matching the script frames, deeper than their copy, and through the
    general path.

The zeek and the pcap are the caller's (nothing of Zeek is in this
repository): e.g. a Zeek built from its source and the traces under its
testing/btest/Traces, concatenated. Not a unit test: run by hand; the
figures go to docs/performance.md with their conditions.

    real_zeek_bench.py BUILD_DIR --zeek BIN [--zeek BIN2] --pcap FILE
        [--rate 100] [--rounds 5] [--zeekpath PATH] [--zam] [--pin CPU]
        [--mode NAME:FLAGS[:RECORDER]]... [--zeek-args "-C local"]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

DEFAULT_MODES = ["script:--no-native", "native:--native"]


class SchedWatch:
    """zeek's scheduler counters (/proc/PID/sched: migrations between CPUs,
    involuntary context switches), read every 0.2 s until it exits: the
    last reading is within 0.2 s of its end."""

    def __init__(self, pid):
        self.path, self.last, self.done = "/proc/%d/sched" % pid, {}, threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        while not self.done.wait(0.2):
            try:
                with open(self.path) as f:
                    text = f.read()
            except OSError:
                return
            values = {}
            for line in text.splitlines():
                name, sep, value = line.partition(":")
                if sep and value.strip().lstrip("-").isdigit():
                    values[name.strip()] = int(value)
            if values:
                self.last = values

    def stop(self):
        self.done.set()
        self.thread.join()


def run_once(args, zeek, mode, work):
    """One zeek run over the pcap, under the recorder in `mode`. Returns a
    dict of figures."""
    env = dict(os.environ)
    if args.zeekpath:
        env["ZEEKPATH"] = args.zeekpath
    cmd = [zeek, "-r", args.pcap] + (["-O", "ZAM"] if args.zam else []) + args.zeek_args.split()
    out = os.path.join(work, "rec-%s.zspy" % mode)
    if os.path.exists(out):
        os.unlink(out)
    logs = tempfile.mkdtemp(dir=work)
    start = time.monotonic()
    # Pinned before exec (not by taskset, whose own pid the recorder would see first).
    pin = (lambda: os.sched_setaffinity(0, {args.pin})) if args.pin is not None else None
    z = subprocess.Popen(cmd, cwd=logs, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=pin)
    sched = SchedWatch(z.pid)
    rec = None
    if mode != "none":
        flags = args.flags[mode]
        recorder = args.recorders.get(mode) or os.path.join(args.build, "zeek-spy-record")
        rec = subprocess.Popen([recorder, "-v", "-p", str(z.pid), "-r",
                                str(args.rate), "-o", out] + flags, stderr=subprocess.PIPE, text=True)
    _, status, zu = os.wait4(z.pid, 0)
    wall = time.monotonic() - start
    z.returncode = os.waitstatus_to_exitcode(status)
    zerr = z.stderr.read().decode(errors="replace")
    sched.stop()
    fig = {"wall": wall, "cpu": zu.ru_utime + zu.ru_stime, "user": zu.ru_utime, "sys": zu.ru_stime,
           "migrations": sched.last.get("se.nr_migrations", 0) / wall,
           "preempted": sched.last.get("nr_involuntary_switches", 0) / wall}
    if z.returncode != 0:
        sys.exit("zeek exit %d: %s" % (z.returncode, zerr[-2000:]))
    if rec:
        _, rstatus, ru = os.wait4(rec.pid, 0)
        err = rec.stderr.read()
        if os.waitstatus_to_exitcode(rstatus) != 0:
            sys.exit("recorder exit %d: %s" % (os.waitstatus_to_exitcode(rstatus), err))
        fig["rec_cpu"] = ru.ru_utime + ru.ru_stime
        m = re.search(r"(\d+) samples in ([\d.]+) s, (?:(\d+) distinct stacks, )?([\d.]+) [KMG]?i?B \(([\d.]+) B/sample\)", err)
        if not m:
            sys.exit("no summary in the recorder's report:\n" + err)
        fig["samples"] = int(m.group(1))
        fig["stacks"] = int(m.group(3) or 0)
        fig["bps"] = float(m.group(5))
        m = re.search(r"stop time per sample: p50 (\d+) us, p99 (\d+) us", err)
        fig["stop_p50"], fig["stop_p99"] = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        m = re.search(r"native frames: (\d+) stacks unwound; (\d+) unwinds failed, (\d+) did not match.*?"
                      r"(\d+) deeper than their stack copy", err)
        if m:
            fig["unwound"], fig["failed"], fig["mismatched"], fig["truncated"] = (int(x) for x in m.groups())
        m = re.search(r"native frames: (\d+) unwinds took the general path", err)
        fig["general"] = int(m.group(1)) if m else 0
        m = re.search(r"native frames: (\d+) samples written without them", err)
        fig["behind"] = int(m.group(1)) if m else 0
    return fig


def median(rows, key):
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--zeek", action="append", required=True)
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--zeekpath")
    ap.add_argument("--zam", action="store_true")
    ap.add_argument("--mode", action="append", help="NAME:FLAG,FLAG...[:RECORDER] recorder options of "
                    "one mode, and another recorder binary to run it with (e.g. an earlier build's) "
                    "(default: script:--no-native and native:--native)")
    ap.add_argument("--pin", type=int, help="run zeek pinned to this CPU (taskset), as zeekctl's pin_cpus does")
    ap.add_argument("--zeek-args", default="local",
                    help="zeek's arguments after -r PCAP, space-separated (default: local)")
    args = ap.parse_args()
    args.flags, args.recorders = {}, {}
    for m in args.mode or DEFAULT_MODES:
        name, _, rest = m.partition(":")
        flags, _, recorder = rest.partition(":")
        args.flags[name] = [f for f in flags.split(",") if f]
        args.recorders[name] = recorder
    modes = ["none"] + list(args.flags)
    work = tempfile.mkdtemp(prefix="zs-real-bench-")
    print("rate %d Hz, %d rounds, pcap %s, zeek arguments %s%s" % (args.rate, args.rounds, args.pcap,
          args.zeek_args, ", -O ZAM" if args.zam else ""))
    for zeek in args.zeek:
        runs = {m: [] for m in modes}
        for r in range(args.rounds):
            k = r % len(modes)
            order = modes[k:] + modes[:k]
            for mode in order:
                runs[mode].append(run_once(args, zeek, mode, work))
        base_wall, base_cpu = median(runs["none"], "wall"), median(runs["none"], "cpu")
        print("\n%s: alone, median wall %.2f s, zeek CPU %.2f s (user %.2f, sys %.2f), "
              "%.1f migrations/s, %.1f preemptions/s"
              % (zeek, base_wall, base_cpu, median(runs["none"], "user"), median(runs["none"], "sys"),
                 median(runs["none"], "migrations"), median(runs["none"], "preempted")))
        # Ratios to the run alone of the same round: this VM's speed drifts
        # by +-10 % over minutes, less between neighbouring runs.
        for mode in modes[1:]:
            for alone, with_rec in zip(runs["none"], runs[mode]):
                for key in ("wall", "cpu", "user", "sys"):
                    with_rec["paired_" + key] = with_rec[key] / max(alone[key], 1e-9)
        print("paired (each round's run against that round's run alone), medians:")
        print("%-14s %9s %9s %9s %9s %11s %11s" % ("mode", "wall", "zeek CPU", "user", "sys",
                                                    "migrations/s", "preempted/s"))
        for mode in modes[1:]:
            rs = runs[mode]
            print("%-14s %8.3fx %8.3fx %8.3fx %8.3fx %11.1f %11.1f"
                  % (mode, median(rs, "paired_wall"), median(rs, "paired_cpu"), median(rs, "paired_user"),
                     median(rs, "paired_sys"), median(rs, "migrations"), median(rs, "preempted")))
        print("%-14s %9s %9s %11s %9s %7s %7s %9s %9s  %s" % ("mode", "wall", "zeek CPU", "rec CPU/smp",
              "rec core", "B/smp", "stacks", "stop p50", "stop p99", "native: failed/mismatched/truncated/general/behind of unwound"))
        for mode in modes[1:]:
            rs = runs[mode]
            per_sample = statistics.median(r["rec_cpu"] / max(1, r["samples"]) * 1e6 for r in rs)
            core = statistics.median(r["rec_cpu"] / r["wall"] * 100 for r in rs)
            native = ""
            if "unwound" in rs[0]:
                native = "%d/%d/%d/%d/%d of %d" % tuple(median(rs, k) for k in
                                                         ("failed", "mismatched", "truncated", "general",
                                                          "behind", "unwound"))
            print("%-14s %8.3fx %8.3fx %9.0f us %8.1f%% %7.1f %7d %6d us %6d us  %s"
                  % (mode, median(rs, "wall") / base_wall, median(rs, "cpu") / base_cpu, per_sample, core,
                     median(rs, "bps"), median(rs, "stacks"), median(rs, "stop_p50"), median(rs, "stop_p99"),
                     native))
        print("each run (wall s / zeek CPU s): " + "; ".join(
            "%s %s" % (m, " ".join("%.2f/%.2f" % (r["wall"], r["cpu"]) for r in runs[m])) for m in modes))


if __name__ == "__main__":
    main()
