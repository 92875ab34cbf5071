#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault: the recorder is killed with SIGKILL at random moments.

    kill_recorder.py BUILD_DIR [--kills N] [--seed S]

Against running test doubles of Zeek (3.0, 8.0 and 8.2 in turn), N times
(default 20): start zeek-spy-record -p at a random rate of 200-1000 Hz (every
fifth run --nonblocking, every fifth launching its own double with
-- COMMAND, every fifth with its unwinder stopped by SIGSTOP from its start,
as one still reading the modules' tables of a big zeek on a cold disk
would be), SIGKILL it 0.2-2.5 s after sampling started, then
  - the target must run on untraced within 100 ms (/proc/PID/status
    TracerPid 0, state not t/T) and still be so 300 ms later;
  - the recording must convert (exit 0; a warning about the cut-off end is
    expected), losing at most the last second: samples recovered >=
    (elapsed - 1 s - slack) x rate, the slack covering ticks a busy machine
    makes the recorder skip; with the unwinder stopped, 0.3 s more (a
    sample's unwind may be that late before a frame cut writes it without).
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import (Env, Result, children, convert_summary, start_target, stop, untouched,  # noqa: E402
                      wait_for_file, wait_untouched)

WITHIN_S = 0.1          # the target must be untouched this soon after the kill
LOSS_LIMIT_S = 1.0      # the recording flushes a zstd frame every second
SLACK_S = 0.3           # plus scheduling slack
SLACK_FRACTION = 0.05   # plus skipped ticks on a busy 2-core machine
UNWIND_LATE_S = 0.3     # recorder/rec_constants.h: REC_UNWIND_LATE_NS


def stop_unwinder(rp, not_pid, timeout=2.0):
    """SIGSTOPs the recorder's unwinder (its child that is not the target)
    once it is there; its pid, or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and rp.poll() is None:
        for c in children(rp.pid):
            if c != not_pid:
                os.kill(c, signal.SIGSTOP)
                return c
        time.sleep(0.002)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("ZS_TEST_SEED") or time.time()))
    a = ap.parse_args()
    env = Env(a.build)
    res = Result("kill-recorder")
    rnd = random.Random(a.seed)
    print("seed %d" % a.seed)
    gens = ["3.0", "8.0", "8.2"]
    worst_latency, worst_loss, kills, converted = 0.0, -1e9, 0, 0
    target = None
    try:
        for i in range(a.kills):
            gen = gens[i * len(gens) // a.kills]
            if target is None or target.args[0] != env.target(gen):
                stop(target)
                target = start_target(env, gen, seconds=600)
            rate = rnd.randint(200, 1000)
            delay = rnd.uniform(0.2, 2.5)
            nonblocking = i % 5 == 4
            launch = i % 5 == 2  # the recorder's own child: orphaned by the kill
            stalled = i % 5 == 1  # native frames (the default) with an unwinder that never answers
            rec = env.path("kill-%02d.zspy" % i)
            if launch:
                cmd = [env.record, "-q", "-r", str(rate), "-o", rec, "--", env.target(gen),
                       "--seconds", "60", "--quiet"]
            else:
                cmd = [env.record, "-q", "-p", str(target.pid), "-r", str(rate), "-o", rec]
            if nonblocking:
                cmd.insert(1, "--nonblocking")
            errlog = open(env.path("kill-%02d.stderr" % i), "w")
            rp = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errlog)
            t0 = wait_for_file(rec, rp)
            if t0 is None:
                rp.kill()
                rp.wait()
                res.fail("run %d: the recorder never started sampling (exit %s): %s"
                         % (i, rp.returncode, open(errlog.name).read().strip()))
                continue
            pid = target.pid
            if launch:
                pid = children(rp.pid)[0]
            unwinder = stop_unwinder(rp, pid) if stalled else None
            if stalled and unwinder is None:
                res.fail("run %d: no unwinder to stop" % i)
            time.sleep(max(0.0, t0 + delay - time.monotonic()))
            rp.send_signal(signal.SIGKILL)
            t_kill = time.monotonic()
            rp.wait()
            if unwinder:
                try:
                    os.kill(unwinder, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            latency, status = wait_untouched(pid, WITHIN_S)
            elapsed = t_kill - t0
            kills += 1
            what = "run %d (Zeek %s double%s, %d Hz%s%s, killed at %.2f s)" % (
                i, gen, " launched" if launch else "", rate,
                ", nonblocking" if nonblocking else "", ", unwinder stopped" if unwinder else "",
                elapsed)
            if latency is None:
                res.fail("%s: target not running untraced %d ms after the kill "
                         "(TracerPid, state = %s)" % (what, WITHIN_S * 1000, status))
            else:
                worst_latency = max(worst_latency, latency)
                time.sleep(0.3)
                res.check(untouched(pid), "%s: target stopped or traced 300 ms after the kill" % what)
            if launch:
                try:
                    os.kill(pid, signal.SIGKILL)  # orphaned: init reaps it
                except ProcessLookupError:
                    res.fail("%s: the launched target died with the recorder" % what)
            if latency is None:
                continue

            rc, samples, err = convert_summary(env, rec)
            if not res.check(rc == 0, "%s: convert exited %d: %s" % (what, rc, err)):
                continue
            converted += 1
            samples = samples or 0
            lost = elapsed - samples / rate
            limit = LOSS_LIMIT_S + SLACK_S + SLACK_FRACTION * elapsed + (UNWIND_LATE_S if unwinder else 0)
            worst_loss = max(worst_loss, lost)
            print("  %s: untouched after %.1f ms; %d samples recovered (%.0f expected), "
                  "%.2f s lost; %s" % (what, latency * 1000, samples, elapsed * rate, lost,
                                       err.splitlines()[0] if err else "no warning"), flush=True)
            res.check(lost <= limit, "%s: %.2f s of samples lost (limit %.2f s)" % (what, lost, limit))
        res.check(target is not None and target.poll() is None, "a target died during the kills")
    finally:
        stop(target)
    env.cleanup()
    res.finish("%d SIGKILLs of the recorder at 0.2-2.5 s, 200-1000 Hz: target untraced and running "
               "within %.1f ms after each (limit %d ms); %d/%d recordings convert; at most %.2f s of "
               "samples lost (limit %.1f s + slack)"
               % (kills, worst_latency * 1000, WITHIN_S * 1000, converted, kills, max(worst_loss, 0),
                  LOSS_LIMIT_S))


if __name__ == "__main__":
    main()
