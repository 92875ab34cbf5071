#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault: the disk fills up under the recorder.

    disk_full.py BUILD_DIR

A 64 KiB tmpfs (mount needs root; the test fails, not skips, without it) is
filled with a dummy file so that only a few KiB remain, and the recorder
writes there at 1000 Hz until it hits ENOSPC. It must then
  - leave the target running and untraced (checked within 100 ms),
  - report the write error in one "error:" line and exit non-zero,
  - leave a recording that converts (the writer cuts the partial frame off;
    the missing trailer gives a warning).
Second case: the disk is full before the first frame can be written; the
recorder must fail the same way and leave no file that does not convert.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, convert_summary, run, start_target, stop, wait_untouched  # noqa: E402

TMPFS_SIZE = 64 * 1024


def fill(path, leave):
    """Fills the filesystem of path up to `leave` bytes free."""
    st = os.statvfs(os.path.dirname(path))
    free = st.f_bavail * st.f_frsize
    with open(path, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
        try:  # tmpfs counts pages; top up to the exact amount asked for
            while True:
                st = os.statvfs(os.path.dirname(path))
                if st.f_bavail * st.f_frsize <= leave:
                    break
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass


def record_until_full(env, res, target, mnt, name, leave):
    filler = os.path.join(mnt, name + ".filler")
    fill(filler, leave)
    rec = os.path.join(mnt, name + ".zspy")
    t0 = time.monotonic()
    try:
        r = run([env.record, "-r", "1000", "-o", rec, "-p", str(target.pid)], timeout=60)
    except subprocess.TimeoutExpired:
        res.fail("%s: the recorder was still running 60 s after the disk filled" % name)
        return None
    took = time.monotonic() - t0
    latency, status = wait_untouched(target.pid, 0.1)
    err = r.stderr.strip()
    errors = [l for l in err.splitlines() if "error:" in l]
    res.check(r.returncode != 0, "%s: recorder exited 0 on a full disk" % name)
    res.check(latency is not None, "%s: target not running untraced within 100 ms (TracerPid, "
              "state = %s)" % (name, status))
    res.check(len(errors) == 1 and "No space left" in errors[0],
              "%s: want one error line naming ENOSPC, got %r" % (name, err))
    out = {"took": took, "exit": r.returncode, "error": errors[0] if errors else err}
    if os.path.exists(rec):
        rc, samples, cerr = convert_summary(env, rec)
        out.update(size=os.path.getsize(rec), convert=rc, samples=samples, warning=cerr)
    os.unlink(filler)
    return out


def convert_to_full_disk(env, res, mnt):
    """The converter's output on a full disk: it must fail with one error
    line, keep the previous output intact and leave no temporary file."""
    rec = env.path("gen.zspy")
    g = run([env.zs_gen, "-o", rec, "--samples", "20000", "--stacks", "2000", "--seed", "3"])
    if not res.check(g.returncode == 0, "zs-gen failed: " + g.stderr):
        return None
    results = []
    for fmt in ("pprof", "folded", "summary"):
        out = os.path.join(mnt, "profile." + fmt)
        with open(out, "w") as f:
            f.write("previous output\n")
        filler = os.path.join(mnt, "conv.filler")
        fill(filler, 0)
        r = run([env.convert, "--no-cache", "-f", fmt, "-o", out, rec])
        errors = [l for l in r.stderr.splitlines() if "error:" in l]
        res.check(r.returncode != 0, "convert -f %s to a full disk exited 0" % fmt)
        res.check(len(errors) == 1, "convert -f %s to a full disk: want one error line, got %r"
                  % (fmt, r.stderr))
        res.check(open(out).read() == "previous output\n",
                  "convert -f %s to a full disk changed the previous output" % fmt)
        stray = [n for n in os.listdir(mnt) if ".tmp" in n]
        res.check(not stray, "convert -f %s to a full disk left %s" % (fmt, stray))
        print("  convert -f %s to a full disk: exit %d, %s" % (fmt, r.returncode,
                                                             errors[0] if errors else r.stderr))
        results.append(r.returncode != 0)
        os.unlink(filler)
        os.unlink(out)
    return all(results)


def describe(d):
    text = "recorder exit %d after %.2f s: %s" % (d["exit"], d["took"], d["error"])
    if "size" in d:
        text += "; left %d bytes: convert exit %d, %s samples, %s" % (
            d["size"], d["convert"], d["samples"], d["warning"] or "no warning")
    else:
        text += "; no file left"
    return text


def main():
    env = Env(sys.argv[1])
    res = Result("disk-full")
    mnt = env.path("tmpfs")
    os.makedirs(mnt)
    m = run(["mount", "-t", "tmpfs", "-o", "size=%d" % TMPFS_SIZE, "tmpfs", mnt])
    if m.returncode != 0:
        res.abort("cannot mount a %d KiB tmpfs at %s (%s): this test needs root with "
                  "CAP_SYS_ADMIN, as in CI" % (TMPFS_SIZE // 1024, mnt, m.stderr.strip()))
    target, a, b, c = None, None, None, None
    try:
        target = start_target(env, "8.0", seconds=300)
        # 1: room for the first frames only.
        a = record_until_full(env, res, target, mnt, "full-later", 12 * 1024)
        if a:
            print("  full-later: %s" % describe(a), flush=True)
            res.check("size" in a, "full-later: no recording left")
            if "size" in a:
                res.check(a["convert"] == 0, "full-later: the recording does not convert: %s"
                          % a["warning"])
                res.check((a["samples"] or 0) > 0, "full-later: no samples recovered")
        # 2: no room at all.
        b = record_until_full(env, res, target, mnt, "full-at-start", 0)
        if b:
            print("  full-at-start: %s" % describe(b), flush=True)
            if "size" in b:
                res.check(b["convert"] == 0, "full-at-start: left a %d-byte file that does not "
                          "convert: %s" % (b["size"], b["warning"]))
        res.check(target.poll() is None, "the target died")
        c = convert_to_full_disk(env, res, mnt)
    finally:
        stop(target)
        run(["umount", mnt])
    env.cleanup()
    summary = "64 KiB tmpfs filled to ENOSPC while recording at 1000 Hz"
    if a and "size" in a:
        summary += ": after %.1f s, exit %d, one error line, target untraced; %d-byte recording " \
                   "converts with %s samples" % (a["took"], a["exit"], a["size"], a["samples"])
    if b:
        summary += "; disk full at start: exit %d, %s" % (
            b["exit"], "no file left" if "size" not in b else "%d-byte file left" % b["size"])
    if c:
        summary += "; converter output to a full disk: fails, previous output kept, no temporary file"
    res.finish(summary)


if __name__ == "__main__":
    main()
