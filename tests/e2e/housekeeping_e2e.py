#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Nothing but the reads while a zeek is held: housekeeping (writing
samples, flushes, rotations, inspecting a new zeek, starting its unwinder)
never keeps a stopped target waiting.

    housekeeping_e2e.py BUILD_DIR quiet|busy

`--all -r 200 --native` over two running doubles, twice: once undisturbed,
once with events mid-recording: `--rotate 1` (a new part, with its fsync,
every second), and a third zeek appearing 2 s in whose inspection is slow
(ZEEK_SPY_TEST_SLOW_INSPECT delays its sandboxed parse by 500 ms, as a real
Zeek's 320 MB of DWARF takes about 0.65 s), then, once it has exited, a
fourth from the same executable (its inspection answered from the cache).
The newcomers run at nice 19, so that the CPU they take does not itself
lengthen the running targets' stops. Checked from the recorder's report:
  - the loop spent no time elsewhere while a running target's stop was
    pending ((b) is 0 in each of their samples);
  - quiet: the running targets' longest part (c) (stop seen to resume) stays
    within 5 ms of the undisturbed run's; their longest stop is printed (it
    is mostly (a), the target waiting for a core: the doubles keep both
    cores busy). On a real Zeek the whole stop's maximum is compared (docs/
    housekeeping.md: 258 ms before the fix, within 2 ms of undisturbed after);
  - both newcomers are recorded; the first was inspected in >= 0.3 s, the
    second from the cache, and the report counts the cache's answers.
busy: the same with one CPU burner per core (stop times there are the
host's; only (b) is checked).
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import busy_host  # noqa: E402
import record_e2e as e2e  # noqa: E402

RATE, SECONDS = 200, 7
SLOW_MS = 500
# The recorder itself preempted while it holds a target (the doubles keep
# both cores busy) moves (c)'s maximum by 2-3 ms run to run on this VM; work
# done in the window (a part's fsync, an inspection: 500 ms here) by more.
MAX_EXTRA_STOP_US = 5000


def report_figures(stderr):
    """(b) in all and in how many samples; each pid's samples and longest stop."""
    m = re.search(r"\(b\) the recorder busy elsewhere meanwhile: (\d+) us in all, max (\d+) us, in (\d+) samples",
                  stderr)
    if not m:
        e2e.fail("no (b) figure in the report:\n" + stderr)
    per_pid = {int(p): (int(n), float(mx), int(b), float(c)) for p, n, mx, b, c in
               re.findall(r"pid (\d+): (\d+) samples .*?stop max (\d+) us; \(b\) (\d+) us in \d+ samples; "
                          r"\(c\) max (\d+) us", stderr)}
    return int(m.group(1)), int(m.group(3)), per_pid


def record(env, events, burn):
    """One --all recording over two running doubles; with events, the
    newcomers and rotations. Returns (stderr, running pids, newcomer pids)."""
    out = env.path("hk-%d.zspy" % events)
    gens = ["8.0", "8.2"]
    slow_exe = env.path("slowinspect-zeek-8.2")
    shutil.copy(os.path.join(env.build, "tests", "target", "zeek-double-8.2"), slow_exe)
    args = [env.record, "--sampler", "ptrace", "-v", "--all", "--scan-every", "0.25", "--native", "-r", str(RATE), "-d", str(SECONDS),
            "-o", out]
    if events:
        args += ["--rotate", "1"]
    menv = dict(os.environ, ZEEK_SPY_TEST_SLOW_INSPECT="slowinspect:%d" % SLOW_MS)
    newcomers = []
    with busy_host.Burners(os.cpu_count() if burn else 0):
        # They outlive the recording whatever its start-up takes (its first
        # scan inspects them: about 1 s each under ASan); ended after it.
        running = busy_host.start_doubles(env, gens, SECONDS + 60)
        rec = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=menv)
        if events:
            time.sleep(2)
            for _ in range(2):
                p = subprocess.Popen(["nice", "-n", "19", slow_exe, "--seconds", "2.5", "--quiet"],
                                     stdout=subprocess.DEVNULL)
                newcomers.append(p)
                if len(newcomers) == 1:
                    p.wait()
                    time.sleep(0.2)
        _, err = rec.communicate(timeout=60)
        for p in running:
            p.kill()
        busy_host.finish(running)
        for p in newcomers:
            p.wait()
    if rec.returncode != 0:
        e2e.fail("recorder exit %d: %s" % (rec.returncode, err))
    return err, [p.pid for p in running], [p.pid for p in newcomers]


def check_once(env, burn, label):
    """One undisturbed and one disturbed recording; fails at once on what
    the loop decides ((b), the newcomers, the cache, the parts). Returns
    the error of the timing check, or None."""
    base_err, base_pids, _ = record(env, False, burn)
    err, pids, newcomers = record(env, True, burn)
    print(err.strip())
    _, _, base = report_figures(base_err)
    total, samples, per = report_figures(err)
    # A newcomer at nice 19 may wait past HOLD_GRACE_NS for a core:
    # then housekeeping goes on, and its stop's (b) says so. The running
    # targets' must be 0.
    for name, figures, running in (("undisturbed", base, base_pids), ("with events", per, pids)):
        for pid in running:
            if pid not in figures or figures[pid][2]:
                e2e.fail("%s, %s: pid %d's stops waited for the loop's housekeeping: %s"
                         % (label, name, pid, figures.get(pid)))
    print("  %s: (b) over all targets, newcomers included: %d us in %d samples" % (label, total, samples))
    # The newcomers: recorded, the first inspected slowly, the second from the cache.
    inspected = {int(p): float(t) for p, t in re.findall(r"recording pid (\d+) .*inspected in ([\d.]+) s", err)}
    for pid in newcomers:
        if per.get(pid, (0, 0))[0] == 0 and not re.search(r"pid %d exited with status 0 \(([1-9]\d*) samples" % pid, err):
            e2e.fail("%s: the newcomer pid %d was not recorded" % (label, pid))
    first, second = inspected.get(newcomers[0]), inspected.get(newcomers[1])
    if first is None or first < 0.3 or second is None or second > first / 2:
        e2e.fail("%s: inspections took %s s and %s s (want >= 0.3 s, then from the cache)"
                 % (label, first, second))
    m = re.search(r"(\d+) answered from the cache", err)
    if not m or int(m.group(1)) < 2:
        e2e.fail("%s: the restarted newcomer's inspection was not answered from the cache" % label)
    parts = len([f for f in os.listdir(env.tmp) if f.startswith("hk-1-")])
    if parts < SECONDS // 2:  # a part's age is checked at each second's flush
        e2e.fail("%s: --rotate 1 wrote %d parts in %d s" % (label, parts, SECONDS))
    worst_base = max(base[p][1] for p in base_pids)
    worst = max(per[p][1] for p in pids)
    held_base = max(base[p][3] for p in base_pids)
    held = max(per[p][3] for p in pids)
    print("  %s: (b) 0 in every sample of the running targets in both runs; their longest stop %.0f us "
          "undisturbed, %.0f us with %d rotations and two newcomers (inspected in %.2f s, then %.2f s from "
          "the cache); their longest (c) %.0f us and %.0f us"
          % (label, worst_base, worst, parts, first, second, held_base, held))
    # What the loop decides is (b), checked above, and (c). The rest of a
    # stop, (a), is the target waiting for a core: the doubles keep both
    # cores busy, so its maximum is the scheduler's, run to run (5 to 14 ms
    # measured with the same options).
    # Under the sanitizers (ASAN_OPTIONS, set by scripts/ci-sanitize.sh)
    # timing means nothing: there only (b) and the newcomers are checked.
    if not burn and "ASAN_OPTIONS" not in os.environ and held > held_base + MAX_EXTRA_STOP_US:
        return ("%s: the running targets' longest read-and-resume grew from %.0f to %.0f us with the events"
                % (label, held_base, held))
    return None


def check(env, burn):
    """(c)'s maximum is one sample's: the recorder itself preempted while a
    target is held (both cores are busy with the doubles) moves it by
    milliseconds, run to run (CI: 7.4 ms undisturbed; 5.1-5.7 ms undisturbed
    against 7.8-8.0 ms with events in both pairs of one CI run, 0.1 ms in
    either on this VM a minute later). So a timing miss gets more pairs of
    recordings and fails only when three pairs miss; (b), which
    housekeeping would make non-zero, is exact and fails at once."""
    label = "one burner per core" if burn else "quiet host"
    for attempt in (1, 2, 3):
        for f in os.listdir(env.tmp):
            if f.startswith("hk-"):
                os.unlink(os.path.join(env.tmp, f))
        error = check_once(env, burn, label)
        if not error:
            return
        print("  %s: attempt %d: %s" % (label, attempt, error))
    e2e.fail(error)


def main():
    env = e2e.Env(sys.argv[1], "8.0")
    check(env, sys.argv[2] == "busy")
    print("PASS housekeeping " + sys.argv[2])


if __name__ == "__main__":
    main()
