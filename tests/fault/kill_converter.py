#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault: the converter is killed (SIGKILL) while it reads, resolves and fills
its sqlite cache.

    kill_converter.py BUILD_DIR [--kills N] [--seed S]

A synthetic recording (zs-gen) big enough to take about a second is
converted N times (default 8) into one cache, each run SIGKILLed at a random
moment (up to the time a full run takes, so some kills land in the cache
store at the end). Then a run with the cache must succeed and give exactly
the output of a --no-cache conversion, and so must the run after it, served
from the cache. An output file the killed runs left must be complete (the
output is renamed into place), never half written.
"""
import argparse
import glob
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, run  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("ZS_TEST_SEED") or time.time()))
    a = ap.parse_args()
    env = Env(a.build)
    res = Result("kill-converter")
    rnd = random.Random(a.seed)
    print("seed %d" % a.seed)

    rec = env.path("big.zspy")
    g = run([env.zs_gen, "-o", rec, "--samples", "600000", "--stacks", "20000", "--seed", "11"])
    if g.returncode != 0:
        res.abort("zs-gen failed: " + g.stderr)
    ref = env.path("ref.folded")
    t0 = time.monotonic()
    r = run([env.convert, "--no-cache", "-q", "-f", "folded", "-o", ref, rec])
    full = time.monotonic() - t0
    if r.returncode != 0:
        res.abort("reference conversion failed: " + r.stderr)
    reference = open(ref).read()

    cache = env.path("cache.sqlite")
    out = env.path("out.folded")
    # Time one cache-filling run (then start over with an empty cache).
    t0 = time.monotonic()
    r = run([env.convert, "--cache", cache, "-f", "folded", "-o", out, rec])
    with_store = time.monotonic() - t0
    if r.returncode != 0:
        res.abort("conversion with a cache failed: " + r.stderr)
    for f in glob.glob(cache + "*") + [out]:
        os.unlink(f)
    print("  conversion takes %.2f s without the cache, %.2f s filling it" % (full, with_store))

    kills, attempts, started_over, in_store = 0, 0, 0, 0
    while kills < a.kills and attempts < 6 * a.kills:
        attempts += 1
        # Half the kills in the last 40 % of a run, where the cache is written.
        delay = rnd.uniform(0.005, with_store) if attempts % 2 else \
            rnd.uniform(0.6 * with_store, with_store)
        p = subprocess.Popen([env.convert, "--cache", cache, "-f", "folded", "-o", out, rec],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        finished = p.poll() is not None
        p.send_signal(signal.SIGKILL)
        p.wait()
        # Later than a whole --no-cache run takes: the cache is being written.
        storing = delay > full
        if os.path.exists(out):
            res.check(open(out).read() == reference, "a killed run left a partial %s" % out)
            os.unlink(out)
        if finished:
            # It filled the cache: start over, so the next kills land in a fill again.
            for f in glob.glob(cache + "*"):
                os.unlink(f)
            started_over += 1
            continue
        kills += 1
        in_store += storing
        print("  kill %d: SIGKILL at %.3f s%s" % (kills, delay, " (cache being written)" if storing else ""))
    res.check(kills == a.kills, "only %d of %d runs could be killed before they finished"
              % (kills, a.kills))
    leftovers = glob.glob(out + ".tmp.*")

    runs = []
    for what in ("after the kills", "served from the cache"):
        r = run([env.convert, "-v", "--cache", cache, "-f", "folded", "-o", out, rec])
        got = open(out).read() if os.path.exists(out) else None
        res.check(r.returncode == 0, "run %s exited %d: %s" % (what, r.returncode, r.stderr.strip()))
        res.check(got == reference, "run %s: output differs from the --no-cache conversion" % what)
        warnings = [l for l in r.stderr.splitlines() if "warning" in l]
        res.check(not warnings, "run %s warned: %s" % (what, warnings))
        runs.append("served from the cache" in r.stderr)
        print("  run %s: exit %d, %s, %s" % (what, r.returncode,
              "from the cache" if runs[-1] else "not from the cache",
              "same output" if got == reference else "DIFFERENT output"), flush=True)
    res.check(runs[-1], "the last run was not served from the cache")
    env.cleanup()
    res.finish("%d SIGKILLs of the converter during a %.2f s cache-filling conversion (%d after the "
               "time a --no-cache run takes, i.e. while storing): next run exit "
               "0 with output identical to --no-cache, then served from the cache; no partial "
               "output (%d stray temporary file(s) left by the kills)"
               % (kills, with_store, in_store, len(leftovers)))


if __name__ == "__main__":
    main()
