#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The BPF sampler (recorder/bpf) on live test doubles, through
tests/tools/bpf_sample_dump.c (one line per record, then the counters).

    bpf_e2e.py BUILD_DIR

For zeek-double-8.0 and -8.2 (997 Hz) and their -stripped copies (200 Hz,
the layout from the built-in table), sampling the workload for 3 s:
  - the weights of the records add up to about the rate times the time
    sampled (on-CPU ticks plus off-CPU time), and the ticks to the thread's
    CPU time as its perf event counted it;
  - most on-CPU records hold the double's script frames (depth 1-5, the
    innermost one of its functions), no read fails, none is malformed;
  - the double idles between connections: off-CPU records, each of weight
    >= 1, those neither preempted nor stopped (it waits outside scripts)
    with an empty call stack;
  - TracerPid stays 0 in /proc/PID/status all along (or names another
    process: a recorder of another test run with --all takes any zeek);
  - once the tool has exited, none of its programs is loaded or linked.
Then, on 8.0 and 8.2: a double hanging five frames deep (--hang) gives
md5_hash five deep in every tick; a chain of 300 calls (--deep 300) gives
the outermost 128 frames, marked cut; and the tool killed with SIGKILL
mid-run leaves nothing loaded either.
Skipped (77) when BPF cannot run here (the tool says why).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_e2e as e2e  # noqa: E402

SKIP = 77
SECONDS = 3
# The double's script functions (tests/target/README.md).
NAMES = {"connection_state_remove", "HTTP::parse_request", "Files::describe",
         "Site::is_local_addr", "Conn::set_state", "DNS::log_reply", "md5_hash"}
MAX_DEPTH = 5
CUT, PREEMPTED, STOPPED = 1, 4, 8  # rec_bpf_event.h's REC_BPF_F_*
DEEP, KEPT = 300, 128


def bpftool():
    return shutil.which("bpftool") or "/usr/sbin/bpftool"


def bpftool_json(*args):
    r = e2e.run([bpftool(), "--json"] + list(args))
    if r.returncode != 0:
        e2e.fail("bpftool %s: %s" % (" ".join(args), r.stderr.strip()))
    return json.loads(r.stdout or "[]")


def tool_programs(err):
    """The ids of the tool's programs, from the line it prints once it
    samples (other programs named zs_ may be loaded meanwhile: another
    recorder on this host)."""
    for line in err.splitlines():
        if ", programs" in line:
            return {int(x) for x in line.split(", programs")[1].split()}
    return set()


def left_behind(ids):
    """Of ids, the programs still loaded or linked, after a grace period
    (the kernel frees them after the last descriptor, not at once)."""
    deadline = time.time() + 5
    while True:
        loaded = {p["id"] for p in bpftool_json("prog", "show")} & ids
        linked = {ln.get("prog_id") for ln in bpftool_json("link", "show")} & ids
        if not loaded and not linked or time.time() > deadline:
            return loaded | linked
        time.sleep(0.2)


def tracer_pid(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def start_double(exe, args):
    t = subprocess.Popen([exe] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    want = "hanging" if "--hang" in args else " pid "
    line = ""
    while want not in line:  # its interpreter objects exist (--hang: it hangs)
        line = t.stderr.readline()
        if not line:
            e2e.fail("%s never started" % exe)
    return t


def stop(t):
    t.send_signal(signal.SIGTERM)
    try:
        t.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        t.kill()
        t.communicate()


def parse(out):
    records, counters, totals = [], {}, {}
    for line in out.splitlines():
        f = line.split()
        if f and f[0] in ("oncpu", "offcpu"):
            r = {"type": f[0]}
            for kv in f[1:]:
                k, v = kv.split("=", 1)
                r[k] = v if k == "top" else int(v, 0)
            records.append(r)
        elif f and f[0] == "counter":
            counters[f[1]] = int(f[2])
        elif len(f) == 2:
            totals[f[0]] = int(f[1])
    return records, counters, totals


class Sampling:
    """The tool on one double; TracerPid and the tool's programs watched
    while it runs."""

    def __init__(self, build, pid, seconds, hz):
        self.tool = os.path.join(build, "tests", "bpf-sample-dump")
        self.args = [self.tool, str(pid), str(seconds), str(hz)]
        self.pid = pid

    def run(self, kill_after=None, on_sampling=None):
        start = time.time()
        # Its lines go to files, read through handles of our own: a pipe
        # read only at its end would fill.
        tmp = tempfile.mkdtemp(prefix="zs-bpf-")
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        with open(out_path, "w") as out, open(err_path, "w") as err:
            p = subprocess.Popen(self.args, stdout=out, stderr=err, text=True)
        self.tracers, self.ids, sampling = set(), set(), None
        self.tool_pid, self.tracer_names = p.pid, {}
        while p.poll() is None:
            tracer = tracer_pid(self.pid)
            self.tracers.add(tracer)
            if tracer and tracer not in self.tracer_names:
                try:
                    self.tracer_names[tracer] = open("/proc/%d/cmdline" % tracer).read().split("\0")[0]
                except OSError:
                    self.tracer_names[tracer] = "?"
            if sampling is None:
                if tool_programs(open(err_path).read()):
                    sampling = time.time()
                    if on_sampling:
                        on_sampling()
            elif kill_after is not None and time.time() - sampling > kill_after:
                p.kill()
            time.sleep(0.1)
        p.wait()
        self.out, self.err = open(out_path).read(), open(err_path).read()
        shutil.rmtree(tmp)
        self.ids = tool_programs(self.err)
        self.rc = p.returncode
        self.elapsed = time.time() - start
        return self


def check_untraced(s, label):
    """TracerPid 0 all along; but a recorder of another test run with --all
    (on the same host) may attach to any zeek, the doubles too: only the
    tool itself must never be the tracer."""
    if s.tool_pid in s.tracers:
        e2e.fail("%s: bpf-sample-dump traced the double" % label)
    others = s.tracers - {0}
    if others:
        print("note: %s: traced by %s, not by the tool (another recorder on this host?)"
              % (label, ", ".join("%d %s" % (pid, s.tracer_names.get(pid, "?")) for pid in sorted(others))))


def check_left_nothing(s, label):
    if len(s.ids) != 2:
        e2e.fail("%s: the tool named %d programs (2 expected): %s" % (label, len(s.ids), s.err.strip()))
    left = left_behind(s.ids)
    if left:
        e2e.fail("%s: programs %s still loaded or linked after the tool exited" % (label, sorted(left)))


def check_workload(build, gen, stripped, hz):
    env = e2e.Env(build, gen, stripped)
    label = os.path.basename(env.target) + " at %d Hz" % hz
    t = start_double(env.target, ["--seconds", str(SECONDS + 10)])
    try:
        s = Sampling(build, t.pid, SECONDS, hz).run()
    finally:
        stop(t)
    if s.rc == SKIP:
        if "refused the BPF programs" in s.err or "cannot attach" in s.err:
            e2e.fail("the BPF sampler is broken, not missing: " + s.err.strip())
        print("SKIP: " + s.err.strip())
        sys.exit(SKIP)
    if s.rc != 0:
        e2e.fail("%s: bpf-sample-dump exit %d: %s" % (label, s.rc, s.err.strip()))
    records, counters, totals = parse(s.out)
    on = [r for r in records if r["type"] == "oncpu"]
    off = [r for r in records if r["type"] == "offcpu"]
    period_ns = 1e9 / hz

    # The rate: ticks of CPU time plus off-CPU time, in periods.
    weight = sum(r["w"] for r in records)
    if not 0.6 * hz * SECONDS <= weight <= 1.1 * hz * (SECONDS + 1):
        e2e.fail("%s: records weigh %d ticks in %.1f s of sampling (expected about %d)"
                 % (label, weight, SECONDS, hz * SECONDS))
    expected_ticks = totals.get("cpu_ns", 0) / period_ns
    if abs(counters["ticks"] - expected_ticks) > 0.05 * expected_ticks + 3:
        e2e.fail("%s: %d ticks for %.0f periods of CPU time" % (label, counters["ticks"], expected_ticks))
    if counters["ticks"] != len(on) or counters["ring_full"] or totals.get("malformed"):
        e2e.fail("%s: %d on-CPU records for %d ticks, %d lost to a full ring, %d malformed"
                 % (label, len(on), counters["ticks"], counters["ring_full"], totals.get("malformed", 0)))

    # The double's frames.
    failed = [r for r in records if r["status"]]
    if len(failed) > 0.01 * len(records):
        e2e.fail("%s: %d of %d records with a failed read (status %s)"
                 % (label, len(failed), len(records), sorted({hex(r["status"]) for r in failed})))
    in_scripts = [r for r in on if r["n"] > 0]
    if len(in_scripts) < 0.7 * len(on):
        e2e.fail("%s: only %d of %d ticks inside scripts" % (label, len(in_scripts), len(on)))
    deep = [r for r in records if r["depth"] > MAX_DEPTH or r["n"] != r["depth"]]
    if deep:
        e2e.fail("%s: %d records deeper than the double's %d frames: %s" % (label, len(deep), MAX_DEPTH, deep[0]))
    strangers = [r["top"] for r in records if r["n"] > 0 and r["top"] not in NAMES]
    if len(strangers) > 0.02 * len(in_scripts):
        e2e.fail("%s: innermost frames not the double's: %s" % (label, sorted(set(strangers))[:5]))
    seen = {r["top"] for r in in_scripts}
    if len(seen) < 5:
        e2e.fail("%s: only %s seen innermost" % (label, sorted(seen)))

    # Off-CPU: the double's idle time between connections.
    if len(off) < 5 or any(r["w"] < 1 for r in off):
        e2e.fail("%s: %d off-CPU records, weights %s" % (label, len(off), sorted({r["w"] for r in off})[:5]))
    # It waits only between connections (usleep), outside scripts; inside
    # them it is preempted at most (a busy host), or stopped by a tracer.
    waits = [r for r in off if not r["flags"] & (PREEMPTED | STOPPED)]
    idle = [r for r in waits if r["n"] == 0]
    if len(idle) < 5 or len(idle) < 0.8 * len(waits):
        e2e.fail("%s: only %d of %d off-CPU records neither preempted nor stopped have an empty call stack"
                 % (label, len(idle), len(waits)))

    check_untraced(s, label)
    check_left_nothing(s, label)
    print("ok: %s: %d on-CPU records (%d%% in scripts), %d off-CPU weighing %d, %d ticks for %.0f "
          "periods of CPU time" % (label, len(on), 100 * len(in_scripts) // max(len(on), 1), len(off),
                                   sum(r["w"] for r in off), counters["ticks"], expected_ticks))


def check_hang(build, gen):
    env = e2e.Env(build, gen)
    label = "%s --hang" % os.path.basename(env.target)
    t = start_double(env.target, ["--hang", "--seconds", "60"])
    try:
        s = Sampling(build, t.pid, 1, 997).run()
    finally:
        stop(t)
    if s.rc != 0:
        e2e.fail("%s: bpf-sample-dump exit %d: %s" % (label, s.rc, s.err.strip()))
    on = [r for r in parse(s.out)[0] if r["type"] == "oncpu"]
    wrong = [r for r in on if r["n"] != 5 or r["top"] != "md5_hash" or r["status"]]
    if len(on) < 100 or len(wrong) > 0.02 * len(on):
        e2e.fail("%s: %d of %d ticks not md5_hash five deep: %s" % (label, len(wrong), len(on), wrong[:2]))
    print("ok: %s: %d ticks, md5_hash five deep" % (label, len(on)))


def check_deep(build, gen):
    env = e2e.Env(build, gen)
    label = "%s --deep %d" % (os.path.basename(env.target), DEEP)
    t = start_double(env.target, ["--deep", str(DEEP), "--seconds", "3"])
    # Its chain runs for 1 s from its start: held until the tool samples.
    t.send_signal(signal.SIGSTOP)
    try:
        s = Sampling(build, t.pid, 2, 997).run(on_sampling=lambda: t.send_signal(signal.SIGCONT))
    finally:
        t.send_signal(signal.SIGCONT)
        stop(t)
    if s.rc != 0:
        e2e.fail("%s: bpf-sample-dump exit %d: %s" % (label, s.rc, s.err.strip()))
    records = parse(s.out)[0]
    cut = [r for r in records if r["depth"] > KEPT]
    wrong = [r for r in cut if r["n"] != KEPT or not r["flags"] & CUT or r["status"] or
             r["top"] != "Deep::f%d" % KEPT]
    if len(cut) < 50 or wrong:
        e2e.fail("%s: %d records deeper than %d, %d of them not its outermost %d frames, cut: %s"
                 % (label, len(cut), KEPT, len(wrong), KEPT, wrong[:2]))
    print("ok: %s: %d records keep the outermost %d frames, marked cut" % (label, len(cut), KEPT))


def check_kill(build, gen):
    env = e2e.Env(build, gen)
    label = "%s, the tool killed" % os.path.basename(env.target)
    t = start_double(env.target, ["--seconds", "40"])
    try:
        s = Sampling(build, t.pid, 30, 997).run(kill_after=1.0)
    finally:
        stop(t)
    if s.rc != -signal.SIGKILL:
        e2e.fail("%s: exit %d, not killed: %s" % (label, s.rc, s.err.strip()))
    check_left_nothing(s, label)
    print("ok: %s: nothing left loaded" % label)


def main():
    build = sys.argv[1]
    for gen in ("8.0", "8.2"):
        check_workload(build, gen, False, 997)
        check_workload(build, gen, True, 200)
    for gen in ("8.0", "8.2"):
        check_hang(build, gen)
        check_deep(build, gen)
        check_kill(build, gen)
    print("PASS")


if __name__ == "__main__":
    main()
