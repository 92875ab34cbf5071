#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Regenerates the fuzz seed corpus (tests/fuzz/corpus/) from a normal build:

    tests/fuzz/make_corpus.py BUILD_DIR

reader/   small real recordings (zs-gen), one cut short, one without a
          trailer, one of on- and off-CPU samples (format 7, as the BPF
          sampler writes them), and the same content as a decompressed
          stream for the target's "compress it for me" mode (first byte odd)
resolver/ the snapshot regions and stacks of small zs-gen recordings, one per
          layout generation, in fuzz_resolver.c's input format
layout/   the layouts the recorder prints for the three test-double
          generations

The seeds are committed; rerun this only when the format or layouts change.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# fuzz_resolver.c's VERSIONS, in order.
RESOLVER_VERSIONS = ["3.0.1", "3.0.14", "3.1.5", "3.2.4", "4.0.9", "4.1.1", "5.1.3", "5.2.2",
                     "8.0.10", "8.2.2"]


def varint(buf, pos):
    v, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos


def records(path):
    """(type, payload) of every record of a recording, via `zstd -dc`."""
    raw = subprocess.run(["zstd", "-dcq", path], capture_output=True, check=True).stdout
    assert raw[:8] == b"ZSPYREC\n"
    _, pos = varint(raw, 8)
    while pos < len(raw):
        t = raw[pos]
        n, pos = varint(raw, pos + 1)
        yield t, raw[pos:pos + n]
        pos += n


def resolver_seed(path, version):
    stacks, regions = [], []
    for t, p in records(path):
        if t == 3:  # STACK
            _, q = varint(p, 0)
            _, q = varint(p, q)
            n, q = varint(p, q)
            frames = []
            for _ in range(n):
                f, q = varint(p, q)
                s, q = varint(p, q)
                frames.append((f, s))
            stacks.append(frames)
        elif t == 5:  # SNAPSHOT
            _, q = varint(p, 0)
            addr, q = varint(p, q)
            n, q = varint(p, q)
            regions.append((addr, p[q:q + n]))
    frames = max(stacks, key=len)[:8]
    out = bytes([RESOLVER_VERSIONS.index(version), len(frames)])
    out += b"".join(struct.pack("<QQ", f, s) for f, s in frames)
    for addr, data in regions:
        out += struct.pack("<QH", addr, len(data)) + data
    return out


def main():
    build = os.path.abspath(sys.argv[1])
    gen = os.path.join(build, "tests", "zs-gen")
    record = os.path.join(build, "zeek-spy-record")
    tmp = tempfile.mkdtemp(prefix="zs-corpus-")
    corpus = os.path.join(HERE, "corpus")
    for d in ("reader", "resolver", "layout"):
        shutil.rmtree(os.path.join(corpus, d), ignore_errors=True)
        os.makedirs(os.path.join(corpus, d))

    def zsgen(name, *args):
        out = os.path.join(tmp, name)
        subprocess.run([gen, "-o", out, "--seed", "7"] + list(args), check=True,
                       stdout=subprocess.DEVNULL)
        return out

    small = zsgen("small.zspy", "--samples", "50", "--stacks", "5", "--flush-every", "20")
    shutil.copy(small, os.path.join(corpus, "reader", "small.rec"))
    data = open(small, "rb").read()
    with open(os.path.join(corpus, "reader", "cut-short.rec"), "wb") as f:
        f.write(data[:len(data) - 7])
    shutil.copy(zsgen("no-trailer.zspy", "--samples", "30", "--stacks", "3", "--no-trailer"),
                os.path.join(corpus, "reader", "no-trailer.rec"))
    shutil.copy(zsgen("off-cpu.zspy", "--samples", "60", "--stacks", "5", "--off-cpu", "40",
                      "--flush-every", "20"),
                os.path.join(corpus, "reader", "off-cpu.rec"))
    plain = subprocess.run(["zstd", "-dcq", small], capture_output=True, check=True).stdout
    with open(os.path.join(corpus, "reader", "plain-3frames"), "wb") as f:
        f.write(bytes([1 | 2, 2 | (3 << 2)]) + plain)  # compress, 3 frames, cut 4 bytes

    for v in ("3.0.1", "5.2.2", "8.0.10", "8.2.2"):
        rec = zsgen("res-%s.zspy" % v, "--samples", "20", "--stacks", "4", "--zeek-version", v)
        with open(os.path.join(corpus, "resolver", "zs-gen-" + v), "wb") as f:
            f.write(resolver_seed(rec, v))

    for g in ("3.0", "8.0", "8.2"):
        exe = os.path.join(build, "tests", "target", "zeek-double-" + g)
        text = subprocess.run([record, "--print-layout", exe], capture_output=True, text=True,
                              check=True).stdout
        with open(os.path.join(corpus, "layout", "zeek-double-" + g + ".layout"), "w") as f:
            f.write(text)
    shutil.rmtree(tmp)
    for d in ("reader", "resolver", "layout"):
        files = sorted(os.listdir(os.path.join(corpus, d)))
        print("%-8s %s" % (d, " ".join(files)))


if __name__ == "__main__":
    main()
