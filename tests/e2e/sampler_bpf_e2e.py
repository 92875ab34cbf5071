#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""zeek-spy-record --sampler bpf against the test double of Zeek: samples
taken in the kernel, the target never stopped nor traced.

    sampler_bpf_e2e.py BUILD_DIR attach GEN [--stripped]  # shares vs the double's truth
    sampler_bpf_e2e.py BUILD_DIR compare GEN              # bpf and ptrace agree
    sampler_bpf_e2e.py BUILD_DIR all                      # --all, a worker killed and a new one
    sampler_bpf_e2e.py BUILD_DIR launch GEN               # -- COMMAND
    sampler_bpf_e2e.py BUILD_DIR kill                     # SIGKILL mid-recording
    sampler_bpf_e2e.py BUILD_DIR choice                   # bpf refused, auto falls back
    sampler_bpf_e2e.py BUILD_DIR cpu-only                 # --cpu-only: ticks only

Exit 77 (skipped) where the BPF sampler cannot run, with the reason.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import record_e2e as e2e

SKIP = 77
# Where the preflight passed (root, BTF, a kernel with what BPF needs) and
# the kernel still refused: our programs are wrong, not the machine.
BROKEN = ("refused the BPF programs", "cannot attach")
RATE_HZ = 1000
# Capabilities BPF needs (and root's CAP_SYS_ADMIN, which stands in for them).
NO_BPF_CAPS = ["setpriv", "--bounding-set", "-bpf,-perfmon,-sys_admin", "--"]


def fail(msg):
    e2e.fail(msg)


def skip_unless_bpf(env):
    """Skips (77) with the recorder's own reason where BPF cannot run."""
    p = subprocess.Popen([env.target, "--seconds", "3", "--quiet"], stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    r = e2e.run([env.record, "--sampler", "bpf", "-p", str(p.pid), "-d", "0.2", "-o",
                 env.path("probe.zspy")])
    p.kill()
    p.wait()
    if r.returncode != 0 and "BPF" in r.stderr:
        if any(w in r.stderr for w in BROKEN):
            fail("the BPF sampler is broken, not missing: " + r.stderr.strip())
        print("SKIP: " + r.stderr.strip())
        sys.exit(SKIP)


def held_ids(pid):
    """{("prog"|"link"|"map", id)} the process holds, from its fds' fdinfo:
    what it put into the kernel (others' BPF programs, a concurrent test's,
    are not ours)."""
    ids = set()
    try:
        fds = os.listdir("/proc/%d/fdinfo" % pid)
    except FileNotFoundError:
        return ids
    for fd in fds:
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                for line in f:
                    m = re.match(r"(prog|link|map)_id:\s+(\d+)", line)
                    if m:
                        ids.add((m.group(1), int(m.group(2))))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return ids


def in_kernel(ids):
    """Of ids, those the kernel still has."""
    left = set()
    for what in ("prog", "link", "map"):
        r = e2e.run(["bpftool", "-j", what, "show"])
        if r.returncode != 0:
            fail("bpftool %s show: %s" % (what, r.stderr.strip()))
        present = {int(x) for x in re.findall(r'"id":(\d+)', r.stdout)}
        left |= {(w, i) for w, i in ids if w == what and i in present}
    return left


def run_watched(cmd, watch_pids=(), seconds_in=1.5):
    """Runs the recorder; while it records, the BPF objects it holds. Returns
    (returncode, stderr, ids)."""
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    watches = [TracerWatch(pid) for pid in watch_pids]
    time.sleep(seconds_in)
    ids = held_ids(p.pid)
    _, err = p.communicate(timeout=120)
    print(err.strip())
    for w in watches:
        w.check("--sampler bpf")
    return p.returncode, err, ids


def assert_released(ids, what):
    """None of the programs, links and maps the recorder held is left in the
    kernel (freeing them after the last fd closes is deferred: a moment)."""
    if not any(w == "prog" for w, _ in ids):
        fail("%s: the recorder held no BPF program while it recorded" % what)
    for _ in range(50):
        left = in_kernel(ids)
        if not left:
            print("  the %d BPF objects it held are gone from the kernel" % len(ids))
            return
        time.sleep(0.1)
    fail("%s: BPF objects of the recorder still in the kernel: %s" % (what, sorted(left)))


class TracerWatch:
    """Reads TracerPid and the state of pid every 20 ms while it runs: the
    BPF sampler must never trace nor stop it."""

    def __init__(self, pid):
        self.pid, self.seen, self.bad = pid, 0, []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            try:
                tracer, state = e2e.tracer_state(self.pid)
            except (FileNotFoundError, ProcessLookupError):
                return
            self.seen += 1
            if tracer not in (0, None) or state in ("t", "T"):
                self.bad.append((tracer, state))
            time.sleep(0.02)

    def check(self, what):
        self.done.set()
        self.thread.join()
        if self.bad:
            fail("%s: the target was traced or stopped: %s" % (what, self.bad[:5]))
        if self.seen < 10:
            fail("%s: the target's state was read only %d times" % (what, self.seen))
        print("  TracerPid 0 and never stopped in %d looks" % self.seen)


def record_bpf(env, rec, pid, seconds, extra=("--no-native",), rate=RATE_HZ):
    """Script frames only unless extra says otherwise: the double's truth
    is of its script functions."""
    rc, err, ids = run_watched([env.record, "-v", "--sampler", "bpf", "-r", str(rate), "-p", str(pid),
                                "-d", str(seconds), "-o", rec] + list(extra), [pid])
    if rc != 0:
        fail("record --sampler bpf exited %d" % rc)
    if "with the BPF sampler" not in err or "sampler: bpf" not in err:
        fail("the recorder did not say it sampled with BPF")
    # 6.1 on: off-CPU samples when due unless told to take them at each
    # switch, as the variant of kernels before 5.15 always does.
    at_switch = os.environ.get("ZEEK_SPY_BPF_OFFCPU") == "switch" or os.environ.get("ZEEK_SPY_BPF_LEGACY")
    want = "off-CPU at each switch" if at_switch else "off-CPU when due"
    if "--cpu-only" not in extra and want not in err:
        fail("the recorder did not say %r (ZEEK_SPY_BPF_OFFCPU=%s)" % (want, os.environ.get("ZEEK_SPY_BPF_OFFCPU")))
    if os.environ.get("ZEEK_SPY_BPF_OFFCPU") == "due-iter" and "when due, by task iterators" not in err:
        fail("ZEEK_SPY_BPF_OFFCPU=due-iter: the looks did not run by task iterators")
    if os.environ.get("ZEEK_SPY_BPF_OFFCPU") == "due-run" and "when due, by BPF_PROG_RUN at the rate" not in err:
        fail("ZEEK_SPY_BPF_OFFCPU=due-run: the looks did not run by BPF_PROG_RUN at the rate")
    if os.environ.get("ZEEK_SPY_BPF_LEGACY") and "targets by tid" not in err:
        fail("ZEEK_SPY_BPF_LEGACY: the recorder did not take the kernel side's variant of "
             "kernels before 5.15")
    assert_released(ids, "after the recording")
    return subprocess.CompletedProcess([], rc, "", err)


def test_attach(env):
    """Shares of the double's functions within the tolerance of its own
    truth, over the seconds recorded, never stopped, nothing left behind."""
    rec, truth = env.path("rec.zspy"), env.path("truth.tsv")
    target = e2e.start_target(env, 9, truth)
    r = record_bpf(env, rec, target.pid, 6)
    if target.wait(timeout=30) != 0:
        fail("target failed after being recorded")
    e2e.check_profile(env, rec, truth, 5000, retryable=True, recorder_stderr=r.stderr)


def test_compare(env):
    """A bpf and a ptrace recording of the same process agree with each
    other, idle included: each within the tolerance of the double's truth
    over its own seconds, and their errors against it within 3 points of
    each other (or 4.5 sigma of the two samplings' noise where that is more).
    One after the other: a stop would be off-CPU time to the BPF sampler."""
    truth = env.path("truth.tsv")
    target = e2e.start_target(env, 14, truth)
    bpf, ptrace = env.path("bpf.zspy"), env.path("ptrace.zspy")
    r = record_bpf(env, bpf, target.pid, 5)
    p = e2e.run([env.record, "--no-native", "-r", str(RATE_HZ), "-p", str(target.pid), "-d", "5",
                 "-o", ptrace])
    if p.returncode != 0:
        fail("record (ptrace) exited %d: %s" % (p.returncode, p.stderr))
    target.wait(timeout=30)
    errors, totals = {}, {}
    for name, path in (("bpf", bpf), ("ptrace", ptrace)):
        print(" %s:" % name)
        e2e.check_profile(env, path, truth, 4000, retryable=True,
                          recorder_stderr=r.stderr if name == "bpf" else p.stderr)
        shares, totals[name] = e2e.pprof_flat_shares(env.path("profile.pb.gz"))
        wanted = e2e.truth_shares(truth, path)
        errors[name] = {k: (shares.get(k, 0.0) - w, w) for k, w in wanted.items()}
    worst = 0.0
    for k, (err_bpf, want) in errors["bpf"].items():
        err_ptrace = errors["ptrace"][k][0]
        sigma = (e2e.share_sigma(want, totals["bpf"]) ** 2 + e2e.share_sigma(want, totals["ptrace"]) ** 2) ** 0.5
        tolerance = max(e2e.TOLERANCE_POINTS, e2e.MIN_SIGMAS * sigma)
        worst = max(worst, abs(err_bpf - err_ptrace))
        if abs(err_bpf - err_ptrace) > tolerance:
            fail("%s: bpf and ptrace disagree by %.2f points (tolerance %.1f)"
                 % (k, abs(err_bpf - err_ptrace), tolerance))
    print("  bpf against ptrace: largest difference %.2f points, each against its own seconds' truth"
          % worst)


NATIVE_REPORT = re.compile(r"native frames: (\d+) stacks unwound; (\d+) unwinds failed, (\d+) did not match")
SAMPLES_REPORT = re.compile(r"pid \d+: (\d+) samples")
BPF_RECORDS = re.compile(r"sampler: bpf: (\d+) on-CPU ticks, (\d+) off-CPU samples")


def native_report(err, what):
    """(samples, unwound, failed, not matching) from the recorder's -v report."""
    m, n = NATIVE_REPORT.search(err), SAMPLES_REPORT.search(err)
    if not m or not n:
        fail("%s: no native frames or samples line in the report:\n%s" % (what, err))
    return (int(n.group(1)),) + tuple(int(g) for g in m.groups())


def unwound_leaf_shares(env, path):
    """Of the samples with native frames (their stacks start at _start:
    those written without them while the unwinder read the modules' tables
    at the start are not the unwinds compared here), the leaves' shares (%)
    among the samples at work and the sleeps' callers' among the samples
    asleep (e2e.split_work_sleep), each with how many samples it holds."""
    c = e2e.run([env.convert, "-f", "folded", "-o", "-", path])
    if c.returncode != 0:
        fail("convert %s: %s" % (path, c.stderr))
    stacks = []
    for line in c.stdout.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack.startswith("_start;"):
            # Aliases at one address (clock_gettime@GLIBC_2.2.5 and
            # clock_gettime@@GLIBC_2.17) are one function.
            stacks.append(([f.split("@")[0] for f in stack.split(";")], int(count)))
    out = {}
    for kind, by in zip(("work", "sleep"), e2e.split_work_sleep(stacks)):
        total = sum(by.values())
        if total < (1000 if kind == "work" else 100):
            fail("%s: only %d samples with native frames %s" % (path, total,
                                                               "at work" if kind == "work" else "asleep"))
        out[kind] = ({k: 100.0 * v / total for k, v in by.items()}, total)
    return out


def test_native(env):
    """Native frames under the BPF sampler, against ptrace on the same
    process (one after the other): every sample unwound and matching its
    script frames at least as often as under ptrace, and the leaf
    functions' shares within 3 points of ptrace's, or 4.5 sigma of the two
    samplings' noise where that is more."""
    target = e2e.start_target(env, 14, env.path("truth.tsv"))
    bpf, ptrace = env.path("bpf.zspy"), env.path("ptrace.zspy")
    r = record_bpf(env, bpf, target.pid, 5, extra=())
    p = e2e.run([env.record, "-v", "--sampler", "ptrace", "-r", str(RATE_HZ), "-p", str(target.pid),
                 "-d", "5", "-o", ptrace])
    if p.returncode != 0:
        fail("record (ptrace) exited %d: %s" % (p.returncode, p.stderr))
    target.wait(timeout=30)
    got = {"bpf": native_report(r.stderr, "bpf"), "ptrace": native_report(p.stderr, "ptrace")}
    for name, (samples, unwound, failed, unmatched) in got.items():
        print("  %s: %d samples, %d unwound, %d failed, %d not matching" % (name, samples, unwound,
                                                                            failed, unmatched))
    samples, unwound, failed, unmatched = got["bpf"]
    # ZEEK_SPY_BPF_SMALL_RING: the records of a second's poll fill the
    # kernel's ring many times over; they must wake the recorder in time.
    lost = re.search(r"(\d+) records lost to a full ring", r.stderr)
    if os.environ.get("ZEEK_SPY_BPF_SMALL_RING") and (not lost or int(lost.group(1))):
        fail("bpf, a small ring: %s records lost to a full ring" % (lost.group(1) if lost else "?"))
    # Of the records the kernel sent: an off-CPU record stands for as many
    # samples as ticks of wall time it was away (many on a loaded host),
    # and is one stack.
    m = BPF_RECORDS.search(r.stderr)
    if not m:
        fail("bpf: no records line in the report:\n%s" % r.stderr)
    ok_bpf = (unwound - unmatched) / (int(m.group(1)) + int(m.group(2)))
    ok_ptrace = (got["ptrace"][1] - got["ptrace"][3]) / got["ptrace"][0]
    if ok_bpf < 0.9 or ok_bpf < ok_ptrace - 0.01:
        fail("bpf: %.1f %% of the samples unwound and matching (ptrace %.1f %%)"
             % (100 * ok_bpf, 100 * ok_ptrace))
    dist = {"bpf": unwound_leaf_shares(env, bpf), "ptrace": unwound_leaf_shares(env, ptrace)}
    worst = (0.0, "")
    for kind in ("work", "sleep"):
        (sb, nb), (sp, np_) = dist["bpf"][kind], dist["ptrace"][kind]
        for k in set(sb) | set(sp):
            a, b = sb.get(k, 0.0), sp.get(k, 0.0)
            sigma = (e2e.share_sigma(max(a, b), nb) ** 2 + e2e.share_sigma(max(a, b), np_) ** 2) ** 0.5
            if abs(a - b) > max(e2e.TOLERANCE_POINTS, e2e.MIN_SIGMAS * sigma):
                raise e2e.Shortfall("%s (%s): bpf %.1f %% against ptrace %.1f %%" % (k, kind, a, b))
            worst = max(worst, (abs(a - b), "%s (%s)" % (k, kind)))
    print("  native frames under bpf: %.1f %% of the samples whole (ptrace %.1f %%); largest "
          "difference in a function's share %.2f points (%s)" % (100 * ok_bpf, 100 * ok_ptrace,
                                                                  worst[0], worst[1]))


def test_launch(env):
    rec, truth = env.path("rec.zspy"), env.path("truth.tsv")
    rc, err, ids = run_watched([env.record, "--sampler", "bpf", "--no-native", "-r", str(RATE_HZ),
                                "-o", rec, "--", env.target, "--seconds", "7", "--quiet", "--ground-truth", truth])
    if rc != 0:
        fail("record --sampler bpf -- COMMAND exited %d" % rc)
    if "exited with status 0" not in err:
        fail("recorder did not say that the target exited")
    assert_released(ids, "after a launch")
    e2e.check_profile(env, rec, truth, 5000, retryable=True, recorder_stderr=err)


def test_all(env):
    """--all: a worker killed at 2 s and a new one started: its exit noted,
    the new one recorded, none of them ever stopped."""
    rec = env.path("all.zspy")
    build = os.path.join(env.build, "tests", "target")
    procs = {
        "worker-1": subprocess.Popen([os.path.join(build, "zeek-double-8.2"), "--seconds", "9",
                                      "--quiet"], stdout=subprocess.DEVNULL,
                                     env=dict(os.environ, CLUSTER_NODE="worker-1")),
        "manager": subprocess.Popen([os.path.join(build, "zeek-double-3.0"), "--seconds", "9",
                                     "--quiet"], stdout=subprocess.DEVNULL,
                                    env=dict(os.environ, CLUSTER_NODE="manager")),
    }
    time.sleep(0.3)
    recorder = subprocess.Popen([env.record, "--sampler", "bpf", "--all", "--scan-every", "0.5",
                                 "-r", "200", "-d", "6", "-o", rec], stderr=subprocess.PIPE, text=True)
    watches = [TracerWatch(p.pid) for p in procs.values()]
    time.sleep(2)
    ids = held_ids(recorder.pid)
    procs["worker-1"].kill()
    procs["worker-1"].wait()
    procs["worker-1b"] = subprocess.Popen([os.path.join(build, "zeek-double-8.0"), "--seconds", "6",
                                           "--quiet"], stdout=subprocess.DEVNULL,
                                          env=dict(os.environ, CLUSTER_NODE="worker-1b"))
    watches.append(TracerWatch(procs["worker-1b"].pid))
    _, err = recorder.communicate(timeout=60)
    print(err.strip())
    if recorder.returncode != 0:
        fail("recorder --sampler bpf --all exited %d" % recorder.returncode)
    if not re.search(r"pid %d (is gone|was killed)" % procs["worker-1"].pid, err):
        fail("the killed worker's exit was not noted")
    watches[-1].check("--all, the new worker")
    for w in watches[1:-1]:
        w.check("--all")
    for p in procs.values():
        p.kill()
        p.wait()
    assert_released(ids, "after --all")
    r = e2e.run([env.convert, "--no-cache", "-f", "summary", rec])
    for node in ("worker-1", "manager", "worker-1b"):
        if not re.search(r"\d+ +[\d.]+%  \d+ +" + re.escape(node) + " ", r.stdout):
            fail("no samples of node %s in the per-process table:\n%s" % (node, r.stdout))
    print("  every node recorded, the killed one's exit noted")


def test_kill(env):
    """SIGKILL mid-recording: what was flushed converts, and nothing of
    ours stays in the kernel (everything hangs on the recorder's fds)."""
    rec = env.path("killed.zspy")
    target = subprocess.Popen([env.target, "--seconds", "8", "--quiet"], stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    recorder = subprocess.Popen([env.record, "--sampler", "bpf", "-r", "500", "-p", str(target.pid),
                                 "-o", rec], stderr=subprocess.PIPE, text=True)
    # From the moment it samples (its target inspected, its programs loaded).
    for line in recorder.stderr:
        if "sampling 1 process" in line:
            break
    time.sleep(2.6)
    ids = held_ids(recorder.pid)
    recorder.kill()
    recorder.wait()
    e2e.assert_untouched(target.pid, "after SIGKILL of the recorder")
    assert_released(ids, "after SIGKILL")
    # The zstd frame being written when it died is cut: the converter reads
    # what came before it.
    r = e2e.run([env.convert, "--no-cache", "-q", "-f", "folded", "-o", "-", rec])
    if r.returncode != 0 or "HTTP::parse_request" not in r.stdout:
        fail("the killed recording does not convert: %s %s" % (r.stdout, r.stderr))
    samples = sum(int(line.rsplit(" ", 1)[1]) for line in r.stdout.splitlines() if line.strip())
    # Flushed every second: at most the last second is lost (and a margin
    # for a slow host: 1.2 of the 1.6 s left).
    if samples < 600:
        fail("only %d samples survived 2.6 s of sampling at 500 Hz" % samples)
    target.kill()
    target.wait()
    print("  %d samples kept, nothing left attached" % samples)


LOW_RATE_HZ = 8  # below 32 a second, the cut comes every 32 ticks' time: 4 s here
LOW_RATE_CUT_S = 32 / LOW_RATE_HZ


def test_low_rate(env):
    """At a low rate the cut (the polls, their hand-over to the unwinder,
    the load, a zstd frame) comes once every 32 ticks' time, 4 s at 8 Hz:
    a recording's samples are all written at its end with their native
    frames, though they waited for the cut before their unwinds were asked
    for; a recorder SIGKILLed after the first cut leaves what came before
    it. And the wall clock's every tick is a sample, on its CPU or away:
    the double's waits (a fifth of its time, 0.85 ms each) mostly end
    before the looks their timers ask for, and the time away they leave
    owing is paid at the end (rec_bpf_sampler_settle; without it, 44-54
    of 56)."""
    target = e2e.start_target(env, 11)
    whole, killed = env.path("low.zspy"), env.path("low-killed.zspy")
    victim = subprocess.Popen([env.record, "--sampler", "bpf", "-r", str(LOW_RATE_HZ), "-p",
                               str(target.pid), "-o", killed], stderr=subprocess.PIPE, text=True)
    for line in victim.stderr:
        if "sampling 1 process" in line:
            break
    started = time.monotonic()
    r = record_bpf(env, whole, target.pid, 7, extra=(), rate=LOW_RATE_HZ)
    time.sleep(max(0.0, LOW_RATE_CUT_S + 1.5 - (time.monotonic() - started)))
    victim.kill()
    victim.wait()
    target.wait(timeout=30)
    samples, unwound, failed, unmatched = native_report(r.stderr, "bpf, %d Hz" % LOW_RATE_HZ)
    m = BPF_RECORDS.search(r.stderr)
    records = int(m.group(1)) + int(m.group(2)) if m else 0
    print("  %d Hz for 7 s: %d samples, %d records, %d unwound, %d failed, %d not matching"
          % (LOW_RATE_HZ, samples, records, unwound, failed, unmatched))
    # Less the edges: the clocks set at the first look, less than a period
    # left owing at the end.
    if samples < 7 * LOW_RATE_HZ - 3:
        fail("%d samples in 7 s at %d Hz: the wall clock's ticks not all paid" % (samples, LOW_RATE_HZ))
    if "no more native frames" in r.stderr or failed or unwound < records:
        fail("native frames lost at a low rate:\n%s" % r.stderr)
    k = e2e.run([env.convert, "--no-cache", "-q", "-f", "folded", "-o", "-", killed])
    if k.returncode != 0:
        fail("the recording killed after its first cut does not convert: %s" % k.stderr)
    kept = sum(int(line.rsplit(" ", 1)[1]) for line in k.stdout.splitlines() if line.strip())
    # The first cut, 4 s in (riding on a wake-up up to 250 ms before),
    # wrote what came before it: a margin of 2 s for a slow start.
    if kept < (LOW_RATE_CUT_S - 2) * LOW_RATE_HZ:
        fail("only %d samples survived a SIGKILL %.1f s into %d Hz" % (kept, LOW_RATE_CUT_S + 1.5, LOW_RATE_HZ))
    print("  SIGKILLed %.1f s in: %d samples kept" % (LOW_RATE_CUT_S + 1.5, kept))


def test_choice(env):
    """Without the capabilities BPF needs: bpf refuses in one line, naming
    why; the default (auto) records with ptrace and says why in one note
    line. With them, the default samples with BPF and says so."""
    target = subprocess.Popen([env.target, "--seconds", "12", "--quiet"], stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    r = e2e.run(NO_BPF_CAPS + [env.record, "--sampler", "bpf", "-p", str(target.pid), "-d", "1",
                               "-o", env.path("refused.zspy")])
    lines = r.stderr.strip().splitlines()
    if r.returncode == 0 or len(lines) != 1 or "--sampler bpf" not in lines[0] or "CAP_BPF" not in lines[0]:
        fail("--sampler bpf without CAP_BPF: want one line naming the option and the capability, "
             "got exit %d: %s" % (r.returncode, r.stderr))
    if os.path.exists(env.path("refused.zspy")):
        fail("a refused recorder left a file")
    # The default is auto: the same run without --sampler.
    r = e2e.run(NO_BPF_CAPS + [env.record, "-p", str(target.pid), "-d", "1",
                               "-o", env.path("auto.zspy")])
    notes = [l for l in r.stderr.splitlines() if "note: sampling with ptrace" in l]
    if r.returncode != 0 or len(notes) != 1 or "CAP_BPF" not in notes[0]:
        fail("the default sampler without CAP_BPF: want a recording and one note line, got exit "
             "%d: %s" % (r.returncode, r.stderr))
    if "with the BPF sampler" in r.stderr:
        fail("auto fell back yet said BPF")
    e2e.assert_untouched(target.pid, "after auto's ptrace recording")
    # With the capabilities, the default is BPF, and says so: zeek never traced.
    rc, err, ids = run_watched([env.record, "-p", str(target.pid), "-d", "3", "-o",
                                env.path("default.zspy")], [target.pid])
    if rc != 0 or "with the BPF sampler" not in err or "note:" in err:
        fail("the default sampler as root: want BPF, said once and no note, got exit %d: %s"
             % (rc, err))
    assert_released(ids, "after the default recording")
    target.kill()
    target.wait()
    print("  bpf refused in one line; the default fell back to ptrace with one note, and as root "
          "sampled with BPF")


def busy_share(pid, seconds=1.0):
    """The share of a CPU pid's main thread takes over the next seconds."""
    def cpu_ns():
        with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
            return int(f.read().split()[0])
    cpu0, t0 = cpu_ns(), time.monotonic()
    time.sleep(seconds)
    return (cpu_ns() - cpu0) / 1e9 / (time.monotonic() - t0)


def test_cpu_only(env):
    """--cpu-only: one program (the tick), none on the host's switches;
    samples for the target's CPU time only (the double idles between
    connections), said so by the recorder and the converter. With ptrace:
    refused in one line."""
    r = e2e.run([env.record, "--cpu-only", "--sampler", "ptrace", "-p", "1", "-o", env.path("no.zspy")])
    if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1 or "--cpu-only" not in r.stderr:
        fail("--cpu-only --sampler ptrace: want one usage line, got exit %d: %s" % (r.returncode, r.stderr))
    seconds = 4
    target = subprocess.Popen([env.target, "--seconds", "12", "--quiet"], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    # The double's share of a CPU (it idles between connections), before and
    # after the recording: the recorder's start-up is in neither.
    before = busy_share(target.pid)
    rec = env.path("cpu.zspy")
    rc, err, ids = run_watched([env.record, "-v", "--cpu-only", "--no-native", "-r", str(RATE_HZ), "-p",
                                str(target.pid), "-d", str(seconds), "-o", rec], [target.pid])
    share = (before + busy_share(target.pid)) / 2
    target.kill()
    target.wait()
    if rc != 0 or "on-CPU time only" not in err:
        fail("--cpu-only: want a BPF recording that says on-CPU only, got exit %d" % rc)
    programs = {i for what, i in ids if what == "prog"}
    if len(programs) != 1:
        fail("--cpu-only: the recorder held %d BPF programs, want only the tick" % len(programs))
    assert_released(ids, "after --cpu-only")
    s = e2e.run([env.convert, "--no-cache", "-f", "summary", "-o", "-", rec])
    m = re.search(r"(\d+) samples over ([\d.]+) s", s.stdout)
    if s.returncode != 0 or not m or "recorded with --cpu-only" not in s.stdout:
        fail("summary of a --cpu-only recording: %s%s" % (s.stdout[:400], s.stderr))
    samples, wall_s = int(m.group(1)), float(m.group(2))
    if share > 0.92:
        fail("the double did not idle (%.0f %% of a CPU): the test shows nothing" % (100 * share))
    # Ticks of CPU time: samples for share * wall_s seconds; wall-clock
    # samples would be 1 / share times as many.
    ratio = samples / (share * wall_s * RATE_HZ)
    print("  %d samples in %.2f s of wall time, the double busy %.0f %% of it: x%.2f its CPU time "
          "(wall-clock sampling: x%.2f)" % (samples, wall_s, 100 * share, ratio, 1 / share))
    if not 0.85 <= ratio <= min(1.1, (1 + 1 / share) / 2):
        fail("--cpu-only: %d samples for %.2f s of CPU at %d Hz" % (samples, share * wall_s, RATE_HZ))


def main():
    build, test = sys.argv[1], sys.argv[2]
    gen = sys.argv[3] if len(sys.argv) > 3 and not sys.argv[3].startswith("--") else "8.0"
    env = e2e.Env(build, gen, "--stripped" in sys.argv)
    if e2e.run(["go", "version"]).returncode != 0:
        fail("go (for go tool pprof) is not installed: run scripts/install-deps.sh")
    skip_unless_bpf(env)
    chosen = {"attach": test_attach, "compare": test_compare, "launch": test_launch,
              "all": test_all, "kill": test_kill, "choice": test_choice,
              "native": test_native, "cpu-only": test_cpu_only, "low-rate": test_low_rate}[test]
    for attempt in (1, 2):
        try:
            chosen(env)
            break
        except e2e.Shortfall as short:
            print("  attempt %d: %s" % (attempt, short))
            if attempt == 2:
                fail(str(short))
            env = e2e.Env(build, gen, "--stripped" in sys.argv)
    print("PASS " + " ".join(sys.argv[2:]))


if __name__ == "__main__":
    main()
