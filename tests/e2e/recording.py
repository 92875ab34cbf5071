"""A second, independent reader of zeek-spy recordings for the tests (the
spec is docs/recording-format.md): enough to know when each sample was taken
and what its innermost script frame was, to check samples one by one against a
test double's own log of what it was doing at that instant."""
import collections
import subprocess

REC_HEADER, REC_STACK, REC_SAMPLES = 1, 3, 4


def _varint(b, i):
    value = shift = 0
    while True:
        c = b[i]
        i += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return value, i


def _string(b, i):
    n, i = _varint(b, i)
    return b[i:i + n].decode(), i + n


def samples_by_pid(path):
    """{pid: [(CLOCK_MONOTONIC ns of the tick, innermost script frame or
    None)]}, in the order written (each process's samples in tick order)."""
    b = subprocess.run(["zstd", "-dcq", path], capture_output=True, check=True).stdout
    if not b.startswith(b"ZSPYREC\n"):
        raise ValueError("%s: not a zeek-spy recording" % path)
    _version, i = _varint(b, 8)
    start_mono = None
    stacks, t_us = {}, 0
    out = collections.defaultdict(list)
    while i < len(b):
        kind = b[i]
        n, i = _varint(b, i + 1)
        p, i, j = b[i:i + n], i + n, 0
        if kind == REC_HEADER:
            pairs, j = _varint(p, j)
            for _ in range(pairs):
                k, j = _string(p, j)
                v, j = _string(p, j)
                if k == "start_mono_ns":
                    start_mono = int(v)
        elif kind == REC_STACK:
            sid, j = _varint(p, j)
            pid, j = _varint(p, j)
            nframes, j = _varint(p, j)
            frame = None
            for _ in range(nframes):
                func, j = _varint(p, j)
                stmt, j = _varint(p, j)
                if func:  # func 0: a native frame (--native)
                    frame = (func, stmt)
            stacks[sid] = (pid, frame)
        elif kind == REC_SAMPLES:
            count, j = _varint(p, j)
            dts = []
            for _ in range(count):
                dt, j = _varint(p, j)
                dts.append(dt)
            for dt in dts:
                sid, j = _varint(p, j)
                t_us += dt
                pid, frame = stacks[sid]
                out[pid].append((start_mono + t_us * 1000, frame))
    return out
