#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What each sampler takes from zeek, side by side in one run, from the
kernel's own per-event accounting rather than wall time (which drowns in a
VM's noise):

- zeek's context switches (its main thread's voluntary + involuntary, from
  /proc/PID/task/PID/status) per sample, over the same zeek's rate without
  a recorder (measured before and after);
- its run-queue wait (schedstat: time runnable but not running) per sample,
  over that rate;
- ptrace: the time zeek is held (the recorder's own figures: interrupt to
  resume);
- BPF: each program's run time per run, from the kernel's counters
  (kernel.bpf_stats_enabled, read in the recorder's fdinfo), and for the
  sched_switch program how many switches of the whole host it saw;
- the recorder's CPU (user + system, once it runs) per sample.

    sampler_bench.py BUILD_DIR [--seconds S] [--rate HZ] [--busy] [--no-native] [--cpu-only]
                     [-- ZEEK COMMAND...]

Both samplers take native frames (the default) unless --no-native; the BPF
time a sample is every program's run time (ticks, leaves, returns, and
the sched_switch program's runs for other tasks) over the samples.
--cpu-only adds a third phase: the BPF sampler with --cpu-only (ticks only).

Default target: the test double of Zeek 8.2, stripped, free to move
between CPUs. --busy runs one CPU burner per core throughout. A real zeek:
everything after -- is the command to launch (e.g. zeek -r trace.pcap
local, looped by the caller); it is launched once and measured throughout.
Needs root (ptrace, BPF, the sysctl). A report, not a gate.
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


def task_counters(pid):
    """(switches, run_ns, wait_ns) of pid's main thread so far."""
    switches = 0
    with open("/proc/%d/task/%d/status" % (pid, pid)) as f:
        for line in f:
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                switches += int(line.split()[1])
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        run_ns, wait_ns, _ = (int(x) for x in f.read().split())
    return switches, run_ns, wait_ns


def cpu_s(pid):
    """User + system CPU of pid so far (its own threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The programs the recorder runs in its own system calls (BPF_PROG_RUN of
# zs_due_run, a read of zs_due's iterator): their run time is part of the
# recorder's CPU time already; added to it, they would count twice (up to
# 0.9 ms a second at 19 Hz on a real zeek). The others (the tick, the
# switch hook) run in other tasks' time.
RUN_BY_RECORDER = ("zs_due_run", "zs_due")


def bpf_program_stats(pid):
    """{program name: (run_time_ns, run_cnt)} of the BPF programs pid holds."""
    out = {}
    fdinfo = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fdinfo):
        try:
            text = open(os.path.join(fdinfo, fd)).read()
        except OSError:
            continue
        m = re.search(r"prog_id:\s+(\d+)", text)
        t = re.search(r"run_time_ns:\s+(\d+)", text)
        c = re.search(r"run_cnt:\s+(\d+)", text)
        if not (m and t and c):
            continue
        show = subprocess.run(["bpftool", "prog", "show", "id", m.group(1)], capture_output=True,
                              text=True).stdout
        name = re.search(r"name (\S+)", show)
        out[name.group(1) if name else m.group(1)] = (int(t.group(1)), int(c.group(1)))
    return out


def set_bpf_stats(on):
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=%d" % on], check=False)


def folded_samples(build, rec):
    r = subprocess.run([os.path.join(build, "zeek-spy-convert"), "--no-cache", "-q", "-f", "folded",
                        "-o", "-", rec], capture_output=True, text=True)
    return sum(int(l.rsplit(" ", 1)[1]) for l in r.stdout.splitlines() if l.strip())


def held_us(stderr):
    """The recorder's own p50/p99 of the time zeek was held, or None."""
    for line in stderr.splitlines():
        if "held" in line or "stop time" in line:
            m = re.search(r"p50 ([\d.]+) us, p99 ([\d.]+) us", line)
            if m:
                return float(m.group(1)), float(m.group(2))
    return None


SWITCH_PROGRAM = r"""
tracepoint:sched:sched_switch /args->prev_pid == %d/ {
    @left = count();
    if (args->prev_state & 0xc) { @stopped = count(); }
    if (args->prev_state == 0 && strncmp(args->next_comm, "zeek-spy", 8) == 0) { @to_zeek_spy = count(); }
}
"""


class SwitchWatch:
    """Why zeek's main thread left its CPU, from the scheduler's tracepoint
    (bpftrace): stopped (a tracer's stop), or preempted (still runnable) by
    a zeek-spy process. Direct causes, unlike the switch counts: those drown
    in a real zeek's own variation. A zeek that blocks on its own and a
    zeek-spy process that runs next is not counted. Nothing without
    bpftrace."""

    def __init__(self, pid):
        self.p = None
        if not shutil.which("bpftrace"):
            return
        if not os.path.exists("/sys/kernel/tracing/events"):
            subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=False)
        self.p = subprocess.Popen(["bpftrace", "-e", SWITCH_PROGRAM % pid], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        for line in self.p.stdout:  # counting once it says so
            if line.startswith("Attaching"):
                break

    def stop(self):
        if not self.p:
            return None
        self.p.send_signal(signal.SIGINT)
        out, _ = self.p.communicate(timeout=60)
        counts = {k: int(v) for k, v in re.findall(r"@(\w+): (\d+)", out)}
        return {k: counts.get(k, 0) for k in ("left", "stopped", "to_zeek_spy")}


def quiet_phase(pid, seconds):
    before = task_counters(pid)
    time.sleep(seconds)
    after = task_counters(pid)
    return [a - b for a, b in zip(after, before)]


def unwound(stderr):
    """(stacks unwound, unwinds failed, not matching) from the -v report, or None."""
    m = re.search(r"native frames: (\d+) stacks unwound; (\d+) unwinds failed, (\d+) did not match", stderr)
    return tuple(int(g) for g in m.groups()) if m else None


def self_timed(stderr):
    """The BPF sampler's own timing of its parts, from the -v report:
    {ticks, leaves: (runs, ns)... } or None."""
    t = re.search(r"bpf: (\d+) on-CPU ticks", stderr)
    l = re.search(r"bpf: (\d+) switches of a target off its CPU", stderr)
    m = re.search(r"self-timed: ticks (\d+) ns, leaves (\d+) ns, returns (\d+) ns", stderr)
    if not (t and l and m):
        return None
    ticks, leaves = int(t.group(1)), int(l.group(1))
    return {"tick": (ticks, int(m.group(1))), "leave": (leaves, int(m.group(2))),
            "return": (leaves, int(m.group(3)))}


def recorded_phase(build, pid, seconds, rate, phase, tmp, native):
    """phase: ptrace, bpf or bpf-cpu-only (--cpu-only)."""
    sampler = "ptrace" if phase == "ptrace" else "bpf"
    rec = os.path.join(tmp, "%s.zspy" % phase)
    cmd = [os.path.join(build, "zeek-spy-record"), "-v", "--sampler", sampler, "-r", str(rate),
           "-p", str(pid), "-o", rec] + ([] if native else ["--no-native"]) + \
        (["--cpu-only"] if phase == "bpf-cpu-only" else [])
    if sampler == "bpf":
        set_bpf_stats(1)
    # The kernel side times its own parts too (a few clock reads a run).
    env = dict(os.environ, ZEEK_SPY_BPF_SELF_TIMING="1")
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(0.5)  # started (the target inspected): counted from here
    watch = SwitchWatch(pid)
    before, cpu0 = task_counters(pid), cpu_s(p.pid)
    time.sleep(seconds)
    after, cpu1 = task_counters(pid), cpu_s(p.pid)
    why = watch.stop()
    progs = bpf_program_stats(p.pid) if sampler == "bpf" else {}
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    if sampler == "bpf":
        set_bpf_stats(0)
    if p.returncode != 0:
        sys.exit("recorder (%s) failed: %s" % (sampler, err))
    return {
        "deltas": [a - b for a, b in zip(after, before)],
        "samples": folded_samples(build, rec) * seconds / (seconds + 0.5),
        "cpu_s": cpu1 - cpu0,
        "progs": progs,
        "held": held_us(err),
        "unwound": unwound(err),
        "self_timed": self_timed(err) if sampler == "bpf" else None,
        "why": why,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--no-native", action="store_true", help="script frames only")
    ap.add_argument("--cpu-only", action="store_true", help="a third phase: bpf --cpu-only")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    a.command = command
    if os.geteuid() != 0:
        sys.exit("sampler_bench: needs root (ptrace, BPF and kernel.bpf_stats_enabled)")
    tmp = tempfile.mkdtemp(prefix="zs-sampler-bench-")
    burners = []
    if a.busy:
        burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(os.cpu_count())]
    double = os.path.join(a.build, "tests", "target", "zeek-double-8.2-stripped")
    total = a.seconds * 4 + 10
    cmd = a.command or [double, "--seconds", str(int(total)), "--quiet"]
    # A real zeek writes its logs where it runs: in the scratch directory.
    target = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
    try:
        time.sleep(1)
        base1 = quiet_phase(target.pid, a.seconds)
        runs = {s: recorded_phase(a.build, target.pid, a.seconds, a.rate, s, tmp, not a.no_native) 
                for s in ("ptrace", "bpf") + (("bpf-cpu-only",) if a.cpu_only else ())}
        base2 = quiet_phase(target.pid, a.seconds)
    finally:
        target.kill()
        target.wait()
        for b in burners:
            b.kill()
            b.wait()
        shutil.rmtree(tmp, True)
    base = [(x + y) / 2 for x, y in zip(base1, base2)]
    print("sampler_bench: %s, %d Hz, %g s a phase, %s host, %d CPUs; zeek without a recorder: "
          "%.0f switches/s, run-queue wait %.1f ms/s"
          % (os.path.basename(cmd[0]), a.rate, a.seconds, "busy (a burner per core)" if a.busy else "quiet",
             os.cpu_count(), base[0] / a.seconds, base[2] / 1e6 / a.seconds))
    print("%-12s %8s %22s %26s %22s %18s %22s %14s %16s %24s"
          % ("sampler", "samples", "extra switches/sample", "stopped / preempted by zs /smp", "extra rq wait us/smp",
             "recorder CPU us/smp", "zeek held p50/p99 us", "BPF us/sample", "unwound/failed",
             "BPF ns/run (runs; *: in the recorder's CPU)"))
    for name, r in runs.items():
        n = max(r["samples"], 1)
        switches = (r["deltas"][0] - base[0]) / n
        wait = (r["deltas"][2] - base[2]) / 1e3 / n
        held = "%.0f / %.0f" % r["held"] if r["held"] and name == "ptrace" else "never held"
        progs = ", ".join("%s%s %.0f (%d)" % (k, "*" if k in RUN_BY_RECORDER else "", t / c if c else 0, c)
                          for k, (t, c) in sorted(r["progs"].items()))
        bpf_us = sum(t for k, (t, _) in r["progs"].items() if k not in RUN_BY_RECORDER) / 1e3 / n
        uw = "%d/%d" % r["unwound"][:2] if r["unwound"] else "-"
        why = r["why"]
        why = "%.3f / %.3f" % (why["stopped"] / n, why["to_zeek_spy"] / n) if why else "- (no bpftrace)"
        print("%-12s %8.0f %22.3f %26s %22.1f %18.1f %22s %14.2f %16s %24s"
              % (name, r["samples"], switches, why, wait, r["cpu_s"] * 1e6 / n, held, bpf_us, uw,
                 progs or "-"))
    st = runs["bpf"]["self_timed"]
    if st:
        # Over the whole recording (the table's columns: its middle seconds).
        print("bpf, self-timed over the recording: " + ", ".join(
            "%s %.2f us (%d)" % (part, ns / 1e3 / runs_ if runs_ else 0, runs_)
            for part, (runs_, ns) in st.items()) +
            "; a return too short for a tick sends nothing")


if __name__ == "__main__":
    main()
