#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What profiling costs the profiled process, measured in one run on the test
double of Zeek's fixed CPU-bound workload (tests/target, --iterations N):

  - stop time per sample (the recorder's own interrupt-to-continue timing)
  - slowdown: the workload's wall time with / without the recorder, runs
    alternating, median of PAIRS pairs, at 100 Hz and 1000 Hz, and 1000 Hz
    --nonblocking (whose profile must still match the ground truth)
  - recorder CPU at 100 Hz, recording bytes per sample
  - converter throughput (tests/bench/convert_bench.sh, when --with-convert)

Prints one table, each figure against its target, and exits non-zero when a
target is missed. Not a unit test: run by hand, or in CI as a report.

    overhead_bench.py BUILD_DIR [--pairs 5] [--iterations 600] [--with-convert]
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import record_e2e  # noqa: E402  (ground truth and pprof helpers)


def target_run(target, iterations, rec_args=None, recorder=None, out=None, truth=None):
    """Runs the fixed workload; with rec_args, under the recorder (attached
    right after start). Returns (workload wall seconds, recorder stderr)."""
    cmd = [target, "--iterations", str(iterations), "--quiet"]
    if truth:
        cmd += ["--ground-truth", truth]
    t = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rec_err = ""
    if rec_args is not None:
        r = subprocess.run([recorder, "-v", "-p", str(t.pid), "-o", out] + rec_args,
                           capture_output=True, text=True)
        rec_err = r.stderr
        if r.returncode != 0:
            t.kill()
            sys.exit("recorder failed: " + r.stderr)
    _, err = t.communicate()
    m = re.search(r"wall_seconds ([\d.]+)", err)
    if not m:
        sys.exit("target printed no wall time: " + err)
    return float(m.group(1)), rec_err


def slowdown(args, rec_args, tmp, label):
    ratios, stderr_last = [], ""
    for i in range(args.pairs):
        base, _ = target_run(args.target, args.iterations)
        out = os.path.join(tmp, "%s-%d.zspy" % (label, i))
        prof, stderr_last = target_run(args.target, args.iterations, rec_args, args.recorder, out)
        ratios.append(prof / base)
    return (statistics.median(ratios) - 1.0) * 100.0, stderr_last, out


def stop_times(stderr):
    m = re.search(r"p50 (\d+) us, p99 (\d+) us", stderr)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def cpu_seconds(pid):
    """CPU time so far of pid and its children still running (the
    unwinder), from /proc."""
    def one(p):
        try:
            f = open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    try:
        kids = [int(c) for c in open("/proc/%d/task/%d/children" % (pid, pid)).read().split()]
    except OSError:
        kids = []
    return one(pid) + sum(one(k) for k in kids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=600)
    ap.add_argument("--with-convert", action="store_true")
    args = ap.parse_args()
    args.recorder = os.path.join(args.build, "zeek-spy-record")
    args.convert = os.path.join(args.build, "zeek-spy-convert")
    args.target = os.path.join(args.build, "tests", "target", "zeek-double-8.0")
    tmp = tempfile.mkdtemp(prefix="zs-bench-")
    rows = []

    def row(metric, target, measured, ok, unit=""):
        rows.append((metric, target, measured if isinstance(measured, str) else "%.2f%s" % (measured, unit), ok))

    # 1. Stop time, recorder CPU and size at 100 Hz over a steady 10 s.
    long_target = subprocess.Popen([args.target, "--seconds", "12", "--quiet"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    out = os.path.join(tmp, "steady.zspy")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([args.recorder, "-v", "--no-native", "-p", str(long_target.pid), "-d", "10", "-r", "100",
                        "-o", out, "--stats", "1"], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    long_target.wait()
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / 10.0 * 100.0
    p50, p99 = stop_times(r.stderr)
    samples = int(re.search(r"(\d+) samples in", r.stderr).group(1))
    size = os.path.getsize(out)
    # Steady state: what the recording grows by per sample once the stacks
    # and snapshot are known (from the --stats line near 2 s to the end).
    stats = re.findall(r"([\d.]+) s, (\d+) samples, .* ([\d.]+) KiB written", r.stderr)
    at2 = next(x for x in stats if float(x[0]) >= 2.0)
    steady = (size - float(at2[2]) * 1024) / (samples - int(at2[1]))
    row("stop time p50 @100 Hz", "<= 20 us", p50, p50 <= 20, " us")
    row("stop time p99 @100 Hz", "<= 150 us", p99, p99 <= 150, " us")
    row("recorder CPU @100 Hz", "<= 1 % of a core", cpu, cpu <= 1.0, " %")
    row("recording size, steady (2..10 s)", "<= 4 B/sample", steady, steady <= 4, " B/sample")
    row("recording size, whole 10 s file", "(report)", size / samples, True, " B/sample")
    reads = re.search(r"([\d.]+) reads/sample", r.stderr)
    row("process_vm_readv calls/sample", "<= 3", float(reads.group(1)), float(reads.group(1)) <= 3)

    # 2. Slowdown of the fixed workload.
    s100, _, _ = slowdown(args, ["-r", "100", "--no-native"], tmp, "b100")
    row("slowdown @100 Hz", "<= 0.5 %", s100, s100 <= 0.5, " %")
    s1000, err1000, _ = slowdown(args, ["-r", "1000", "--no-native"], tmp, "b1000")
    row("slowdown @1000 Hz", "<= 3 %", s1000, s1000 <= 3.0, " %")
    p50k, p99k = stop_times(err1000)
    row("stop time p50/p99 @1000 Hz", "(report)", "%.0f / %.0f us" % (p50k, p99k), True)
    snb, _, _ = slowdown(args, ["-r", "1000", "--nonblocking"], tmp, "nb1000")
    row("slowdown @1000 Hz --nonblocking", "<= 0.5 %", snb, snb <= 0.5, " %")

    # 3. Nonblocking profile still matches the ground truth.
    truth = os.path.join(tmp, "truth.tsv")
    out = os.path.join(tmp, "nb-shares.zspy")
    _, rec_err = target_run(args.target, args.iterations * 2, ["-r", "1000", "--nonblocking"],
                            args.recorder, out, truth)
    torn = re.search(r"(\d+) torn reads", rec_err)
    env = record_e2e.Env(args.build, "8.0")
    try:
        record_e2e.check_profile(env, out, truth, 1000)
        row("nonblocking shares vs ground truth", "within 3 points", "ok", True)
    except SystemExit:
        row("nonblocking shares vs ground truth", "within 3 points", "MISSED", False)
    row("nonblocking torn reads discarded", "(counted)", torn.group(1) if torn else "0", True)

    # 4. --native: the same steady 10 s at 100 Hz, with native frames.
    long_target = subprocess.Popen([args.target, "--seconds", "12", "--quiet"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    out = os.path.join(tmp, "native.zspy")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rp = subprocess.Popen([args.recorder, "-v", "--native", "-p", str(long_target.pid), "-d", "10", "-r", "100",
                           "-o", out, "--stats", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    # Steady state apart from the start, where the unwinder parses the
    # modules' unwind tables, symbols and line tables once (~0.1 s).
    time.sleep(2.0)
    t2, cpu2 = time.monotonic(), cpu_seconds(rp.pid)
    time.sleep(7.5)
    t9, cpu9 = time.monotonic(), cpu_seconds(rp.pid)
    _, err = rp.communicate()
    r = subprocess.CompletedProcess(rp.args, rp.returncode, "", err)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    long_target.wait()
    cpu_n = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / 10.0 * 100.0
    cpu_steady = (cpu9 - cpu2) / (t9 - t2) * 100.0
    p50n, p99n = stop_times(r.stderr)
    samples_n = int(re.search(r"(\d+) samples in", r.stderr).group(1))
    stats = re.findall(r"([\d.]+) s, (\d+) samples, .* ([\d.]+) KiB written", r.stderr)
    at2 = next(x for x in stats if float(x[0]) >= 2.0)
    steady_n = (os.path.getsize(out) - float(at2[2]) * 1024) / (samples_n - int(at2[1]))
    m = re.search(r"native frames: (\d+) stacks unwound; (\d+) unwinds failed, (\d+) did not match", r.stderr)
    bad = (int(m.group(2)) + int(m.group(3))) / max(int(m.group(1)), 1) * 100 if m else 100.0
    row("--native stop time p50 @100 Hz", "<= 25 us", p50n, p50n <= 25, " us")
    row("--native stop time p99 @100 Hz", "<= 200 us", p99n, p99n <= 200, " us")
    row("--native recorder CPU @100 Hz, steady (2..9.5 s)", "<= 3 % of a core", cpu_steady,
        cpu_steady <= 3.0, " %")
    row("--native recorder CPU @100 Hz, whole run with the start", "(report)", cpu_n, True, " %")
    row("--native recording size, steady", "<= 12 B/sample", steady_n, steady_n <= 12, " B/sample")
    row("--native unwinds failed or mismatched", "< 1 %", bad, bad < 1.0, " %")
    sn, _, _ = slowdown(args, ["-r", "100", "--native"], tmp, "n100")
    row("--native slowdown @100 Hz", "<= 1 %", sn, sn <= 1.0, " %")

    # 5. Converter throughput.
    if args.with_convert:
        script = os.path.join(os.path.dirname(__file__), "convert_bench.sh")
        c = subprocess.run(["bash", script, args.build], capture_output=True, text=True)
        print(c.stdout)
        row("converter benchmark (convert_bench.sh)", "all targets", "ok" if c.returncode == 0 else "MISSED",
            c.returncode == 0)

    print("\nmachine: %s, %d cores; workload: zeek-double-8.0 --iterations %d; %d pairs"
          % (os.uname().nodename, os.cpu_count(), args.iterations, args.pairs))
    print("%-38s %-18s %-18s %s" % ("metric", "target", "measured", "ok"))
    for m, t, v, ok in rows:
        print("%-38s %-18s %-18s %s" % (m, t, v, "yes" if ok else "NO"))
    missed = [m for m, _, _, ok in rows if not ok]
    if missed:
        print("missed: " + "; ".join(missed))
        sys.exit(1)


if __name__ == "__main__":
    main()
