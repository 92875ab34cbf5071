#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes fuzz_native's inputs (the format is in fuzz_native.c):

    tests/fuzz/make_native_corpus.py

corpus/native/        well-formed answers of an unwinder, as the real one
                      (recorder/rec_unwinder.c) sends them: the markers'
                      names and locations first, each name, module and
                      location before the first answer that uses it; ctest
                      fuzz.native.seeds-accepted checks that every answer in
                      them is collected
regressions/native/lie-*  one well-formed answer, then one lie, in the last
                      answer; ctest fuzz.native.lies-refused checks that the
                      lie, and only it, is refused

No build is needed: the messages are rec_unwind_msg.h's, spelled out here.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# rec_unwind_msg.h
NAME, RESULT, MODULE, LOCATION, LINES = 5, 6, 7, 8, 9
UNWIND = 4
BEYOND_COPY, OUTSIDE_MODULES, ON_FIBER = 1, 2, 4
MAX_FRAMES = 256

ZEEK = "/usr/local/zeek/bin/zeek"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
INVOKE = "_ZNK4zeek6detail10ScriptFunc6InvokeEPNS_4ArgsERNS0_12StmtFlowTypeE"


def message(kind, arg, payload, relative=False):
    """One message as fuzz_native.c reads it: u8 type, u32 arg, u16 length,
    u8 flags, payload."""
    return struct.pack("<BIHB", kind, arg, len(payload), 1 if relative else 0) + payload


def result(ids, sps, flags=0, count=None):
    """A RESULT: ids and stack-pointer offsets from rsp, innermost first."""
    n = len(ids) if count is None else count
    payload = struct.pack("<I", flags) + b"".join(struct.pack("<I", i) for i in ids)
    payload += b"".join(struct.pack("<Q", s & 0xFFFFFFFFFFFFFFFF) for s in sps)
    return message(RESULT, n, payload, relative=True)


def module_payload(start, end, path, build_id=b"", offset=0, build_id_len=None, path_len=None):
    p = path.encode() if isinstance(path, str) else path
    return struct.pack("<QQQII", start, end, offset,
                       len(build_id) if build_id_len is None else build_id_len,
                       len(p) if path_len is None else path_len) + build_id + p


class Unwinder:
    """Names, modules and locations sent so far, with the real unwinder's
    ids: dense, in order, each sent before its first use."""

    def __init__(self):
        self.out = b""
        self.names, self.modules, self.locations = {}, {}, {}
        for marker in ["[truncated]", "[spicy fiber]"]:
            self.location(0, None, marker)

    def name(self, s):
        if s not in self.names:
            self.names[s] = len(self.names)
            self.out += message(NAME, self.names[s], s.encode())
        return self.names[s]

    def module(self, path, start, end):
        if path not in self.modules:
            self.modules[path] = (len(self.modules), start)
            self.out += message(MODULE, len(self.modules) - 1,
                                module_payload(start, end, path, bytes(range(20))))
        return self.modules[path]

    def location(self, address, module, symbol, lines=()):
        key = (address, module, symbol)
        if key in self.locations:
            return self.locations[key]
        sym = self.name(symbol)
        mod = 0
        if module:
            mod = self.module(*module)[0] + 1
        for function, file, _ in lines:
            self.name(function)
            self.name(file)
        lid = len(self.locations)
        self.locations[key] = lid
        self.out += message(LOCATION, lid, struct.pack("<QII", address, mod, sym))
        if lines:
            self.out += message(LINES, lid, b"".join(
                struct.pack("<III", self.names[f], self.names[fl], ln) for f, fl, ln in lines))
        return lid

    def answer(self, frames, flags=0, step=0x40):
        """frames innermost first: (address, module, symbol[, lines])."""
        ids = [self.location(*f) for f in frames]
        self.out += result(ids, [i * step for i in range(len(ids))], flags)


ZEEK_MOD = (ZEEK, 0x555555554000, 0x555556000000)
LIBC_MOD = (LIBC, 0x7FFFF7C00000, 0x7FFFF7E00000)
START = (0x555555560010, ZEEK_MOD, "_start")
MAIN = (0x555555561234, ZEEK_MOD, "main", [("main", "src/main.cc", 95)])
RUN = (0x5555555F0000, ZEEK_MOD, "_ZN4zeek9run_state8run_loopEv",
       [("_ZN4zeek9run_state6detail11dispatch_runEv", "src/RunState.cc", 310),
        ("_ZN4zeek9run_state8run_loopEv", "src/RunState.cc", 402)])
INVOKE_F = (0x5555555A0000, ZEEK_MOD, INVOKE, [(INVOKE, "src/Func.cc", 380)])
POLL = (0x7FFFF7D10000, LIBC_MOD, "poll")
UNKNOWN = (0x7FFFF0000000, None, "[unknown]")


def header(per_round, rounds, max_frames=0):
    return bytes([(per_round - 1) | ((rounds - 1) << 2), max_frames])


def seeds():
    u = Unwinder()
    u.answer([POLL, RUN, MAIN, START])
    yield "one-answer", header(1, 1) + u.out

    # Four captures in flight per round, two rounds: names and locations
    # arrive with the answer that first needs them; markers' flags; a PC
    # outside the modules (the recorder sends its module list again); an
    # empty unwind; an interpreter activation.
    u = Unwinder()
    u.answer([POLL, RUN, MAIN, START])
    u.answer([INVOKE_F, RUN, MAIN, START])
    u.answer([POLL, INVOKE_F, RUN], flags=BEYOND_COPY)
    u.answer([UNKNOWN, RUN, MAIN, START], flags=OUTSIDE_MODULES)
    u.answer([])
    u.answer([POLL, INVOKE_F], flags=ON_FIBER)
    u.answer([MAIN, START], step=0x200)
    u.answer([POLL, RUN, MAIN, START], step=0)
    yield "pipelined", header(4, 2) + u.out

    # More frames than collect may return: the outermost two.
    u = Unwinder()
    u.answer([POLL, INVOKE_F, RUN, MAIN, START])
    yield "cut-to-max", header(1, 1, max_frames=2) + u.out

    # As deep as an answer may be, 8 bytes a frame (within any copy).
    u = Unwinder()
    u.answer([POLL] + [INVOKE_F, RUN] * 127 + [START], flags=BEYOND_COPY, step=8)
    yield "deepest", header(1, 1) + u.out


def lies():
    """(name, the lying messages, then a well-formed RESULT if they are not
    one): each after one well-formed answer."""
    def first():
        u = Unwinder()
        u.answer([POLL, RUN, MAIN, START])
        return u

    def lie(name, build):
        u = first()
        yield name, header(1, 2) + u.out + build(u)

    zeek = lambda u: u.modules[ZEEK][0] + 1  # as a location names it
    nloc = lambda u: len(u.locations)
    nname = lambda u: len(u.names)
    ok = lambda u: result([2, 3], [0, 0x40])
    loc = lambda addr, mod, sym: struct.pack("<QII", addr, mod, sym)
    line = lambda f, fl, ln: struct.pack("<III", f, fl, ln)
    cases = {
        # RESULT
        "location-never-announced": lambda u: result([2, nloc(u)], [0, 0x40]),
        "sp-below-rsp": lambda u: result([2, 3], [-8, 0x40]),
        "sp-beyond-copy": lambda u: result([2, 3], [0, 0x100000]),
        "sps-descending": lambda u: result([2, 3], [0x100, 0x80]),
        "result-one-frame-short": lambda u: result([2, 3], [0, 0x40], count=3),
        "result-one-frame-long": lambda u: result([2, 3, 4], [0, 0x40, 0x80], count=2),
        "too-many-frames": lambda u: result([2] * (MAX_FRAMES + 1), [0] * (MAX_FRAMES + 1)),
        # NAME
        "name-out-of-order": lambda u: message(NAME, nname(u) + 1, b"x") + ok(u),
        "name-again": lambda u: message(NAME, nname(u) - 1, b"x") + ok(u),
        "name-empty": lambda u: message(NAME, nname(u), b"") + ok(u),
        "name-too-long": lambda u: message(NAME, nname(u), b"n" * 1024) + ok(u),
        "datagram-beyond-64k": lambda u: message(NAME, nname(u), b"n" * 65535) + ok(u),
        # MODULE
        "module-out-of-order": lambda u: message(MODULE, 5, module_payload(1, 2, "/m")) + ok(u),
        "module-empty-range": lambda u: message(MODULE, 2, module_payload(9, 9, "/m")) + ok(u),
        "module-path-with-nul": lambda u: message(MODULE, 2, module_payload(1, 2, b"/m\0x")) + ok(u),
        "module-path-empty": lambda u: message(MODULE, 2, module_payload(1, 2, b"")) + ok(u),
        "module-path-too-long": lambda u: message(MODULE, 2, module_payload(1, 2, "/" * 4097)) + ok(u),
        "module-lengths-disagree": lambda u: message(
            MODULE, 2, module_payload(1, 2, "/m", b"\1\2", path_len=9)) + ok(u),
        "module-build-id-too-long": lambda u: message(
            MODULE, 2, module_payload(1, 2, "/m", bytes(65))) + ok(u),
        "module-cut": lambda u: message(MODULE, 2, module_payload(1, 2, "/m")[:20]) + ok(u),
        # LOCATION
        "location-out-of-order": lambda u: message(LOCATION, nloc(u) + 1, loc(0, 0, 0)) + ok(u),
        "location-unknown-symbol": lambda u: message(LOCATION, nloc(u), loc(0, 0, nname(u))) + ok(u),
        "location-unknown-module": lambda u: message(LOCATION, nloc(u), loc(0, 3, 0)) + ok(u),
        "location-outside-module": lambda u: message(
            LOCATION, nloc(u), loc(ZEEK_MOD[2], zeek(u), 0)) + ok(u),
        "location-below-module": lambda u: message(
            LOCATION, nloc(u), loc(ZEEK_MOD[1] - 1, zeek(u), 0)) + ok(u),
        "location-cut": lambda u: message(LOCATION, nloc(u), loc(0, 0, 0)[:12]) + ok(u),
        # LINES
        "lines-of-an-older-location": lambda u: message(
            LOCATION, nloc(u), loc(0, 0, 0)) + message(LINES, 0, line(0, 0, 1)) + ok(u),
        "lines-twice": lambda u: message(LOCATION, nloc(u), loc(0, 0, 0)) + message(
            LINES, nloc(u), line(0, 0, 1)) + message(LINES, nloc(u), line(0, 0, 1)) + ok(u),
        "lines-none": lambda u: message(LOCATION, nloc(u), loc(0, 0, 0)) + message(
            LINES, nloc(u), b"") + ok(u),
        "lines-seventeen": lambda u: message(LOCATION, nloc(u), loc(0, 0, 0)) + message(
            LINES, nloc(u), line(0, 0, 1) * 17) + ok(u),
        "lines-line-zero": lambda u: message(LOCATION, nloc(u), loc(0, 0, 0)) + message(
            LINES, nloc(u), line(0, 0, 0)) + ok(u),
        "lines-line-too-big": lambda u: message(LOCATION, nloc(u), loc(0, 0, 0)) + message(
            LINES, nloc(u), line(0, 0, (1 << 24) + 1)) + ok(u),
        "lines-unknown-name": lambda u: message(LOCATION, nloc(u), loc(0, 0, 0)) + message(
            LINES, nloc(u), line(nname(u), 0, 1)) + ok(u),
        "lines-cut": lambda u: message(LOCATION, nloc(u), loc(0, 0, 0)) + message(
            LINES, nloc(u), line(0, 0, 1)[:10]) + ok(u),
        # other types
        "unknown-type": lambda u: message(77, 0, b"") + ok(u),
        "a-request-type": lambda u: message(UNWIND, 0, b"") + ok(u),
    }
    for name, build in cases.items():
        yield from lie("lie-" + name, build)


def write(directory, items):
    os.makedirs(directory, exist_ok=True)
    for name, data in items:
        with open(os.path.join(directory, name + ".bin"), "wb") as f:
            f.write(data)


def main():
    write(os.path.join(HERE, "corpus", "native"), seeds())
    write(os.path.join(HERE, "regressions", "native"), lies())


if __name__ == "__main__":
    main()
