#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""End-to-end tests of zeek-spy-record + zeek-spy-convert against the test
double of Zeek (tests/target), checked with the real `go tool pprof`.

    record_e2e.py BUILD_DIR launch GEN [--stripped]   # record a launched target
    record_e2e.py BUILD_DIR attach GEN                # -p PID on a running target
    record_e2e.py BUILD_DIR sigint GEN                # SIGINT mid-run
    record_e2e.py BUILD_DIR end-report GEN            # the end report; its details in --info
    record_e2e.py BUILD_DIR bad-input                 # refusals leave targets untouched
    record_e2e.py BUILD_DIR zam-note|zam-lines GEN    # -O ZAM: the note, callers' lines

launch, attach and normal-priority record script frames only (--no-native):
their shares are checked against the double's own log of its script
functions. Native frames, the default, are checked by native_e2e.py.
"""
import atexit
import collections
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import recording  # a second reader of recordings (tests/e2e/recording.py)

TOLERANCE_POINTS = 3.0
RATE_HZ = 1000  # random tick times: binomial noise, so 4,000+ samples a check
# A share from n random ticks has a binomial 1-sigma of sqrt(p(1-p)/n): a
# tolerance of fewer than this many of them lets noise alone fail a run now
# and then (at 3 sigma, about one share in 370).
MIN_SIGMAS = 4.5


def share_sigma(percent, n):
    """The 1-sigma, in points, of a share of percent measured from n samples."""
    p = percent / 100.0
    return 100.0 * math.sqrt(p * (1 - p) / max(n, 1))


def split_work_sleep(stacks):
    """Native stacks (frame lists, innermost last, with counts) as two
    distributions that do not depend on how long a double sleeps against how
    long it works, which a loaded host or ptrace's own stops change between
    two recordings: the leaves' counts among the samples at work, and the
    sleeps' two callers' among the samples asleep."""
    work, sleep = {}, {}
    for frames, n in stacks:
        if "sleep" in frames[-1]:
            key = ";".join(frames[-3:-1])
            sleep[key] = sleep.get(key, 0) + n
        else:
            work[frames[-1]] = work.get(frames[-1], 0) + n
    return work, sleep


def share_tolerance(percent, n):
    """TOLERANCE_POINTS, or MIN_SIGMAS sigmas where n samples are too few for it."""
    return max(TOLERANCE_POINTS, MIN_SIGMAS * share_sigma(percent, n))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


KEEP_ENV = "ZS_TEST_KEEP"


def scratch_dir(prefix):
    """A directory of the test's own, removed when the test exits unless
    ZS_TEST_KEEP is set (to look at a failure's files)."""
    path = tempfile.mkdtemp(prefix=prefix)
    if not os.environ.get(KEEP_ENV):
        atexit.register(shutil.rmtree, path, True)
    return path


class Env:
    def __init__(self, build, gen, stripped=False):
        self.build = build
        self.record = os.path.join(build, "zeek-spy-record")
        self.convert = os.path.join(build, "zeek-spy-convert")
        name = "zeek-double-" + gen + ("-stripped" if stripped else "")
        self.target = os.path.join(build, "tests", "target", name)
        self.stripped = stripped
        self.tmp = scratch_dir("zs-e2e-")

    def path(self, name):
        return os.path.join(self.tmp, name)


def read_ground_truth(path):
    rows = {}
    for line in open(path):
        if line.startswith("#"):
            continue
        kind, name, file, first, secs = line.rstrip("\n").split("\t")
        rows[name] = (kind, file, int(first), float(secs))
    total = rows.pop("-")[3]
    return rows, total


def read_switch_log(path):
    """A double's --switch-log: slot names, switch times (CLOCK_MONOTONIC ns)
    and the slot innermost from each switch on."""
    names, times, slots = {}, [], []
    for line in open(path):
        if line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if f[0] == "slot":
            names[int(f[1])] = f[2]
        else:
            times.append(int(f[0]))
            slots.append(int(f[1]))
    return names, times, slots


def window_shares(log, t0, t1):
    """{name: percent of [t0, t1] the double spent with it innermost}: the
    truth of just the time a recording covers (a recorder attached late or
    stopped early does not describe the rest, and being sampled changes a
    busy host's mix: measured, idle 44.4 % while recorded vs 45.5 % over the
    whole run)."""
    names, times, slots = log
    spent = collections.Counter()
    for k in range(len(times) - 1):
        lo, hi = max(times[k], t0), min(times[k + 1], t1)
        if hi > lo:
            spent[names[slots[k]]] += hi - lo
    total = sum(spent.values()) or 1
    return {name: 100.0 * spent[name] / total for name in names.values()}


def pprof(args, profile):
    r = run(["go", "tool", "pprof"] + args + [profile])
    if r.returncode != 0:
        fail("go tool pprof %s failed: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def pprof_flat_shares(profile):
    shares, total = {}, None
    for line in pprof(["-top", "-nodecount=1000"], profile).splitlines():
        m = re.search(r"Total samples = (\d+)", line)
        if m:
            total = int(m.group(1))
        m = re.match(r"\s*(\d+)\s+([\d.]+)%\s+[\d.]+%\s+(\d+)\s+([\d.]+)%\s+(.+)$", line)
        if m:
            shares[m.group(5).strip()] = float(m.group(2))
    return shares, total


def pprof_locations(profile):
    """(name, file, line, start_line) of every location, from -raw."""
    locs = []
    in_locs = False
    for line in pprof(["-raw"], profile).splitlines():
        if line.startswith("Locations"):
            in_locs = True
            continue
        if line.startswith("Mappings"):
            break
        m = re.match(r"\s*\d+: 0x[0-9a-f]+ M=\d+ (.*) (\S*):(\d+) s=(\d+)$", line)
        if in_locs and m:
            locs.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return locs


def pprof_raw_sections(raw):
    """The lines of `go tool pprof -raw` output as (section, line), section
    one of "Samples:", "Locations", "Mappings", and the samples' lines read:
    (samples [(count, [location ids])], the other sections' lines)."""
    section, samples, lines = None, [], []
    for line in raw.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        m = re.match(r"\s*(\d+)\s+\d+: ([\d ]+)$", line) if section == "Samples:" else None
        if m:
            samples.append((int(m.group(1)), [int(i) for i in m.group(2).split()]))
        elif section in ("Locations", "Mappings"):
            lines.append((section, line))
    return samples, lines


def pprof_raw_samples(raw):
    """The samples of `go tool pprof -raw` output: [(count, [functions of
    each location, outermost location first, each location's functions
    outermost first])], a function by its full name where pprof shortened
    it ("name file:line s=start(full name)")."""
    samples, lines = pprof_raw_sections(raw)
    funcs, last = {}, None
    for section, line in lines:
        if section == "Locations":
            m = re.match(r"\s*(\d+): 0x[0-9a-f]+(?: M=\d+)? (.*)$", line)
            if m:
                last = int(m.group(1))
                funcs[last] = []
            n = re.match(r"(.*) (\S*):(\d+) s=\d+(?:\((.*)\))?$", m.group(2) if m else line.strip())
            if not n or last is None:
                fail("go tool pprof -raw: cannot read location line %r" % line)
            funcs[last].insert(0, n.group(4) or n.group(1))  # a location's Lines run innermost first
    return [(count, [funcs[i] for i in reversed(ids)]) for count, ids in samples]


def truth_shares(ground_truth, recording_path):
    """{name: percent} of the double's truth; with its --switch-log beside it
    (ground_truth + ".switches"), of just the time the recording covers."""
    truth, wall = read_ground_truth(ground_truth)
    wanted = {name: 100.0 * v[3] / wall for name, v in truth.items()}
    if os.path.exists(ground_truth + ".switches"):
        times = [t for samples in recording.samples_by_pid(recording_path).values() for t, _ in samples]
        wanted.update(window_shares(read_switch_log(ground_truth + ".switches"), min(times), max(times)))
    return wanted


class Shortfall(Exception):
    """Fewer samples than a test wants: the host was slow (a VM's CPU taken
    away for a while holds the recorder and the target alike), not a fault
    of the recorder's; main() runs such a test once more."""


def skipped_ticks(recorder_stderr):
    """The ticks the recorder says it skipped (0 when it says nothing; the
    total is among the end report's details: run it with -v)."""
    m = re.search(r"(\d+) sampling ticks? (?:was|were) skipped", recorder_stderr or "")
    return int(m.group(1)) if m else 0


def steal_jiffies():
    """The host's CPU time taken from this VM so far (/proc/stat 'steal')."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def check_sample_count(total, min_samples, recorder_stderr, retryable):
    """min_samples ticks must be accounted for: sampled, or skipped and
    counted as such by the recorder (a VM whose host takes its CPUs away
    for a while holds the recorder and the target alike; that is counted,
    not lost). Samples silently missing fail. Half of min_samples must be
    real samples, for the share checks to mean something."""
    total = total or 0
    skipped = skipped_ticks(recorder_stderr)
    if total + skipped >= min_samples and total >= min_samples // 2:
        if total < min_samples:
            print("  %d samples and %d ticks skipped, counted (a slow host): %d accounted for"
                  % (total, skipped, total + skipped))
        return
    msg = "only %d samples and %d skipped ticks (want >= %d accounted for, %d of them samples)" % (
        total, skipped, min_samples, min_samples // 2)
    if retryable:
        raise Shortfall(msg)
    fail(msg)


def check_profile(env, recording_path, ground_truth, min_samples, retryable=False, recorder_stderr=""):
    """The profile's shares against the double's truth, within
    TOLERANCE_POINTS. With the double's --switch-log beside the truth
    (ground_truth + ".switches"), the truth of just the recorded window.
    retryable: too few samples raises Shortfall instead of failing."""
    profile = env.path("profile.pb.gz")
    r = run([env.convert, "--no-cache", recording_path, "-o", profile])
    if r.returncode != 0:
        fail("convert: " + r.stderr)
    shares, total = pprof_flat_shares(profile)
    check_sample_count(total, min_samples, recorder_stderr, retryable)
    truth, _wall = read_ground_truth(ground_truth)
    wanted = truth_shares(ground_truth, recording_path)
    locs = pprof_locations(profile)
    worst = 0.0
    for name, (kind, file, first, secs) in truth.items():
        want, got = wanted[name], shares.get(name, 0.0)
        tolerance = share_tolerance(want, total)
        worst = max(worst, abs(got - want))
        print("  %-62s truth %5.1f%%  profile %5.1f%%  (1-sigma %.2f, tolerance %.1f)"
              % (name, want, got, share_sigma(want, total), tolerance))
        if abs(got - want) > tolerance:
            fail("%s: profile share %.1f%% vs ground truth %.1f%% (tolerance %.1f points)"
                 % (name, got, want, tolerance))
        if kind in ("function", "body"):
            ok = [l for l in locs if l[0] == name and l[1] == file and l[3] == first and l[2] >= first]
            if not ok:
                fail("%s: no location with file %s, start line %d" % (name, file, first))
    bodies = [n for n, v in truth.items() if v[0] == "body"]
    if len(bodies) < 2 or not all(b in shares for b in bodies):
        fail("handler bodies not told apart: %s" % bodies)
    # pprof's own filter works on the pseudo-frame, as with the proof of concept.
    ignored = pprof(["-top", "-ignore=empty_call_stack"], profile)
    if "empty_call_stack" in ignored.split("Showing nodes")[-1]:
        fail("-ignore=empty_call_stack did not remove the idle samples")
    print("  %d samples; largest share error %.2f points (tolerance %.0f points, or %.1f sigma)"
          % (total, worst, TOLERANCE_POINTS, MIN_SIGMAS))


def tracer_state(pid):
    tracer, state = None, None
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                tracer = int(line.split()[1])
            if line.startswith("State:"):
                state = line.split()[1]
    return tracer, state


def assert_untouched(pid, what):
    time.sleep(0.2)
    tracer, state = tracer_state(pid)
    if tracer != 0 or state in ("t", "T"):
        fail("%s: target left traced or stopped (TracerPid %s, state %s)" % (what, tracer, state))


def start_target(env, seconds, truth=None):
    cmd = [env.target, "--seconds", str(seconds), "--quiet"]
    if truth:
        cmd += ["--ground-truth", truth, "--switch-log", truth + ".switches"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    return p


def test_launch(env, layout_file=False):
    rec, truth = env.path("rec.zspy"), env.path("truth.tsv")
    extra = []
    if layout_file:
        # Made where debug info is, used where it is not: --print-layout of
        # the executable, then --layout with the stripped copy.
        layout = env.path("zeek.layout")
        p = run([env.record, "--print-layout", env.target.replace("-stripped", "")])
        if p.returncode != 0:
            fail("--print-layout: " + p.stderr)
        with open(layout, "w") as f:
            f.write(p.stdout)
        extra = ["--layout", layout]
    # -v: the end report's details (reads a sample, ticks skipped).
    r = run([env.record, "--sampler", "ptrace", "-v", "--no-native", "-r", str(RATE_HZ), "-o", rec] + extra + ["--", env.target, "--seconds", "7",
             "--quiet", "--ground-truth", truth])
    print(r.stderr.strip())
    if r.returncode != 0:
        fail("record exited %d" % r.returncode)
    if "exited with status 0" not in r.stderr:
        fail("recorder did not say that the target exited")
    # Each sample takes at least one read, also counted once the target is gone.
    reads = re.search(r"([\d.]+) reads/sample", r.stderr)
    if not reads or float(reads.group(1)) < 1:
        fail("reads per sample not reported, or below 1, for a target that exited")
    source = "layout file" if layout_file else "built-in table" if env.stripped else "DWARF"
    if "layout from " + source not in r.stderr:
        fail("expected the layout to come from the " + source)
    check_profile(env, rec, truth, 5000, retryable=True, recorder_stderr=r.stderr)


def test_attach(env):
    rec, truth = env.path("rec.zspy"), env.path("truth.tsv")
    target = start_target(env, 9, truth)
    r = run([env.record, "--sampler", "ptrace", "-v", "--no-native", "-p", str(target.pid), "-r", str(RATE_HZ), "-d", "6", "-o", rec])
    print(r.stderr.strip())
    if r.returncode != 0:
        fail("record -p exited %d" % r.returncode)
    assert_untouched(target.pid, "after -d")
    if target.wait(timeout=30) != 0:
        fail("target failed after being recorded")
    # The recording covers 6 of 9 s: the truth of that window (switch log).
    check_profile(env, rec, truth, 5000, retryable=True, recorder_stderr=r.stderr)


def test_normal_priority(env):
    """--no-realtime (and a recorder without CAP_SYS_NICE, or one demoted
    by its real-time CPU limit): at normal priority the recorder must not
    move to the busy target's CPU, where it would run only when the target
    sleeps and sample it idle (+35 points of idle before the fix)."""
    rec, truth = env.path("rec.zspy"), env.path("truth.tsv")
    target = start_target(env, 7, truth)
    r = run([env.record, "--sampler", "ptrace", "-v", "--no-realtime", "--no-native", "-p", str(target.pid), "-r", str(RATE_HZ), "-d", "5",
             "-o", rec])
    print(r.stderr.strip())
    if r.returncode != 0:
        fail("record --no-realtime exited %d" % r.returncode)
    if target.wait(timeout=30) != 0:
        fail("target failed after being recorded")
    check_profile(env, rec, truth, 4000, retryable=True, recorder_stderr=r.stderr)


def test_sigint(env):
    rec = env.path("rec.zspy")
    target = start_target(env, 10)
    rp = subprocess.Popen([env.record, "-p", str(target.pid), "-o", rec],
                          stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    rp.send_signal(signal.SIGINT)
    _, err = rp.communicate(timeout=20)
    print(err.strip())
    if rp.returncode != 0:
        fail("recorder exited %d on SIGINT" % rp.returncode)
    assert_untouched(target.pid, "after SIGINT")
    r = run([env.convert, "--no-cache", "-f", "summary", rec])
    if r.returncode != 0 or "warning" in r.stderr:
        fail("recording after SIGINT does not convert cleanly: " + r.stderr)
    m = re.search(r"(\d+) samples over", r.stdout)
    if not m or int(m.group(1)) < 200:
        fail("too few samples after 3 s at 100 Hz: " + r.stdout[:200])
    target.terminate()
    target.wait(timeout=30)


def test_end_report(env):
    """The end report fits on a screen: without -v, what was written, one
    line per process (samples, rate, what was skipped or lost) and one of
    cost (zeek held p50/p99, the recorder's CPU), and notes or warnings
    that ask for an action; the details (stop time and its parts, native
    frames' counts) only with -v, and always in the recording's --info."""
    rec = env.path("rec.zspy")
    target = start_target(env, 6)
    r = run([env.record, "--sampler", "ptrace", "-p", str(target.pid), "-r", "200", "-d", "2", "-o", rec])
    target.terminate()
    target.wait(timeout=30)
    print(r.stderr.strip())
    if r.returncode != 0:
        fail("recorder exited %d: %s" % (r.returncode, r.stderr))
    said = [ln.split(": ", 1)[1] for ln in r.stderr.splitlines() if ln.startswith("zeek-spy-record: ")]
    end = [ln for ln in said[next(i for i, ln in enumerate(said) if ln.startswith("sampling ")) + 1:]
           if not ln.startswith(("note: ", "warning: "))]
    # "nothing skipped or lost", or what was and why (a busy host may make
    # the recorder late).
    process = r"pid %d: \d+ samples \([\d.]+ Hz\); (nothing skipped or lost|\d+ \w+ \w+: .+)" % target.pid
    cost = r"cost: zeek held p50 (\d+) us, p99 (\d+) us a sample \([\d.]+ % of its time\); the recorder " \
           r"used [\d.]+ % of a core"
    if len(end) != 3 or not end[0].startswith("wrote ") or not re.match(process + "$", end[1]) or \
            not re.match(cost + "$", end[2]):
        fail("the end report without -v is not what was written, the process and the cost:\n" + r.stderr)
    info = run([env.convert, "--info", rec]).stdout
    report = info.split("  the recorder's end report:\n", 1)[-1]
    for want in (process, cost, r"stop time per sample: p50 \d+ us", r"of which \(a\) .*\(c\) held after the stop "
                 r"was seen: p50 (\d+) us, p99 (\d+) us", r"native frames: \d+ stacks unwound; \d+ unwinds failed"):
        if not re.search(r"^    " + want, report, re.M):
            fail("--info: the end report lacks %r:\n%s" % (want, info))
    held = re.search(r"^    " + cost, report, re.M).groups()[-2:]
    if held != re.search(r"\(c\) held after the stop was seen: p50 (\d+) us, p99 (\d+) us", report).groups():
        fail("--info: the cost line's held p50/p99 are not (c)'s:\n" + report)
    print("  end report: %d lines without -v; --info keeps all %d, details included"
          % (len(end), len(report.strip().splitlines())))


def test_zam_note(env):
    """A zeek run with -O ZAM: --info says so; recorded without native
    frames, the recorder notes that the functions ZAM inlines have no
    frames of their own (with them, the default, they have: no note);
    without -O ZAM, neither."""
    cases = ((["-O", "ZAM"], ["--nonblocking"], True, True), (["-O", "ZAM"], [], False, True),
             (["-O", "ZAM"], ["--no-native"], False, True),
             (["-O", "no-ZAM-opt"], ["--no-native"], False, False), ([], [], False, False))
    for i, (args, opts, want_note, want_info) in enumerate(cases):
        rec = env.path("zam-%d.zspy" % i)
        r = run([env.record, "-r", "100", "-o", rec] + opts + ["--", env.target] + args +
                ["--seconds", "1", "--quiet"])
        if r.returncode != 0:
            fail("record %s exited %d: %s" % (args, r.returncode, r.stderr))
        noted = re.search(r"note: pid \d+ compiles its scripts with ZAM \(-O ZAM\): the functions "
                          r"ZAM inlines have no frames of their own", r.stderr) is not None
        info = run([env.convert, "--info", rec])
        described = "scripts compiled with ZAM" in info.stdout
        if noted != want_note or described != want_info:
            fail("zeek %s %s: recorder note %s, --info %s, want %s, %s: %s %s"
                 % (" ".join(opts), " ".join(args), noted, described, want_note, want_info,
                    r.stderr, info.stdout))
    print("-O ZAM noted by --info, and by the recorder without native frames; -O no-ZAM-opt and no -O not")


def caller_locations(profile):
    """(function, line, first line) of every location that calls another in
    some sample, from `go tool pprof -raw` (script frames only: a location
    is a frame), but for those calling a function ZAM inlined into them (a
    callee whose first line is not known, 0): on Zeek 7.2+ the line of that
    call is not known either."""
    locs, stacks, section = {}, [], None
    for line in pprof(["-raw"], profile).splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        m = re.match(r"\s*\d+\s+\d+: ([\d ]+)$", line)
        if section == "Samples:" and m:
            stacks.append([int(i) for i in m.group(1).split()])  # innermost first
        m = re.match(r"\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*) (\S*):(\d+) s=(\d+)$", line)
        if section == "Locations" and m:
            locs[int(m.group(1))] = (m.group(2), int(m.group(4)), int(m.group(5)))
    callers = set()
    for ids in stacks:
        for callee, caller in zip(ids, ids[1:]):
            if caller in locs and not (callee in locs and locs[callee][2] == 0 and locs[callee][1]):
                callers.add(locs[caller])
    return callers


def test_zam_lines(env):
    """-O ZAM: a ZAM-compiled body never sets its Frame's next_stmt, but each
    call it makes is named in the callee's CallInfo (the double's -O ZAM
    does the same). Every frame that calls another must show the line of
    that call, a call site seen without ZAM. ZAM inlines the double's small
    functions: a frame calling one of those has no line for that call on
    Zeek 7.2+ and is not checked (e2e.zam checks the inlined frames).
    Recorded with --no-native: the recorder still copies the registers and
    stack for ZAM's instruction."""
    callers = {}
    for zam in (False, True):
        rec, profile = env.path("lines-%d.zspy" % zam), env.path("lines-%d.pb.gz" % zam)
        r = run([env.record, "--no-native", "-r", "1000", "-o", rec, "--", env.target] +
                (["-O", "ZAM"] if zam else []) + ["--seconds", "2", "--quiet"])
        c = run([env.convert, "--no-cache", "-q", "-o", profile, rec])
        if r.returncode != 0 or c.returncode != 0:
            fail("record/convert %s: %s %s" % ("-O ZAM" if zam else "", r.stderr, c.stderr))
        callers[zam] = caller_locations(profile)
    plain, zam = callers[False], callers[True]
    sites = {line for _, line, _ in plain}
    wrong = sorted(loc for loc in zam if loc[1] not in sites)
    if len(zam) < 3 or wrong:
        fail("-O ZAM: %d calling frames, these not at a call site seen without ZAM: %s (without ZAM: %s)"
             % (len(zam), wrong, sorted(plain)))
    print("  -O ZAM: %d calling frames, each at the line of its call (%s, ...)"
          % (len(zam), ", ".join("%s:%d" % (name.split()[0], line) for name, line, _ in sorted(zam)[:3])))


def expect_refusal(env, args, pattern, what, pid=None):
    r = run([env.record] + args)
    lines = [l for l in r.stderr.strip().splitlines() if l]
    if r.returncode == 0:
        fail("%s: exit 0" % what)
    if len(lines) != 1 or not re.search(pattern, lines[0]):
        fail("%s: want one line matching %r, got %r" % (what, pattern, r.stderr))
    if pid:
        assert_untouched(pid, what)
    print("  %-28s -> %s" % (what, lines[0]))


def test_bad_input(env):
    target = start_target(env, 30)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        out = env.path("x.zspy")
        expect_refusal(env, ["-p", "4000000", "-o", out], r"no process with pid 4000000", "no such pid")
        expect_refusal(env, ["-p", str(sleeper.pid), "-o", out], r"not a zeek", "not a zeek", sleeper.pid)
        expect_refusal(env, ["-p", str(target.pid), "-r", "0", "-o", out], r"--rate", "bad rate", target.pid)
        expect_refusal(env, ["-p", str(target.pid), "-d", "-1", "-o", out], r"--duration", "bad duration", target.pid)
        expect_refusal(env, ["-p", str(target.pid), "--native", "--nonblocking", "-o", out],
                       r"--native needs the blocking mode", "--native --nonblocking", target.pid)
        expect_refusal(env, ["-p", str(target.pid), "-o", "/nonexistent/dir/x.zspy"],
                       r"/nonexistent/dir/x.zspy", "unwritable output", target.pid)
        open(out, "w").close()
        expect_refusal(env, ["-p", str(target.pid), "-o", out], r"exists", "existing output", target.pid)
        bad = env.path("bad.layout")
        with open(bad, "w") as f:
            f.write("model = frame-stack\n")
        expect_refusal(env, ["-p", str(target.pid), "--layout", bad, "-o", env.path("y.zspy")],
                       r"missing key", "incomplete layout file", target.pid)
        if os.path.exists(env.path("y.zspy")):
            fail("a refused recording left a file behind")
        # A layout of the wrong model must be caught before sampling.
        wrong = run([env.record, "--print-layout", "-p", str(target.pid)]).stdout
        wrong = wrong.replace("callinfo_size = 24", "callinfo_size = 40")
        with open(bad, "w") as f:
            f.write(wrong)
        expect_refusal(env, ["-p", str(target.pid), "--layout", bad, "-o", env.path("z.zspy")],
                       r"layout", "wrong layout", target.pid)
        if target.poll() is not None:
            fail("the target died during the refusals")
    finally:
        sleeper.kill()
        target.terminate()
        target.wait(timeout=30)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    build, test = sys.argv[1], sys.argv[2]
    gen = sys.argv[3] if len(sys.argv) > 3 else "8.0"
    env = Env(build, gen, "--stripped" in sys.argv)
    if run(["go", "version"]).returncode != 0:
        fail("go (for go tool pprof) is not installed: run scripts/install-deps.sh")
    chosen = {"launch": test_launch, "attach": test_attach, "sigint": test_sigint,
              "normal-priority": test_normal_priority, "end-report": test_end_report,
              "bad-input": test_bad_input, "zam-note": test_zam_note,
              "zam-lines": test_zam_lines, "layout-file": lambda e: test_launch(e, True)}[test]
    for attempt in (1, 2):
        steal = steal_jiffies()
        try:
            chosen(env)
            break
        except Shortfall as short:
            print("  attempt %d: %s; the host took %.2f s of CPU from this VM meanwhile"
                  % (attempt, short, (steal_jiffies() - steal) / os.sysconf("SC_CLK_TCK")))
            if attempt == 2:
                fail(str(short))
            env = Env(build, gen, "--stripped" in sys.argv)
    print("PASS " + " ".join(sys.argv[2:]))


if __name__ == "__main__":
    main()
