#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""End-to-end tests on a saturated host: the conditions of a production
sensor, where every core is busy and targets wait for a core to stop.

    busy_host.py BUILD_DIR rtguard     # the recorder never ends itself (SIGXCPU)
    busy_host.py BUILD_DIR accuracy    # shares stay right under load
    busy_host.py BUILD_DIR all         # and over 8 busy doubles with --all

rtguard: SIGXCPU (what the kernel sends when the recorder's real-time budget
runs out) mid-run demotes the recorder to normal scheduling and it finishes;
then `--all` over 4 busy test doubles at 200 and 1000 Hz on an idle host, and
over 8 at 200 and 1000 Hz with one CPU burner per core, 3 s each: the
recorder exits 0 (never killed by SIGXCPU), writes its trailer, and every
process has samples.

accuracy: one test double of each generation plus one CPU burner per core,
blocking and nonblocking: every function's share within 3 points of the
double's own ground truth over the recorded time, at least 90 % of the ticks
as samples, and at least 90 % of the samples showing what the double (by its
own log) ran at the sample's tick.

all: `--all -r 200` for 30 s over 8 busy doubles (all three generations)
plus one CPU burner per core, blocking then nonblocking: per process at
least 95 % of the ticks as samples, and shares and samples as above.

The module's helpers (burners, per-process shares) also serve
tests/bench/busy_bench.py.
"""
import bisect
import collections
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_e2e as e2e  # noqa: E402
import recording  # noqa: E402

TOLERANCE_POINTS = 3.0
SECONDS = 3  # rtguard: each case
RATE = 800  # accuracy: 4,800 samples in 6 s, so sampling noise stays near 0.7 points
ACCURACY_SECONDS = 6
REPEATS = 1  # each generation and mode once, within CI's budget
ALL_GENS = ["3.0", "8.0", "8.2", "3.0", "8.0", "8.2", "8.0", "8.2"]
ALL_SECONDS = 30  # --all at ALL_RATE: 6,000 samples a process (at 1,000,
ALL_RATE = 200    # binomial noise alone puts the worst of 8 idle shares ~3
                  # points off; at 3,000 ~2)
ALL_MIN_TICKS = 95.0
# 8 doubles and a burner per core on 2 cores: each double has about a fifth
# of a core, and what a sample shows drifts from its double's own log by more
# than sampling noise (1-sigma 0.6 points). Measured on a 2-core VM, 14 runs
# of the blocking case, recorders before and after the frame-source refactor
# alike: worst share error 1.7-4.3 points, agreement 89.4-94.3 %; the run
# after another in the same minute does about a point worse. The limits sit
# above that: a wrong attribution (a frame for another, a shifted clock)
# moves shares by far more.
ALL_TOLERANCE_POINTS = 5.0
ALL_MIN_AGREEMENT = 85.0
# Of the samples, those whose innermost frame is what the double ran at the
# sample's tick (measured 98-99.8 %; the rest fall on a switch between two
# frames, within the few microseconds from tick to stop).
MIN_AGREEMENT = 90.0
BURNER = "while True: pass"


class Burners:
    """One CPU-burning process per core (or n), stopped on exit."""

    def __init__(self, n=None):
        self.n = os.cpu_count() if n is None else n
        self.procs = []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def start_doubles(env, gens, seconds, truths=None, switch_logs=None):
    """Starts one double per entry of gens; returns the Popen objects once
    each has printed its banner (its objects exist)."""
    procs = []
    for i, gen in enumerate(gens):
        target = os.path.join(env.build, "tests", "target", "zeek-double-" + gen)
        cmd = [target, "--seconds", str(seconds)]
        if truths:
            cmd += ["--ground-truth", truths[i]]
        if switch_logs:
            cmd += ["--switch-log", switch_logs[i]]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs.append(p)
    for p in procs:
        line = p.stderr.readline()
        if "pid %d" % p.pid not in line:
            e2e.fail("test double did not start: %r" % line)
    return procs


def finish(procs):
    for p in procs:
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()


def samples_per_pid(env, recording):
    r = e2e.run([env.convert, "--no-cache", "-f", "summary", recording])
    if r.returncode != 0:
        e2e.fail("convert: " + r.stderr)
    per = {}
    table = r.stdout.split("By process:", 1)[-1].split("\n\n", 1)[0]
    for m in re.finditer(r"^\s+(\d+)\s+[\d.]+%\s+(\d+)\s", table, re.M):
        per[int(m.group(2))] = int(m.group(1))
    return per, r.stdout


def tick_agreement(log, samples):
    """Percent of samples whose innermost frame is what the double had
    innermost at the sample's tick. A frame (Func, statement) stands for the
    slot it is most often seen in; a sampler that read at other moments than
    its ticks, or read wrong frames, would disagree far more often than the
    few samples that fall on a switch."""
    _names, times, slots = log
    seen, votes = [], collections.defaultdict(collections.Counter)
    for t, frame in samples:
        k = bisect.bisect_right(times, t) - 1
        if 0 <= k < len(times) - 1:
            seen.append((frame, slots[k]))
            votes[frame][slots[k]] += 1
    meaning = {frame: c.most_common(1)[0][0] for frame, c in votes.items()}
    agree = sum(1 for frame, slot in seen if meaning[frame] == slot)
    return 100.0 * agree / max(len(seen), 1)


def window_errors(env, recording_path, switch_log_path, pid):
    """(worst share error in points, samples, [(name, truth, profile)],
    tick agreement %) of one process's profile against its double's truth
    over the recorded window (its first to its last sample)."""
    samples = recording.samples_by_pid(recording_path).get(pid, [])
    if len(samples) < 2:
        e2e.fail("pid %d: %d samples in %s" % (pid, len(samples), recording_path))
    log = e2e.read_switch_log(switch_log_path)
    truth = e2e.window_shares(log, samples[0][0], samples[-1][0])
    shares, total = profile_shares(env, recording_path, pid)
    rows = [(name, want, shares.get(name, 0.0)) for name, want in truth.items()]
    worst = max(abs(got - want) for _name, want, got in rows)
    return worst, total, rows, tick_agreement(log, samples)


def profile_shares(env, recording_path, pid=None):
    profile = env.path("busy-%s.pb.gz" % (pid or "all"))
    cmd = [env.convert, "--no-cache", "-q", recording_path, "-o", profile]
    if pid:
        cmd += ["--pid", str(pid)]
    r = e2e.run(cmd)
    if r.returncode != 0:
        e2e.fail("convert: " + r.stderr)
    shares, total = e2e.pprof_flat_shares(profile)
    return shares, total or 0


def recorder_report(stderr):
    """The figures of the recorder's end report (its details: -v)."""
    f = {}
    m = re.search(r"stop time per sample: p50 (\d+) us, p99 (\d+) us", stderr)
    if m:
        f["stop_p50"], f["stop_p99"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"held after the stop was seen: p50 (\d+) us, p99 (\d+) us", stderr)
    if m:
        f["held_p50"], f["held_p99"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"(\d+) of (\d+) samples \(([\d.]+) %\) stand for ticks", stderr)
    f["credited_pct"] = float(m.group(3)) if m else 0.0
    return f


def sched_policy(pid):
    r = e2e.run(["chrt", "-p", str(pid)])
    m = re.search(r"scheduling policy: (\S+)", r.stdout)
    return m.group(1) if m else "?"


def test_sigxcpu(env):
    """The kernel sends SIGXCPU when the real-time budget runs out; that
    must demote the recorder, never end it."""
    out = env.path("xcpu.zspy")
    procs = start_doubles(env, ["8.0"], 6)
    rec = subprocess.Popen([env.record, "--sampler", "ptrace", "-r", "1000", "-d", "3", "-o", out, "-p", str(procs[0].pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    before = sched_policy(rec.pid)
    os.kill(rec.pid, signal.SIGXCPU)
    time.sleep(0.3)
    after = sched_policy(rec.pid)
    _, err = rec.communicate(timeout=30)
    finish(procs)
    if rec.returncode != 0:
        e2e.fail("SIGXCPU ended the recorder: exit %d: %s" % (rec.returncode, err))
    if "real-time CPU budget ran out" not in err:
        e2e.fail("SIGXCPU: no note about dropping real-time priority: %s" % err)
    if "no trailer" in e2e.run([env.convert, "--info", out]).stdout:
        e2e.fail("SIGXCPU: recording without trailer")
    print("  SIGXCPU mid-run: policy %s -> %s, exit 0, trailer written" % (before, after))


def test_rtguard(env):
    test_sigxcpu(env)
    cases = [(4, 200, False), (4, 1000, False), (8, 200, True), (8, 1000, True)]
    for n, rate, burn in cases:
        label = "--all over %d busy doubles at %d Hz%s" % (n, rate, ", one burner per core" if burn else "")
        out = env.path("rt-%d-%d.zspy" % (n, rate))
        gens = ["3.0", "8.0", "8.2"] * 3
        with Burners(os.cpu_count() if burn else 0):
            procs = start_doubles(env, gens[:n], 8)
            r = e2e.run([env.record, "--sampler", "ptrace", "-v", "--all", "-r", str(rate), "-d", str(SECONDS), "-o", out])
        for p in procs:
            p.kill()
        finish(procs)
        if r.returncode != 0:
            e2e.fail("%s: recorder exit %d (-24 is SIGXCPU): %s" % (label, r.returncode, r.stderr))
        info = e2e.run([env.convert, "--info", out]).stdout
        if "no trailer" in info:
            e2e.fail("%s: no trailer: %s" % (label, info))
        per, _ = samples_per_pid(env, out)
        missing = [p.pid for p in procs if per.get(p.pid, 0) == 0]
        if missing or len(per) < n:
            e2e.fail("%s: processes without samples: %s (per pid %s)" % (label, missing, per))
        f = recorder_report(r.stderr)
        print("  %s: exit 0, trailer, samples per process %d..%d of %d ticks; stop p50 %s us, held p99 %s us"
              % (label, min(per.values()), max(per.values()), SECONDS * rate, f.get("stop_p50"), f.get("held_p99")))


def check_process(label, env, recording_path, log, pid, ticks, min_ticks_pct,
                  tolerance=TOLERANCE_POINTS, min_agreement=MIN_AGREEMENT):
    """One process's samples against its double: enough of them, shares
    within the tolerance, each showing what the double ran at its tick.
    Returns (worst share error, tick agreement %)."""
    worst, total, rows, agree = window_errors(env, recording_path, log, pid)
    for name, want, got in rows:
        print("    %-62s truth %5.1f%%  profile %5.1f%%" % (name, want, got))
    print("  %s: %d samples of %d ticks, largest share error %.2f points; %.1f %% of samples "
          "show what the double ran at their tick" % (label, total, ticks, worst, agree))
    if total < min_ticks_pct / 100.0 * ticks:
        e2e.fail("%s: only %d samples of %d ticks" % (label, total, ticks))
    if worst > tolerance:
        e2e.fail("%s: share error %.2f points (tolerance %.0f)" % (label, worst, tolerance))
    if agree < min_agreement:
        e2e.fail("%s: only %.1f %% of samples show what the double ran at their tick" % (label, agree))
    return worst, agree


def record_busy(env, gens, logs, seconds, args, attach=False):
    """Records `args` (the recorder's options but -p) for `seconds` over one
    double per entry of gens, each logging its frames to logs, with one
    CPU burner per core; the doubles outlive the recording, whatever its
    start takes on this saturated host (--all's first scan inspects each),
    and are told to stop (SIGTERM: they finish their iteration and write
    their logs) once it has ended. Returns (the doubles, the recorder's
    CompletedProcess)."""
    with Burners():
        procs = start_doubles(env, gens, seconds + 30, switch_logs=logs)
        pids = [a for p in procs for a in ("-p", str(p.pid))] if attach else []
        # Script frames: the shares are checked against the doubles' own
        # log of their script functions (e2e.native checks native frames').
        r = e2e.run([env.record, "--sampler", "ptrace", "-v", "--no-native", "-d", str(seconds)] + args + pids)
        for p in procs:
            p.terminate()
        finish(procs)
    return procs, r


def test_accuracy(env):
    worst_all, agree_min = 0.0, 100.0
    for gen in ("3.0", "8.0", "8.2"):
        for nonblocking in (False, True):
            for run in range(REPEATS):
                label = "Zeek %s double, %s, one burner per core, run %d" % (
                    gen, "nonblocking" if nonblocking else "blocking", run + 1)
                log = env.path("switches-%s-%d.log" % (gen, nonblocking))
                out = env.path("acc-%s-%d-%d.zspy" % (gen, nonblocking, run))
                args = ["-r", str(RATE), "-o", out] + (["--nonblocking"] if nonblocking else [])
                procs, r = record_busy(env, [gen], [log], ACCURACY_SECONDS, args, attach=True)
                if r.returncode != 0:
                    e2e.fail("%s: recorder exit %d: %s" % (label, r.returncode, r.stderr))
                worst, agree = check_process(label, env, out, log, procs[0].pid,
                                             RATE * ACCURACY_SECONDS, 90.0)
                worst_all = max(worst_all, worst)
                agree_min = min(agree_min, agree)
    print("  on a saturated host, worst of %d runs: share error %.2f points, samples agreeing "
          "with the double at their tick >= %.1f %%" % (REPEATS * 6, worst_all, agree_min))


def test_all(env):
    """--all over 8 busy doubles of all three generations plus one burner per
    core, blocking then nonblocking: each process's samples and shares."""
    for nonblocking in (False, True):
        mode = "nonblocking" if nonblocking else "blocking"
        logs = [env.path("switches-all-%s-%d.log" % (mode, i)) for i in range(len(ALL_GENS))]
        out = env.path("all-%s.zspy" % mode)
        args = ["--all", "-r", str(ALL_RATE), "-o", out] + (["--nonblocking"] if nonblocking else [])
        procs, r = record_busy(env, ALL_GENS, logs, ALL_SECONDS, args)
        if r.returncode != 0:
            e2e.fail("--all %s: recorder exit %d: %s" % (mode, r.returncode, r.stderr))
        worst_all, agree_min = 0.0, 100.0
        for i, (p, log) in enumerate(zip(procs, logs)):
            label = "--all %s, Zeek %s double %d" % (mode, ALL_GENS[i], i + 1)
            worst, agree = check_process(label, env, out, log, p.pid, ALL_RATE * ALL_SECONDS,
                                         ALL_MIN_TICKS, ALL_TOLERANCE_POINTS, ALL_MIN_AGREEMENT)
            worst_all = max(worst_all, worst)
            agree_min = min(agree_min, agree)
        print("  --all %s over %d busy doubles + a burner per core: worst share error %.2f points, "
              "samples agreeing with their double at their tick >= %.1f %%"
              % (mode, len(procs), worst_all, agree_min))


def main():
    build, test = sys.argv[1], sys.argv[2]
    env = e2e.Env(build, "8.0")
    {"rtguard": test_rtguard, "accuracy": test_accuracy, "all": test_all}[test](env)
    print("PASS " + test)


if __name__ == "__main__":
    main()
