#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hostile executables: `zeek-spy-record --all` parses the executable of
every process on the host as root. Processes whose executable exports
Zeek's symbols but whose DWARF is corrupt, and one whose inspection crashes
on purpose, run next to two real test doubles:

    hostile_exe.py BUILD_DIR [--write-regressions DIR]

The recorder must keep recording the good ones, warn exactly once about
each bad one, exit 0, and never sample (nor trace) a bad one: the converted
summary lists only good pids.

Each bad executable is a copy of zeek-double-8.0 with bytes of its
.debug_info / .debug_abbrev changed (the section headers are read here,
no ELF library): DWARF cut short, an absurd unit length, abbreviations
overwritten with garbage, the DIEs overwritten with garbage. The crashing
one is an intact copy that the test hook ZEEK_SPY_TEST_CRASH_INSPECT makes
the parser child abort.

--write-regressions DIR also writes the same corruptions of the small DWARF
seed (tests/fuzz/corpus/dwarf/seed-80.elf) to DIR/dwarf/, for
fuzz.replay.dwarf.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result, proc_status, run, stop  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = os.path.join(HERE, "..", "fuzz", "corpus", "dwarf", "seed-80.elf")
RECORD_SECONDS = 4
CRASH_NAME = "zeek-crashy"


def sections(data):
    """{name: (header offset, file offset, size)} of a 64-bit little-endian ELF."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    out = {}
    for i in range(shnum):
        hdr = shoff + i * shentsize
        name, _, _, _, off, size = struct.unpack_from("<IIQQQQ", data, hdr)
        end = data.index(0, strtab + name)
        out[data[strtab + name:end].decode()] = (hdr, off, size)
    return out


def truncated(d, s):
    hdr, off, _ = s[".debug_info"]
    # sh_size: the first unit is cut in its middle (a fixed size could end
    # between two units of a build whose first unit is small: valid DWARF).
    first_unit, = struct.unpack_from("<I", d, off)
    struct.pack_into("<Q", d, hdr + 0x20, max(16, (first_unit + 4) // 2))


def absurd_unit_length(d, s):
    _, off, _ = s[".debug_info"]
    struct.pack_into("<I", d, off, 0xFFFFFFF0)  # a reserved 32-bit length


def garbage_abbrev(d, s):
    _, off, size = s[".debug_abbrev"]
    d[off:off + size] = b"\xff" * size


def garbage_dies(d, s):
    _, off, size = s[".debug_info"]
    d[off + 11:off + size] = bytes((i * 37 + 11) & 0xFF for i in range(size - 11))


CORRUPTIONS = {"truncated-info": truncated, "absurd-unit-length": absurd_unit_length,
               "garbage-abbrev": garbage_abbrev, "garbage-dies": garbage_dies}


def corrupt(src, dst, how):
    data = bytearray(open(src, "rb").read())
    how(data, sections(data))
    with open(dst, "wb") as f:
        f.write(data)
    os.chmod(dst, 0o755)


def write_regressions(root):
    out = os.path.join(root, "dwarf")
    os.makedirs(out, exist_ok=True)
    for name, how in CORRUPTIONS.items():
        corrupt(SEED, os.path.join(out, "seed-80-%s.elf" % name), how)
    print("wrote %d inputs to %s" % (len(CORRUPTIONS), out))


def start(exe, node):
    p = subprocess.Popen([exe, "--seconds", "30", "--quiet"], stdout=subprocess.DEVNULL,
                         env=dict(os.environ, CLUSTER_NODE=node))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--write-regressions")
    a = ap.parse_args()
    if a.write_regressions:
        write_regressions(a.write_regressions)
        return
    env = Env(a.build)
    res = Result("hostile-exe")
    good, bad = {}, {}
    try:
        for gen in ("8.0", "3.0"):
            p = start(env.target(gen), "good-" + gen)
            good[p.pid] = (p, "good-" + gen)
        for name, how in CORRUPTIONS.items():
            exe = env.path("zeek-bad-" + name)
            corrupt(env.target("8.0"), exe, how)
            p = start(exe, "bad-" + name)
            bad[p.pid] = (p, name)
        crashy = env.path(CRASH_NAME)
        shutil.copy(env.target("8.0"), crashy)
        p = start(crashy, "bad-crash")
        bad[p.pid] = (p, "crash")
        time.sleep(0.3)

        rec = env.path("all.zspy")
        t0 = time.monotonic()
        recorder = subprocess.Popen(
            [env.record, "--all", "-r", "200", "-d", str(RECORD_SECONDS), "-o", rec],
            stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, ZEEK_SPY_TEST_CRASH_INSPECT=CRASH_NAME))
        # Meanwhile no bad process may be traced or stopped.
        while recorder.poll() is None:
            for pid, (proc, name) in bad.items():
                tracer, state = proc_status(pid)
                if tracer not in (0, None) or state in ("t", "T"):
                    res.fail("bad process %s (pid %d) traced or stopped: %s %s"
                             % (name, pid, tracer, state))
            time.sleep(0.05)
        _, err = recorder.communicate(timeout=60)
        took = time.monotonic() - t0
        print(err.strip())
        res.check(recorder.returncode == 0, "recorder --all exited %d" % recorder.returncode)
        for pid, (proc, name) in bad.items():
            lines = [l for l in err.splitlines() if "skipping pid %d:" % pid in l]
            if res.check(len(lines) == 1, "%d warnings about bad process %s (pid %d), want 1"
                         % (len(lines), name, pid)):
                want = "crashed" if name == "crash" else "malformed DWARF"
                res.check(want in lines[0] and "refused" in lines[0],
                          "warning about %s does not say '%s': %s" % (name, want, lines[0]))
        for pid, (proc, name) in good.items():
            res.check("recording pid %d " % pid in err, "good process %s (pid %d) not recorded"
                      % (name, pid))

        r = run([env.convert, "--no-cache", "-f", "summary", "--top", "0", rec])
        res.check(r.returncode == 0, "convert exited %d: %s" % (r.returncode, r.stderr.strip()))
        table = r.stdout[r.stdout.find("By process"):]
        pids = {int(m.group(1)) for m in re.finditer(r"^ *\d+ +[\d.]+%  (\d+) ", table, re.M)}
        print("  pids in the summary: %s (good %s, bad %s)"
              % (sorted(pids), sorted(good), sorted(bad)))
        for pid, (_, name) in good.items():
            res.check(pid in pids, "good process %s (pid %d) has no samples" % (name, pid))
        for pid, (_, name) in bad.items():
            res.check(pid not in pids, "bad process %s (pid %d) was sampled" % (name, pid))
        for pid, (proc, name) in list(good.items()) + list(bad.items()):
            res.check(proc.poll() is None, "process %s (pid %d) died" % (name, pid))
    finally:
        for proc, _ in list(good.values()) + list(bad.values()):
            stop(proc)
        env.cleanup()
    res.finish("%d hostile executables (%s, parser crash) next to 2 good test doubles: "
               "each refused with one warning, never traced or sampled; good ones recorded; "
               "recorder exit 0 in %.1f s" % (len(bad), ", ".join(CORRUPTIONS), took))


if __name__ == "__main__":
    main()
