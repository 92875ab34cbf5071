#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault: targets that cannot reach their stop for a while.

    slow_stop.py BUILD_DIR

Three test doubles recorded together (-p three times, 200 Hz, 5 s):
  A (Zeek 8.0) runs normally;
  B (Zeek 8.2, --unstoppable-ms 1300) spends 1.3 s of every 2.3 s in an
    uninterruptible wait (the parent of a vfork), as a zeek blocked on a
    slow disk would: it cannot answer an interrupt there, for longer than
    the recorder's 1 s stop deadline;
  C (Zeek 3.0) is stopped by job control (SIGSTOP) from 1 s to 2.5 s.
Then:
  - the recorder exits 0, within 1.5 s of the end of its duration, even
    when it ends while B cannot stop (the kernel releases B as the
    recorder exits);
  - A keeps its rate: at least 90 % of its ticks are samples;
  - the recorder warns that B did not stop, and counts its missed ticks,
    saying why in B's line of the end report (without -v);
    B still has samples from the time it could stop;
  - C has samples (read in place while job control held it), was not
    resumed by the recorder while stopped (still 'T' at 2.4 s), and runs
    again after SIGCONT;
  - afterwards all three run untraced.
Last, a recording of a fourth double (--unstoppable-ms 4000) ends while it
cannot stop: the recorder waits 1 s for it, says so, exits 0, and the target
is untraced at once (the kernel releases a tracee when its tracer exits).
"""
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, proc_status, run, start_target, stop, untouched  # noqa: E402

RATE, SECONDS = 200, 5.0


def samples_per_pid(env, recording):
    r = run([env.convert, "--no-cache", "-f", "summary", recording])
    per = {}
    table = r.stdout.split("By process:", 1)[-1].split("\n\n", 1)[0]
    for m in re.finditer(r"^\s+(\d+)\s+[\d.]+%\s+(\d+)\s", table, re.M):
        per[int(m.group(2))] = int(m.group(1))
    return r, per


def main():
    env = Env(sys.argv[1])
    res = Result("slow-stop")
    targets = []
    try:
        a = start_target(env, "8.0", seconds=60)
        b = start_target(env, "8.2", seconds=60, extra=["--unstoppable-ms", "1300"])
        c = start_target(env, "3.0", seconds=60)
        targets = [a, b, c]
        out = env.path("slow.zspy")
        t0 = time.monotonic()
        rec = subprocess.Popen([env.record, "--sampler", "ptrace", "-r", str(RATE), "-d", str(SECONDS), "-o", out,
                                "-p", str(a.pid), "-p", str(b.pid), "-p", str(c.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        os.kill(c.pid, signal.SIGSTOP)
        time.sleep(1.4)
        c_state = proc_status(c.pid)[1]
        res.check(c_state in ("t", "T"), "C not held stopped during SIGSTOP: state %s" % c_state)
        time.sleep(0.1)
        os.kill(c.pid, signal.SIGCONT)
        try:
            _, err = rec.communicate(timeout=SECONDS + 10)
        except subprocess.TimeoutExpired:
            rec.kill()
            _, err = rec.communicate()
            res.fail("the recorder hung")
        took = time.monotonic() - t0
        print(err, end="")
        res.check(rec.returncode == 0, "recorder exit %s" % rec.returncode)
        res.check(took <= SECONDS + 1.5, "recorder ran %.2f s for a %.0f s recording" % (took, SECONDS))
        res.check("pid %d has not stopped 1 s after an interrupt" % b.pid in err,
                  "no warning about B (pid %d) not stopping" % b.pid)
        time.sleep(1.5)  # B may still be in its uninterruptible wait
        for name, t in zip("ABC", targets):
            res.check(untouched(t.pid), "%s (pid %d) not running untraced afterwards: %s"
                      % (name, t.pid, proc_status(t.pid)))
        conv, per = samples_per_pid(env, out)
        res.check(conv.returncode == 0, "conversion failed: %s" % conv.stderr)
        na, nb, nc = per.get(a.pid, 0), per.get(b.pid, 0), per.get(c.pid, 0)
        expected = RATE * SECONDS
        res.check(na >= 0.9 * expected, "A: %d samples, expected >= %d" % (na, 0.9 * expected))
        res.check(nb > 0, "B: no samples at all")
        res.check(nc > 0.5 * expected, "C: %d samples, expected > %d" % (nc, 0.5 * expected))
        # The end report's line for B says, without -v, what it lost and why.
        skipped = re.search(r"pid %d: \d+ samples \([\d.]+ Hz\); (?:[^\n]*; )?(\d+) ticks? skipped: it did "
                            r"not stop within 1 s" % b.pid, err)
        res.check(skipped is not None, "B's missed ticks were not counted in its line of the report")
        print("  A %d, B %d, C %d samples of %d ticks; %s ticks skipped; ran %.2f s"
              % (na, nb, nc, expected, skipped.group(1) if skipped else "0", took), flush=True)
        # The recording ends while the target cannot stop: the recorder waits
        # 1 s for it, then exits, and the kernel releases it (no stop needed).
        d = start_target(env, "8.0", seconds=60, extra=["--unstoppable-ms", "4000"])
        targets.append(d)
        t1 = time.monotonic()
        r = run([env.record, "--sampler", "ptrace", "-r", str(RATE), "-d", "1", "-o", env.path("stuck.zspy"), "-p", str(d.pid)],
                timeout=30)
        took_stuck = time.monotonic() - t1
        res.check(r.returncode == 0, "stuck target: recorder exit %d: %s" % (r.returncode, r.stderr))
        res.check(took_stuck <= 1.0 + 1.5, "stuck target: recorder ran %.2f s for 1 s" % took_stuck)
        res.check("did not stop within 1 s" in r.stderr, "stuck target: no word about it: %s" % r.stderr)
        res.check(proc_status(d.pid)[0] == 0, "stuck target still traced after the recorder exit: %s"
                  % (proc_status(d.pid),))
        print("  ending in an uninterruptible wait: recorder exit %d after %.2f s; target %s"
              % (r.returncode, took_stuck, proc_status(d.pid)), flush=True)
    finally:
        for t in targets:
            stop(t)
        env.cleanup()
    res.finish("A normal, B unable to stop for 1.3 s at a time, C job-stopped for 1.5 s, 200 Hz for "
               "5 s: recorder exits 0 in %.2f s; A %d/%d samples; B's missed ticks counted; C held "
               "stopped, sampled in place; all untraced afterwards" % (took, na, expected))


if __name__ == "__main__":
    main()
