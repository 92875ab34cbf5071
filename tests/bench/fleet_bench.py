#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What the always-on profiler costs a sensor: N zeeks recorded by one
recorder with default settings, at each rate, and the projection to a big
sensor.

For each rate (one recording a rate, a fresh recorder each time) it counts,
over the steady seconds (after --warmup):
  - the user and system time of every zeek-spy process (the recorder, its
    unwinder and any other child; children that ended count through the
    recorder's cutime/cstime);
  - every BPF program's run time, from the kernel's own counters
    (kernel.bpf_stats_enabled, read from the recorder's fdinfo), but for
    those the recorder runs in its own system calls (the looks: zs_due_run,
    zs_due), whose time its CPU time holds already;
  - the host's context switches (/proc/stat), for the switch hook's cost
    a switch when one is loaded.

A least-squares line through the rates splits the cost a worker into a part
independent of the rate (ms a second) and a part a sample (us), and the
projection gives a sensor of --cores cores and --workers workers at each
rate, for each host-wide switch rate of --switch-rates (the hook's cost a
switch times that rate, when the sampler runs a program on the host's
switches; none when it does not).

Default targets: the stripped 8.2 test double (not Zeek: its stacks are short
and its code small). A real zeek: everything after -- is the command, run N
times in N scratch directories; it must last the whole run (e.g. zeek -C -r
big.pcap --pseudo-realtime=0.2 local).

    fleet_bench.py BUILD_DIR [-n N] [--rates 1,19,100] [--seconds S]
        [--warmup S] [--cores 64] [--workers 60]
        [--switch-rates 100000,500000] [--budget-ms 1.0] [--rounds N] [-- COMMAND...]

Needs root (BPF, the sysctl). A report, not a gate: CI prints its table on
the doubles; docs/performance.md has the real-zeek figures.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sampler_bench import RUN_BY_RECORDER, bpf_program_stats  # noqa: E402  {name: (run_time_ns, run_cnt)}

TICK = os.sysconf("SC_CLK_TCK")


def stat_fields(pid):
    with open("/proc/%d/stat" % pid) as f:
        text = f.read()
    return text.rsplit(")", 1)[1].split()


def process_tree(root):
    """root and every live descendant of it."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parent[int(name)] = int(stat_fields(int(name))[1])
            except (OSError, IndexError):
                pass
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def tree_cpu_s(root):
    """CPU time of root's tree: every live thread's run time from schedstat
    (nanoseconds; /proc/PID/stat counts in ticks of 10 ms, too coarse for
    a recorder that runs a millisecond a second), plus the children that
    ended, reaped by root (cutime + cstime)."""
    total_ns = 0
    for pid in process_tree(root):
        try:
            for tid in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    total_ns += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    f = stat_fields(root)
    return total_ns / 1e9 + (int(f[13]) + int(f[14])) / TICK


def host_switches():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    return 0


def snapshot(rec_pid):
    return time.monotonic(), tree_cpu_s(rec_pid), bpf_program_stats(rec_pid), host_switches()


def measure_rate(build, pids, rate, warmup, seconds, tmp):
    out = os.path.join(tmp, "fleet-%d.zspy" % rate)
    cmd = [os.path.join(build, "zeek-spy-record"), "-v", "-r", str(rate), "-o", out]
    for pid in pids:
        cmd += ["-p", str(pid)]
    rec = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    time.sleep(warmup)
    if rec.poll() is not None:
        sys.exit("fleet_bench: the recorder at %d Hz stopped: %s" % (rate, rec.stderr.read().strip()))
    t0, cpu0, bpf0, sw0 = snapshot(rec.pid)
    time.sleep(seconds)
    t1, cpu1, bpf1, sw1 = snapshot(rec.pid)
    rec.send_signal(signal.SIGINT)
    _, err = rec.communicate(timeout=120)
    lasted = time.monotonic() - started
    if rec.returncode != 0:
        sys.exit("fleet_bench: the recorder at %d Hz failed: %s" % (rate, err.strip()))
    os.remove(out)  # the next round's recording at this rate takes its name
    dt = t1 - t0
    progs = {name: (ns - bpf0.get(name, (0, 0))[0], runs - bpf0.get(name, (0, 0))[1])
             for name, (ns, runs) in bpf1.items()}
    # The kernel's timers for the looks run in no program's stats: their
    # own count and time (-v), over the whole recording, scaled to dt.
    m = re.search(r"timers in the kernel: (\d+) runs, (\d+) ns in all", err)
    if m:
        progs["timers"] = (int(m.group(2)) * dt / lasted, int(m.group(1)) * dt / lasted)
    return {
        "rate": rate,
        "user_ms": (cpu1 - cpu0) * 1e3 / dt,
        "bpf_ms": sum(ns for name, (ns, _) in progs.items() if name not in RUN_BY_RECORDER) / 1e6 / dt,
        "progs": {k: (ns / 1e6 / dt, runs / dt) for k, (ns, runs) in progs.items()},
        "host_switches": (sw1 - sw0) / dt,
    }


def line_fit(xs, ys):
    """(intercept, slope) of the least-squares line."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - slope * mx, slope


HOOK = "zs_switch"  # the one program that runs on every switch of the host


def main():
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description="the always-on cost a worker, and a big sensor's projection")
    ap.add_argument("build")
    ap.add_argument("-n", type=int, default=2, help="zeeks recorded at once (default 2)")
    ap.add_argument("--rates", default="1,19,100")
    ap.add_argument("--seconds", type=float, default=14, help="steady seconds measured a rate")
    ap.add_argument("--warmup", type=float, default=5, help="seconds before measuring (attach, tables)")
    ap.add_argument("--cores", type=int, default=64)
    ap.add_argument("--workers", type=int, default=60)
    ap.add_argument("--switch-rates", default="100000,500000")
    ap.add_argument("--budget-ms", type=float, default=1.0, help="a worker's budget, ms of CPU a second")
    ap.add_argument("--rounds", type=int, default=1,
                    help="sweeps over the rates, each in another order; the median a rate (default 1)")
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if os.geteuid() != 0:
        sys.exit("fleet_bench: needs root (BPF and kernel.bpf_stats_enabled)")
    try:
        rates = [int(r) for r in a.rates.split(",")]
        switch_rates = [float(s) for s in a.switch_rates.split(",")]
    except ValueError:
        sys.exit("fleet_bench: --rates and --switch-rates take comma-separated numbers")
    if len(rates) < 2 or a.n < 1:
        sys.exit("fleet_bench: needs two rates or more and -n 1 or more")

    tmp = tempfile.mkdtemp(prefix="zs-fleet-bench-")
    lasts = (a.warmup + a.seconds + 3) * len(rates) * max(a.rounds, 1) + 10
    double = os.path.join(os.path.abspath(a.build), "tests", "target", "zeek-double-8.2-stripped")
    cmd = command or [double, "--seconds", str(int(lasts)), "--quiet"]
    targets = []
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=False)
    try:
        for i in range(a.n):
            wd = os.path.join(tmp, "zeek-%d" % i)
            os.mkdir(wd)
            targets.append(subprocess.Popen(cmd, cwd=wd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1)
        for t in targets:
            if t.poll() is not None:
                sys.exit("fleet_bench: a target ended at once: %s" % " ".join(cmd))
        by_rate = {r: [] for r in rates}
        for k in range(max(a.rounds, 1)):
            # Each round starts at another rate: a target's own phases (its
            # start, a slow trace) do not always fall on the same one.
            for r in rates[k % len(rates):] + rates[:k % len(rates)]:
                by_rate[r].append(measure_rate(a.build, [t.pid for t in targets], r, a.warmup, a.seconds, tmp))
                if any(t.poll() is not None for t in targets):
                    sys.exit("fleet_bench: a target ended before the %d Hz phase did: it must last the "
                             "whole run (about %.0f s)" % (r, lasts))
        runs = [sorted(by_rate[r], key=lambda x: x["user_ms"] + x["bpf_ms"])[len(by_rate[r]) // 2]
                for r in rates]
    finally:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"], check=False)
        for t in targets:
            t.kill()
            t.wait()
        shutil.rmtree(tmp, True)
    report(a, cmd, rates, runs, switch_rates)


def report(a, cmd, rates, runs, switch_rates):
    n = a.n
    print("fleet_bench: %d x %s, default settings, %g s measured after %g s, %d CPUs here%s"
          % (n, os.path.basename(cmd[0]), a.seconds, a.warmup, os.cpu_count(),
             ", the median of %d rounds" % a.rounds if a.rounds > 1 else ""))
    print("%6s %16s %16s %16s %18s  %s" % ("Hz", "zeek-spy ms/s", "a worker ms/s", "user+sys ms/s",
                                            "BPF ms/s", "BPF programs: ms/s (runs/s); * in user+sys"))
    for r in runs:
        progs = ", ".join("%s%s %.2f (%.0f)" % (k, "*" if k in RUN_BY_RECORDER else "", ms, runs_)
                          for k, (ms, runs_) in sorted(r["progs"].items()))
        total = r["user_ms"] + r["bpf_ms"]
        print("%6d %16.2f %16.3f %16.2f %18.3f  %s" % (r["rate"], total, total / n, r["user_ms"], r["bpf_ms"],
                                                      progs or "-"))
    # The hook's share is projected from the host's switch rate, not from
    # this host's: take it out of the line and price it a switch.
    hook_ns = [r["progs"][HOOK][0] * 1e6 / r["host_switches"] for r in runs
               if HOOK in r["progs"] and r["host_switches"]]
    per_switch_ns = sum(hook_ns) / len(hook_ns) if hook_ns else 0.0
    worker = [(r["user_ms"] + r["bpf_ms"] - r["progs"].get(HOOK, (0, 0))[0]) / n for r in runs]
    fixed_ms, per_hz_ms = line_fit(rates, worker)
    print("a worker: %.3f ms/s independent of the rate, %.1f us a sample; host-wide switch hook: %s"
          % (fixed_ms, per_hz_ms * 1e3,
             "%.0f ns a switch of the host (%.0f switches/s here)" % (per_switch_ns, runs[0]["host_switches"])
             if hook_ns else "none"))
    print("projection: %d workers on %d cores (budget %.2f ms/s a worker = %.2f %% of the host)"
          % (a.workers, a.cores, a.budget_ms, a.budget_ms * a.workers / (a.cores * 10)))
    print("%6s %20s %16s %16s %10s" % ("Hz", "host switches/s", "a worker ms/s", "% of the host", "budget"))
    for hz in sorted(set(rates + [19])):
        for sw in switch_rates if hook_ns else [0.0]:
            per_worker = fixed_ms + per_hz_ms * hz + per_switch_ns * sw / 1e6 / a.workers
            share = per_worker * a.workers / (a.cores * 1e3) * 100
            print("%6d %20s %16.3f %16.3f %10s" % (hz, "%.0f" % sw if hook_ns else "(no hook)", per_worker,
                                                   share, "ok" if per_worker <= a.budget_ms else "over"))


if __name__ == "__main__":
    main()
