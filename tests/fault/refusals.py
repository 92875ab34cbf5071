#!/usr/bin/env python3
"""Fault: every refusal, before and after a process was launched or seized.

    refusals.py BUILD_DIR

For each way the recording can be refused - the output exists, its directory
is missing, its directory is read-only, the disk is full, the first write
fails (a file size limit of 0) - and for a launched command that turns out
not to be a zeek (refused in its exec stop), in attach mode (-p) and launch
mode (-- COMMAND), on the test doubles of all three generations:
  - the recorder exits 1 within 2 s with one "error:" line;
  - attach: the target is running and untraced;
  - launch: no process of the command is left behind (it was killed in its
    exec stop, or never exec'ed), none stopped.
Before this test existed, "output exists" in launch mode hung for good with
the child in its exec stop.
"""
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, start_target, stop, wait_untouched  # noqa: E402

LIMIT_S = 2.0


def processes_with(marker):
    """Pids whose command line contains marker (not ours)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(d))
        except OSError:
            pass
    return found


def mount_tmpfs(path, options):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


def fill(directory):
    with open(os.path.join(directory, "filler"), "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def no_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


class Case:
    def __init__(self, name, output, preexec=None, command=None):
        self.name, self.output, self.preexec, self.command = name, output, preexec, command


def run_case(env, res, case, gen, launch, n):
    marker = env.path("marker-%d" % n)  # unique in the launched command line
    target = None
    if launch:
        cmd = case.command or [env.target(gen), "--seconds", "30", "--quiet", "--ground-truth", marker]
        args = [env.record, "-r", "200", "-o", case.output, "--"] + cmd
    else:
        target = start_target(env, gen, seconds=60)
        args = [env.record, "-r", "200", "-o", case.output, "-p", str(target.pid)]
    label = "%s, %s, Zeek %s double" % (case.name, "launch" if launch else "attach", gen)
    t0 = time.monotonic()
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=30, preexec_fn=case.preexec)
    except subprocess.TimeoutExpired:
        res.fail("%s: the recorder hung (killed after 30 s)" % label)
        stop(target)
        return None
    took = time.monotonic() - t0
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    res.check(r.returncode == 1, "%s: exit %d, expected 1 (%s)" % (label, r.returncode, r.stderr.strip()))
    res.check(took < LIMIT_S, "%s: took %.2f s (limit %.0f s)" % (label, took, LIMIT_S))
    res.check(len(errors) == 1, "%s: %d error lines: %r" % (label, len(errors), r.stderr))
    if launch:
        time.sleep(0.05)
        left = processes_with(case.command[1] if case.command else marker)
        res.check(not left, "%s: the launched command is still there: pids %s" % (label, left))
    else:
        took_untouched, status = wait_untouched(target.pid, within=0.1)
        res.check(took_untouched is not None,
                  "%s: target not running untraced after the refusal: %s" % (label, status))
        stop(target)
    print("  %s: exit %d in %.2f s: %s" % (label, r.returncode, took, errors[0] if errors else "-"),
          flush=True)
    return took


def main():
    env = Env(sys.argv[1])
    res = Result("refusals")
    existing = env.path("exists.zspy")
    open(existing, "w").close()
    ro = env.path("ro")
    ro_ok, ro_why = mount_tmpfs(ro, "ro,size=1m")
    full = env.path("full")
    full_ok, full_why = mount_tmpfs(full, "size=64k")
    if full_ok:
        fill(full)
    cases = [
        Case("output exists", existing),
        Case("output directory missing", env.path("no/such/dir/r.zspy")),
        Case("first write fails (file size limit 0)", env.path("fsize.zspy"), preexec=no_file_size),
        Case("not a zeek, refused in its exec stop", env.path("sleep.zspy"),
             command=["/bin/sleep", "31.4159"]),
    ]
    if ro_ok:
        cases.append(Case("output directory read-only", os.path.join(ro, "r.zspy")))
    else:
        res.note("read-only directory case skipped: mount failed (%s)" % ro_why)
    if full_ok:
        cases.append(Case("disk full at the first write", os.path.join(full, "r.zspy")))
    else:
        res.note("disk-full case skipped: mount failed (%s)" % full_why)
    worst, n = 0.0, 0
    try:
        for case in cases:
            for gen in ("3.0", "8.0", "8.2"):
                for launch in (False, True):
                    if case.command and not launch:
                        continue
                    n += 1
                    took = run_case(env, res, case, gen, launch, n)
                    worst = max(worst, took or 0)
                    if case.output != existing and os.path.exists(case.output):
                        res.check(False, "%s (%s, %s): the refused recording left %s behind"
                                  % (case.name, gen, "launch" if launch else "attach", case.output))
                        os.unlink(case.output)
    finally:
        for m in (ro, full):
            subprocess.run(["umount", m], capture_output=True)
        env.cleanup()
    for note in res.notes:
        print("  note: " + note)
    res.finish("%d refusals (%s), attach and launch, 3 generations: exit 1 within %.2f s "
               "(limit %.0f s), one error line, targets untraced, no launched command left"
               % (n, ", ".join(c.name for c in cases), worst, LIMIT_S))


if __name__ == "__main__":
    main()
