# SPDX-License-Identifier: BSD-3-Clause
"""Shared helpers of the fault tests (tests/fault/*.py): the programs under
test, the test double of Zeek, and the checks that a target was left alone.

Every fault test prints one line

    RESULT fault.<name>: PASS|FAIL <what was done and measured>

(docs/testing.md's reliability table is made from these lines) and exits 0 only
on PASS.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


class Env:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.record = os.path.join(self.build, "zeek-spy-record")
        self.convert = os.path.join(self.build, "zeek-spy-convert")
        self.zs_gen = os.path.join(self.build, "tests", "zs-gen")
        self.tmp = tempfile.mkdtemp(prefix="zs-fault-")

    def target(self, gen="8.0"):
        return os.path.join(self.build, "tests", "target", "zeek-double-" + gen)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


class Result:
    """Collects failures; prints the one RESULT line and exits."""

    def __init__(self, name):
        self.name = name
        self.failures = []
        self.notes = []

    def fail(self, msg):
        print("  FAIL: " + msg, flush=True)
        self.failures.append(msg)

    def check(self, cond, msg):
        if not cond:
            self.fail(msg)
        return cond

    def note(self, msg):
        self.notes.append(msg)

    def finish(self, summary):
        if self.failures:
            line = "RESULT fault.%s: FAIL %s (%d problem(s); first: %s)" % (
                self.name, summary, len(self.failures), self.failures[0])
        else:
            line = "RESULT fault.%s: PASS %s" % (self.name, summary)
        print(line, flush=True)
        sys.exit(1 if self.failures else 0)

    def abort(self, msg):
        self.failures.append(msg)
        self.finish("aborted")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def proc_status(pid):
    """(TracerPid, state letter), or (None, None) when the process is gone."""
    tracer, state = None, None
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    tracer = int(line.split()[1])
                elif line.startswith("State:"):
                    state = line.split()[1]
    except FileNotFoundError:
        pass
    return tracer, state


def untouched(pid):
    tracer, state = proc_status(pid)
    return tracer == 0 and state not in (None, "t", "T", "Z", "X")


def wait_untouched(pid, within=0.1):
    """Polls until pid runs untraced and not stopped; returns the seconds it
    took, or None (with the last status) when it did not within `within`."""
    t0 = time.monotonic()
    while True:
        if untouched(pid):
            return time.monotonic() - t0, None
        if time.monotonic() - t0 > within:
            return None, proc_status(pid)
        time.sleep(0.002)


def start_target(env, gen="8.0", seconds=60, extra=(), stdout=subprocess.DEVNULL):
    """Starts the test double of Zeek and waits until its objects exist (the
    banner on stderr)."""
    p = subprocess.Popen([env.target(gen), "--seconds", str(seconds)] + list(extra),
                         stdout=stdout, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    if "pid %d" % p.pid not in line:
        p.kill()
        raise RuntimeError("test double did not start: %r" % line)
    return p


def children(pid):
    """pid's child processes (its main thread's), [] once it is gone."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def wait_for_file(path, proc, timeout=15.0):
    """Waits until the recorder's output holds its first frame (header
    flushed right before sampling starts); returns the monotonic time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.path.getsize(path) > 0:
                return time.monotonic()
        except OSError:
            pass
        if proc.poll() is not None:
            return None
        time.sleep(0.002)
    return None


def convert_summary(env, recording, extra=()):
    """Converts with --no-cache to a summary; (returncode, samples, stderr)."""
    r = run([env.convert, "--no-cache", "-f", "summary", "--top", "0"] + list(extra) + [recording])
    m = re.search(r"(\d+) samples over ([\d.]+) s", r.stdout)
    samples = int(m.group(1)) if m else None
    return r.returncode, samples, r.stderr.strip()


def stop(proc):
    if proc and proc.poll() is None:
        proc.kill()
    if proc:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
