#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault: SIGTERM, SIGINT and SIGHUP at random moments, start-up included.

    stop_signals.py BUILD_DIR [--runs N] [--seed S]

N times (default 20), against the test doubles of the three generations in
turn, attach (-p) or launch (-- COMMAND): start zeek-spy-record and send it
one of the three signals 2 ms-2 s later (a third in start-up, while it inspects the
target, seizes it or opens the recording). Then
  - the recorder exits 0 within 1 s of the signal;
  - its recording, when it made one, converts;
  - the target (attached, or launched and started) runs on untraced; a
    launched command the signal beat to its exec is not left behind.
Last, a recorder SIGKILLed at 0.3 s leaves a header and no samples: that
recording converts with a warning that it was cut in its first second.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, convert_summary, start_target, stop, untouched  # noqa: E402
from refusals import processes_with  # noqa: E402

EXIT_LIMIT_S = 1.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("ZS_TEST_SEED") or time.time()))
    a = ap.parse_args()
    env = Env(a.build)
    res = Result("stop-signals")
    rnd = random.Random(a.seed)
    print("seed %d" % a.seed)
    gens = ["3.0", "8.0", "8.2"]
    sigs = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
    worst, converted, made, early_kills = 0.0, 0, 0, 0
    try:
        for i in range(a.runs):
            gen = gens[i % 3]
            sig = sigs[(i // 3) % 3]
            launch = i % 2 == 1
            # A third in start-up (inspecting, seizing, opening: about 6 ms
            # for the doubles), the rest while sampling.
            delay = rnd.uniform(0.002, 0.015) if i % 3 == 2 else rnd.uniform(0.015, 2.0)
            out = env.path("sig-%02d.zspy" % i)
            marker = env.path("marker-%02d" % i)
            target = None
            if launch:
                cmd = [env.record, "--sampler", "ptrace", "-q", "-r", "500", "-o", out, "--", env.target(gen),
                       "--seconds", "30", "--quiet", "--ground-truth", marker]
            else:
                target = start_target(env, gen, seconds=60)
                cmd = [env.record, "--sampler", "ptrace", "-q", "-r", "500", "-o", out, "-p", str(target.pid)]
            # The launched command inherits stderr: a file, so that waiting
            # for the recorder does not wait for the command's end too.
            errf = open(env.path("sig-%02d.err" % i), "w+")
            rec = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
            time.sleep(delay)
            t_sig = time.monotonic()
            rec.send_signal(sig)
            label = "run %d (Zeek %s, %s, %s at %.2f s)" % (
                i, gen, "launch" if launch else "attach", signal.Signals(sig).name, delay)
            try:
                rec.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rec.kill()
                rec.wait()
                res.fail("%s: the recorder did not exit within 10 s" % label)
            took = time.monotonic() - t_sig
            errf.seek(0)
            err = errf.read()
            errf.close()
            worst = max(worst, took)
            # A signal that beats the handlers' installation (the first
            # millisecond) ends the recorder before it touched anything.
            early = rec.returncode == -sig and not os.path.exists(out)
            early_kills += early
            res.check(rec.returncode == 0 or early, "%s: exit %s: %s" % (label, rec.returncode, err.strip()))
            res.check(took <= EXIT_LIMIT_S, "%s: exited %.2f s after the signal" % (label, took))
            if os.path.exists(out):
                made += 1
                rc, samples, cerr = convert_summary(env, out)
                if res.check(rc == 0, "%s: recording does not convert: %s" % (label, cerr)):
                    converted += 1
            if launch:
                pids = processes_with(marker)
                for pid in pids:
                    res.check(untouched(pid), "%s: launched pid %d left traced or stopped" % (label, pid))
                    os.kill(pid, signal.SIGKILL)
            else:
                res.check(untouched(target.pid), "%s: target left traced or stopped" % label)
                stop(target)
            print("  %s: exit %s after %.3f s%s" % (label, rec.returncode, took,
                                                    ", recording converts" if os.path.exists(out) else ", no recording yet"),
                  flush=True)
        # SIGKILL in the first second: a header and no samples yet; the
        # converter must say so, not just print an empty profile.
        target = start_target(env, "8.0", seconds=60)
        out = env.path("killed-early.zspy")
        rec = subprocess.Popen([env.record, "--sampler", "ptrace", "-q", "-o", out, "-p", str(target.pid)],
                               stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        rec.kill()
        rec.wait()
        rc, samples, cerr = convert_summary(env, out)
        res.check(rc == 0 and "cut in its first second" in cerr,
                  "recording killed at 0.3 s: exit %d, warning %r" % (rc, cerr))
        print("  SIGKILL at 0.3 s: convert exit %d: %s" % (rc, cerr), flush=True)
        res.check(untouched(target.pid), "target left traced after SIGKILL of the recorder")
        stop(target)
    finally:
        env.cleanup()
    res.finish("%d stop signals (SIGTERM/SIGINT/SIGHUP) at 2 ms-2 s, attach and launch, 3 generations: "
               "exit 0 within %.3f s (limit %.0f s; %d ended by a signal before installing handlers); "
               "%d/%d recordings convert; targets untraced"
               % (a.runs, worst, EXIT_LIMIT_S, early_kills, converted, made))


if __name__ == "__main__":
    main()
