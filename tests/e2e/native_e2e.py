#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""--native: zeek's C++ frames and its script frames in one stack.

    native_e2e.py BUILD_DIR
    native_e2e.py BUILD_DIR plugin     # by hand: the plugin's check alone

Each generation of the test double, with DWARF and stripped (.eh_frame and
.symtab/.dynsym only), built -O2 without frame pointers, is launched under
`zeek-spy-record --native` at 400 Hz for 4 s. Its md5_hash BiF runs a native
chain of known names (zeek::BifFunc::md5_hash_bif or BifFunc::bro_md5_hash,
then zeek::detail::hash_update, zeek::detail::hash_block). Checked on the
folded output:
  - the script frames sit inside the native stack in order: main before the
    outermost script frame, the BiF's C++ chain after md5_hash, in order;
  - the share of samples in hash_block is md5_hash's ground-truth share
    within 3 points, and every script function's share (its samples as the
    innermost script frame) is within 3 points of the double's truth;
  - unwinds that failed or did not match the script frames stay within a
    1 % budget (beyond 3 Poisson sigmas of it fails);
  - the stripped build gives the same native names as the DWARF one;
  - in the pprof profile, read back by the real `go tool pprof -raw`, the
    Mappings include the double's executable with the build-id of its ELF
    note (as `readelf -n` shows it), every native location in a mapping has
    a non-zero address inside it, and the BiF's C++ chain sits in the
    double's mapping under the same names.
Checked with `go tool pprof -traces` on the pprof output:
  - by default no native frame lies between two script frames (the
    interpreter's plumbing is hidden);
  - with --interpreter-frames, between every two script frames of a stack
    rooted at main, the double's plumbing runs in Zeek's order (StmtList::Exec,
    ExprStmt::Exec, CallExpr::Eval), from the same sqlite cache as the
    default profile (the setting is part of the cache key).
Checked PC by PC with `go tool pprof -raw`, by default and with
--interpreter-frames:
  - by default no PC of the interpreter alone (by Zeek's names, which the
    double's are: StmtList::Exec, Stmt::Exec, SpinStmt::Exec, ...) lies
    directly under the innermost script frame: the converter hides that run,
    whose time is the script function's, down to the double's work
    (zd::spin) or the BiF's C++ (a PC of SpinStmt::Exec with the double's
    trace_stmt inlined there stays whole);
  - with --interpreter-frames, StmtList::Exec is the first frame under the
    innermost script function (not a BiF) in nearly every sample that has
    native frames under it.
A plugin (tests/target/plugin_demo.cc, linked stripped) dlopen'ed after the
recording started and deleted at once:
  - its analyzer's frame sits under main in 1 % of the samples or more, and
    its local function, which no symbol names, is named after the module,
    [zeek-plugin-demo.so], under it in half of those or more;
  - no folded frame is named by an address ("+0x...]");
  - in pprof, every location of code no symbol names ([module]) has its
    module's Mapping and an address inside that module's code (a PC taken
    for a neighbour's would not): in 0.1 % of the samples at most.
"""
import math
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_e2e as e2e  # noqa: E402

RATE, SECONDS = 1000, 4  # 4,000 samples: binomial noise about 0.7 points
CHAIN = {"3.0": ["BifFunc::bro_md5_hash(long)", "zeek::detail::hash_update(long)",
                 "zeek::detail::hash_block(long)"],
         "8.0": ["zeek::BifFunc::md5_hash_bif(long)", "zeek::detail::hash_update(long)",
                 "zeek::detail::hash_block(long)"]}
CHAIN["8.2"] = CHAIN["8.0"]
FIBER = "[spicy fiber]"
# The double's interpreter plumbing between two script frames, as pprof names
# it (argument lists dropped), outermost first.
PLUMBING = {"3.0": ["StmtList::Exec const", "ExprStmt::Exec const", "CallExpr::Eval const"]}
PLUMBING["8.0"] = ["zeek::detail::" + f for f in PLUMBING["3.0"]]
PLUMBING["8.2"] = PLUMBING["8.0"]
# The double's interpreter under the innermost script frame, as folded output
# names it (with DWARF, the inlined Stmt::Exec too; from 8.0 in zeek::detail).
INTERPRETER = re.compile(r"^(zeek::detail::)?((Stmt|StmtList|SpinStmt|ExprStmt)::Exec|CallExpr::Eval|"
                         r"(ScriptFunc|BuiltinFunc)::Invoke|(BroFunc|BuiltinFunc)::Call)\b")
PLUGIN_FRAME = "zeek::plugin::Demo::Analyzer::DeliverPacket(long)"
PLUGIN_UNNAMED = "[zeek-plugin-demo.so]"  # its local function, which no symbol names
UNWIND_BUDGET = 0.01  # unwinds that fail or do not match the script frames
VDSO_MAX_BYTES = 0x4000  # x86-64's vdso is two pages; its data pages hold no code


def record(env, gen, extra=()):
    rec, truth = env.path("native.zspy"), env.path("truth.tsv")
    if os.path.exists(rec):  # a second attempt: the recorder never overwrites
        os.unlink(rec)
    # -v: the end report's details (the native frames' counts).
    # ptrace: launched under BPF, the first ticks land while the dynamic
    # loader maps the libraries, before the unwinder's module list has them
    # (0.2-1.8 % of unwinds at 1 kHz, all in the first 0.3 s); BPF's native
    # frames are e2e.sampler-bpf.native's (attached).
    r = e2e.run([env.record, "--sampler", "ptrace", "-v", "--native", "-r", str(RATE), "-d", str(SECONDS),
                 "-o", rec, "--",
                 env.target, "--seconds", str(SECONDS + 1), "--quiet", "--ground-truth", truth,
                 "--switch-log", truth + ".switches"] + list(extra))
    if r.returncode != 0:
        e2e.fail("recorder: " + r.stderr)
    m = re.search(r"native frames: (\d+) stacks unwound; (\d+) unwinds failed, (\d+) did not match",
                  r.stderr)
    if not m:
        e2e.fail("no native report: " + r.stderr)
    unwound, failed, mismatched = (int(x) for x in m.groups())
    m = re.search(r"native frames: (\d+) samples written without them", r.stderr)
    behind = int(m.group(1)) if m else 0
    folded = e2e.run([env.convert, "--no-cache", "-f", "folded", "-o", "-", rec])
    if folded.returncode != 0:
        e2e.fail("convert: " + folded.stderr)
    stacks = []
    for line in folded.stdout.splitlines():
        frames, count = line.rsplit(" ", 1)
        stacks.append((frames.split(";"), int(count)))
    # The recording covers the first SECONDS of the double's SECONDS + 1:
    # the truth of just that window.
    return stacks, (truth, e2e.truth_shares(truth, rec)), (unwound, failed, mismatched, behind)


def check(label, gen, stacks, truths, native):
    truth_path, wanted = truths
    unwound, failed, mismatched, behind = native
    truth, _wall = e2e.read_ground_truth(truth_path)
    script_names = set(truth)
    total = sum(c for _, c in stacks)
    bad = (failed + mismatched) / max(unwound, 1) * 100
    # The budget is 1 %; the count is Poisson, so fail only beyond 3 sigmas
    # of it (about 1.5 % of 4,000 unwinds), not on noise around it.
    limit = 100.0 * (UNWIND_BUDGET * unwound + 3 * math.sqrt(UNWIND_BUDGET * unwound)) / max(unwound, 1)
    if bad > limit:
        e2e.fail("%s: %.2f %% of unwinds failed or did not match (budget 1 %%, limit %.2f %%)"
                 % (label, bad, limit))
    chain = CHAIN[gen]
    self_share, in_chain = {}, 0
    for frames, count in stacks:
        script = [i for i, f in enumerate(frames) if f in script_names]
        innermost = frames[script[-1]] if script else "empty_call_stack"
        self_share[innermost] = self_share.get(innermost, 0) + count
        if script:
            # A fallback stack (script frames and the native leaf, counted as
            # a mismatch) starts with a script frame.
            if script[0] > 0 and "main" not in frames[:script[0]]:
                e2e.fail("%s: no main before the script frames: %s" % (label, ";".join(frames)))
            if frames[script[-1]] == "md5_hash":
                after = frames[script[-1] + 1:]
                # A sample may land in any link of the chain (the BiF's own
                # code, hash_update's): the links present are a prefix of the
                # chain, in the chain's order.
                present = [c for c in chain if c in after]
                if present != chain[:len(present)] or [f for f in after if f in chain] != present:
                    e2e.fail("%s: the BiF's chain out of order: %s" % (label, ";".join(frames)))
        if chain[-1] in frames:
            if "md5_hash" not in frames[:frames.index(chain[-1])]:
                e2e.fail("%s: hash_block outside md5_hash: %s" % (label, ";".join(frames)))
            in_chain += count
    # A sample on the fiber whose native frames are missing (the unwinder
    # behind, or the unwind failed: script frames and the leaf) has no
    # marker and no script frame, so it is rightly empty_call_stack: up to
    # that many samples may move from the fiber's share to it.
    without = 100.0 * (behind + failed + mismatched) / total
    moved = without if FIBER in truth else 0.0
    errors, worst = [], 0.0
    for name in truth:
        want = wanted[name]
        got = 100.0 * self_share.get(name, 0) / total
        worst = max(worst, abs(got - want))
        tolerance = e2e.share_tolerance(want, total)
        low = want - tolerance - (moved if name == FIBER else 0)
        high = want + tolerance + (moved if name == "empty_call_stack" else 0)
        if not low <= got <= high:
            errors.append("%s: %s share %.1f %% vs truth %.1f %% (1-sigma %.2f; %d samples "
                          "without native frames)" % (label, name, got, want,
                                                      e2e.share_sigma(want, total),
                                                      behind + failed + mismatched))
    md5_want = wanted["md5_hash"]
    md5_got = 100.0 * in_chain / total
    # hash_block is a native frame: the samples without them may lack it.
    md5_tolerance = e2e.share_tolerance(md5_want, total)
    if not md5_want - md5_tolerance - without <= md5_got <= md5_want + md5_tolerance:
        errors.append("%s: %s share %.1f %% vs md5_hash truth %.1f %%"
                      % (label, chain[-1], md5_got, md5_want))
    if errors:
        return None, errors
    print("  %s: %d samples; %s %.1f %% (md5_hash truth %.1f %%); worst script share error %.2f "
          "points; %.2f %% unwinds failed or mismatched; %d written without native frames"
          % (label, total, chain[-1], md5_got, md5_want, worst, bad, behind))
    return {f for frames, _ in stacks for f in frames if f not in script_names}, []


def record_checked(env, gen, label, extra=()):
    """record() and check(); shares off beyond their tolerance (a host
    busy elsewhere can move a few points) get one more recording, and fail
    only when both are off."""
    for attempt in (1, 2):
        stacks, truth, native = record(env, gen, extra)
        names, errors = check(label, gen, stacks, truth, native)
        if not errors:
            return stacks, truth, names
        print("  %s: attempt %d: %s" % (label, attempt, "; ".join(errors)))
    e2e.fail(errors[0])


def elf_build_id(path):
    r = e2e.run(["readelf", "-n", path])
    m = re.search(r"Build ID: ([0-9a-f]+)", r.stdout)
    if not m:
        e2e.fail("readelf -n %s: no build-id" % path)
    return m.group(1)


def raw_profile(env, rec):
    """The Mappings ({id: (start, limit, file, build_id)}) and Locations
    ([(address, mapping id or None, name)]) of rec's pprof profile, as
    `go tool pprof -raw` lists them."""
    prof = env.path("native.pb.gz")
    r = e2e.run([env.convert, "--no-cache", "-o", prof, rec])
    if r.returncode != 0:
        e2e.fail("convert to pprof: " + r.stderr)
    raw = e2e.run(["go", "tool", "pprof", "-raw", prof])
    if raw.returncode != 0:
        e2e.fail("go tool pprof -raw: " + raw.stderr)
    section, mappings, locations = None, {}, []
    for line in raw.stdout.splitlines():
        if line in ("Locations", "Mappings"):
            section = line
            continue
        if section == "Mappings":
            m = re.match(r"\s*(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x[0-9a-f]+ (\S+) ?(\S*)", line)
            if m:
                mappings[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16), m.group(4),
                                             m.group(5) if m.group(5) != "[FN]" else "")
        elif section == "Locations":
            m = re.match(r"\s*\d+: 0x([0-9a-f]+)(?: M=(\d+))? (.*)$", line)
            if m:
                locations.append((int(m.group(1), 16), int(m.group(2)) if m.group(2) else None,
                                  m.group(3)))
            elif line.strip() and locations:
                # A function inlined there: a Line of the same location.
                locations.append(locations[-1][:2] + (line.strip(),))
    return mappings, locations


def check_mappings(label, env, gen):
    """pprof's view of the recording just made: mappings, addresses, names."""
    mappings, locations = raw_profile(env, env.path("native.zspy"))
    exe = os.path.realpath(env.target)
    want = elf_build_id(exe)
    mine = [i for i, m in mappings.items() if m[2] == exe]
    if not mine or any(mappings[i][3] != want for i in mine):
        e2e.fail("%s: no mapping of %s with build-id %s: %s" % (label, exe, want, mappings))
    in_exe = set()
    for address, mapping, name in locations:
        if mapping is None:
            continue
        start, limit = mappings[mapping][:2]
        if not address or not start <= address < limit:
            e2e.fail("%s: location %#x (%s) outside its mapping %d %#x-%#x"
                     % (label, address, name, mapping, start, limit))
        if mapping in mine:
            in_exe.add(name)
    for c in CHAIN[gen]:
        if not any(n.startswith(c.split("(")[0] + " ") or ("(%s)" % c) in n for n in in_exe):
            e2e.fail("%s: %s not among the locations in %s's mapping: %s"
                     % (label, c, exe, sorted(in_exe)))
    print("  %s: %d mappings, %s's build-id %s, %d native locations in their mappings"
          % (label, len(mappings), os.path.basename(exe), want,
             sum(1 for _, m, _ in locations if m is not None)))


def body_lines(source, signature):
    """The lines (1-based) of a function's body in source: from its
    signature's line to the first closing brace at the start of a line."""
    with open(source) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if signature in l)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("}"))
    return range(start + 1, end + 2)


def check_lines(label, env, stripped):
    """Source lines of native frames, as `go tool pprof -raw` lists them:
    with DWARF, hash_block at a line of its body in the double's source and
    some location holding an inlined function as a Line of its own; stripped,
    no file and no line."""
    raw = e2e.run(["go", "tool", "pprof", "-raw", env.path("native.pb.gz")]).stdout
    section, lines, multi = None, [], 0
    for line in raw.splitlines():
        if line in ("Locations", "Mappings"):
            section = line
            continue
        if section != "Locations":
            continue
        m = re.match(r"\s*(?:\d+: 0x[0-9a-f]+(?: M=\d+)? )?(.*) (\S+):(\d+) s=\d+", line)
        if m:
            # A Location's first Line is the innermost, at the PC itself; the
            # ones after it (inlined into) are at their call sites.
            innermost = bool(re.match(r"\s*\d+: 0x", line))
            lines.append((m.group(1), m.group(2), int(m.group(3)), innermost))
            multi += not innermost
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "zeek_double.cc")
    body = body_lines(source, "void hash_block(int64_t ns)")
    at = [(f, n, inner) for name, f, n, inner in lines if name == "zeek::detail::hash_block"]
    if stripped:
        if any(f != "[native]" or n for f, n, _ in at):
            e2e.fail("%s: hash_block has a source line without DWARF: %s" % (label, at))
        print("  %s: no source lines, as there is no DWARF" % label)
        return
    # Where hash_block runs its own code (the innermost Line): a line of its
    # body, always; and some of its lines there. As the caller of an inlined
    # function its line is the call site's, which GCC's DWARF does not
    # always get right when it inlines two deep (measured in the ASan build:
    # spin's inlined instance left out, now_ns's call site in spin given as
    # hash_block's line, and hash_block never innermost).
    spin = body_lines(source, "static void spin(int64_t ns)")

    def in_body(f, n):
        return f.endswith("zeek_double.cc") and n in body

    # The caller's line GCC gives instead in the ASan build (above): one of
    # spin's. There, all of hash_block's sampled lines may be that one.
    def in_body_or_spin(f, n):
        return in_body(f, n) or (f.endswith("zeek_double.cc") and n in spin)
    if (not any(in_body_or_spin(f, n) for f, n, _ in at) or
            any(not in_body(f, n) for f, n, inner in at if inner) or
            (not any(in_body(f, n) for f, n, _ in at) and "ASAN_OPTIONS" not in os.environ)):
        e2e.fail("%s: hash_block not at lines %d-%d of zeek_double.cc: %s"
                 % (label, body[0], body[-1], at))
    if not multi:
        e2e.fail("%s: no location holds an inlined function" % label)
    print("  %s: hash_block at zeek_double.cc:%s; %d inlined Lines"
          % (label, sorted(set(n for _, n, _ in at)), multi))


def pprof_traces(env, rec, extra):
    """Every sample's stack from `go tool pprof -traces` on the pprof output
    (converted through a cache shared by all calls): (frames outermost first,
    count)."""
    profile = env.path("native.pb.gz")
    r = e2e.run([env.convert, "-q", "--cache", env.path("cache.sqlite"), "-o", profile, rec]
                + list(extra))
    if r.returncode != 0:
        e2e.fail("convert %s: %s" % (" ".join(extra), r.stderr))
    traces = []
    for block in e2e.pprof(["-traces"], profile).split("-----------+")[1:]:
        # Labels (host:, pid:) first, then the count with the innermost
        # frame, then one frame a line.
        frames, count = [], 0
        for line in block.splitlines():
            m = re.match(r"\s+(\d+)\s+(.+)$", line)
            if not count and m:
                count = int(m.group(1))
                frames.append(m.group(2).strip())
            elif count and line.strip():
                frames.append(line.strip())
        if count:
            traces.append((frames[::-1], count))
    return traces


def between_scripts(frames, script_names):
    """The runs of non-script frames between two consecutive script frames."""
    at = [i for i, f in enumerate(frames) if f in script_names]
    return [frames[a + 1:b] for a, b in zip(at, at[1:])]


def check_plumbing(label, gen, env, truth_path):
    """Hidden by default, shown with --interpreter-frames, never mixed up by
    the cache."""
    script_names = set(e2e.read_ground_truth(truth_path)[0])
    rec = env.path("native.zspy")
    default = pprof_traces(env, rec, [])
    for frames, _ in default:
        if any(between_scripts(frames, script_names)):
            e2e.fail("%s: native frames between script frames by default: %s" % (label, ";".join(frames)))
    shown = pprof_traces(env, rec, ["--interpreter-frames"])
    want, nested = PLUMBING[gen], 0
    for frames, count in shown:
        gaps = between_scripts(frames, script_names)
        # A fallback stack (script frames and the native leaf) is not rooted
        # at main and has no plumbing.
        if not gaps or frames[0] in script_names:
            continue
        for gap in gaps:
            if [f for f in gap if f in want] != want:
                e2e.fail("%s: --interpreter-frames: not %s between two script frames: %s"
                         % (label, ", ".join(want), ";".join(frames)))
        nested += count
    if nested < 0.3 * sum(c for _, c in shown):
        e2e.fail("%s: --interpreter-frames: only %d samples with plumbing between script frames"
                 % (label, nested))
    if pprof_traces(env, rec, []) != default:
        e2e.fail("%s: the cache served another profile for the default setting" % label)
    print("  %s: plumbing hidden by default; with --interpreter-frames in every gap of %d "
          "samples" % (label, nested))


def raw_pcs(env, extra):
    """Each sample of the recording's pprof profile as `go tool pprof -raw`
    lists it: (count, PCs outermost first, each PC the functions running
    there outermost first, a native one by its full name)."""
    profile = env.path("pcs.pb.gz")
    r = e2e.run([env.convert, "-q", "--no-cache", "-o", profile, env.path("native.zspy")] + list(extra))
    if r.returncode != 0:
        e2e.fail("convert %s: %s" % (" ".join(extra), r.stderr))
    return e2e.pprof_raw_samples(e2e.pprof(["-raw"], profile))


def check_interpreter_leaf(label, env, truth_path):
    """The interpreter inside the innermost script frame, PC by PC (a PC
    is hidden whole or kept whole: one with a function of the double's
    inlined into SpinStmt::Exec stays): hidden by default, kept with
    --interpreter-frames."""
    truth = e2e.read_ground_truth(truth_path)[0]

    def under_innermost(pcs):
        at = [i for i, pc in enumerate(pcs) if len(pc) == 1 and pc[0] in truth]
        return (pcs[at[-1]][0], pcs[at[-1] + 1]) if at and at[-1] + 1 < len(pcs) else (None, None)
    for _, pcs in raw_pcs(env, []):
        script, pc = under_innermost(pcs)
        if pc and all(INTERPRETER.match(f) for f in pc):
            e2e.fail("%s: the interpreter under the innermost script frame %s by default: %s"
                     % (label, script, " / ".join(";".join(p) for p in pcs)))
    under = kept = 0
    for count, pcs in raw_pcs(env, ["--interpreter-frames"]):
        script, pc = under_innermost(pcs)
        if pc and truth[script][0] in ("function", "body"):
            under += count
            kept += count * bool(re.match(r"^(zeek::detail::)?StmtList::Exec\b", pc[0]))
    if kept < 0.9 * under:
        e2e.fail("%s: --interpreter-frames: StmtList::Exec under the innermost script function in "
                 "%d of %d samples" % (label, kept, under))
    print("  %s: the interpreter under the innermost script frame hidden by default; with "
          "--interpreter-frames StmtList::Exec there in %d of %d samples" % (label, kept, under))


def check_info(label, env, stripped):
    """--info counts the modules, PCs and PCs with source lines."""
    info = e2e.run([env.convert, "--info", env.path("native.zspy")]).stdout
    m = re.search(r"native frames: (\d+) modules, (\d+) distinct PCs, (\d+) of them with source", info)
    if not m or int(m.group(1)) < 2 or int(m.group(2)) < 10:
        e2e.fail("%s: --info without its native frames line: %s" % (label, info))
    # A stripped double may still have lines in system libraries whose
    # debug files are installed (/usr/lib/debug): only DWARF ones must.
    if not stripped and int(m.group(3)) == 0:
        e2e.fail("%s: --info: no PC with source lines in a DWARF build" % label)


def check_fiber(label, stacks):
    """Samples on the Spicy-like fiber start at the [spicy fiber] marker,
    then HILTI's fiber entry and the parser: never under main, never
    without the marker. (Their share against the double's truth is checked
    by check(), the marker being the truth's name for that time.)"""
    on_fiber = 0
    for frames, count in stacks:
        if "hilti_demo::parse_chunk(long)" not in frames:
            continue
        if frames[:2] != [FIBER, "__fiber_run_trampoline"] or "main" in frames:
            e2e.fail("%s: a fiber's stack not rooted at its marker: %s" % (label, ";".join(frames)))
        on_fiber += count
    if not on_fiber:
        e2e.fail("%s: no samples on the fiber" % label)
    return on_fiber


def module_code(executable, extra=()):
    """{module file name: [(start, end)] of its executable segments, as
    offsets from its lowest mapped page}, for the executable, the shared
    libraries it links (ldd) and the extra libraries."""
    paths = [executable] + list(extra)
    for line in e2e.run(["ldd", executable]).stdout.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            paths.append(m.group(1))
    code = {}
    for path in paths:
        loads = []
        for line in e2e.run(["readelf", "-lW", path]).stdout.splitlines():
            f = line.split()
            if f and f[0] == "LOAD":
                loads.append((int(f[2], 16), int(f[5], 16), "E" in "".join(f[6:-1])))
        if loads:
            base = min(v for v, _, _ in loads) & ~0xFFF
            ranges = [(v - base, v - base + size) for v, size, x in loads if x]
            # Named as mapped: the file itself, not the symlink ldd shows.
            code[os.path.basename(path)] = code[os.path.basename(os.path.realpath(path))] = ranges
    return code


def raw_samples(raw):
    """From `go tool pprof -raw`: the samples [(count, [location ids])], the
    locations {id: (address, mapping id or None, innermost function)} and
    the mappings {id: (start, file)}."""
    samples, lines = e2e.pprof_raw_sections(raw)
    locations, mappings = {}, {}
    for section, line in lines:
        if section == "Locations":
            m = re.match(r"\s*(\d+): 0x([0-9a-f]+)(?: M=(\d+))? (.*) \S*:\d+ s=\d+", line)
            if m:
                locations[int(m.group(1))] = (int(m.group(2), 16),
                                              int(m.group(3)) if m.group(3) else None, m.group(4))
        elif section == "Mappings":
            m = re.match(r"\s*(\d+): 0x([0-9a-f]+)/0x[0-9a-f]+/0x[0-9a-f]+ (.+?)(?: \(deleted\))? "
                         r"[0-9a-f]*\s*\[FN\]$", line)
            if m:
                mappings[int(m.group(1))] = (int(m.group(2), 16), m.group(3))
    return samples, locations, mappings


def outside_own_code(location, mappings, code):
    """Whether a location of code no symbol names ([module]) lies outside
    that module's code (or in a module not known): a PC named after the
    wrong module, by the pprof Mapping and address it keeps."""
    address, mapping, function = location
    m = re.match(r"\[([^] ]+)\]$", function)  # not [unknown], [spicy fiber], [libc.so.6 .plt]
    if not m or function in ("[unknown]", "[truncated]"):
        return False
    if mapping is None:
        return True
    start, path = mappings[mapping]
    if function == "[vdso]":  # the kernel's; its .dynsym names only its entry points
        return path != "[vdso]" or address - start >= VDSO_MAX_BYTES
    module = os.path.basename(path)
    return module != m.group(1) or not any(lo <= address - start < hi for lo, hi in code.get(module, []))


def check_plugin(build):
    """A plugin dlopen'ed 1 s after the recording started, its file deleted
    at once (a package upgrade while zeek runs), and linked stripped: its
    frames are named from the library as mapped, not from another module's
    extent; its local function, which no symbol names, is one function
    named after the module, [zeek-plugin-demo.so], never an address."""
    env = e2e.Env(build, "8.0", True)
    built = os.path.join(build, "tests", "target", "zeek-plugin-demo.so")
    plugin = env.path("zeek-plugin-demo.so")
    shutil.copy(built, plugin)
    t = subprocess.Popen([env.target, "--seconds", "4", "--quiet", "--plugin", plugin,
                          "--plugin-unlink"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    rec = env.path("plugin.zspy")
    # No --native: native frames are the default in blocking mode.
    r = e2e.run([env.record, "-r", str(RATE), "-d", "3", "-o", rec, "-p", str(t.pid)])
    t.wait()
    if r.returncode != 0:
        e2e.fail("plugin: recorder: exit %d, %s" % (r.returncode, r.stderr))
    if os.path.exists(plugin):
        e2e.fail("plugin: the double did not delete its plugin's file")
    folded = e2e.run([env.convert, "--no-cache", "-f", "folded", "-o", "-", rec]).stdout
    if "main;" not in folded:
        e2e.fail("plugin: no native frames by default: " + folded[:2000])
    total = in_plugin = unnamed = 0
    for line in folded.splitlines():
        frames, count = line.rsplit(" ", 1)
        frames, count = frames.split(";"), int(count)
        total += count
        by_offset = [f for f in frames if re.search(r"\+0x[0-9a-f]+\]", f)]
        if by_offset:
            e2e.fail("plugin: a frame named by its address, not its module: %s in %s" % (by_offset, line))
        if PLUGIN_FRAME in frames:
            in_plugin += count
            at = frames.index(PLUGIN_FRAME)
            if "main" not in frames[:at]:
                e2e.fail("plugin: its frame not under main: " + line)
            unnamed += count * (frames[at + 1:at + 2] == [PLUGIN_UNNAMED])
    # A PC of the plugin taken for a neighbour's (libdwfl's extent of
    # libgcc_s did) would be named after that neighbour, with an address
    # beyond its code. Code of a library that has no symbol there (libc
    # without libc6-dbg, as on a sensor) is named after it, at an address
    # inside its code: not the plugin's.
    prof = env.path("plugin.pb.gz")
    e2e.run([env.convert, "--no-cache", "-q", "-o", prof, rec])
    samples, locations, mappings = raw_samples(e2e.pprof(["-raw"], prof))
    code = module_code(env.target, [built])
    misplaced = sum(c for c, ids in samples if any(outside_own_code(locations[i], mappings, code) for i in ids))
    plugin_pcs = {a for a, m, f in locations.values() if f == PLUGIN_UNNAMED}
    # 200 us of each ~7 ms connection from the second second on: about 2 %,
    # most of it in the unnamed checksum loop.
    if in_plugin < 0.01 * total or unnamed < 0.5 * in_plugin or misplaced > 0.001 * total:
        e2e.fail("plugin: %d of %d samples in %s, %d of them in %s; %d named after another module"
                 % (in_plugin, total, PLUGIN_FRAME, unnamed, PLUGIN_UNNAMED, misplaced))
    print("  plugin loaded after the start, deleted and stripped: %d of %d samples in %s, %d of them "
          "in its local function named %s (%d distinct PCs in pprof); %d named after another module"
          % (in_plugin, total, PLUGIN_FRAME, unnamed, PLUGIN_UNNAMED, len(plugin_pcs), misplaced))


def main():
    build = sys.argv[1]
    if sys.argv[2:] == ["plugin"]:  # by hand: the plugin's check alone
        check_plugin(build)
        print("PASS native plugin")
        return
    for gen in ("3.0", "8.0", "8.2"):
        names = {}
        for stripped in (False, True):
            env = e2e.Env(build, gen, stripped)
            label = "Zeek %s double%s" % (gen, ", stripped" if stripped else "")
            stacks, truth, names[stripped] = record_checked(env, gen, label)
            check_mappings(label, env, gen)
            check_lines(label, env, stripped)
            check_plumbing(label, gen, env, truth[0])
            check_interpreter_leaf(label, env, truth[0])
            check_info(label, env, stripped)
        for c in CHAIN[gen]:
            if c not in names[True] or c not in names[False]:
                e2e.fail("Zeek %s: %s missing (DWARF %s, stripped %s)"
                         % (gen, c, c in names[False], c in names[True]))
    # A Spicy parser on a fiber (--spicy-fiber: 300 us of each connection).
    for gen in ("8.0", "8.2"):
        env = e2e.Env(build, gen, True)
        label = "Zeek %s double, stripped, Spicy fiber" % gen
        stacks, truth, _names = record_checked(env, gen, label, ["--spicy-fiber"])
        print("  %s: %d samples on the fiber, each rooted at %s" % (label, check_fiber(label, stacks), FIBER))
    check_plugin(build)
    print("PASS native")


if __name__ == "__main__":
    main()
