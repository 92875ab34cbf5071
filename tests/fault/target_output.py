#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault: profiling must not change what the target does.

    target_output.py BUILD_DIR [--iterations N]

The test double of Zeek prints a checksum of the statement trace it
executed (`--iterations N` makes the work deterministic). For each
generation (3.0, 8.0, 8.2) the checksum line must be the same alone, launched
under the recorder, attached blocking, and attached --nonblocking, all at
1000 Hz, and the target must exit 0 each time.
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, convert_summary, run, wait_for_file  # noqa: E402

RATE = "1000"
MIN_SAMPLES = 300  # the recorder really sampled the run it is said not to disturb


def sampled(env, res, what, rec):
    rc, samples, err = convert_summary(env, rec)
    res.check(rc == 0 and (samples or 0) >= MIN_SAMPLES,
              "%s: recording has %s samples (want >= %d): %s" % (what, samples, MIN_SAMPLES, err))
    return samples


def attached(env, gen, n, rec, nonblocking):
    t = subprocess.Popen([env.target(gen), "--iterations", str(n)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    t.stderr.readline()  # objects exist
    cmd = [env.record, "-q", "-r", RATE, "-o", rec, "-p", str(t.pid)]
    if nonblocking:
        cmd.insert(1, "--nonblocking")
    rp = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    started = wait_for_file(rec, rp) is not None
    out, _ = t.communicate(timeout=120)
    _, rerr = rp.communicate(timeout=30)
    return out.strip(), t.returncode, started and rp.returncode == 0, rerr.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--iterations", type=int, default=500)
    a = ap.parse_args()
    env = Env(a.build)
    res = Result("target-output")
    n = a.iterations
    runs = 0
    for gen in ("3.0", "8.0", "8.2"):
        base = run([env.target(gen), "--iterations", str(n), "--quiet"], timeout=120)
        if not res.check(base.returncode == 0 and "checksum" in base.stdout,
                         "%s: the double alone failed: %s" % (gen, base.stderr)):
            continue
        want = base.stdout.strip()
        print("  %-26s %s" % (gen + " alone:", want))

        rec = env.path("launch-%s.zspy" % gen)
        r = run([env.record, "-q", "-r", RATE, "-o", rec, "--", env.target(gen), "--iterations",
                 str(n), "--quiet"], timeout=120)
        res.check(r.returncode == 0, "%s launched: recorder exited %d: %s" % (gen, r.returncode,
                                                                             r.stderr.strip()))
        res.check(r.stdout.strip() == want, "%s launched: output %r, alone %r"
                  % (gen, r.stdout.strip(), want))
        n_s = sampled(env, res, gen + " launched", rec)
        print("  %-26s %s (%s samples)" % (gen + " launched:", r.stdout.strip(), n_s))
        runs += 1

        for nb in (False, True):
            what = "%s attached%s" % (gen, " --nonblocking" if nb else "")
            rec = env.path("attach-%s-%d.zspy" % (gen, nb))
            out, rc, ok, rerr = attached(env, gen, n, rec, nb)
            res.check(rc == 0, "%s: target exited %d" % (what, rc))
            res.check(ok, "%s: the recorder failed: %s" % (what, rerr))
            res.check(out == want, "%s: output %r, alone %r" % (what, out, want))
            n_s = sampled(env, res, what, rec)
            print("  %-26s %s (%s samples)" % (what + ":", out, n_s))
            runs += 1
    env.cleanup()
    res.finish("checksum of the double's %d-iteration workload identical alone and in %d profiled "
               "runs at %s Hz (3 generations x launched, attached blocking, attached --nonblocking)"
               % (n, runs, RATE))


if __name__ == "__main__":
    main()
