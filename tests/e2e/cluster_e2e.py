#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""End-to-end tests of production use: several zeek processes in one
recording (one killed and restarted mid-run), rotation under a size cap,
parts switched by SIGUSR1, the systemd unit's commands,
time windows (offset, wall clock, Zeek network time) against the ground
truth, node labels, and --info on a cut-short recording.

    cluster_e2e.py BUILD_DIR all|rotation|switch|service|window|info|container
"""
import glob
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import record_e2e as e2e  # noqa: E402

fail = e2e.fail
run = e2e.run


def test_all(env):
    """--all: two workers and a manager; one worker is killed at 2 s and a
    new one starts: the recording notes the exit, picks the new one up."""
    rec = env.path("cluster.zspy")
    worker = os.path.join(env.build, "tests", "target", "zeek-double-8.0")
    old = os.path.join(env.build, "tests", "target", "zeek-double-3.0")
    procs = {
        "worker-1": subprocess.Popen([worker, "--seconds", "9", "--quiet"], stdout=subprocess.DEVNULL,
                                     env=dict(os.environ, CLUSTER_NODE="worker-1")),
        "manager": subprocess.Popen([old, "--seconds", "9", "--quiet"], stdout=subprocess.DEVNULL,
                                    env=dict(os.environ, CLUSTER_NODE="manager")),
    }
    time.sleep(0.3)
    recorder = subprocess.Popen([env.record, "--all", "-r", "200", "-d", "7", "-o", rec],
                                stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    killed = procs["worker-1"].pid
    procs["worker-1"].kill()
    procs["worker-1"].wait()
    procs["worker-1b"] = subprocess.Popen([worker, "--seconds", "7", "--quiet"], stdout=subprocess.DEVNULL,
                                          env=dict(os.environ, CLUSTER_NODE="worker-1b"))
    _, err = recorder.communicate(timeout=60)
    print(err.strip())
    if recorder.returncode != 0:
        fail("recorder --all exited %d" % recorder.returncode)
    for p in procs.values():
        if p.poll() is None:
            e2e.assert_untouched(p.pid, "after --all")
    # The BPF sampler (no tracer) sees the worker gone, not how it ended.
    if "pid %d was killed by signal 9" % killed not in err and "pid %d is gone" % killed not in err:
        fail("the killed worker was not noted")
    r = run([env.convert, "--no-cache", "-f", "summary", rec])
    print(r.stdout[r.stdout.find("By process"):])
    for node in ("worker-1", "manager", "worker-1b"):
        if not re.search(r"\d+ +[\d.]+%  \d+ +" + re.escape(node) + " ", r.stdout):
            fail("no samples of node %s in the per-process table" % node)
    for p in procs.values():
        p.kill()
    # --node keeps only that node, and pprof sees the label.
    prof = env.path("manager.pb.gz")
    r = run([env.convert, "--no-cache", "-q", "--node", "manager", rec, "-o", prof])
    tags = e2e.pprof(["-tags"], prof)
    if "manager" not in tags or "worker" in tags:
        fail("--node manager: wrong labels: " + tags)
    print("  --node manager: only the manager's samples, labelled")


def test_rotation(env):
    base = env.path("parts.zspy")
    target = e2e.start_target(env, 12)
    # A part is cut at a second's end once past 4K: at 1000 Hz with native
    # frames a second's part is 4-8K (the last one adds the end report), so
    # a 12K cap could keep only the last; 24K keeps several and still
    # deletes the first of the nine.
    r = run([env.record, "-p", str(target.pid), "-r", "1000", "-d", "9", "--rotate-size", "4K",
             "--max-size", "24K", "-o", base])
    print(r.stderr.strip())
    if r.returncode != 0:
        fail("recorder with rotation exited %d" % r.returncode)
    parts = sorted(glob.glob(env.path("parts-*.zspy")))
    total = sum(os.path.getsize(p) for p in parts)
    print("  %d parts kept, %d bytes in all (cap 24K)" % (len(parts), total))
    if len(parts) < 2:
        fail("expected several parts, got %s" % parts)
    if os.path.basename(parts[0]) == "parts-0001.zspy":
        fail("the cap never deleted the oldest part")
    if total > 24 * 1024 + 8 * 1024:
        fail("parts use %d bytes, over the 24K cap by more than the part being written" % total)
    for p in parts:
        c = run([env.convert, "--no-cache", "-q", "-f", "summary", p])
        if c.returncode != 0 or "samples over" not in c.stdout:
            fail("part %s does not convert on its own: %s" % (p, c.stderr))
    merged = run([env.convert, "--no-cache", "-q", "-f", "summary"] + parts)
    m = re.search(r"(\d+) samples over", merged.stdout)
    print("  the %d parts merged: %s samples" % (len(parts), m.group(1)))
    target.terminate()
    target.wait()


def samples_of(env, path):
    c = run([env.convert, "--no-cache", "-q", "-f", "summary", path])
    m = re.search(r"(\d+) samples over", c.stdout)
    if c.returncode != 0 or not m:
        fail("%s does not convert: %s" % (path, c.stderr.strip()))
    return int(m.group(1))


def test_switch(env):
    """SIGUSR1 closes the part being written at once (perf's
    --switch-output=signal): with rotation every part is a complete
    recording and none of the samples is lost; without, it is ignored with a
    note and the one recording goes on."""
    import signal
    target = e2e.start_target(env, 30)
    base = env.path("switch.zspy")
    rec = subprocess.Popen([env.record, "-p", str(target.pid), "-r", "200", "--rotate", "3600",
                            "-o", base], stderr=subprocess.PIPE, text=True)
    for _ in range(2):
        time.sleep(2.5)
        rec.send_signal(signal.SIGUSR1)
    time.sleep(2.5)
    rec.send_signal(signal.SIGTERM)
    err = rec.communicate(timeout=30)[1]
    if rec.returncode != 0:
        fail("recorder exited %d after SIGUSR1: %s" % (rec.returncode, err))
    parts = sorted(glob.glob(env.path("switch-*.zspy")))
    counts = [samples_of(env, p) for p in parts]
    m = re.search(r"wrote .*: (\d+) samples", err)
    print("  2 x SIGUSR1 with --rotate 3600: %d parts, %s samples (recorder: %s)"
          % (len(parts), counts, m.group(1) if m else "?"))
    if len(parts) != 3 or min(counts) < 200:
        fail("expected 3 parts of about 500 samples each, got %s" % counts)
    if err.count("SIGUSR1: closing") != 2:
        fail("the recorder did not say it switched twice: " + err)
    if m and sum(counts) != int(m.group(1)):
        fail("the parts hold %d samples, the recorder wrote %s" % (sum(counts), m.group(1)))
    single = env.path("single.zspy")
    rec = subprocess.Popen([env.record, "-p", str(target.pid), "-r", "200", "-o", single],
                           stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    rec.send_signal(signal.SIGUSR1)
    time.sleep(2)
    rec.send_signal(signal.SIGTERM)
    err = rec.communicate(timeout=30)[1]
    if rec.returncode != 0 or "ignored" not in err:
        fail("without rotation SIGUSR1 should be ignored with a note: exit %d, %s"
             % (rec.returncode, err))
    n = samples_of(env, single)
    print("  SIGUSR1 without rotation: ignored with a note, one recording of %d samples" % n)
    if n < 400:
        fail("the recording without rotation holds only %d samples" % n)
    target.terminate()
    target.wait()


def unit_command(unit, key):
    for line in open(unit):
        if line.startswith(key + "="):
            return line.split("=", 1)[1].split()
    fail("%s has no %s" % (unit, key))


def test_service(env):
    """The systemd unit as installed (build/zeek-spy-record.service): its
    ExecStart records every zeek (--all) into parts in its working
    directory at its rate; its ExecReload closes the part at once."""
    import shutil
    import signal
    unit = os.path.join(env.build, "zeek-spy-record.service")
    start, reload = unit_command(unit, "ExecStart"), unit_command(unit, "ExecReload")
    if os.path.basename(start[0]) != "zeek-spy-record" or "--all" not in start:
        fail("ExecStart is not zeek-spy-record --all: %s" % start)
    if reload[1:] != ["-USR1", "$MAINPID"]:
        fail("ExecReload does not send SIGUSR1: %s" % reload)
    state = env.path("state")
    os.mkdir(state)
    target = e2e.start_target(env, 20)
    rec = subprocess.Popen([env.record] + start[1:] + ["-d", "6"], cwd=state,
                           stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    subprocess.run([shutil.which(reload[0]) or reload[0], "-USR1", str(rec.pid)], check=True)
    err = rec.communicate(timeout=30)[1]
    target.terminate()
    target.wait()
    if rec.returncode != 0:
        fail("the unit's command exited %d: %s" % (rec.returncode, err))
    parts = sorted(glob.glob(os.path.join(state, "*.zspy")))
    counts = [samples_of(env, p) for p in parts]
    rate = float(start[start.index("-r") + 1])
    print("  %s, 6 s, reloaded at 3 s: %d parts of %s samples" % (" ".join(start[1:]), len(parts), counts))
    if len(parts) != 2 or min(counts) < 2 * rate:
        fail("expected 2 parts of about %d samples, got %s" % (3 * rate, counts))


def shares_in_window(env, rec, truth, args, what):
    prof = env.path("window.pb.gz")
    r = run([env.convert, "--no-cache", "-q", rec, "-o", prof] + args)
    if r.returncode != 0:
        fail("%s: convert failed: %s" % (what, r.stderr))
    shares, total = e2e.pprof_flat_shares(prof)
    truth_rows, wall = e2e.read_ground_truth(truth)
    worst = 0  # in tolerances: a window of few samples allows for their noise
    for name, (kind, file, first, secs) in truth_rows.items():
        want = 100.0 * secs / wall
        worst = max(worst, abs(shares.get(name, 0) - want) / e2e.share_tolerance(want, total))
    print("  %-34s %5d samples, largest share error %.2f of its tolerance (%.0f points or %.1f sigma)"
          % (what, total, worst, e2e.TOLERANCE_POINTS, e2e.MIN_SIGMAS))
    if worst > 1:
        fail("%s: a share off by %.2f times its tolerance" % (what, worst))
    return total


def test_window(env):
    """The workload is uniform, so the ground truth's shares hold for any
    window; a window must also hold about its length in samples."""
    rec, truth = env.path("w.zspy"), env.path("truth.tsv")
    r = run([env.record, "--no-native", "-r", str(e2e.RATE_HZ), "-o", rec, "--", env.target, "--seconds", "8", "--quiet",
             "--ground-truth", truth])
    if r.returncode != 0:
        fail("record failed: " + r.stderr)
    info = run([env.convert, "--info", rec]).stdout
    start = re.search(r"samples from (\S+) for", info).group(1).rstrip("Z")
    net = re.search(r"network time ([\d.]+) \.\. ([\d.]+)", info)
    n_off = shares_in_window(env, rec, truth, ["--from", "2", "--to", "6"], "offset 2..6 s")
    n_all = shares_in_window(env, rec, truth, [], "whole recording")
    if not 0.4 * n_all < n_off < 0.6 * n_all:
        fail("a 4 s window of 8 s holds %d of %d samples" % (n_off, n_all))
    wall0 = time.mktime(time.strptime(start, "%Y-%m-%dT%H:%M:%S")) - time.timezone
    shares_in_window(env, rec, truth, ["--from", "@%.3f" % (wall0 + 2), "--to", "@%.3f" % (wall0 + 6)],
                     "wall clock +2..+6 s")
    n0, n1 = float(net.group(1)), float(net.group(2))
    mid = (n0 + n1) / 2
    n_net = shares_in_window(env, rec, truth, ["--from", "net:%.6f" % (mid - 1.5), "--to", "net:%.6f" % (mid + 1.5)],
                             "network time, 3 s around the middle")
    # The double's clock advances by iteration, slower than wall time on a
    # loaded host: 3 s of it are their share of the recording's span.
    expect = min(1.0, 3.0 / (n1 - n0))
    if abs(n_net / n_all - expect) > 0.15:
        fail("the network-time window (3 s of %.1f s) kept %d of %d samples" % (n1 - n0, n_net, n_all))
    r = run([env.convert, "--no-cache", rec, "-o", env.path("empty.pb.gz"), "--from", "500"])
    if "no samples match" not in r.stderr:
        fail("a window outside the recording gave no clear message: " + r.stderr)
    print("  window outside the recording -> " + r.stderr.strip().splitlines()[-2])


def test_info(env):
    rec = env.path("i.zspy")
    target = e2e.start_target(env, 8)
    r = run([env.record, "-p", str(target.pid), "-r", "500", "-d", "3", "-o", rec])
    target.terminate()
    target.wait()
    data = open(rec, "rb").read()
    cut = env.path("cut.zspy")
    with open(cut, "wb") as f:
        f.write(data[: len(data) - 700])
    r = run([env.convert, "--info", cut])
    print(r.stdout)
    if r.returncode != 0 or "cut short" not in r.stdout or "no trailer" not in r.stdout:
        fail("--info does not describe the cut-short recording")
    if "Zeek 8.0.10" not in r.stdout or "samples" not in r.stdout:
        fail("--info lacks the process or the counts")
    r = run([env.convert, "--info", "/etc/hostname", cut])
    if r.returncode == 0 or "not a zeek-spy recording" not in r.stdout or "cut short" not in r.stdout:
        fail("--info on a bad file among good ones: " + r.stdout)


def test_container(env):
    """A zeek in its own pid and mount namespaces (as in Security Onion or
    Malcolm), recorded from the host: both pids are kept, the profile holds."""
    rec, truth = env.path("ct.zspy"), env.path("truth.tsv")
    ns = subprocess.Popen(["unshare", "--pid", "--fork", "--mount", "--mount-proc", env.target,
                           "--seconds", "9", "--quiet", "--ground-truth", truth,
                           "--switch-log", truth + ".switches"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    host_pid = None
    try:
        for line in open("/proc/%d/task/%d/children" % (ns.pid, ns.pid)).read().split():
            host_pid = int(line)
    except OSError:
        pass
    if host_pid is None:
        # No namespaces here (a container without the privilege, say).
        ns.kill()
        _, why = ns.communicate()
        skip("unshare cannot make pid and mount namespaces here: %s"
             % (why.strip().splitlines() or ["it exited"])[-1])
    status = open("/proc/%d/status" % host_pid).read()
    nspid = re.search(r"NSpid:\s+(\d+)\s+(\d+)", status)
    if not nspid or nspid.group(2) != "1":
        fail("the target is not in its own pid namespace: " + str(nspid))
    # Script frames, whose shares the double's log checks; then the default,
    # native frames, whose modules are read through /proc/PID/root.
    r = run([env.record, "--no-native", "-p", str(host_pid), "-r", str(e2e.RATE_HZ), "-d", "6", "-o", rec])
    if r.returncode != 0:
        fail("recording a namespaced zeek: " + r.stderr)
    native = env.path("ct-native.zspy")
    n = run([env.record, "-v", "-p", str(host_pid), "-r", "200", "-d", "1", "-o", native])
    unwound = re.search(r"native frames: (\d+) stacks unwound; (\d+) unwinds failed, (\d+) did not "
                        r"match the script frames", n.stderr)
    if n.returncode != 0 or not unwound or int(unwound.group(1)) < 100 or unwound.group(2) != "0":
        fail("native frames of a namespaced zeek: " + n.stderr)
    # A stack that did not match its script frames (caught between a call's
    # activation and its push: the budget is under 1 %) keeps its script
    # frames and the native leaf, and is counted; every other one runs from
    # the thread's entry. Each such stack comes from a sample counted so;
    # its folded count may be higher (ticks a late stop owed are credited
    # to it).
    total, mismatched = int(unwound.group(1)), int(unwound.group(3))
    folded = run([env.convert, "--no-cache", "-f", "folded", "-o", "-", native]).stdout.splitlines()
    loose = [ln for ln in folded if not ln.startswith("_start;")]
    if len(loose) > mismatched or mismatched > max(1, total // 100):
        fail("native stacks of a namespaced zeek not rooted at _start: %d (%d reported as not "
             "matching their script frames, of %d): %s" % (len(loose), mismatched, total, loose))
    print("  native frames (the default): %d stacks unwound, none failed, all rooted at _start but "
          "%d not matching their script frames" % (total, mismatched))
    ns.wait(timeout=30)
    info = run([env.convert, "--info", rec]).stdout
    if "process %d (pid 1 in its namespace)" % host_pid not in info:
        fail("host and namespace pids not kept: " + info)
    print("  host pid %d, pid 1 inside its namespace" % host_pid)
    e2e.check_profile(env, rec, truth, 5000, recorder_stderr=r.stderr)


SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def main():
    build, test = sys.argv[1], sys.argv[2]
    env = e2e.Env(build, "8.0")
    if run(["go", "version"]).returncode != 0:
        fail("go (for go tool pprof) is not installed: run scripts/install-deps.sh")
    {"all": test_all, "rotation": test_rotation, "switch": test_switch, "service": test_service,
     "window": test_window,
     "info": test_info, "container": test_container}[test](env)
    print("PASS " + test)


if __name__ == "__main__":
    main()
