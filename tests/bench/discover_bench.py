#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""--all rescans at scale: starts N `sleep` processes (default 500) and times
rec_discover_scan with tests/bench/discover_bench (built as
BUILD_DIR/tests/discover_bench).

    discover_bench.py BUILD_DIR [N] [--max-ms MS]

A rescan must parse no executable (each was judged once, cached by device,
inode, size and mtime) and its median must stay under MAX_MS (default 10).
Prints one "RESULT bench.discover ..." line.
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("n", nargs="?", type=int, default=500)
    ap.add_argument("--max-ms", type=float, default=10.0)
    a = ap.parse_args()
    bench = os.path.join(os.path.abspath(a.build), "tests", "discover_bench")
    sleeps = []
    try:
        for _ in range(a.n):
            sleeps.append(subprocess.Popen(["sleep", "120"]))
        out = subprocess.run([bench, "50"], capture_output=True, text=True, check=True).stdout
    finally:
        for p in sleeps:
            p.kill()
        for p in sleeps:
            p.wait()
    r = dict(kv.split("=") for kv in out.split())
    median = float(r["rescan_median_ms"])
    ok = int(r["parsed_rescans"]) == 0 and median < a.max_ms
    print("RESULT bench.discover: %s %s processes (%d sleep): first scan %s ms parsing %s "
          "executables; rescan median %s ms, p90 %s ms, max %s ms, %s executables parsed again "
          "(limit %.0f ms)" % ("PASS" if ok else "FAIL", r["processes"], a.n, r["first_ms"],
                               r["parsed_first"], r["rescan_median_ms"], r["rescan_p90_ms"],
                               r["rescan_max_ms"], r["parsed_rescans"], a.max_ms))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
