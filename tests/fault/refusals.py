#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
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

Then the wording of every error of the README's troubleshooting section,
each produced for real (as root): the error line must read right for the
user who gets it, as the only line on stderr (warnings that say why, where
they belong), with the exit status of its kind:
  - permission denied, told apart by what refuses: a target traced already
    (by another recorder: its pid and name), a recorder without the
    privilege (as nobody: "run as root or with CAP_SYS_PTRACE"), root
    without CAP_SYS_PTRACE (setpriv), a recorder in a user namespace of its
    own (unshare --user), and pid 1 where the kernel refuses it to a
    privileged recorder (never "run as root" to root);
  - no such process, also from a container's PID namespace (unshare --pid),
    and --all finding none there; not a zeek (attach, several pids, launch);
    a command that cannot be run; an unsupported version (a copy of the
    stripped double whose version string says 8.9.10); a bad layout file;
    a usage error; and the output refusals above.
"""
import os
import re
import resource
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, run, start_target, stop, wait_untouched  # noqa: E402

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
    def __init__(self, name, output, want, preexec=None, command=None):
        self.name, self.output, self.want = name, output, want
        self.preexec, self.command = preexec, command


def run_case(env, res, case, gen, launch, n):
    marker = env.path("marker-%d" % n)  # unique in the launched command line
    target = None
    if launch:
        cmd = case.command or [env.target(gen), "--seconds", "30", "--quiet", "--ground-truth", marker]
        args = [env.record, "--sampler", "ptrace", "-r", "200", "-o", case.output, "--"] + cmd
    else:
        target = start_target(env, gen, seconds=60)
        args = [env.record, "--sampler", "ptrace", "-r", "200", "-o", case.output, "-p", str(target.pid)]
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
    res.check(bool(errors) and re.search(case.want, errors[0]) is not None,
              "%s: the error does not say %r: %r" % (label, case.want, r.stderr))
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


def refusal(res, label, args, want, status=1, warnings=0, preexec=None):
    """Runs the recorder (args: its command line, maybe behind a wrapper)
    to its refusal: exit status, one error line matching want, the
    expected number of warnings and nothing else."""
    r = subprocess.run(args, capture_output=True, text=True, timeout=30, preexec_fn=preexec)
    lines = r.stderr.splitlines()
    errors = [ln for ln in lines if ": error: " in ln]
    warned = [ln for ln in lines if ": warning: " in ln]
    ok = res.check(r.returncode == status and len(errors) == 1 and len(warned) == warnings and
                   len(lines) == 1 + warnings and re.search(want, errors[0]) is not None,
                   "%s: exit %d, want %d and one error line saying %r (and %d warnings): %r"
                   % (label, r.returncode, status, want, warnings, r.stderr))
    print("  %s%s: %s" % (label, "" if ok else " (FAIL)", errors[0] if errors else r.stderr.strip()),
          flush=True)


def as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def check_permissions(env, res, out):
    """permission denied, by what refuses. Returns the cases checked."""
    checked = 0
    traced, free = start_target(env, "8.0", seconds=60), start_target(env, "8.0", seconds=60)
    first = subprocess.Popen([env.record, "--sampler", "ptrace", "-q", "-p", str(traced.pid), "-d", "30", "-o", out("first")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        pid = traced.pid
        refusal(res, "traced by another recorder", [env.record, "--sampler", "ptrace", "-p", str(pid), "-o", out("traced")],
                r"error: permission denied: pid %d: ptrace not permitted: pid %d is traced already, by "
                r"pid %d \(zeek-spy-record\): one tracer at a time; detach that one" % (pid, pid, first.pid))
        pid = free.pid
        refusal(res, "as nobody", [env.record, "--sampler", "ptrace", "-p", str(pid), "-o", out("nobody")],
                r"error: permission denied: pid %d: cannot read /proc/%d/exe: run as root or with "
                r"CAP_SYS_PTRACE( \(kernel.yama.ptrace_scope is [12]: [^)]*\))?$" % (pid, pid), preexec=as_nobody)
        checked += 2
        if shutil.which("setpriv"):
            refusal(res, "root without CAP_SYS_PTRACE",
                    ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", env.record,
                     "-p", str(pid), "-o", out("nocap")],
                    r"error: permission denied: pid %d: cannot read /proc/%d/exe: the recorder runs as root "
                    r"but without CAP_SYS_PTRACE \(.*\): grant it .*, or run the recorder on the host$"
                    % (pid, pid))
            checked += 1
        else:
            res.note("root without CAP_SYS_PTRACE skipped: no setpriv")
        if run(["unshare", "--user", "--map-root-user", "true"]).returncode == 0:
            refusal(res, "in a user namespace of its own",
                    ["unshare", "--user", "--map-root-user", env.record, "--sampler", "ptrace", "-p", str(pid), "-o",
                     out("userns")],
                    r"error: permission denied: pid %d: cannot read /proc/%d/exe: the recorder has "
                    r"CAP_SYS_PTRACE only in its own user namespace \(a container's\), and pid %d is outside "
                    r"it: run the recorder on the host$" % (pid, pid, pid))
            checked += 1
        else:
            res.note("user namespace case skipped: unshare --user failed")
        # The case: where the kernel refuses pid 1 to root (a
        # sandboxed recorder, a security module), the advice is never to
        # run as root. On a host where root may trace it, pid 1 is no zeek.
        r = run([env.record, "--sampler", "ptrace", "-p", "1", "-o", out("pid1")])
        if "permission denied" in r.stderr:
            refusal(res, "pid 1, refused to a privileged recorder", [env.record, "--sampler", "ptrace", "-p", "1", "-o", out("pid1")],
                    r"error: permission denied: pid 1: [^:]+: the recorder has CAP_SYS_PTRACE, yet the kernel "
                    r"refused: .* run the recorder on the host, outside any sandbox$")
            checked += 1
        else:
            res.note("pid 1 may be traced here: %s" % r.stderr.strip())
        res.check(wait_untouched(free.pid, within=2.0)[0] is not None,
                  "pid %d not running untraced after the refusals" % free.pid)
    finally:
        stop(first)
        stop(traced)
        stop(free)
    return checked


def check_processes(env, res, out):
    """No such process, in the host's and a container's PID namespace; not a
    zeek; a command that cannot run. Returns the cases checked."""
    checked = 0
    gone = subprocess.Popen(["true"])
    gone.wait()
    refusal(res, "no such process", [env.record, "--sampler", "ptrace", "-p", str(gone.pid), "-o", out("gone")],
            r"error: no such process: no process with pid %d$" % gone.pid)
    target = start_target(env, "8.0", seconds=60)
    sleeps = [subprocess.Popen(["/bin/sleep", "60"]) for _ in range(2)]
    try:
        container = ["unshare", "--pid", "--fork", "--mount-proc"]
        if run(container + ["true"]).returncode == 0:
            refusal(res, "a host pid, from a container's PID namespace",
                    container + [env.record, "--sampler", "ptrace", "-p", str(target.pid), "-o", out("pidns")],
                    r"error: no such process: no process with pid %d in the recorder's PID namespace \(it "
                    r"runs in a container, whose pids are not the host's: run the recorder on the host, or "
                    r"give the pid as the container numbers it\)$" % target.pid)
            refusal(res, "--all in a container's PID namespace",
                    container + [env.record, "--sampler", "ptrace", "--all", "-d", "1", "-o", out("pidns-all")],
                    r"error: no such process: --all: no zeek process found \(the recorder runs in a "
                    r"container and sees only its processes: run it on the host\)$")
            checked += 2
        else:
            res.note("PID namespace cases skipped: unshare --pid failed")
        a, b = sleeps[0].pid, sleeps[1].pid
        refusal(res, "not a zeek", [env.record, "--sampler", "ptrace", "-p", str(a), "-o", out("sleep")],
                r"error: not a zeek process: pid %d \(/usr/bin/sleep\) is not a zeek: no 'version' "
                r"symbol$" % a)
        refusal(res, "none of several is a zeek", [env.record, "--sampler", "ptrace", "-p", str(a), "-p", str(b), "-o", out("sleeps")],
                r"error: no such process: none of the given processes can be recorded \(each warning "
                r"above says why\)$", warnings=2)
        refusal(res, "a command that cannot be run", [env.record, "--sampler", "ptrace", "-o", out("nocmd"), "--", "/nonexistent/zeek"],
                r"error: target process error: cannot run /nonexistent/zeek: No such file or directory$")
        checked += 4
    finally:
        stop(target)
        for s in sleeps:
            stop(s)
    return checked


def check_layouts(env, res, out):
    """An unsupported version, a bad layout, a usage error. Returns the
    cases checked."""
    unknown = env.path("zeek-double-8.9")
    with open(env.target("8.0") + "-stripped", "rb") as f:
        exe = f.read()
    res.check(exe.count(b"8.0.10\0") == 1, "the stripped double's version string not found once")
    with open(unknown, "wb") as f:
        f.write(exe.replace(b"8.0.10\0", b"8.9.10\0"))
    os.chmod(unknown, 0o755)
    layout = env.path("wrong.layout")
    text = run([env.record, "--sampler", "ptrace", "--print-layout", env.target("8.0")]).stdout
    with open(layout, "w") as f:
        f.write(re.sub(r"(?m)^callinfo_size = 24$", "callinfo_size = 40", text))
    p = subprocess.Popen([unknown, "--seconds", "60", "--quiet"], stdout=subprocess.DEVNULL)
    target = start_target(env, "8.0", seconds=60)
    try:
        time.sleep(0.5)
        refusal(res, "an unsupported version", [env.record, "--sampler", "ptrace", "-p", str(p.pid), "-o", out("unknown")],
                r"error: unsupported zeek version: pid %d: Zeek 8.9.10 has no built-in layout \(known: "
                r"[^)]*\) and .*; on a host with debug info run 'zeek-spy-record --print-layout' and pass "
                r"the result with --layout FILE$" % p.pid)
        refusal(res, "a layout that does not fit", [env.record, "--sampler", "ptrace", "--layout", layout, "-p", str(target.pid),
                                                    "-o", out("layout")],
                r"error: bad layout: pid %d: call_stack does not look like a vector of 40-byte CallInfo "
                r"\(wrong layout for Zeek 8.0.10\? see --layout\)$" % target.pid)
        refusal(res, "--native --nonblocking", [env.record, "--sampler", "ptrace", "--native", "--nonblocking", "-p",
                                                str(target.pid), "-o", out("usage")],
                r"error: bad usage: --native needs the blocking mode: ", status=2)
        res.check(wait_untouched(target.pid, within=2.0)[0] is not None,
                  "pid %d not running untraced after the refusals" % target.pid)
    finally:
        stop(p)
        stop(target)
    return 3


def check_wording(env, res):
    """Each error of the README's troubleshooting, produced for real.
    Returns how many were checked."""
    shared = env.path("anyone")
    os.makedirs(shared)
    os.chmod(shared, 0o1777)  # writable as nobody too

    def out(name):
        return os.path.join(shared, name + ".zspy")
    return check_permissions(env, res, out) + check_processes(env, res, out) + check_layouts(env, res, out)


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
        Case("output exists", existing, r"error: cannot write output: \S+: File exists \(refusing to "
             r"overwrite an existing file\)$"),
        Case("output directory missing", env.path("no/such/dir/r.zspy"),
             r"error: cannot write output: \S+: No such file or directory$"),
        Case("first write fails (file size limit 0)", env.path("fsize.zspy"),
             r"error: cannot write output: \S+: write failed at offset 0: File too large$",
             preexec=no_file_size),
        Case("not a zeek, refused in its exec stop", env.path("sleep.zspy"),
             r"error: not a zeek process: pid \d+ \(/usr/bin/sleep\) is not a zeek: no 'version' symbol; "
             r"the command was killed before it ran any of its code$",
             command=["/bin/sleep", "31.4159"]),
    ]
    if ro_ok:
        cases.append(Case("output directory read-only", os.path.join(ro, "r.zspy"),
                          r"error: cannot write output: \S+: Read-only file system$"))
    else:
        res.note("read-only directory case skipped: mount failed (%s)" % ro_why)
    if full_ok:
        cases.append(Case("disk full at the first write", os.path.join(full, "r.zspy"),
                          r"error: cannot write output: \S+: write failed at offset 0: No space left on "
                          r"device$"))
    else:
        res.note("disk-full case skipped: mount failed (%s)" % full_why)
    worst, n = 0.0, 0
    try:
        worded = check_wording(env, res)
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
               "(limit %.0f s), one error line that says so, targets untraced, no launched command "
               "left; %d more errors of the README's troubleshooting, each produced for real, worded "
               "for the user who gets it" % (n, ", ".join(c.name for c in cases), worst, LIMIT_S, worded))


if __name__ == "__main__":
    main()
