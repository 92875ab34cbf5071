#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hostile recordings: the converter must do bounded work and fail clearly.

    hostile.py BUILD_DIR [--write-regressions DIR]

Each case is a small recording built by hand (records encoded as in
docs/recording-format.md, zstd-compressed with the zstd tool): snapshot
pointer cycles, strings without terminator, absurd vectors and lengths,
enormous record lengths and counts, a decompression bomb, huge stack ids,
many processes. zeek-spy-convert --no-cache must, for every one, exit 0 or
1 (never a signal), print at most one "error:" line, and stay under
MAX_SECONDS of wall time and MAX_RSS_MIB of memory.

--write-regressions DIR (tests/fuzz/regressions) also stores each recording
under DIR/reader/ and the snapshots of the first cases under DIR/resolver/,
the inputs the fuzz targets' replay ctests feed them.
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Env, Result  # noqa: E402

MAX_SECONDS = 10.0
# Stack ids must come in sequence and processes are capped (conv_read.c), so
# no small file makes the converter allocate much; the snapshot-bomb check
# (zs_reader.c) allows 64 MiB of regions plus 64 times the file read.
MAX_RSS_MIB = 300
HERE = os.path.dirname(os.path.abspath(__file__))
LAYOUT = open(os.path.join(HERE, "..", "fuzz", "corpus", "layout", "zeek-double-8.0.layout")).read()
PID = 4242

# The 8.0 layout's offsets (tests/fuzz/corpus/layout/zeek-double-8.0.layout).
OBJ_LOCATION, FUNC_KIND, FUNC_NAME, FUNC_BODIES, BODY_SIZE = 8, 56, 72, 24, 24


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def string(s):
    b = s.encode() if isinstance(s, str) else s
    return varint(len(b)) + b


def kv(pairs):
    return varint(len(pairs)) + b"".join(string(k) + string(v) for k, v in pairs)


def rec(t, payload):
    return bytes([t]) + varint(len(payload)) + payload


PREAMBLE = b"ZSPYREC\n" + varint(1)


def header():
    return rec(1, kv([("recorder_version", "0.1.0"), ("host", "hostile"), ("start_wall_ns", "0"),
                      ("start_mono_ns", "0"), ("rate_hz", "100"), ("recording_id", "0" * 32),
                      ("mode", "ptrace")]))


def process(pid=PID, layout=LAYOUT):
    return rec(2, varint(pid) + kv([("exe", "/usr/bin/zeek"), ("build_id", ""),
                                    ("zeek_version", "8.0.10"), ("layout", layout)]))


def stack(sid, frames, pid=PID):
    return rec(3, varint(sid) + varint(pid) + varint(len(frames)) +
               b"".join(varint(f) + varint(s) for f, s in frames))


def samples(ids):
    return rec(4, varint(len(ids)) + b"".join(varint(1000) for _ in ids) +
               b"".join(varint(i) for i in ids))


def snapshot(addr, data, pid=PID):
    return rec(5, varint(pid) + varint(addr) + varint(len(data)) + data)


def trailer(n):
    return rec(7, varint(n) + varint(0) + varint(n * 1000))


def zstd(*frames):
    """Each argument becomes one zstd frame."""
    return zstd_frames(frames)


def zstd_frames(frames):
    """Each item of the iterable becomes one zstd frame: bytes, or an
    iterable of byte chunks fed to zstd one by one, so that a bomb never sits
    in our memory (the converter's memory use is measured, and a forked child
    starts with the RSS of its parent)."""
    out = b""
    for f in frames:
        with tempfile.TemporaryFile() as tmp:
            p = subprocess.Popen(["zstd", "-q", "-c", "-3"], stdin=subprocess.PIPE, stdout=tmp)
            for chunk in ([f] if isinstance(f, bytes) else f):
                p.stdin.write(chunk)
            p.stdin.close()
            if p.wait() != 0:
                raise RuntimeError("zstd failed")
            tmp.seek(0)
            out += tmp.read()
    return out


def func(at, name_addr, name_len, bodies_begin, bodies_end, kind=0, size=112, fill=b"\0"):
    b = bytearray(fill * size)
    b[FUNC_KIND] = kind
    struct.pack_into("<QQ", b, FUNC_NAME, name_addr, name_len)
    struct.pack_into("<QQ", b, FUNC_BODIES, bodies_begin, bodies_end)
    return snapshot(at, bytes(b))


def recording(snapshots, frames):
    body = header() + process() + b"".join(snapshots) + stack(0, frames) + samples([0] * 10)
    return zstd(PREAMBLE + body, trailer(10))


def cases():
    c = {}
    name = snapshot(0x20000, b"evil\0")

    # A Func whose bodies vector is the Func itself, 1024 times over: every
    # body's statement, Location and file name point back into it.
    cyc = bytearray(b"\0" * (BODY_SIZE * 1024))
    for i in range(0, len(cyc), 8):
        struct.pack_into("<Q", cyc, i, 0x10000)
    cyc[FUNC_KIND] = 0
    struct.pack_into("<QQ", cyc, FUNC_NAME, 0x20000, 4)
    struct.pack_into("<QQ", cyc, FUNC_BODIES, 0x10000, 0x10000 + BODY_SIZE * 1024)
    c["snapshot-pointer-cycle"] = recording([name, snapshot(0x10000, bytes(cyc))],
                                            [(0x10000, 0x10000)] * 64)

    # Location file names without a terminator (8 KiB of 'A', then unmapped).
    loc = struct.pack("<QII", 0x50000, 1, 2)
    stmt = b"\0" * OBJ_LOCATION + struct.pack("<Q", 0x40000)
    body = struct.pack("<Q", 0x30000) + b"\0" * 16
    c["string-without-terminator"] = recording(
        [name, func(0x10000, 0x20000, 4, 0x60000, 0x60000 + BODY_SIZE), snapshot(0x60000, body),
         snapshot(0x30000, stmt), snapshot(0x40000, loc), snapshot(0x50000, b"A" * 8192)],
        [(0x10000, 0x30000)])

    # Absurd vectors and string sizes.
    c["absurd-vectors"] = recording(
        [name, func(0x10000, 0x20000, 4, 0x1000, 0xFFFFFFFFFFFF0000),
         func(0x11000, 0x20000, 4, 0x2000, 0x1000),
         func(0x12000, 0x20000, 4, 0x1000, 0x1000 + 7),
         func(0x13000, 0x20000, 1 << 63, 0, 0),
         func(0x14000, 0xFFFFFFFFFFFFFFF0, 100, 0, 0)],
        [(0x10000, 0), (0x11000, 0), (0x12000, 0), (0x13000, 0), (0x14000, 0),
         (0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF)])
    # Regions at the very top of the address space.
    c["region-wraps-address-space"] = recording(
        [snapshot(0xFFFFFFFFFFFFFF00, b"\xff" * 512), name,
         func(0xFFFFFFFFFFFFFF80, 0x20000, 4, 0, 0, size=112)],
        [(0xFFFFFFFFFFFFFF80, 0), (0xFFFFFFFFFFFFFFF8, 0)])

    # Enormous lengths and counts.
    c["record-length-2^63"] = zstd(PREAMBLE + header() + bytes([5]) + varint(1 << 63) + b"x" * 16)
    c["snapshot-length-2^40"] = zstd(PREAMBLE + header() + process() +
                                     rec(5, varint(PID) + varint(0x1000) + varint(1 << 40) + b"x"))
    c["kv-count-huge"] = zstd(PREAMBLE + rec(1, varint(1 << 40) + string("a") + string("b")))
    c["stack-of-2^32-frames"] = zstd(PREAMBLE + header() + process() +
                                     rec(3, varint(0) + varint(PID) + varint(1 << 32) + b"\0\0"))
    c["samples-count-huge"] = zstd(PREAMBLE + header() + process() + stack(0, []) +
                                   rec(4, varint(1 << 50) + b"\0\0\0"))
    c["overlong-varint"] = zstd(PREAMBLE + header() + bytes([3]) + b"\xff" * 11 + b"\0")
    c["string-past-record"] = zstd(PREAMBLE + rec(1, varint(1) + varint(1 << 20) + b"key"))
    c["key-with-nul"] = zstd(PREAMBLE + rec(1, kv([("rate\0_hz", "100")])) + trailer(0))
    c["header-not-first"] = zstd(PREAMBLE + process() + header())
    c["no-layout"] = zstd(PREAMBLE + header() + process(layout="model = frame-stack\n") + trailer(0))
    c["sample-of-undefined-stack"] = zstd(PREAMBLE + header() + process() + samples([7]))
    c["stack-id-2^24-1"] = zstd(PREAMBLE + header() + process() + stack((1 << 24) - 1, []) +
                                samples([(1 << 24) - 1]) + trailer(1))
    c["stack-id-2^60"] = zstd(PREAMBLE + header() + process() + stack(1 << 60, []))
    c["stack-defined-twice"] = zstd(PREAMBLE + header() + process() + stack(0, []) + stack(0, []))
    c["garbage-after-frames"] = recording([name], [(0x10000, 0)]) + b"\x00garbage" * 8
    c["newer-format-version"] = zstd(b"ZSPYREC\n" + varint(99) + header())
    c["rate-zero"] = zstd(PREAMBLE + rec(1, kv([("rate_hz", "0")])))
    # Many processes, each with a snapshot region. (The converter's process
    # table is a list searched linearly and grown one entry at a time: 20000
    # processes take 0.2 s, 60000 1.6 s, and far longer under ASan, whose
    # realloc always copies; kept small here until that is a hash table.)
    many = b"".join(snapshot(0x1000, b"x", pid=p) for p in range(1, 5001))
    c["5000-processes"] = zstd(PREAMBLE + header() + many + trailer(0))
    # A decompression bomb: frames of 64 MiB (the reader's limit per frame)
    # of 1 MiB zero snapshots each, a few KiB compressed per frame.
    mib = b"\0" * (1 << 20)

    def bomb_frame(pid):
        return (snapshot(0x100000000 + (i << 20), mib, pid=pid) for i in range(63))

    def bomb(first, pids):
        yield first
        for pid in pids:
            yield bomb_frame(pid)

    c["snapshot-bomb-1.5GiB"] = zstd_frames(bomb(PREAMBLE + header() + process(), [PID] * 24))
    # The same bomb spread over many processes.
    c["snapshot-bomb-many-pids"] = zstd_frames(bomb(PREAMBLE + header(), range(1000, 1024)))
    return c


def convert(env, path):
    """Runs the converter; (exit code or -signal, stderr, seconds, max RSS in MiB)."""
    t0 = time.monotonic()
    p = subprocess.Popen([env.convert, "--no-cache", "-f", "summary", path],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(60, p.kill)
    killer.start()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    killer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, err.strip(), time.monotonic() - t0, usage.ru_maxrss // 1024


# Cases whose snapshot and stack are worth replaying through fuzz_resolver.
RESOLVER_CASES = ("snapshot-pointer-cycle", "string-without-terminator", "absurd-vectors",
                  "region-wraps-address-space")


def save_regressions(top, name, data, path):
    """The recording for fuzz_reader, its snapshot and frames for
    fuzz_resolver (in that target's input format)."""
    if len(data) <= 128 * 1024:
        # Not *.zspy: .gitignore keeps recordings out of the repository.
        with open(os.path.join(top, "reader", name + ".rec"), "wb") as f:
            f.write(data)
    if name in RESOLVER_CASES:
        sys.path.insert(0, os.path.join(HERE, "..", "fuzz"))
        from make_corpus import resolver_seed
        with open(os.path.join(top, "resolver", name), "wb") as f:
            f.write(resolver_seed(path, "8.0.10"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--write-regressions")
    a = ap.parse_args()
    env = Env(a.build)
    res = Result("hostile")
    global MAX_SECONDS, MAX_RSS_MIB
    if b"__asan_init" in open(env.convert, "rb").read():  # the sanitizer build
        MAX_SECONDS, MAX_RSS_MIB = MAX_SECONDS * 3, MAX_RSS_MIB * 3 // 2
        print("sanitizer build: limits %.0f s, %d MiB" % (MAX_SECONDS, MAX_RSS_MIB))
    worst_t, worst_rss = 0.0, 0
    all_cases = cases()
    for name, data in all_cases.items():
        path = env.path(name + ".zspy")
        with open(path, "wb") as f:
            f.write(data)
        if a.write_regressions:
            save_regressions(a.write_regressions, name, data, path)
        rc, err, took, rss_mib = convert(env, path)
        errors = [l for l in err.splitlines() if "error:" in l]
        first = errors[0] if errors else (err.splitlines()[0] if err else "no message")
        first = re.sub(r"/tmp/zs-fault-[^/]+/", "", first)
        print("  %-28s %5d bytes  exit %-3s %5.2f s %4d MiB  %s"
              % (name, len(data), rc, took, rss_mib, first[:140]), flush=True)
        res.check(rc in (0, 1), "%s: converter exit %s (a signal?): %s" % (name, rc, err))
        res.check(len(errors) <= 1, "%s: more than one error line: %r" % (name, err))
        res.check(took <= MAX_SECONDS, "%s: took %.1f s (limit %.0f s)" % (name, took, MAX_SECONDS))
        res.check(rss_mib <= MAX_RSS_MIB, "%s: converter used %d MiB (limit %d MiB)"
                  % (name, rss_mib, MAX_RSS_MIB))
        worst_rss = max(worst_rss, rss_mib)
        worst_t = max(worst_t, took)
    env.cleanup()
    res.finish("%d hostile recordings (pointer cycles, unterminated strings, absurd vectors and "
               "lengths, bombs, huge ids): exit 0/1 with at most one error line each, at most "
               "%.2f s and %d MiB (limits %.0f s, %d MiB)"
               % (len(all_cases), worst_t, worst_rss, MAX_SECONDS, MAX_RSS_MIB))


if __name__ == "__main__":
    main()
