#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Differential profiles (zeek-spy-convert --base OLD NEW), checked against
each profile converted on its own: two synthetic recordings of different
workloads (zs-gen, two seeds, different lengths, so shares and not counts
must be compared).
  - summary: every function's flat and cum share in the base and in the new
    profile, and their change, as each one's own summary gives them;
  - svg: each outermost frame's share in both (from each one's folded
    stacks), its change, its colour (red grew, blue shrank);
  - pprof: refused with a pointer to go tool pprof -diff_base, which takes
    the two profiles converted on their own.

    diff_e2e.py BUILD_DIR
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import record_e2e as e2e  # noqa: E402

fail = e2e.fail
run = e2e.run


def summary_shares(convert, rec):
    """function -> (flat%, cum%) from the summary's first table."""
    out = run([convert, "--no-cache", "-q", "-f", "summary", "--top", "0", rec]).stdout
    table = out.split("\n\n")[1]
    shares = {}
    for line in table.splitlines()[1:]:
        m = re.match(r"\s*\d+\s+([\d.]+)%\s+\d+\s+([\d.]+)%\s+(.+?)\s*$", line)
        if m:  # the function column, then (two spaces or more) its file:line
            shares[re.split(r"\s{2,}", m.group(3))[0]] = (float(m.group(1)), float(m.group(2)))
    return shares


def outermost_shares(convert, rec, work):
    folded = os.path.join(work, os.path.basename(rec) + ".folded")
    run([convert, "--no-cache", "-q", "-f", "folded", rec, "-o", folded])
    counts, total = {}, 0
    for line in open(folded):
        stack, n = line.rsplit(" ", 1)
        outer = stack.split(";")[0]
        counts[outer] = counts.get(outer, 0) + int(n)
        total += int(n)
    return {k: 100.0 * v / total for k, v in counts.items()}


def main():
    build = sys.argv[1]
    convert, gen = os.path.join(build, "zeek-spy-convert"), os.path.join(build, "tests", "zs-gen")
    work = e2e.scratch_dir("zs-e2e-diff.")
    old, new = os.path.join(work, "old.zspy"), os.path.join(work, "new.zspy")
    run([gen, "-o", old, "--samples", "20000", "--stacks", "60", "--seed", "11"])
    run([gen, "-o", new, "--samples", "35000", "--stacks", "60", "--seed", "12"])

    # The summary's table of changes against each profile's own summary.
    base_sh, new_sh = summary_shares(convert, old), summary_shares(convert, new)
    r = run([convert, "--no-cache", "-q", "-f", "summary", "--top", "0", "--base", old, new])
    if r.returncode != 0:
        fail("--base summary: exit %d: %s" % (r.returncode, r.stderr))
    changes = r.stdout.split("Largest changes against the base")[1].splitlines()[2:]
    checked, last = 0, None
    for line in changes:
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+([-+][\d.]+)\s+([\d.]+)%\s+([\d.]+)%\s+([-+][\d.]+)\s+(.+?)\s*$", line)
        if not m:
            continue
        fn, fb, fc, cn, cb, cc = (float(m.group(i)) for i in range(1, 7))
        name = m.group(7)
        want_new, want_base = new_sh.get(name, (0.0, 0.0)), base_sh.get(name, (0.0, 0.0))
        if name not in new_sh and name not in base_sh:
            fail("%s is in neither profile's own summary" % name)
        if abs(fn - want_new[0]) > 0.011 or abs(fb - want_base[0]) > 0.011 or \
                abs(cn - want_new[1]) > 0.011 or abs(cb - want_base[1]) > 0.011:
            fail("%s: flat %.2f/%.2f cum %.2f/%.2f, its own summaries say %s and %s"
                 % (name, fn, fb, cn, cb, want_new, want_base))
        if abs(fc - (fn - fb)) > 0.011 or abs(cc - (cn - cb)) > 0.011:
            fail("%s: the change is not the difference: %s" % (name, line))
        if last is not None and abs(fc) > last + 0.011:
            fail("the changes are not sorted by size: %s" % line)
        last = abs(fc)
        checked += 1
    if checked < 10:
        fail("only %d rows of the changes table checked:\n%s" % (checked, r.stdout))
    print("  summary: %d functions' flat and cum shares in both profiles and their changes "
          "match each one's own summary" % checked)

    # The flame graph: the outermost frames' shares and colours.
    svg = os.path.join(work, "diff.svg")
    r = run([convert, "--no-cache", "-q", "-f", "svg", "--base", old, new, "-o", svg])
    if r.returncode != 0:
        fail("--base svg: exit %d: %s" % (r.returncode, r.stderr))
    text = open(svg).read()
    old_outer, new_outer = outermost_shares(convert, old, work), outermost_shares(convert, new, work)
    frames = re.findall(r'<g class="fr [^"]*"[^>]*><title>([^<]*)</title><rect x="[\d.]+" y="(\d+)"'
                        r'[^>]*fill="rgb\((\d+),(\d+),(\d+)\)"', text)
    top_y = min(int(f[1]) for f in frames if int(f[1]) > min(int(g[1]) for g in frames))
    seen = 0
    for title, y, red, green, blue in frames:
        m = re.search(r"([\d.]+)%\nbase ([\d.]+)%, change ([-+][\d.]+) points", title)
        if not m:
            fail("a frame's tooltip lacks its base share and change: %r" % title)
        share, base, change = float(m.group(1)), float(m.group(2)), float(m.group(3))
        if abs(change - (share - base)) > 0.011:
            fail("tooltip %r: the change is not the difference" % title)
        red, blue = int(red), int(blue)
        # Full colour at the largest change: under half a point the shade may round away.
        if change > 0.5 and not red > blue or change < -0.5 and not blue > red:
            fail("tooltip %r drawn rgb(%d,%s,%d): grew is red, shrank blue" % (title, red, green, blue))
        if int(y) != top_y:
            continue
        name = title.split("\n")[0]
        if abs(share - new_outer.get(name, 0)) > 0.011 or abs(base - old_outer.get(name, 0)) > 0.011:
            fail("outermost %s: %.2f%% (base %.2f%%), the folded stacks say %.2f%% (base %.2f%%)"
                 % (name, share, base, new_outer.get(name, 0), old_outer.get(name, 0)))
        seen += 1
    if seen < 2:
        fail("only %d outermost frames found in the differential flame graph" % seen)
    print("  svg: %d frames with base share and change, %d outermost ones matching the folded "
          "stacks, red where grown, blue where shrunk" % (len(frames), seen))

    # Nodes: the same two workloads as two nodes of one cluster, compared by
    # --node/--base-node, give the very table of --base.
    other = os.path.join(work, "worker-2.zspy")
    run([gen, "-o", other, "--samples", "35000", "--stacks", "60", "--seed", "12", "--node", "worker-2"])
    by_file = run([convert, "--no-cache", "-q", "-f", "summary", "--top", "0", "--base", old, new]).stdout
    r = run([convert, "--no-cache", "-q", "-f", "summary", "--top", "0", "--node", "worker-2",
             "--base-node", "worker-1", old, other])
    tail = lambda text: text.split("Largest changes against the base")[1]
    if r.returncode != 0 or tail(r.stdout) != tail(by_file):
        fail("--node worker-2 --base-node worker-1 differs from --base:\n%s\n%s" % (r.stdout, r.stderr))
    r = run([convert, "--no-cache", "-q", "-f", "summary", "--base-node", "worker-9", old])
    if r.returncode == 0 or "the base has no samples" not in r.stderr:
        fail("a base node without samples: expected an error, got %d: %s" % (r.returncode, r.stderr))
    print("  nodes: --node worker-2 --base-node worker-1 gives the table of --base; a base node "
          "without samples is refused")

    # pprof: the real go tool pprof diffs two profiles converted on their own.
    r = run([convert, "--no-cache", "-q", "--base", old, new])
    if r.returncode != 2 or "-diff_base" not in r.stderr:
        fail("--base with pprof: expected a usage error naming -diff_base, got %d: %s"
             % (r.returncode, r.stderr))
    a, b = os.path.join(work, "old.pb.gz"), os.path.join(work, "new.pb.gz")
    run([convert, "--no-cache", "-q", old, "-o", a])
    run([convert, "--no-cache", "-q", new, "-o", b])
    top = e2e.pprof(["-top", "-diff_base", a], b)
    if "flat" not in top:
        fail("go tool pprof -diff_base printed no table: " + top)
    print("  pprof: --base refused with a pointer to -diff_base; go tool pprof -diff_base "
          "reads the two profiles")
    print("PASS diff")


if __name__ == "__main__":
    main()
