# SPDX-License-Identifier: BSD-3-Clause
"""A second, independent reader of zeek-spy recordings for the tests (the
spec is docs/recording-format.md): enough to know when each sample was taken
and what its innermost script frame was, to check samples one by one against a
test double's own log of what it was doing at that instant."""
import collections
import subprocess

REC_HEADER, REC_STACK, REC_SAMPLES = 1, 3, 4


def varint(b, i):
    """The base-128 varint at b[i] (the recording's and protobuf's) and the
    index after it; past the end of b, a value no length can have."""
    value = shift = 0
    while i < len(b):
        c = b[i]
        i += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return value, i
    return 1 << 62, i


def _string(b, i):
    n, i = varint(b, i)
    return b[i:i + n].decode(), i + n


def samples_by_pid(path):
    """{pid: [(CLOCK_MONOTONIC ns of the tick, innermost script frame or
    None)]}, in the order written (each process's samples in tick order)."""
    b = subprocess.run(["zstd", "-dcq", path], capture_output=True, check=True).stdout
    if not b.startswith(b"ZSPYREC\n"):
        raise ValueError("%s: not a zeek-spy recording" % path)
    version, i = varint(b, 8)
    start_mono = None
    stacks, all_frames, t_us = {}, {}, 0
    out = collections.defaultdict(list)
    while i < len(b):
        kind = b[i]
        n, i = varint(b, i + 1)
        p, i, j = b[i:i + n], i + n, 0
        if kind == REC_HEADER:
            pairs, j = varint(p, j)
            for _ in range(pairs):
                k, j = _string(p, j)
                v, j = _string(p, j)
                if k == "start_mono_ns":
                    start_mono = int(v)
        elif kind == REC_STACK:
            sid, j = varint(p, j)
            pid, j = varint(p, j)
            frames = []  # script frames (func, stmt) or None for a native one
            if version >= 5:  # the first `shared` frames of an earlier stack
                base, j = varint(p, j)
                if base:
                    shared, j = varint(p, j)
                    frames = list(all_frames[base - 1][:shared])
            nframes, j = varint(p, j)
            for _ in range(nframes):
                func, j = varint(p, j)
                if version >= 4:  # (first << 2 | kind): 1 script, 2 native
                    func, kind = func >> 2, func & 3
                    if kind == 2:
                        frames.append(None)
                        continue
                stmt, j = varint(p, j)
                # formats 1-3: func 0 is a native frame (--native)
                frames.append((func, stmt) if func else None)
            all_frames[sid] = frames
            script = [f for f in frames if f]
            stacks[sid] = (pid, script[-1] if script else None)
        elif kind == REC_SAMPLES:
            count, j = varint(p, j)
            dts = []
            for _ in range(count):
                dt, j = varint(p, j)
                dts.append(dt)
            for dt in dts:
                sid, j = varint(p, j)
                t_us += dt
                pid, frame = stacks[sid]
                out[pid].append((start_mono + t_us * 1000, frame))
    return out
