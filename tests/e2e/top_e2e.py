#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""zeek-spy-record --top: the live view, on a terminal (tmux) and on a pipe.

    top_e2e.py BUILD_DIR

Against the 8.0 test double:
  1. In a tmux pane, `--top -p PID -o FILE`: within 3 s the screen shows
     HTTP::parse_request; `q` ends the recorder with exit 0, the terminal
     settings as they were (stty -g) and the alternate screen left; the
     target runs on untraced; the recording converts.
  2. The same without -o, ended by SIGTERM instead of q: terminal restored,
     the temporary recording removed, target untraced.
  3. stdout a pipe, -d 3: two or more plain snapshots naming
     HTTP::parse_request, no escape codes, exit 0, target untraced.
Skipped (77) only when tmux is missing and cannot be installed.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_e2e as e2e  # noqa: E402

SKIP = 77
HOT = "HTTP::parse_request"


def have_ptys():
    """A terminal to draw on: tmux needs pseudo-terminals (/dev/pts)."""
    try:
        master, slave = os.openpty()
    except OSError:
        return False
    os.close(master)
    os.close(slave)
    return True


def start_double(env):
    t = subprocess.Popen([env.target, "--seconds", "120"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    line = ""
    while " pid " not in line:  # printed once its interpreter objects exist
        line = t.stderr.readline()
        if not line:
            e2e.fail("the test double never started")
    return t


class Pane:
    """One tmux server of our own (-L), so that no other tmux is touched."""

    def __init__(self, env, name):
        self.env = env
        self.sock = "zs-top-%d-%s" % (os.getpid(), name)

    def tmux(self, *args):
        return e2e.run(["tmux", "-L", self.sock] + list(args))

    def start(self, shell_cmd):
        r = self.tmux("new-session", "-d", "-x", "160", "-y", "50", shell_cmd)
        if r.returncode != 0:
            e2e.fail("tmux new-session: " + r.stderr)

    def screen(self):
        return self.tmux("capture-pane", "-p").stdout

    def alternate_on(self):
        return self.tmux("display-message", "-p", "#{alternate_on}").stdout.strip()

    def recorder_pid(self):
        shell = int(self.tmux("display-message", "-p", "#{pane_pid}").stdout.strip())
        for _ in range(50):
            for task in os.listdir("/proc/%d/task" % shell):
                for child in open("/proc/%d/task/%s/children" % (shell, task)).read().split():
                    if os.path.basename(os.readlink("/proc/%s/exe" % child)) == "zeek-spy-record":
                        return int(child)
            time.sleep(0.05)
        e2e.fail("no zeek-spy-record in the pane")

    def kill(self):
        self.tmux("kill-server")


def wait_file(path, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if os.path.exists(path) and open(path).read().strip():
            return open(path).read().strip()
        time.sleep(0.05)
    return None


def pane_script(env, args, tag):
    """The shell line the pane runs: stty before and after, the exit code."""
    before, after, rc = (env.path(tag + ".stty-before"), env.path(tag + ".stty-after"),
                         env.path(tag + ".rc"))
    cmd = "stty -g > %s; TMPDIR=%s %s %s; echo $? > %s; stty -g > %s; sleep 60" % (
        before, env.tmp, env.record, " ".join(args), rc, after)
    return cmd, before, after, rc


def wait_for_hot(pane, t0, what):
    while time.monotonic() - t0 < 3.0:
        if HOT in pane.screen():
            return time.monotonic() - t0
        time.sleep(0.1)
    e2e.fail("%s: %s not on the screen within 3 s:\n%s" % (what, HOT, pane.screen()))


def check_exit(pane, before, after, rc, what):
    code = wait_file(rc, 3.0)
    if code is None:
        e2e.fail("%s: the recorder did not exit within 3 s:\n%s" % (what, pane.screen()))
    if code != "0":
        e2e.fail("%s: exit %s:\n%s" % (what, code, pane.screen()))
    if wait_file(after, 2.0) != open(before).read().strip():
        e2e.fail("%s: terminal settings not restored" % what)
    if pane.alternate_on() != "0":
        e2e.fail("%s: the alternate screen was not left" % what)


def test_tmux_q(env, target):
    rec = env.path("top.zspy")
    cmd, before, after, rc = pane_script(env, ["--top", "-p", str(target.pid), "-o", rec], "q")
    pane = Pane(env, "q")
    try:
        t0 = time.monotonic()
        pane.start(cmd)
        took = wait_for_hot(pane, t0, "tmux, q")
        screen = pane.screen()
        if "q quits" not in screen or "stop time per sample" not in screen:
            e2e.fail("tmux: header incomplete:\n" + screen)
        pane.tmux("send-keys", "q")
        check_exit(pane, before, after, rc, "tmux, q")
        e2e.assert_untouched(target.pid, "after q")
    finally:
        pane.kill()
    # Every row: native frames (the default) may fill the first 20 (under
    # ASan, with a second of samples, its clock_gettime interceptors did).
    r = e2e.run([env.convert, "--no-cache", "-f", "summary", "--top", "0", rec])
    if r.returncode != 0 or HOT not in r.stdout:
        e2e.fail("the recording made under --top does not convert: %s%s" % (r.stdout, r.stderr))
    print("  tmux: %s on screen after %.1f s; q: exit 0, terminal restored, target untraced; "
          "-o recording converts" % (HOT, took))
    print("\n".join("    " + ln for ln in screen.rstrip().splitlines()[:12]))


def test_tmux_sigterm(env, target):
    cmd, before, after, rc = pane_script(env, ["--top", "-p", str(target.pid)], "term")
    pane = Pane(env, "term")
    try:
        t0 = time.monotonic()
        pane.start(cmd)
        wait_for_hot(pane, t0, "tmux, no -o")
        scratch = [d for d in os.listdir(env.tmp) if d.startswith("zeek-spy-top-")]
        if len(scratch) != 1:
            e2e.fail("no -o: expected one temporary recording directory, found %s" % scratch)
        os.kill(pane.recorder_pid(), signal.SIGTERM)
        check_exit(pane, before, after, rc, "tmux, SIGTERM")
        e2e.assert_untouched(target.pid, "after SIGTERM")
        left = [d for d in os.listdir(env.tmp) if d.startswith("zeek-spy-top-")]
        if left:
            e2e.fail("no -o: the temporary recording was left behind: %s" % left)
    finally:
        pane.kill()
    print("  tmux without -o, SIGTERM: exit 0, terminal restored, temporary recording removed")


def test_pipe(env, target):
    r = e2e.run([env.record, "--top", "-p", str(target.pid), "-d", "3", "-o",
                 env.path("pipe.zspy")], stdin=subprocess.DEVNULL, timeout=30)
    if r.returncode != 0:
        e2e.fail("pipe: exit %d: %s" % (r.returncode, r.stderr))
    if "\033" in r.stdout:
        e2e.fail("pipe: escape codes in the plain output")
    snaps = [s for s in r.stdout.split("zeek-spy-record --top:")[1:]]
    hot = [s for s in snaps if HOT in s]
    if len(hot) < 2:
        e2e.fail("pipe: %d snapshots, %d with %s:\n%s" % (len(snaps), len(hot), HOT, r.stdout))
    e2e.assert_untouched(target.pid, "after the pipe run")
    print("  pipe, -d 3: %d plain snapshots, %d naming %s" % (len(snaps), len(hot), HOT))


def main():
    env = e2e.Env(sys.argv[1], "8.0")
    target = start_double(env)
    try:
        test_pipe(env, target)
        if not shutil.which("tmux"):
            e2e.fail("tmux is not installed: run scripts/install-deps.sh")
        if not have_ptys():
            print("SKIP: no pseudo-terminals here (is /dev/pts mounted?)")
            sys.exit(SKIP)
        test_tmux_q(env, target)
        test_tmux_sigterm(env, target)
    finally:
        target.terminate()
        target.communicate()
    print("PASS top")


if __name__ == "__main__":
    main()
