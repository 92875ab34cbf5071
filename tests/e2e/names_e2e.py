#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One function, one name, whatever recorded or converted it (issue 48).

The stripped Zeek 8.2 double recorded by the BPF and the ptrace sampler at
once, native frames on, over the same seconds; then:
  - each recording converted with no cache, into a fresh cache, from that
    cache, and from a cache filled while it was converted beside the other
    recording, gives byte for byte the same pprof function table (decoded
    from the profile itself);
  - the two converted together, in either order, name exactly the
    functions each names alone;
  - a PC both recordings hold (same module, same address) is the same
    function by the same name in both, libc's among them, named without
    symbol versions (clock_gettime, __libc_start_main);
  - the summary's differential table (--base ptrace bpf) names no function
    as new or gone beyond sampling noise, and no two functions whose names
    differ only by a symbol version.

    names_e2e.py BUILD_DIR

Exit 77 (skipped) where the BPF sampler cannot run.
"""
import gzip
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import record_e2e as e2e  # noqa: E402
import sampler_bpf_e2e as bpf_e2e  # noqa: E402
from recording import varint  # noqa: E402

fail = e2e.fail
RATE_HZ = 1000
SECONDS = 4
# A function seen in one recording and not in the other, taken over the same
# seconds, is noise only if its share is small: one of share p goes unseen
# in n samples with probability (1 - p)^n, about exp(-p n); at p n = 12,
# once in 160,000 recordings (0.3 % at 4,000 samples).
NOISE_SAMPLES = 12
VERSIONED = re.compile(r"@@?[A-Za-z0-9_.-]+$")


def fields(buf):
    """(field number, value) of a protobuf message: ints or bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        kind = key & 7
        if kind == 0:
            value, i = varint(buf, i)
        elif kind == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif kind == 1:
            value, i = buf[i:i + 8], i + 8
        elif kind == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            fail("pprof: wire type %d" % kind)
        yield key >> 3, value


def read_pprof(path):
    """(functions [(id, name, system_name, file, start_line)] in the
    profile's order, locations {id: (mapping file, address, [function ids])})
    of a gzipped profile.proto."""
    with gzip.open(path, "rb") as f:
        profile = f.read()
    strings, raw_funcs, raw_locs, mappings = [], [], [], {}
    for num, value in fields(profile):
        if num == 6:
            strings.append(value.decode("utf-8"))
        elif num == 5:
            raw_funcs.append(value)
        elif num == 4:
            raw_locs.append(value)
        elif num == 3:
            m = dict(fields(value))
            mappings[m.get(1, 0)] = m.get(5, 0)
    functions = []
    for buf in raw_funcs:
        f = dict(fields(buf))
        functions.append((f.get(1, 0), strings[f.get(2, 0)], strings[f.get(3, 0)], strings[f.get(4, 0)],
                          f.get(5, 0)))
    locations = {}
    for buf in raw_locs:
        loc_id, mapping, address, funcs = 0, 0, 0, []
        for num, value in fields(buf):
            if num == 1:
                loc_id = value
            elif num == 2:
                mapping = value
            elif num == 3:
                address = value
            elif num == 4:
                funcs.append(dict(fields(value)).get(1, 0))
        file = strings[mappings[mapping]] if mapping else ""
        locations[loc_id] = (file, address, funcs)
    return functions, locations


def convert(env, out, recordings, cache=None):
    opts = ["--cache", cache] if cache else ["--no-cache"]
    r = e2e.run([env.convert, "-q"] + opts + ["-o", out] + recordings)
    if r.returncode != 0:
        fail("convert %s: %s" % (" ".join(recordings), r.stderr))
    return read_pprof(out)


def record_both(env):
    """A BPF and a ptrace recording of one process over the same seconds."""
    target = e2e.start_target(env, SECONDS + 6)
    paths = {"bpf": env.path("bpf.zspy"), "ptrace": env.path("ptrace.zspy")}
    procs = {name: subprocess.Popen([env.record, "--sampler", name, "-r", str(RATE_HZ), "-p",
                                     str(target.pid), "-d", str(SECONDS), "-o", path],
                                    stderr=subprocess.PIPE, text=True)
             for name, path in paths.items()}
    for name, p in procs.items():
        _, err = p.communicate(timeout=120)
        if p.returncode != 0:
            fail("record --sampler %s exited %d: %s" % (name, p.returncode, err))
    target.kill()
    target.wait()
    return paths


def check_tables(env, paths):
    """The function table of each recording whatever the cache did, alone
    or beside the other; the tables of both together, either order."""
    tables = {}
    for name, rec in paths.items():
        cache, beside = env.path(name + ".sqlite"), env.path(name + "-beside.sqlite")
        other = [p for n, p in paths.items() if n != name]
        runs = {"no cache": convert(env, env.path("cold.pb.gz"), [rec])[0],
                "into a fresh cache": convert(env, env.path("store.pb.gz"), [rec], cache)[0],
                "from the cache": convert(env, env.path("hit.pb.gz"), [rec], cache)[0]}
        convert(env, env.path("both.pb.gz"), other + [rec], beside)  # fills the cache beside the other
        runs["from a cache filled beside the other"] = convert(env, env.path("after.pb.gz"), [rec], beside)[0]
        cold = runs["no cache"]
        for how, table in runs.items():
            if table != cold:
                fail("%s: the function table converted %s differs from the one with no cache:\n%s\n%s"
                     % (name, how, cold, table))
        tables[name] = cold
        print("  %s: %d functions, the same table with no cache, a fresh one, a warm one and one "
              "filled beside the other recording" % (name, len(cold)))
    alone = {f[1:] for t in tables.values() for f in t}
    for order in (["bpf", "ptrace"], ["ptrace", "bpf"]):
        together = {f[1:] for f in convert(env, env.path("together.pb.gz"), [paths[n] for n in order])[0]}
        if together != alone:
            fail("converted together (%s) the functions are not those of each alone: only together %s, "
                 "only alone %s" % (" ".join(order), sorted(together - alone), sorted(alone - together)))
    print("  together, either order: the %d functions each names alone" % len(alone))
    return tables


def check_same_pcs(env, paths):
    """A PC both recordings hold is one function, by one name, in both."""
    named = {}
    for name, rec in paths.items():
        functions, locations = convert(env, env.path(name + ".pb.gz"), [rec])
        by_id = {f[0]: f[1] for f in functions}
        named[name] = {(file, address): [by_id[i] for i in funcs]
                       for file, address, funcs in locations.values() if file}
    common = set(named["bpf"]) & set(named["ptrace"])
    libc = [k for k in common if "/libc.so" in k[0]]
    if len(common) < 5 or not libc:
        fail("only %d PCs in both recordings (%d of them libc's): too few to compare"
             % (len(common), len(libc)))
    for key in sorted(common):
        if named["bpf"][key] != named["ptrace"][key]:
            fail("%s+0x%x: bpf names it %s, ptrace %s" % (key[0], key[1], named["bpf"][key],
                                                         named["ptrace"][key]))
    names = {n for v in named.values() for names in v.values() for n in names}
    versioned = sorted(n for n in names if VERSIONED.search(n))
    if versioned:
        fail("names with a symbol version: %s" % versioned)
    for want in ("clock_gettime", "__libc_start_main"):
        for sampler, v in named.items():
            if not any(want in names for key, names in v.items() if "/libc.so" in key[0]):
                fail("%s: libc's %s not among its names" % (sampler, want))
    print("  %d PCs in both recordings (%d of them libc's): each the same function by the same name"
          % (len(common), len(libc)))


def check_diff(env, paths):
    """--base ptrace bpf: no function new or gone beyond noise, no two
    names of one function."""
    r = e2e.run([env.convert, "--no-cache", "-q", "-f", "summary", "--top", "0", "--base",
                 paths["ptrace"], paths["bpf"]])
    if r.returncode != 0:
        fail("summary --base: %s" % r.stderr)
    counts = [int(n) for n in re.findall(r"^(\d+) samples over", r.stdout, re.M)]
    counts.append(int(re.search(r"Largest changes against the base \((\d+) samples", r.stdout).group(1)))
    noise = 100.0 * NOISE_SAMPLES / min(counts)
    table = r.stdout.split("Largest changes against the base")[-1]
    rows = re.findall(r"^\s*([\d.]+)%\s+([\d.]+)%\s+[-+][\d.]+\s+([\d.]+)%\s+([\d.]+)%\s+[-+][\d.]+\s+(.+?)\s*$",
                      table, re.M)
    if len(rows) < 10:
        fail("the table of changes has %d rows:\n%s" % (len(rows), r.stdout))
    plain = {}
    for flat_new, flat_base, cum_new, cum_base, name in rows:
        cum_new, cum_base = float(cum_new), float(cum_base)
        if (cum_new == 0) != (cum_base == 0) and max(cum_new, cum_base) >= noise:
            fail("%s is %s: %.2f %% in the bpf recording, %.2f %% in the ptrace one"
                 % (name, "new" if cum_base == 0 else "gone", cum_new, cum_base))
        plain.setdefault(VERSIONED.sub("", name), []).append(name)
    twice = {k: v for k, v in plain.items() if len(v) > 1}
    if twice:
        fail("one function under several names: %s" % twice)
    print("  --base ptrace bpf (%s samples): %d functions, none new or gone beyond %.2f %%, none "
          "named twice" % (" and ".join(map(str, counts)), len(rows), noise))


def main():
    build = sys.argv[1]
    env = e2e.Env(build, "8.2", stripped=True)
    bpf_e2e.skip_unless_bpf(env)
    paths = record_both(env)
    check_tables(env, paths)
    check_same_pcs(env, paths)
    check_diff(env, paths)
    print("PASS names")


if __name__ == "__main__":
    main()
