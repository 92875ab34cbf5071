#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Safety of the files zeek-spy writes.

    safety.py BUILD_DIR

- a recording is created with mode 0640 whatever the umask;
- the recorder refuses to write through a symlink planted at its output path
  (to an existing file, or dangling) and to overwrite an existing file, and
  leaves the target untouched when it refuses;
- run as root with SUDO_UID/SUDO_GID set (as sudo does), the recording
  belongs to that user and group;
- a converter output that already exists stays intact when a conversion
  fails (pprof, folded and summary alike), and no temporary file is left.
"""
import glob
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, run, start_target, stop, wait_untouched  # noqa: E402


def record(env, target, out, extra_env=None, umask=None):
    e = dict(os.environ)
    e.update(extra_env or {})
    old = os.umask(umask) if umask is not None else None
    try:
        return run([env.record, "-d", "0.5", "-r", "200", "-o", out, "-p", str(target.pid)], env=e,
                   timeout=60)
    finally:
        if old is not None:
            os.umask(old)


def refused(res, env, target, what, out, r, pattern):
    lines = [l for l in r.stderr.strip().splitlines() if l]
    res.check(r.returncode != 0, "%s: the recorder exited 0" % what)
    res.check(len(lines) == 1 and pattern in lines[0],
              "%s: want one line with %r, got %r" % (what, pattern, r.stderr))
    latency, status = wait_untouched(target.pid, 0.2)
    res.check(latency is not None, "%s: target left traced or stopped: %s" % (what, status))
    print("  %-32s -> %s" % (what, lines[0] if lines else r.stderr.strip()))


def main():
    env = Env(sys.argv[1])
    res = Result("safety")
    checks = []
    target = start_target(env, "8.0", seconds=120)
    try:
        # Mode 0640 even with umask 0.
        rec = env.path("mode.zspy")
        r = record(env, target, rec, umask=0)
        if res.check(r.returncode == 0, "recording with umask 0 failed: " + r.stderr):
            mode = stat.S_IMODE(os.stat(rec).st_mode)
            res.check(mode == 0o640, "recording has mode %o, want 640" % mode)
            print("  recording mode with umask 000  -> %o" % mode)
            checks.append("mode 0640")

        # A symlink planted at the output path, to a file that exists.
        victim = env.path("victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        link = env.path("link.zspy")
        os.symlink(victim, link)
        refused(res, env, target, "symlink to an existing file", link,
                record(env, target, link), "exists")
        res.check(open(victim).read() == "precious\n", "the symlink's target was written to")
        res.check(os.path.islink(link), "the planted symlink was replaced")

        # A dangling symlink: following it would create a file elsewhere.
        elsewhere = env.path("elsewhere.zspy")
        dangling = env.path("dangling.zspy")
        os.symlink(elsewhere, dangling)
        refused(res, env, target, "dangling symlink", dangling,
                record(env, target, dangling), "exists")
        res.check(not os.path.exists(elsewhere), "the recorder created the dangling symlink's target")
        checks.append("symlinks refused")

        # An existing file.
        existing = env.path("existing.zspy")
        with open(existing, "w") as f:
            f.write("old recording\n")
        refused(res, env, target, "existing file", existing, record(env, target, existing), "exists")
        res.check(open(existing).read() == "old recording\n", "an existing file was overwritten")
        checks.append("no overwrite")

        # sudo: the files belong to the user who ran sudo.
        if os.geteuid() == 0:
            owned = env.path("sudo.zspy")
            r = record(env, target, owned, {"SUDO_UID": "4242", "SUDO_GID": "4343"})
            if res.check(r.returncode == 0, "recording with SUDO_UID failed: " + r.stderr):
                st = os.stat(owned)
                res.check((st.st_uid, st.st_gid) == (4242, 4343),
                          "SUDO_UID/SUDO_GID: recording owned by %d:%d, want 4242:4343"
                          % (st.st_uid, st.st_gid))
                print("  owner with SUDO_UID/GID 4242/4343 -> %d:%d" % (st.st_uid, st.st_gid))
                checks.append("sudo owner")
        else:
            res.fail("not root: cannot check SUDO_UID/SUDO_GID ownership (CI runs as root)")
    finally:
        stop(target)

    # Converter outputs are atomic: a failed conversion leaves the old file.
    good = env.path("good.zspy")
    bad = env.path("bad.zspy")
    for args in (["-o", good, "--samples", "2000", "--stacks", "20"],
                 ["-o", bad, "--samples", "200000", "--stacks", "50", "--damage", "frame"]):
        g = run([env.zs_gen, "--seed", "5"] + args)
        if g.returncode != 0:
            res.abort("zs-gen failed: " + g.stderr)
    outdir = env.path("out")
    os.makedirs(outdir)
    for fmt in ("pprof", "folded", "summary"):
        out = os.path.join(outdir, "profile." + fmt)
        with open(out, "w") as f:
            f.write("previous output\n")
        for what, rec in (("corrupt recording", bad), ("missing recording", env.path("none.zspy"))):
            r = run([env.convert, "--no-cache", "-f", fmt, "-o", out, rec])
            res.check(r.returncode != 0, "%s, %s: convert exited 0" % (fmt, what))
            res.check(open(out).read() == "previous output\n",
                      "%s, %s: the existing output was changed" % (fmt, what))
        r = run([env.convert, "--no-cache", "-f", fmt, "-o", out, good])
        res.check(r.returncode == 0 and open(out, "rb").read() != b"previous output\n",
                  "%s: a good conversion did not replace the output: %s" % (fmt, r.stderr))
        print("  convert -f %-8s failing twice, then succeeding -> old output kept, then replaced" % fmt)
    stray = [p for p in glob.glob(os.path.join(outdir, "*")) if ".tmp" in p]
    res.check(not stray, "temporary files left behind: %s" % stray)
    checks.append("atomic converter output")
    env.cleanup()
    res.finish("; ".join(checks))


if __name__ == "__main__":
    main()
