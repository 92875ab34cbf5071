#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault: the target dies (SIGKILL) or exits normally while being recorded.

    kill_target.py BUILD_DIR

Cases: attached (-p) blocking and --nonblocking, target SIGKILLed or
exiting by itself; launched (-- COMMAND) and SIGKILLed; and the same with
--native, where the target dies with unwinds under way. In every case the
recorder must notice, say so on stderr, finish the recording and exit 0
within 5 s, and the recording must carry its trailer: it converts with no
"no trailer" / "cut short" warning. With --native the unwinder is gone too,
and the samples taken before the end keep their native frames.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, children, convert_summary, start_target, stop, wait_for_file  # noqa: E402

FINISH_WITHIN_S = 5.0


def alive(pid):
    try:
        state = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def case(env, res, name, launch, nonblocking, kill, native=False):
    rec = env.path(name + ".zspy")
    target = None
    if launch:
        cmd = [env.record, "-r", "500", "-o", rec, "--", env.target("8.0"), "--seconds", "30",
               "--quiet"]
    else:
        target = start_target(env, "8.0", seconds=30 if kill else 2.5)
        cmd = [env.record, "-r", "500", "-o", rec, "-p", str(target.pid)]
        if nonblocking:
            cmd.insert(1, "--nonblocking")
    if native:
        cmd.insert(1, "--native")
    rp = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        if wait_for_file(rec, rp) is None:
            res.fail("%s: recorder did not start: %s" % (name, rp.communicate()[1].strip()))
            return
        time.sleep(1.5 if kill else 0.5)
        helpers = children(rp.pid)  # launched target first, then the unwinder
        if kill:
            pid = helpers[0] if launch else target.pid
            os.kill(pid, signal.SIGKILL)
            t_end = time.monotonic()
        else:
            target.wait(timeout=30)  # the recorder must notice on its own, reaped or not
            pid = target.pid
            t_end = time.monotonic()
        try:
            _, err = rp.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            rp.kill()
            _, err = rp.communicate()
            res.fail("%s: recorder still running 30 s after the target ended" % name)
            return
        took = time.monotonic() - t_end
        err = err.strip()
        said = [l for l in err.splitlines() if str(pid) in l and
                ("signal 9" in l or "killed" in l or "exited" in l or "gone" in l)]
        res.check(rp.returncode == 0, "%s: recorder exited %d: %s" % (name, rp.returncode, err))
        res.check(took <= FINISH_WITHIN_S, "%s: recorder took %.1f s to finish" % (name, took))
        res.check(bool(said), "%s: recorder did not say that pid %d ended: %r" % (name, pid, err))
        rc, samples, cerr = convert_summary(env, rec)
        res.check(rc == 0, "%s: convert exited %d: %s" % (name, rc, cerr))
        res.check("trailer" not in cerr and "cut short" not in cerr,
                  "%s: recording not finished properly: %s" % (name, cerr))
        res.check((samples or 0) > 0, "%s: no samples in the recording" % name)
        left = [c for c in helpers if alive(c)]
        res.check(not left, "%s: the recorder's children %s outlived it" % (name, left))
        if native:
            folded = subprocess.run([env.convert, "--no-cache", "-q", "-f", "folded", "-o", "-", rec],
                                    capture_output=True, text=True).stdout
            with_main = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines() if ";main;" in l)
            res.check(with_main > 0.5 * (samples or 0),
                      "%s: only %d of %s samples with native frames" % (name, with_main, samples))
        print("  %-28s recorder exit %d, %.0f ms after the end; said %r; %s samples, %s"
              % (name, rp.returncode, took * 1000, said[0] if said else None, samples,
                 cerr or "converts without warning"), flush=True)
    finally:
        stop(rp)
        stop(target)


def main():
    env = Env(sys.argv[1])
    res = Result("kill-target")
    cases = [("attach-sigkill", False, False, True),
             ("attach-nonblocking-sigkill", False, True, True),
             ("attach-exit", False, False, False),
             ("attach-nonblocking-exit", False, True, False),
             ("launch-sigkill", True, False, True),
             ("attach-native-sigkill", False, False, True, True),
             ("attach-native-exit", False, False, False, True),
             ("launch-native-sigkill", True, False, True, True)]
    for c in cases:
        case(env, res, *c)
    env.cleanup()
    res.finish("%d cases (attached blocking/nonblocking, launched; target SIGKILLed or exiting): "
               "recorder says so, exits 0 within %.0f s, recording has its trailer, no child left; "
               "with --native the samples keep their native frames"
               % (len(cases), FINISH_WITHIN_S))


if __name__ == "__main__":
    main()
