#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""--native parses the target's modules (ELF, .eh_frame, symbol tables):
files written by anyone, read by a recorder running as root. The parse runs
in a sandboxed child, the unwinder; this test checks that it is one and
that nothing it does can hurt the recorder or the target.

    hostile_native.py BUILD_DIR

  1. sandbox: during a --native recording the unwinder runs as nobody
     (uid 65534), with no_new_privs and a seccomp filter, and the recorder
     itself parses nothing (the unwinder is its only other child);
  2. garbage unwind tables: a copy of the stripped test double whose
     .eh_frame and .eh_frame_hdr are random bytes: the recorder exits 0,
     samples at the full rate, keeps the script frames, and counts the
     failed unwinds instead of crashing;
  3. a parser crash: the test hook ZEEK_SPY_TEST_CRASH_UNWINDER=N aborts the
     unwinder at its N-th stack: one warning, sampling goes on at the full
     rate with script frames, the target runs to its end untouched.
"""
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, children, run, stop  # noqa: E402

RATE, SECONDS = 200, 3
# The unwinder crashes at this stack: half way, once it has caught up with
# the start (it sends its answers when it has nothing more queued, or 20 ms
# after the first unsent one: a crash loses those unsent).
CRASH_AT = 300


def sections(path):
    """{name: (file offset, size)} from the ELF64 section headers."""
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    out = {}
    for h in heads:
        name = data[strtab + h[0]:data.index(b"\0", strtab + h[0])].decode()
        out[name] = (h[4], h[5])
    return out


def garble_unwind_tables(src, dst):
    shutil.copy(src, dst)
    secs = sections(dst)
    rnd = random.Random(1)
    with open(dst, "r+b") as f:
        for name in (".eh_frame", ".eh_frame_hdr"):
            off, size = secs[name]
            f.seek(off)
            f.write(bytes(rnd.randrange(256) for _ in range(size)))


def record(env, res, label, target, out, extra_env=None, watch=None):
    """Launches target under --native; returns (stderr, samples requested,
    samples written, the target's exit code)."""
    # -v: the end report's details (the native frames' counts). ptrace: the
    # unwinder's faults are the same under either sampler, and a launched
    # target under BPF spends its first stacks in the dynamic loader, so the
    # crash at stack CRASH_AT would leave too few with native frames to count.
    p = subprocess.Popen([env.record, "--sampler", "ptrace", "-v", "--native", "-r", str(RATE), "-d",
                          str(SECONDS), "-o", out,
                          "--", target, "--seconds", str(SECONDS + 1), "--quiet"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         env=dict(os.environ, **(extra_env or {})))
    seen = watch(p.pid) if watch else None
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        stop(p)
        res.fail("%s: the recorder did not end" % label)
        return "", 0, 0, None, seen
    res.check(p.returncode == 0, "%s: recorder exited %d: %s" % (label, p.returncode, err.strip()))
    m = re.search(r"wrote .*?: (\d+) samples", err)
    written = int(m.group(1)) if m else 0
    return err, RATE * SECONDS, written, p.returncode, seen


def status(pid):
    fields = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                fields[k] = v.split()
    except OSError:
        pass
    return fields


def watch_unwinder(rec_pid, target_name="zeek-double-8.0"):
    """Once the target runs and the recording is under way (the executable's
    sandboxed inspection, a short-lived child too, is over by then): the
    status of the recorder's other child, and all the children's names."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        names = [status(k).get("Name", ["?"])[0] for k in children(rec_pid)]
        if target_name in names:
            break
        time.sleep(0.01)
    time.sleep(1.0)
    kids = {k: status(k) for k in children(rec_pid)}
    names = [st.get("Name", ["?"])[0] for st in kids.values()]
    others = [st for st in kids.values() if st.get("Name") != [target_name]]
    return (others[0] if len(others) == 1 else None), names


def folded(env, rec):
    r = run([env.convert, "--no-cache", "-f", "folded", "-o", "-", rec])
    return r.returncode, [(l.rsplit(" ", 1)[0].split(";"), int(l.rsplit(" ", 1)[1]))
                          for l in r.stdout.splitlines() if l.strip()], r.stderr


def main():
    env = Env(sys.argv[1])
    res = Result("hostile-native")
    script_names = ("connection_state_remove", "HTTP::parse_request", "Conn::set_state")
    try:
        # 1. the sandbox
        err, want, got, _, seen = record(env, res, "sandbox", env.target("8.0"),
                                         env.path("sandbox.zspy"), watch=watch_unwinder)
        st, names = seen
        if res.check(st is not None, "no unwinder child seen (children: %s)" % names):
            res.check(st.get("Uid") == ["65534"] * 4, "unwinder uids %s, want nobody" % st.get("Uid"))
            res.check(st.get("Gid") == ["65534"] * 4, "unwinder gids %s, want nogroup" % st.get("Gid"))
            res.check(st.get("NoNewPrivs") == ["1"], "unwinder NoNewPrivs %s" % st.get("NoNewPrivs"))
            res.check(st.get("Seccomp") == ["2"], "unwinder Seccomp %s, want 2 (filter)" % st.get("Seccomp"))
            res.check(st.get("CapEff") == ["0000000000000000"], "unwinder capabilities %s" % st.get("CapEff"))
        res.check(sorted(names) == ["zeek-double-8.0", "zeek-spy-record"],
                  "the recorder's children: %s, want the target and the unwinder" % names)
        print("  sandbox: unwinder uid %s, seccomp %s; %d of %d samples"
              % (st and st.get("Uid", ["?"])[0], st and st.get("Seccomp", ["?"])[0], got, want))

        # 2. garbage unwind tables
        bad = env.path("zeek-double-garbled")
        garble_unwind_tables(env.target("8.0-stripped"), bad)
        rec = env.path("garbled.zspy")
        err, want, got, _, _ = record(env, res, "garbled", bad, rec)
        res.check(got >= 0.9 * want, "garbled: %d of %d samples" % (got, want))
        m = re.search(r"native frames: (\d+) stacks unwound; (\d+) unwinds failed", err)
        res.check(m is not None, "garbled: no native report: %s" % err.strip())
        rc, stacks, cerr = folded(env, rec)
        res.check(rc == 0, "garbled: convert exited %d: %s" % (rc, cerr.strip()))
        scripted = sum(c for frames, c in stacks if any(n in frames for n in script_names))
        total = sum(c for _, c in stacks)
        res.check(scripted > 0.2 * max(total, 1), "garbled: script frames in %d of %d samples"
                  % (scripted, total))
        print("  garbled .eh_frame: %d of %d samples, %s; script frames in %d"
              % (got, want, m.group(0) if m else "?", scripted))

        # 3. the unwinder crashes mid-recording
        rec = env.path("crash.zspy")
        err, want, got, _, _ = record(env, res, "crash", env.target("8.0"), rec,
                                      extra_env={"ZEEK_SPY_TEST_CRASH_UNWINDER": str(CRASH_AT)})
        warnings = [l for l in err.splitlines() if "no more native frames" in l]
        res.check(len(warnings) == 1, "crash: %d warnings, want 1: %s" % (len(warnings), err.strip()))
        res.check(got >= 0.9 * want, "crash: %d of %d samples" % (got, want))
        rc, stacks, cerr = folded(env, rec)
        res.check(rc == 0, "crash: convert exited %d: %s" % (rc, cerr.strip()))
        native = sum(c for frames, c in stacks if "main" in frames)
        script_only = sum(c for frames, c in stacks
                          if "main" not in frames and any(n in frames for n in script_names))
        res.check(native > 50 and script_only > 50,
                  "crash: %d samples with native frames, %d script-only after the crash"
                  % (native, script_only))
        print("  unwinder crash at stack %d: %d of %d samples; %d with native frames, %d "
              "script-only after; %s" % (CRASH_AT, got, want, native, script_only,
                                         warnings[0].split(": ", 1)[-1] if warnings else "?"))
    finally:
        env.cleanup()
    res.finish("the unwinder runs as nobody under seccomp; garbage unwind tables and an "
               "unwinder crash cost native frames only: the recorder exits 0 at the full rate")


if __name__ == "__main__":
    main()
