#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The load lane for real: a zeek (a test double, stripped: the built-in
table's offsets; 8.2 by default, or 3.0, whose I/O manager keeps a list of
sources) reading a live interface falls behind when a script turns
expensive, and the recording says when and why.

In a network namespace of its own (removed at the end), a veth pair: the
double reads one end (--live), packet_sender.py writes RATE packets a second
into the other for SENDER_S seconds. From SLOW_AFTER_S on, for SLOW_FOR_S,
DNS::log_reply costs 12 times as much: the double can no longer keep up,
packets wait in its socket and network_time falls behind the wall clock.
The recorder (default settings) records until the double exits. Then:
  - LOAD records: the last one's packets received are the double's own
    count at its exit less at most the last second's, and none is more;
  - the lag stays under LAG_CALM_S before the slow window and passes
    LAG_BEHIND_S inside it; the socket queue is seen (> 0);
  - --when 'lag > LAG_BEHIND_S' against --when 'lag <= LAG_BEHIND_S':
    DNS::log_reply's share (of the stacks it is in) is at least
    MIN_POINTS higher in the seconds behind;
  - the summary has the package table (base/protocols/dns among them)
    and the load's busiest and laggiest seconds;
  - --base-when makes the differential flame graph, whose load lane has
    its three rows and shades the seconds --when selected; --info names
    the laggiest seconds; a bad --when is refused with one line, exit 2.

    load_e2e.py BUILD_DIR [GENERATION]
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_e2e as e2e  # noqa: E402

RATE = 150          # packets a second: the double keeps up at about 300
SENDER_S = 18
SLOW_AFTER_S = 6
SLOW_FOR_S = 9      # it falls behind by about 20 packets a second meanwhile
LAG_CALM_S = 0.3
LAG_BEHIND_S = 0.5
MIN_POINTS = 20
NETNS = "zs-load-%d" % os.getpid()

fail, run = e2e.fail, e2e.run


def ns(*cmd):
    return ["ip", "netns", "exec", NETNS] + list(cmd)


def setup_netns():
    for cmd in (["ip", "netns", "add", NETNS],
                ns("ip", "link", "set", "lo", "up"),
                ns("ip", "link", "add", "zsa", "type", "veth", "peer", "name", "zsb"),
                ns("ip", "link", "set", "zsa", "up"),
                ns("ip", "link", "set", "zsb", "up")):
        r = run(cmd)
        if r.returncode != 0:
            fail("%s: %s" % (" ".join(cmd), r.stderr.strip()))


def folded_share(convert, rec, args, name):
    """name's share (percent) of the samples args select, and their count."""
    r = run([convert, "--no-cache", "-q", "-f", "folded", "-o", "-"] + args + [rec])
    if r.returncode != 0:
        fail("convert %s: %s" % (" ".join(args), r.stderr.strip()))
    total = hit = 0
    for line in r.stdout.splitlines():
        stack, n = line.rsplit(" ", 1)
        total += int(n)
        hit += int(n) if name in stack.split(";") else 0
    return (100.0 * hit / total if total else 0.0), total


def describe(convert, rec):
    info = run([convert, "--info", rec])
    if info.returncode != 0:
        fail("--info: " + info.stderr.strip())
    return info.stdout


def main():
    build = sys.argv[1]
    gen = sys.argv[2] if len(sys.argv) > 2 else "8.2"
    env = e2e.Env(build, gen, stripped=True)
    sender = os.path.join(os.path.dirname(os.path.abspath(__file__)), "packet_sender.py")
    setup_netns()
    double = None
    try:
        counts = env.path("double.err")
        double = subprocess.Popen(ns(env.target, "--live", "zsb", "--seconds", str(SENDER_S + 1),
                                     "--slow-after", str(SLOW_AFTER_S), "--slow-for", str(SLOW_FOR_S)),
                                  stdout=subprocess.DEVNULL, stderr=open(counts, "w"))
        deadline = time.monotonic() + 5
        while "pid" not in open(counts).read():
            if time.monotonic() > deadline or double.poll() is not None:
                fail("the double did not start: " + open(counts).read().strip())
            time.sleep(0.02)
        send = subprocess.Popen(ns("python3", sender, "zsa", str(RATE), str(SENDER_S)),
                                stdout=subprocess.PIPE, text=True)
        rec = env.path("load.zspy")
        r = run([env.record, "-q", "-r", "200", "-p", str(double.pid), "-o", rec], timeout=SENDER_S + 30)
        if r.returncode != 0:
            fail("recorder exited %d: %s" % (r.returncode, r.stderr.strip()))
        sent = int(send.communicate(timeout=30)[0].strip() or 0)
        double.wait(timeout=30)
    finally:
        if double and double.poll() is None:
            double.kill()
        run(["ip", "netns", "del", NETNS])

    m = re.search(r"packets received (\d+)", open(counts).read())
    if not m:
        fail("the double did not say how many packets it received: " + open(counts).read().strip())
    received = int(m.group(1))
    info = describe(env.convert, rec)
    line = re.search(r"pid \d+ load: (\d+) seconds, live libpcap source; (\d+) packets received.*"
                     r"lag at most ([\d.]+) s; socket queue at most (\d+) bytes", info)
    if not line:
        fail("--info has no load line of a live source with lag and queue:\n" + info)
    seconds, last_received, lag_max, queue_max = (int(line.group(1)), int(line.group(2)),
                                                  float(line.group(3)), int(line.group(4)))
    print("sent %d, the double received %d; %d load records, the last with %d received; "
          "lag at most %.2f s, queue at most %d bytes" % (sent, received, seconds, last_received,
                                                           lag_max, queue_max))
    if not (received - 1.5 * RATE <= last_received <= received):
        fail("the last LOAD record's %d packets received are not the double's %d less at most a "
             "second's" % (last_received, received))
    if lag_max < LAG_BEHIND_S or queue_max <= 0:
        fail("the double never fell %.1f s behind with packets queued (lag %.2f s, queue %d)"
             % (LAG_BEHIND_S, lag_max, queue_max))
    calm = run([env.convert, "--no-cache", "-q", "-f", "folded", "-o", "-", "--to", str(SLOW_AFTER_S - 1),
                "--when", "lag > %g" % LAG_CALM_S, rec])
    if calm.returncode != 0 or calm.stdout.strip():
        fail("before the slow window some second lagged more than %.1f s:\n%s" % (LAG_CALM_S, calm.stdout[:300]))
    if not re.search(r"laggiest seconds: \d+ s \(lag [\d.]+ s\)", info):
        fail("--info names no laggiest seconds:\n" + info)

    behind, n_behind = folded_share(env.convert, rec, ["--when", "lag > %gs" % LAG_BEHIND_S], "DNS::log_reply")
    kept_up, n_kept = folded_share(env.convert, rec, ["--when", "lag <= %gs" % LAG_BEHIND_S], "DNS::log_reply")
    print("DNS::log_reply: %.1f %% of %d samples when behind, %.1f %% of %d when it kept up"
          % (behind, n_behind, kept_up, n_kept))
    if n_behind < 100 or n_kept < 100:
        fail("too few samples in a selection (%d behind, %d kept up)" % (n_behind, n_kept))
    if behind - kept_up < MIN_POINTS:
        fail("DNS::log_reply only %.1f points higher when behind (want %d)" % (behind - kept_up, MIN_POINTS))

    summary = run([env.convert, "--no-cache", "-q", "-f", "summary", "-o", "-", rec]).stdout
    dns = re.search(r"^\s*\d+\s+([\d.]+)%\s+\d+\s+[\d.]+%\s+base/protocols/dns$", summary, re.M)
    if not dns or "\nLoad, second by second" not in summary or "laggiest seconds:" not in summary:
        fail("the summary has no package base/protocols/dns or no load:\n" + summary[-1500:])
    svg = env.path("behind.svg")
    r = run([env.convert, "--no-cache", "-q", "-f", "svg", "-o", svg, "--when", "lag > 0.5s",
             "--base-when", "lag <= 500ms", rec])
    if r.returncode != 0 or "DNS::log_reply" not in open(svg).read():
        fail("--base-when: exit %d: %s" % (r.returncode, r.stderr.strip()))
    drawn = open(svg).read()
    lane = re.search(r'<g id="lane">(.*?)</g>', drawn, re.S)
    rows = re.findall(r'>(packets/s|lag|socket queue)</text>', lane.group(1)) if lane else []
    shaded = lane.group(1).count('fill="#f6c9c0"') // 3 if lane else 0  # each second in each row
    if rows != ["packets/s", "lag", "socket queue"] or not 1 <= shaded < seconds:
        fail("the flame graph's load lane: rows %s, %d seconds shaded of %d" % (rows, shaded, seconds))
    bad = run([env.convert, "--no-cache", "-f", "folded", "-o", "-", "--when", "lag >> 1s", rec])
    err = bad.stderr.strip()
    if bad.returncode != 2 or "\n" in err or "--when 'lag >> 1s'" not in err:
        fail("a bad --when: exit %d, %r" % (bad.returncode, err))
    print("RESULT e2e.load (%s): PASS packets, lag and queue a second; the seconds behind show "
          "DNS::log_reply %.0f points higher" % (gen, behind - kept_up))


if __name__ == "__main__":
    main()
