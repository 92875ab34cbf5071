#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The interpreter's own C++ frames in --native recordings, hidden by
default and kept with --interpreter-frames.

    interpreter_frames_e2e.py BUILD_DIR

zs-gen --native writes a recording whose script frames sit among the C++
frames of a Zeek 8.2 under their real mangled names: main and the event
loop outside, the interpreter's plumbing between two script frames, and
under the innermost one either the interpreter alone (StmtList::Exec down
to BinaryExpr::Fold), the interpreter then a table assignment into
libstdc++ and malloc, a PC of NameExpr::Eval with a value's destructor
inlined there (kept whole: one pprof Location; the same PC is a when
condition's in a stack without script frames), or (under a BiF) a sort
calling back into ScriptFunc::Invoke, which stays since it runs under the
BiF's C++. The generator knows what the converter must show. Checked, by
default and with --interpreter-frames, through one sqlite cache (store,
then hit):
  - the folded stacks are the generator's;
  - the pprof profile, read back by the real `go tool pprof -raw`, holds
    the same stacks (each Location's Lines expanded: a PC is one Location
    wherever it is, so it must be hidden whole or kept whole);
  - the summary's split line (script / native under scripts / native
    outside scripts) is the generator's: the interpreter's samples count
    as the script's by default, as native with --interpreter-frames.
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

import record_e2e  # the -raw reader shared by the end-to-end tests


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r


def read_folded(text):
    stacks = collections.Counter()
    for line in text.splitlines():
        frames, count = line.rsplit(" ", 1)
        stacks[frames] += int(count)
    return stacks


def pprof_stacks(profile):
    """The samples of a pprof profile as `go tool pprof -raw` lists them:
    folded text (outermost first, each Location's Lines expanded, a
    native function by its full name) -> samples."""
    raw = run(["go", "tool", "pprof", "-raw", profile]).stdout
    stacks = collections.Counter()
    for count, locations in record_e2e.pprof_raw_samples(raw):
        stacks[";".join(name for names in locations for name in names)] += count
    return stacks


def compare(label, got, want):
    if got != want:
        missing = [s for s in want if got.get(s) != want[s]][:2]
        extra = [s for s in got if got[s] != want.get(s)][:2]
        fail("%s: %d stacks differ from the generator's; wanted %r; got %r" % (
            label, sum(1 for s in set(got) | set(want) if got.get(s) != want.get(s)), missing, extra))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    build = os.path.abspath(sys.argv[1])
    convert = os.path.join(build, "zeek-spy-convert")
    tmp = tempfile.mkdtemp(prefix="zs-interp-")
    try:
        rec = os.path.join(tmp, "native.zspy")
        expect = {False: os.path.join(tmp, "default.folded"), True: os.path.join(tmp, "kept.folded")}
        gen = run([os.path.join(build, "tests", "zs-gen"), "-o", rec, "--seed", "24", "--samples", "50000",
                   "--stacks", "400", "--zeek-version", "8.2.2", "--native",
                   "--expect", expect[False], "--expect-interpreter-frames", expect[True]])
        splits = dict(re.findall(r"split (by default|with --interpreter-frames): (script .*)", gen.stderr))
        if len(splits) != 2:
            fail("zs-gen did not give both splits: %s" % gen.stderr)
        cache = os.path.join(tmp, "cache.sqlite")
        for keep in (False, True):
            label = "--interpreter-frames" if keep else "default"
            opts = ["--interpreter-frames"] if keep else []
            want = read_folded(open(expect[keep]).read())
            for attempt in ("cache store", "cache hit"):
                folded = run([convert, "-q", "--cache", cache, "-f", "folded", "-o", "-", rec] + opts).stdout
                compare("%s folded (%s)" % (label, attempt), read_folded(folded), want)
            profile = os.path.join(tmp, "profile.pb.gz")
            run([convert, "-q", "--cache", cache, "-o", profile, rec] + opts)
            compare("%s pprof" % label, pprof_stacks(profile), want)
            summary = run([convert, "-q", "--cache", cache, "-f", "summary", "-o", "-", rec] + opts).stdout
            split = splits["with --interpreter-frames" if keep else "by default"]
            if split not in summary:
                fail("%s summary: not %r: %s" % (label, split, summary))
            print("   %s: %d stacks as the generator's in folded and pprof; %s"
                  % (label, len(want), split))
        hidden = splits["by default"].split(" %")[0]
        if hidden == "script 0.0":
            fail("the recording has no samples in the interpreter alone: the test checks nothing")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
