#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""-O ZAM: the instruction a ZAM-compiled body runs, and the functions ZAM
inlined into it as frames of their own.

    zam_e2e.py BUILD_DIR GEN [SAMPLER]    (auto, the default: BPF where it runs; or ptrace)

The double's -O ZAM (GEN 8.0 or 8.2) compiles its event bodies and
Conn::set_state into ZBodies (a ZBody::Exec loop over an instruction array,
built -O2 without frame pointers), inlining the other script functions into
them: those push no CallInfo, and only the instruction running names them.
It is launched under zeek-spy-record (native frames, the default) at 1000 Hz
for 4 s, with DWARF and stripped of every symbol table but .dynsym (strip
--strip-all). Checked:
  - the recorder found the instruction of at least 99 % of the samples in
    ZAM code (its end report);
  - every script function's share as the innermost script frame (inlined
    ones included) is within tolerance of the double's truth;
  - in the pprof profile, read by the real `go tool pprof -raw`, each
    innermost script frame is at a line its function was seen at in a
    recording of the same double without ZAM, and most of those lines are
    seen (lines right, and not one line for everything);
  - the stripped build gives the same script frames as the DWARF one, and
    so does a recording with --no-native (the registers and stack are
    copied for ZAM all the same);
  - the double coalesces connection_state_remove's two handlers into one
    body run by a CoalescedScriptFunc, as Zeek does: each handler's
    statements and the functions inlined into it are under that handler's
    own frame ("connection_state_remove FILE:LINE", as without ZAM), the
    stripped run with ZEEK_NO_EH_COALESCENCE set (each handler its own
    body) alike;
  - a function inlined into an inlined one has the whole path above it
    (Site::is_local_addr under Files::describe under HTTP::parse_request in
    the http handler): with the double's --zam-chains from the locations'
    chains, as Zeek 7.0 has them, and without, as 7.2-8.2 have them (each
    location names only the function ZAM last entered), from the recorder's
    walk through the body and the functions' extents, found by name in the
    double's global scope;
  - in pprof (the real `go tool pprof -raw`) the inlined functions are
    Lines of one Location, innermost first, as native inlines are;
  - `--top` (on a pipe) gives the inlined HTTP::parse_request (25 % of the
    double's time) a row of its own.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_e2e as e2e  # noqa: E402

SAMPLER = "auto"  # the default (BPF where it runs), or as the command line says
RATE, SECONDS = 1000, 4
FOUND_BUDGET = 0.99  # of the samples in ZAM code, with their instruction


def record(env, tag, zam, opts=(), target_opts=(), target_env=None):
    rec, truth = env.path("%s.zspy" % tag), env.path("%s.truth.tsv" % tag)
    for old in (rec, env.path("%s.pb.gz" % tag)):
        if os.path.exists(old):
            os.unlink(old)
    target = [env.target, "--seconds", str(SECONDS + 1), "--quiet", "--ground-truth", truth,
              "--switch-log", truth + ".switches"] + (["-O", "ZAM"] if zam else []) + list(target_opts)
    r = e2e.run([env.record, "--sampler", SAMPLER, "-v", "-r", str(RATE), "-d", str(SECONDS), "-o", rec] +
                list(opts) + ["--"] +
                target, env=dict(os.environ, **(target_env or {})))
    if r.returncode != 0:
        e2e.fail("recorder: " + r.stderr)
    return rec, truth, r.stderr


def found_ratio(label, stderr):
    m = re.search(r"ZAM: (\d+) samples in ZAM-compiled code, (\d+) of them at a known instruction",
                  stderr)
    if not m:
        e2e.fail("%s: no ZAM line in the recorder's report: %s" % (label, stderr))
    total, found = int(m.group(1)), int(m.group(2))
    if total < RATE * SECONDS // 4 or found < FOUND_BUDGET * total:
        e2e.fail("%s: %d of %d samples in ZAM code at a known instruction (budget %.0f %%)"
                 % (label, found, total, 100 * FOUND_BUDGET))
    return found, total


def innermost_shares(env, rec, script_names):
    folded = e2e.run([env.convert, "--no-cache", "-f", "folded", "-o", "-", rec])
    if folded.returncode != 0:
        e2e.fail("convert: " + folded.stderr)
    shares, total = {}, 0
    for line in folded.stdout.splitlines():
        frames, count = line.rsplit(" ", 1)
        script = [f for f in frames.split(";") if f in script_names]
        name = script[-1] if script else "empty_call_stack"
        shares[name] = shares.get(name, 0) + int(count)
        total += int(count)
    return {k: 100.0 * v / total for k, v in shares.items()}, total


def check_shares(label, env, rec, truth):
    truth_rows, _wall = e2e.read_ground_truth(truth)
    wanted = e2e.truth_shares(truth, rec)
    got, total = innermost_shares(env, rec, set(truth_rows))
    errors, worst = [], 0.0
    for name in truth_rows:
        tolerance = e2e.share_tolerance(wanted[name], total)
        err = got.get(name, 0.0) - wanted[name]
        worst = max(worst, abs(err))
        if abs(err) > tolerance:
            errors.append("%s share %.1f %% vs truth %.1f %%" % (name, got.get(name, 0.0), wanted[name]))
    return errors, worst, total, {n for n in got if n in truth_rows and n != "empty_call_stack"}


def script_lines(env, rec, profile, script_names):
    """{(function, line): samples} of the innermost script frame of every
    sample, and {(function, line)} of every script frame, from pprof -raw."""
    c = e2e.run([env.convert, "--no-cache", "-q", "-o", profile, rec])
    if c.returncode != 0:
        e2e.fail("convert: " + c.stderr)
    locs, samples, section = {}, [], None
    for line in e2e.pprof(["-raw"], profile).splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        m = re.match(r"\s*(\d+)\s+\d+: ([\d ]+)$", line)
        if section == "Samples:" and m:  # count, cpu, location ids innermost first
            samples.append((int(m.group(1)), [int(i) for i in m.group(2).split()]))
        m = re.match(r"\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*) (\S*):(\d+) s=(\d+)$", line)
        if section == "Locations" and m and m.group(2) in script_names:
            locs[int(m.group(1))] = (m.group(2), int(m.group(4)))
    innermost, every = {}, set()
    for count, ids in samples:
        script = [locs[i] for i in ids if i in locs]
        every.update(script)
        if script:
            innermost[script[0]] = innermost.get(script[0], 0) + count
    return innermost, every


def check_chains(label, env, rec):
    """A function inlined into an inlined function has the whole path of
    them above it."""
    folded = e2e.run([env.convert, "--no-cache", "-f", "folded", "-o", "-", rec]).stdout
    path = "connection_state_remove base/protocols/http/main.zeek:329;HTTP::parse_request;" \
           "Files::describe;Site::is_local_addr"
    lines = [line.rsplit(" ", 1) for line in folded.splitlines()]
    total = sum(int(n) for frames, n in lines if ";Site::is_local_addr" in frames)
    under = sum(int(n) for frames, n in lines if path in frames)
    if total < 20 or under < FOUND_BUDGET * total:
        e2e.fail("%s: %d of %d samples in Site::is_local_addr under %s" % (label, under, total, path))
    print("  %s: %d of %d samples in Site::is_local_addr under the whole inlining path"
          % (label, under, total))


def check_pprof_inlines(label, profile):
    """In pprof, the functions ZAM inlined at an instruction are Lines of
    one Location, innermost first, as native inlines are."""
    want = ["connection_state_remove base/protocols/http/main.zeek:329", "HTTP::parse_request",
            "Files::describe", "Site::is_local_addr"]
    samples = e2e.pprof_raw_samples(e2e.pprof(["-raw"], profile))
    if not any(funcs[-4:] == want for _, locs in samples for funcs in locs):
        e2e.fail("%s: no pprof Location with the Lines %s" % (label, want))
    print("  %s: in pprof, the inlined functions are Lines of their instruction's Location" % label)


# Functions ZAM inlines into one handler of connection_state_remove each.
HANDLER_OF = {"HTTP::parse_request": "connection_state_remove base/protocols/http/main.zeek:329",
              "DNS::log_reply": "connection_state_remove base/protocols/conn/main.zeek:140"}


def check_handlers(label, env, rec):
    """Each inlined function sits right under its handler's frame, as
    without ZAM: in a coalesced body, the handler it was inlined into."""
    folded = e2e.run([env.convert, "--no-cache", "-f", "folded", "-o", "-", rec]).stdout
    for func, handler in HANDLER_OF.items():
        under, total = 0, 0
        for line in folded.splitlines():
            frames, count = line.rsplit(" ", 1)
            frames = frames.split(";")
            if func in frames:
                total += int(count)
                under += int(count) * (frames[frames.index(func) - 1] == handler)
        if total < 50 or under < FOUND_BUDGET * total:
            e2e.fail("%s: %d of %d samples in %s under %s" % (label, under, total, func, handler))
    print("  %s: the inlined functions under their own handler's frame" % label)


def check_top(env):
    target = subprocess.Popen([env.target, "--seconds", "8", "--quiet", "-O", "ZAM"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        r = e2e.run([env.record, "--top", "-p", str(target.pid), "-d", "3", "-o", env.path("top.zspy")],
                    stdin=subprocess.DEVNULL, timeout=60)
    finally:
        target.terminate()
        target.wait()
    last = r.stdout.split("zeek-spy-record --top:")[-1]
    rows = {m.group(2): float(m.group(1))
            for m in re.finditer(r"^\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\S+)", last, re.M)}
    if r.returncode != 0 or rows.get("HTTP::parse_request", 0.0) < 10:
        e2e.fail("--top -O ZAM: HTTP::parse_request at %.1f %% self (want 10+): exit %d\n%s%s"
                 % (rows.get("HTTP::parse_request", 0.0), r.returncode, r.stdout, r.stderr))
    print("  --top: HTTP::parse_request, inlined, at %.1f %% self" % rows["HTTP::parse_request"])


def main():
    global SAMPLER
    build, gen = sys.argv[1], sys.argv[2]
    SAMPLER = sys.argv[3] if len(sys.argv) > 3 else "auto"
    names = {}
    plain_env = e2e.Env(build, gen)
    rec, truth, _ = record(plain_env, "plain", False)
    script_names = set(e2e.read_ground_truth(truth)[0]) - {"empty_call_stack"}
    _, plain_lines = script_lines(plain_env, rec, plain_env.path("plain.pb.gz"), script_names)
    no_coalescing = {"ZEEK_NO_EH_COALESCENCE": "1"}
    cases = ((False, [], [], None), (True, [], [], no_coalescing), (False, ["--no-native"], [], None),
             (False, [], ["--zam-chains"], None))
    # The other sampler, beside the default's full run: the plain case, and
    # ZAM's instruction without native frames (its own stack copy).
    if SAMPLER != "auto":
        cases = (cases[0], cases[2])
    for stripped, opts, target_opts, target_env in cases:
        env = e2e.Env(build, gen, stripped)
        if stripped:  # as packages ship it: no .symtab either (its static scopes found through global_scope())
            bare = env.path("zeek-double-%s-strip-all" % gen)
            subprocess.run(["objcopy", "--strip-all", env.target, bare], check=True)
            env.target = bare
        label = "Zeek %s double -O ZAM%s" % (gen, "".join(", " + o for o in
                                                         (["stripped"] if stripped else []) + opts + target_opts +
                                                         (["handlers not coalesced"] if target_env else [])))
        for attempt in (1, 2):
            rec, truth, stderr = record(env, "zam", True, opts, target_opts, target_env)
            found, total = found_ratio(label, stderr)
            errors, worst, samples, names[label] = check_shares(label, env, rec, truth)
            if not errors:
                break
            print("  %s: attempt %d: %s" % (label, attempt, "; ".join(errors)))
        if errors:
            e2e.fail("%s: %s" % (label, errors[0]))
        check_handlers(label, env, rec)
        check_chains(label, env, rec)
        lines, _ = script_lines(env, rec, env.path("zam.pb.gz"), script_names)
        check_pprof_inlines(label, env.path("zam.pb.gz"))
        # A line of a statement of that function's: one seen without ZAM
        # (where the statement ran, or called). A sample whose instruction
        # was not found has its body's first line: within the 1 % budget.
        wrong = {k: v for k, v in lines.items() if k not in plain_lines}
        in_script = sum(lines.values())
        if sum(wrong.values()) > (1 - FOUND_BUDGET) * in_script or len(lines) < 10:
            e2e.fail("%s: %d of %d samples at lines not seen without ZAM %s; %d pairs (without ZAM: %s)"
                     % (label, sum(wrong.values()), in_script, sorted(wrong.items()), len(lines),
                        sorted(plain_lines)))
        print("  %s: %d of %d samples in ZAM code at their instruction; %d samples, worst share "
              "error %.2f points; %d innermost function:line pairs, %d samples elsewhere"
              % (label, found, total, samples, worst, len(lines), sum(wrong.values())))
    check_top(plain_env)
    if len({frozenset(n) for n in names.values()}) != 1:
        e2e.fail("Zeek %s -O ZAM: script frames differ: %s" % (gen, names))
    print("PASS zam %s" % gen)


if __name__ == "__main__":
    main()
