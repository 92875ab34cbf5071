#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Workers that come and go under one `--all` recording, as on a sensor whose
zeek workers restart for weeks: the recorder must record every one, keep its
memory flat and keep taking new ones (more in all than any fixed table).

    churn_bench.py BUILD_DIR [--doubles N] [--alive K] [--life SECS]

Starts one double that lives through it all (--all wants a zeek to start
with), then N test doubles (default 1500), K at a time (default 8), each
living SECS (default 0.8 s, at nice 19; the recorder scans every 0.2 s), then 4 that
outlive the recording. Checked:
  - every double was recorded ("recording pid" for each), and all but 1 %
    (one taken up in its last moments) have samples in the recording;
  - the recorder's RSS once all N are gone is within 10 % of its RSS after
    the first 100 were recorded;
  - the 5 still running when the recorder is stopped (SIGINT) are left
    untraced and running.
Prints one RESULT line; exit 1 when a check fails. A long test (about two
minutes), not part of the default ctest run.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import record_e2e as e2e  # noqa: E402

RSS_GROWTH_LIMIT = 0.10


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--doubles", type=int, default=1500)
    ap.add_argument("--alive", type=int, default=8)
    ap.add_argument("--life", type=float, default=0.8)
    a = ap.parse_args()
    env = e2e.Env(a.build, "8.0")
    out = env.path("churn.zspy")
    # --all wants a zeek to start with: one that lives through it all.
    resident = subprocess.Popen([env.target, "--seconds", "3600", "--quiet"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    rec = subprocess.Popen([env.record, "--all", "--scan-every", "0.2", "-r", "100", "-o", out],
                           stderr=subprocess.PIPE, text=True)
    recorded, lines = set(), []
    rss = {}

    def read_stderr():
        for line in rec.stderr:
            lines.append(line)
            m = re.search(r"recording pid (\d+)", line)
            if m:
                recorded.add(int(m.group(1)))
                if len(recorded) == 100:
                    rss["after 100"] = rss_kib(rec.pid)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    started, alive = [], []
    t0 = time.time()
    while len(started) < a.doubles:
        alive = [p for p in alive if p.poll() is None]
        while len(alive) < a.alive and len(started) < a.doubles:
            # At nice 19 the churn does not starve the recorder's scout (nice 10).
            p = subprocess.Popen(["nice", "-n", "19", env.target, "--seconds", str(a.life), "--quiet"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started.append(p)
            alive.append(p)
        time.sleep(0.02)
        if len(started) % 100 == 0 and len(started):
            print("  %d doubles started, %d recorded, %.0f s" % (len(started), len(recorded), time.time() - t0),
                  flush=True)
    for p in alive:
        p.wait()
    time.sleep(0.5)
    rss["all gone"] = rss_kib(rec.pid)
    last = [subprocess.Popen([env.target, "--seconds", "60", "--quiet"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for _ in range(4)] + [resident]
    time.sleep(1.0)
    rec.send_signal(signal.SIGINT)
    rec.wait(timeout=60)
    reader.join(timeout=10)
    failures = []
    for p in last:
        tracer, state = e2e.tracer_state(p.pid)
        if tracer != 0 or state in ("t", "T") or p.poll() is not None:
            failures.append("pid %d left traced or stopped (TracerPid %s, state %s)" % (p.pid, tracer, state))
        p.kill()
        p.wait()
    if rec.returncode != 0:
        failures.append("recorder exit %d: %s" % (rec.returncode, "".join(lines[-5:])))
    missed = [p.pid for p in started if p.pid not in recorded]
    if missed:
        said = [l.strip() for l in lines if any("pid %d" % m in l for m in missed[:5])]
        failures.append("%d of %d doubles never recorded (first: %s; said of them: %s)"
                        % (len(missed), len(started), missed[:5], said or "nothing"))
    summary = e2e.run([env.convert, "--no-cache", "-q", "-f", "summary", out]).stdout
    table = summary.split("By process:", 1)[-1]
    in_table = set(int(p) for p in re.findall(r"^\s+\d+\s+[\d.]+%\s+(\d+)\s", table, re.M))
    unconverted = [p.pid for p in started if p.pid in recorded and p.pid not in in_table]
    # One recorded in its last milliseconds may have no sample: a few, not more.
    if len(unconverted) > 0.01 * len(started):
        failures.append("%d recorded doubles have no samples in the recording (first: %s)"
                        % (len(unconverted), unconverted[:5]))
    before, after = rss.get("after 100", 0), rss.get("all gone", 0)
    growth = (after - before) / before if before else float("inf")
    if growth > RSS_GROWTH_LIMIT:
        failures.append("RSS grew %.1f %% (%d -> %d KiB)" % (100 * growth, before, after))
    print("".join(lines[-8:]).rstrip())
    print("RESULT bench.churn: %s %d doubles in %.0f s, %d recorded, %d in the recording; recorder RSS "
          "%d KiB after 100, %d KiB after all (%+.1f %%, limit %d %%); the last 5 untraced at exit%s"
          % ("FAIL" if failures else "PASS", len(started), time.time() - t0, len(recorded), len(in_table),
             before, after, 100 * growth, 100 * RSS_GROWTH_LIMIT, "".join("; " + f for f in failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
