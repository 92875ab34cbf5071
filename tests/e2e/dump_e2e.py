#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""zeek-spy-record --dump: one look at a zeek that seems hung.

    dump_e2e.py BUILD_DIR

Each generation of the test double runs with --hang: it gets stuck in a
loop inside md5_hash, five calls deep, and never returns. --dump -p PID must
print that stack innermost first (md5_hash, Site::is_local_addr,
Files::describe, HTTP::parse_request, then the connection_state_remove body
of base/protocols/http/main.zeek:329) with the lines being executed and
Zeek's network time, exit 0 within 2 s, and leave the target running
untraced. With -O ZAM (8.0, 8.2), where ZAM inlined the three functions into
the event's (coalesced) body, it prints the same frames and lines, the three
marked as inlined, from the instruction found in the stop's copy of the
registers and stack and the path the recorder rebuilds through the body. On a pid that is not a zeek, and on one that is
gone, it gives the usual one-line errors and exit 1.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_e2e as e2e  # noqa: E402

EXPECTED = [
    (r"#0\s+md5_hash\s+\(built-in function\)", "md5_hash"),
    (r"#1\s+Site::is_local_addr\s+at base/utils/site.zeek:147", "Site::is_local_addr"),
    (r"#2\s+Files::describe\s+at base/frameworks/files/main.zeek:481", "Files::describe"),
    (r"#3\s+HTTP::parse_request\s+at base/protocols/http/utils.zeek:52", "HTTP::parse_request"),
    (r"#4\s+connection_state_remove base/protocols/http/main.zeek:329\s+at "
     r"base/protocols/http/main.zeek:334", "the http body"),
]
EXPECTED_ZAM = [
    (r"#0\s+md5_hash\s+\(built-in function\)", "md5_hash"),
    (r"#1\s+Site::is_local_addr\s+at base/utils/site.zeek:147\s+\(inlined by ZAM\)",
     "Site::is_local_addr"),
    (r"#2\s+Files::describe\s+at base/frameworks/files/main.zeek:481\s+\(inlined by ZAM\)",
     "Files::describe"),
    (r"#3\s+HTTP::parse_request\s+at base/protocols/http/utils.zeek:52\s+\(inlined by ZAM\)",
     "HTTP::parse_request"),
    (r"#4\s+connection_state_remove base/protocols/http/main.zeek:329\s+at "
     r"base/protocols/http/main.zeek:334", "the http body"),
]


def main():
    build = sys.argv[1]
    cases = [(gen, [], EXPECTED) for gen in ("3.0", "8.0", "8.2")]
    cases += [(gen, ["-O", "ZAM"], EXPECTED_ZAM) for gen in ("8.0", "8.2")]
    for gen, args, expected in cases:
        env = e2e.Env(build, gen)
        gen = " ".join([gen] + args)
        t = subprocess.Popen([env.target, "--hang", "--seconds", "60"] + args,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            while "hanging" not in line:
                line = t.stderr.readline()
                if not line:
                    e2e.fail("Zeek %s double: never hung" % gen)
            t0 = time.monotonic()
            r = e2e.run([env.record, "--dump", "-p", str(t.pid)], timeout=30)
            took = time.monotonic() - t0
            if r.returncode != 0:
                e2e.fail("Zeek %s double: --dump exit %d: %s" % (gen, r.returncode, r.stderr))
            if took > 2.0:
                e2e.fail("Zeek %s double: --dump took %.2f s" % (gen, took))
            lines = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("#")]
            if len(lines) != len(expected):
                e2e.fail("Zeek %s double: %d frames, expected %d:\n%s"
                         % (gen, len(lines), len(expected), r.stdout))
            for ln, (pattern, what) in zip(lines, expected):
                if not re.search(pattern, ln):
                    e2e.fail("Zeek %s double: frame for %s is %r" % (gen, what, ln))
            if not re.search(r"network time 1577836800\.\d+ \(2020-01-01", r.stdout):
                e2e.fail("Zeek %s double: no network time: %s" % (gen, r.stdout))
            e2e.assert_untouched(t.pid, "Zeek %s double after --dump" % gen)
            print("  Zeek %s double, stuck: --dump in %.3f s\n%s" % (gen, took, r.stdout.rstrip()))
        finally:
            t.terminate()
            t.communicate()
    env = e2e.Env(build, "8.0")
    for what, pid in (("not a zeek", os.getpid()), ("gone", 4194000)):
        r = e2e.run([env.record, "--dump", "-p", str(pid)])
        errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
        if r.returncode != 1 or len(errors) != 1:
            e2e.fail("--dump on a pid that is %s: exit %d, %r" % (what, r.returncode, r.stderr))
        print("  --dump on a pid that is %s: %s" % (what, errors[0]))
    print("PASS dump")


if __name__ == "__main__":
    main()
