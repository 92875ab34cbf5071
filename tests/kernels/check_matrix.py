#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The host half of the kernel matrix's checks: reads one guest's console
log (tests/kernels/guest-init.sh wrote it), unpacks the recordings and
ground truth it carried, and checks them with the host's converter.

    check_matrix.py BUILD_DIR CONSOLE_LOG OUT_DIR

Prints one line per check, "  PASS|FAIL NAME: what was measured", the
recorder's stderr under a failed check, and last "sampler: bpf|ptrace|none"
(what the default sampler chose for the stripped 8.2 double). Exit 0 when
every check passed, 1 otherwise.

Tolerances are the end-to-end tests' (tests/e2e/record_e2e.py): a share
within 3 points, or 4.5 sigma of the samplings' binomial noise where the
samples are too few for 3 points to be more than noise.
"""
import base64
import gzip
import hashlib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import record_e2e as e2e  # noqa: E402  (share_sigma, truth_shares, read_ground_truth)
from recording import varint  # noqa: E402

# Minimum samples, as a fraction of rate x seconds, far below what a guest
# gives (under TCG on 2 vCPUs: 0.8-0.9 of it): what matters are the shares,
# whose tolerance widens with fewer samples; these catch a sampler that
# mostly did not sample.
MIN_SAMPLES = 0.4
MIN_OFF_CPU = 0.04      # the double idles ~20 % of its time (usleep)
MIN_CPU_ONLY = 0.25     # --cpu-only: only its CPU time, ~80 %
MIN_KILLED = 0.25       # flushed every second: a SIGKILL loses at most ~1 s
MIN_NATIVE_WHOLE = 0.9  # share of samples unwound to _start
# The idle share (empty_call_stack) is compared on its own. Under TCG the
# perf timer of the BPF sampler's on-CPU tick fires late, more so on a
# loaded host: its ticks cover 0.64-0.92 of the CPU time (measured on the
# three kernels), while the off-CPU samples are weighed by wall time, so
# BPF's idle share comes out -6 to +10 points from ptrace's (measured over 15
# pairs). A sampler that lost its off-CPU time (the .samples check counts
# them too) or doubled it would be 25+ points off.
IDLE_POINTS = 20.0
# Under TCG a ptrace stop lands at the target's next exit from the kernel,
# so leaves that never enter it (a spin loop, a PLT stub) are seen less by
# ptrace: on 6.12, 2.9 and 2.4 % of BPF's samples at work against 0.2 and
# 0.1 % of ptrace's, the clock reads' share 7 points higher for it. How
# much less varies from boot to boot: three runs on 6.12 this session (the
# last two of one build) gave
# 1.8, 16.3 and 6.1 points: BPF's leaves alike each time (the spin and the
# PLT stub 255 and 278 of about 2,430 samples) and ptrace's not (2 and 618
# of about 3,720). A BPF unwinder that read the wrong registers or
# stack would move the leaves by tens of points, and the .native check
# counts its whole unwinds.
LEAF_POINTS = 20.0
IDLE = "empty_call_stack"


class Guest:
    """One console log: checks, files and logs the guest sent."""

    def __init__(self, log_path, out_dir):
        self.checks, self.logs, self.files, self.lines = [], {}, {}, []
        self.done = False
        self.rate, self.secs = 0, 0
        os.makedirs(out_dir, exist_ok=True)
        with open(log_path, errors="replace") as f:
            text = f.read().replace("\r", "")
        block, name, body = None, None, []
        for line in text.splitlines():
            m = re.search(r"ZS-(FILE|LOG)-BEGIN (\S+)", line)
            if m:
                block, name, body = m.group(1), m.group(2), []
                continue
            m = re.search(r"ZS-(FILE|LOG)-END (\S+)(?: (\S+))?", line)
            if m and block:
                if block == "FILE":
                    self._unpack(name, body, m.group(3), out_dir)
                else:
                    self.logs[name] = "\n".join(body)
                    with open(os.path.join(out_dir, name), "w") as f:
                        f.write(self.logs[name] + "\n")
                block = None
                continue
            if block == "FILE":
                body.append(line.strip())
            elif block == "LOG":
                body.append(line[2:] if line.startswith("| ") else line)
            else:
                self.lines.append(line)
                m = re.search(r"ZS-GUEST kernel \S+ rate (\d+) secs ([\d.]+)", line)
                if m:
                    self.rate, self.secs = int(m.group(1)), float(m.group(2))
                m = re.search(r"ZS-CHECK (\S+) (PASS|FAIL) ?(.*)", line)
                if m:
                    self.checks.append(m.groups())
                if "ZS-GUEST-DONE" in line:
                    self.done = True

    def _unpack(self, name, body, sha, out_dir):
        data = base64.b64decode("".join(body))
        if hashlib.sha256(data).hexdigest() != sha:
            # A kernel message written into the middle of the stream, say.
            self.files[name] = None
            return
        path = os.path.join(out_dir, name)
        with open(path, "wb") as f:
            f.write(gzip.decompress(data))
        self.files[name] = path


class Checker:
    def __init__(self, build, guest):
        self.convert = os.path.join(build, "zeek-spy-convert")
        self.guest = guest
        self.failed = 0

    def result(self, name, ok, what, logs=()):
        print("  %s %s: %s" % ("PASS" if ok else "FAIL", name, what))
        if not ok:
            self.failed += 1
            for log in logs:
                if log in self.guest.logs:
                    print("    the recorder's stderr (%s):" % log)
                    for line in self.guest.logs[log].splitlines():
                        print("    | " + line)
        return ok

    def file(self, name):
        path = self.guest.files.get(name)
        if not path:
            raise CheckError("%s %s" % (name, "corrupt on the console" if name in self.guest.files
                                        else "not sent by the guest"))
        return path

    def run_convert(self, args, rec):
        r = subprocess.run([self.convert, "--no-cache", "-q"] + args + ["-o", "-", rec],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise CheckError("zeek-spy-convert %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def folded(self, rec):
        """[(frames outermost first, count)] of the recording."""
        out = []
        for line in self.run_convert(["-f", "folded"], rec).splitlines():
            stack, _, count = line.rpartition(" ")
            if stack:
                out.append((stack.split(";"), int(count)))
        return out

    def summary(self, rec):
        s = self.run_convert(["-f", "summary"], rec)
        m = re.search(r"(\d+) samples over ([\d.]+) s", s)
        if not m:
            raise CheckError("no sample count in the summary of %s" % rec)
        off = re.search(r"(\d+) of them \([\d.]+%\) off-CPU", s)
        return s, int(m.group(1)), int(off.group(1)) if off else 0

    def script_shares(self, rec, names):
        """{name: percent} of the samples whose innermost script frame is
        name (the double's truth is of script functions' self time), those
        without a script frame as empty_call_stack; and the total."""
        counts, total = {}, 0
        for frames, n in self.folded(rec):
            inner = next((f for f in reversed(frames) if f in names), IDLE)
            counts[inner] = counts.get(inner, 0) + n
            total += n
        return {k: 100.0 * v / max(total, 1) for k, v in counts.items()}, total

    def complete(self, rec):
        """rec, or where its recorder was SIGKILLed (its last zstd frame
        cut), a copy of its whole records: the tests' second reader
        (tests/e2e/recording.py) wants a whole stream to find the samples'
        times, the converter does not."""
        if subprocess.run(["zstd", "-tq", rec], capture_output=True).returncode == 0:
            return rec
        raw = subprocess.run(["zstd", "-dcq", rec], capture_output=True).stdout
        if not raw.startswith(b"ZSPYREC\n"):
            raise CheckError("%s: not a recording" % rec)
        # The header's version, then records: kind, length (varint), payload.
        _, i = varint(raw, 8)
        end = i
        while i < len(raw):
            n, j = varint(raw, i + 1)
            if j + n > len(raw):
                break
            i = end = j + n
        fixed = rec + ".whole"
        subprocess.run(["zstd", "-qf", "-o", fixed], input=raw[:end], check=True)
        return fixed

    def against_truth(self, rec, truth):
        """The recording's shares against the double's truth of the seconds
        it covers: {function: (error in points, its share in the truth)} of
        the script functions as shares of the time in a script function
        (idle left out), the idle share's error, the samples in script
        functions, and the largest error (points, function)."""
        wanted = e2e.truth_shares(truth, self.complete(rec))
        shares, total = self.script_shares(rec, set(wanted))
        idle_err = shares.get(IDLE, 0.0) - wanted[IDLE]
        busy_want, busy_got = 100.0 - wanted[IDLE], 100.0 - shares.get(IDLE, 0.0)
        busy_n = round(total * busy_got / 100.0)
        errors, worst = {}, (abs(idle_err), IDLE)
        for name, want in wanted.items():
            if name == IDLE:
                continue
            w = 100.0 * want / max(busy_want, 1e-9)
            errors[name] = (100.0 * shares.get(name, 0.0) / max(busy_got, 1e-9) - w, w)
            worst = max(worst, (abs(errors[name][0]), name))
        return errors, idle_err, busy_n, worst


class CheckError(Exception):
    pass




def tick_coverage(c, log):
    """(on-CPU ticks + off-CPU ticks) / (rate x seconds) from the BPF
    recorder's -v report; None where it has none (a SIGKILLed recorder)."""
    text = c.guest.logs.get(log, "")
    on = re.search(r"bpf: (\d+) on-CPU ticks", text)
    off = re.search(r"standing for (\d+) ticks", text)
    secs = re.search(r"samples in ([\d.]+) s", text)
    if not on or not secs or not c.guest.rate:
        return None
    return (int(on.group(1)) + (int(off.group(1)) if off else 0)) / (c.guest.rate * float(secs.group(1)))


def independent(c, log, n):
    """Of n samples of a ptrace recording, those not credited: a stop that
    came late stands for the ticks it missed with copies of one stack
    (the recorder's -v report counts them), which are one observation,
    not several, for the samplings' noise."""
    m = re.search(r"(\d+) of (\d+) samples \([\d.]+ %\) stand for ticks", c.guest.logs.get(log, ""))
    return n if not m else round(n * (1 - int(m.group(1)) / max(int(m.group(2)), 1)))


# Under TCG a ptrace stop lands where the target next leaves the kernel
# (its stops wait milliseconds), which for the double's clock reads is at
# the syscall's return into libc's clock_gettime or into the vdso's: which
# of the two is the leaf differs between the samplers, their sum does not.
LEAF_ALIASES = {"__vdso_clock_gettime": "clock_gettime"}


def leaf_shares(c, rec, script_names):
    """Of the samples unwound to _start that are in a script function (the
    idle ones are compared as empty_call_stack by the script shares): the
    leaves' shares (%) among those at work and the sleeps' callers' among
    those asleep (e2e.split_work_sleep: ptrace's stops stretch the work),
    with how many each holds; and the share of all samples unwound to
    _start (as tests/e2e/sampler_bpf_e2e.py's native test)."""
    stacks, whole, total = [], 0, 0
    for frames, n in c.folded(rec):
        total += n
        if frames[0] != "_start":
            continue
        whole += n
        if not any(f in script_names for f in frames):
            continue
        # Aliases at one address (clock_gettime@GLIBC_2.2.5 and
        # clock_gettime@@GLIBC_2.17) are one function.
        names = [f.split("@")[0] for f in frames]
        names[-1] = LEAF_ALIASES.get(names[-1], names[-1])
        stacks.append((names, n))
    dists = []
    for by in e2e.split_work_sleep(stacks):
        n = sum(by.values())
        dists.append(({k: 100.0 * v / max(n, 1) for k, v in by.items()}, n))
    return dists, whole / max(total, 1)


def agree(a, b, na, nb):
    """Within 3 points, or 4.5 sigma of the two samplings' noise."""
    sigma = (e2e.share_sigma(a, na) ** 2 + e2e.share_sigma(a, nb) ** 2) ** 0.5
    tol = max(e2e.TOLERANCE_POINTS, e2e.MIN_SIGMAS * sigma)
    return abs(b) <= tol, tol


def check_samples(c, name):
    """A double's BPF recording has enough samples, off-CPU ones among them."""
    want = c.guest.rate * c.guest.secs
    _, samples, off = c.summary(c.file(name + "-bpf.zspy"))
    c.result(name + ".samples", samples >= MIN_SAMPLES * want and off >= MIN_OFF_CPU * want,
             "%d samples (want >= %d), %d off-CPU (want >= %d)"
             % (samples, MIN_SAMPLES * want, off, MIN_OFF_CPU * want), [name + "-bpf.err"])


def check_pair(c, name, native):
    """One double recorded by the default sampler, then by ptrace (the
    reference): the BPF recording has enough samples, off-CPU ones among
    them (and with native frames, stacks unwound to _start); the script
    functions' shares of the two agree, each taken against the double's
    truth of its own seconds (the two recordings cover different seconds);
    with native frames, so do the leaves."""
    bpf, ptrace = c.file(name + "-bpf.zspy"), c.file(name + "-ptrace.zspy")
    truth = c.file(name + ".truth")
    c.file(name + ".truth.switches")
    check_samples(c, name)
    if native:
        names = set(e2e.read_ground_truth(truth)[0])
        check_leaves(c, name, bpf, ptrace, names)
    errors, idle, busy = {}, {}, {}
    for sampler, rec in (("bpf", bpf), ("ptrace", ptrace)):
        errors[sampler], idle[sampler], busy[sampler], w = c.against_truth(rec, truth)
        # Not a check: under TCG both samplers' errors against the truth are
        # larger than on a host (the double's own bookkeeping is ~20x
        # slower there); the comparison below takes that out.
        print("  info %s-%s: %d samples in script functions; largest error against the truth of "
              "its seconds %.2f points (%s)" % (name, sampler, busy[sampler], w[0], w[1]))
    print("  info %s-ptrace: %d of them independent (not credited)" % (name, independent(c, name + "-ptrace.err", busy["ptrace"])))
    busy["ptrace"] = independent(c, name + "-ptrace.err", busy["ptrace"])
    covered = tick_coverage(c, name + "-bpf.err")
    if covered:
        print("  info %s-bpf: its ticks cover %.2f of the time recorded (on-CPU ticks and off-CPU "
              "weights at %d Hz)" % (name, covered, c.guest.rate))
    # Idle apart: it differs between the samplers under TCG (IDLE_POINTS).
    diff = idle["bpf"] - idle["ptrace"]
    c.result(name + ".idle", abs(diff) <= IDLE_POINTS, "idle share bpf against ptrace, each against "
             "its own seconds' truth: %+.2f points (tolerance %.0f)" % (diff, IDLE_POINTS))
    worst, ok = (0.0, "", 0.0), True
    for k, (err, want_share) in errors["bpf"].items():
        good, tol = agree(want_share, err - errors["ptrace"][k][0], busy["bpf"], busy["ptrace"])
        ok = ok and good
        worst = max(worst, (abs(err - errors["ptrace"][k][0]), k, tol))
    c.result(name + ".compare", ok, "script functions' shares of the busy time, bpf against ptrace, "
             "each against its own seconds' truth: largest difference %.2f points (%s, tolerance %.1f)"
             % worst)


def check_leaves(c, name, bpf, ptrace, script_names):
    dists = {}
    for sampler, rec in (("bpf", bpf), ("ptrace", ptrace)):
        dists[sampler], frac = leaf_shares(c, rec, script_names)
        if sampler == "ptrace":
            dists[sampler] = [(by, independent(c, name + "-ptrace.err", n)) for by, n in dists[sampler]]
        if sampler == "bpf":
            c.result(name + ".native", frac >= MIN_NATIVE_WHOLE,
                     "%.1f %% of the samples unwound to _start (want >= %.0f %%)"
                     % (100 * frac, 100 * MIN_NATIVE_WHOLE), [name + "-bpf.err"])
    worst, ok = (0.0, "", 0.0), True
    for kind, (sb, nb), (sp, np_) in zip(("work", "sleep"), dists["bpf"], dists["ptrace"]):
        for k in set(sb) | set(sp):
            a, b = sb.get(k, 0.0), sp.get(k, 0.0)
            good, tol = agree(max(a, b), a - b, nb, np_)
            tol = max(tol, LEAF_POINTS)
            good = abs(a - b) <= tol
            ok = ok and good
            worst = max(worst, (abs(a - b), "%s, %s" % (k, kind), tol))
    c.result(name + ".leaves", ok, "native leaves bpf against ptrace, in script functions (at work; "
             "sleeps by caller): largest difference %.2f points (%s, tolerance %.1f)" % worst)


def check_cpu_only(c, name):
    rec = c.file(name + ".zspy")
    want = c.guest.rate * c.guest.secs
    text, samples, off = c.summary(rec)
    c.result(name, "recorded with --cpu-only" in text and off == 0 and samples >= MIN_CPU_ONLY * want,
             "%d samples (want >= %d), %d off-CPU (want 0), the summary %s --cpu-only"
             % (samples, MIN_CPU_ONLY * want, off, "says" if "recorded with --cpu-only" in text
                else "does not say"), [name + ".err"])


def check_kill(c, name):
    """The 8.0 double's BPF recording, its recorder SIGKILLed: it converts."""
    rec = c.file("attach-8.0-bpf.zspy")
    want = c.guest.rate * c.guest.secs
    _, samples, _ = c.summary(rec)
    stacks = c.run_convert(["-f", "folded"], rec)
    c.result(name + ".recording", samples >= MIN_KILLED * want and "HTTP::parse_request" in stacks,
             "the SIGKILLed recorder's recording converts: %d samples (want >= %d)"
             % (samples, MIN_KILLED * want), ["attach-8.0-bpf.err"])


def main():
    build, log, out = sys.argv[1:4]
    g = Guest(log, out)
    c = Checker(build, g)
    print("check_matrix: %s" % log)
    # The guest's own checks (sampler chosen, tracer watch, programs left).
    for name, verdict, what in g.checks:
        c.result("guest:" + name, verdict == "PASS", what, [name + ".err"])
    for name in sorted(n for n, p in g.files.items() if p is None):
        c.result("transfer:" + name, False, "the checksum of what came over the console does not match")
    if not g.done:
        c.result("guest", False, "did not finish its checks (no ZS-GUEST-DONE); its last lines:\n    "
                 + "\n    ".join(g.lines[-15:]))
    sampler = "none"
    if "native-8.2-bpf.err" in g.logs:
        sampler = "bpf" if "with the BPF sampler" in g.logs["native-8.2-bpf.err"] else "ptrace"
    if "bpf-refused.err" in g.logs:
        print("  the BPF sampler was refused; --sampler bpf -v said:")
        for line in g.logs["bpf-refused.err"].splitlines():
            print("    | " + line)

    for name, fn in (("native-8.2", lambda c, n: check_pair(c, n, True)),
                     ("attach-3.0", lambda c, n: check_pair(c, n, False)),
                     ("attach-8.0", check_samples),
                     ("cpu-only", check_cpu_only), ("kill", check_kill)):
        try:
            fn(c, name)
        except CheckError as e:
            c.result(name, False, str(e), [name + ".err", name + "-bpf.err", name + "-ptrace.err",
                                           "attach-8.0-bpf.err" if name == "kill" else ""])
    print("sampler: " + sampler)
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
