#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""zeek-spy-convert --push against a stand-in for the ingest APIs of Grafana
Pyroscope and Parca on loopback (tests/tools/push_standin.py; neither is in
Debian 12's registry): the profile the stand-in received is read
back with the real go tool pprof and must equal the one converted to a
file; the labels and time range are the recording's. Then a back end that
fails twice (retried, then accepted), one that refuses (one clear line, no
retry, not marked), one that is down (retried, not marked, nothing lost:
a later push sends it), one that never answers (timed out), and --watch
on a directory of rotated parts.

    push_e2e.py BUILD_DIR
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import record_e2e as e2e  # noqa: E402

fail = e2e.fail
run = e2e.run
HERE = os.path.dirname(os.path.abspath(__file__))


def standin(work, mode):
    n = len([f for f in os.listdir(work) if f.startswith("port-")])
    port_file, log = os.path.join(work, "port-%d" % n), os.path.join(work, "log-%d" % n)
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "tools", "push_standin.py"),
                          "--port-file", port_file, "--log", log, "--mode", mode])
    for _ in range(100):
        if os.path.exists(port_file):
            return p, "http://127.0.0.1:%s" % open(port_file).read(), log
        time.sleep(0.05)
    p.kill()
    fail("the stand-in server did not start")


def received(log):
    return [json.loads(line) for line in open(log)] if os.path.exists(log) else []


def main():
    build = sys.argv[1]
    convert, gen = os.path.join(build, "zeek-spy-convert"), os.path.join(build, "tests", "zs-gen")
    work = e2e.scratch_dir("zs-e2e-push.")
    rec = os.path.join(work, "r.zspy")
    run([gen, "-o", rec, "--samples", "5000", "--stacks", "40", "--seed", "3", "--node", "worker-2"])
    local = os.path.join(work, "local.pb.gz")
    run([convert, "--no-cache", "-q", rec, "-o", local])
    servers = []
    try:
        # Accepted: what arrived is the profile, labelled.
        srv, url, log = standin(work, "ok")
        servers.append(srv)
        r = run([convert, "--no-cache", "--push", url, rec])
        got = received(log)
        if r.returncode != 0 or len(got) != 1:
            fail("push to a working back end: exit %d, %d requests: %s" % (r.returncode, len(got), r.stderr))
        q = got[0]["query"]
        for label in ("node=worker-2", "pid=", "zeek_version=3.0.1", "zeek_spy_version=", "host="):
            if label not in q["name"]:
                fail("the name %r lacks %s" % (q["name"], label))
        if not q["name"].startswith("zeek{") or int(q["until"]) <= int(q["from"]) or q["format"] != "pprof":
            fail("bad query: %s" % q)
        if e2e.pprof(["-raw"], got[0]["profile"]) != e2e.pprof(["-raw"], local):
            fail("the profile received differs from the one converted to a file")
        if not os.path.exists(rec + ".pushed"):
            fail("an accepted push left no %s.pushed" % rec)
        r = run([convert, "--no-cache", "--push", url, rec])
        if r.returncode != 0 or len(received(log)) != 1 or "already pushed" not in r.stderr:
            fail("a pushed recording was sent again: %s" % r.stderr)
        print("  ok: one request, name %s, from %s until %s; go tool pprof -raw reads it as the "
              "local conversion; marked, not sent again" % (q["name"], q["from"], q["until"]))
        os.unlink(rec + ".pushed")

        # Parca's WriteRaw: the same profile, the same labels with __name__.
        srv, url, log = standin(work, "ok")
        servers.append(srv)
        r = run([convert, "--no-cache", "-q", "--push-api", "parca", "--push", url, rec])
        got = received(log)
        if r.returncode != 0 or len(got) != 1:
            fail("push to Parca: exit %d, %d requests: %s" % (r.returncode, len(got), r.stderr))
        labels = got[0]["labels"]
        if labels.get("__name__") != "zeek" or labels.get("node") != "worker-2" or "pid" not in labels:
            fail("Parca labels: %s" % labels)
        if e2e.pprof(["-raw"], got[0]["profile"]) != e2e.pprof(["-raw"], local):
            fail("the profile Parca received differs from the one converted to a file")
        print("  parca: WriteRaw with labels %s; the same profile" % sorted(labels.items()))
        os.unlink(rec + ".pushed")

        # Failing twice (503), then accepted: retried with backoff.
        srv, url, log = standin(work, "fail-first:2")
        servers.append(srv)
        t0 = time.time()
        r = run([convert, "--no-cache", "-q", "--push", url, rec])
        if r.returncode != 0 or len(received(log)) != 1 or not os.path.exists(rec + ".pushed"):
            fail("503 twice then 200: exit %d, %s" % (r.returncode, r.stderr))
        print("  503, 503, then 200: accepted on the third try after %.1f s of backoff" % (time.time() - t0))
        os.unlink(rec + ".pushed")

        # Refused (400): one line, at once, not marked.
        srv, url, log = standin(work, "refuse")
        servers.append(srv)
        t0 = time.time()
        r = run([convert, "--no-cache", "--push", url, rec])
        lines = [ln for ln in r.stderr.splitlines() if "error" in ln]
        if r.returncode != 1 or len(lines) != 1 or "400" not in lines[0] or "invalid name" not in lines[0] \
                or time.time() - t0 > 5 or os.path.exists(rec + ".pushed"):
            fail("a refused push: exit %d in %.1f s: %s" % (r.returncode, time.time() - t0, r.stderr))
        print("  refused: " + lines[0])

        # Down: retried, then one line; nothing marked, so a later push sends it.
        srv.kill()
        srv.wait()
        t0 = time.time()
        r = run([convert, "--no-cache", "--push", url, rec])
        lines = [ln for ln in r.stderr.splitlines() if "error" in ln]
        if r.returncode != 1 or len(lines) != 1 or "refused" not in lines[0] or os.path.exists(rec + ".pushed"):
            fail("a back end that is down: exit %d: %s" % (r.returncode, r.stderr))
        print("  down: %s (after %.1f s of retries)" % (lines[0], time.time() - t0))
        srv, url, log = standin(work, "ok")
        servers.append(srv)
        r = run([convert, "--no-cache", "-q", "--push", url, rec])
        if r.returncode != 0 or len(received(log)) != 1:
            fail("the push after the back end came back: exit %d: %s" % (r.returncode, r.stderr))
        print("  back up: the same recording pushed then, nothing lost")
        os.unlink(rec + ".pushed")

        # Never answering: each try times out.
        srv, url, log = standin(work, "slow")
        servers.append(srv)
        t0 = time.time()
        r = run([convert, "--no-cache", "--push-timeout", "1", "--push", url, rec])
        took = time.time() - t0
        if r.returncode != 1 or "timed out" not in r.stderr or took > 30 or os.path.exists(rec + ".pushed"):
            fail("a back end that never answers: exit %d in %.1f s: %s" % (r.returncode, took, r.stderr))
        print("  never answering, --push-timeout 1: given up after %.1f s: %s"
              % (took, r.stderr.strip().splitlines()[-1]))

        # --watch: the finished recordings of a directory, each once; a part
        # without a trailer only once no process holds it open (a recorder
        # still writing it, or one that died: then it is pushed as it is).
        parts = os.path.join(work, "parts")
        os.mkdir(parts)
        for i in (1, 2):
            run([gen, "-o", os.path.join(parts, "p-%04d.zspy" % i), "--samples", "2000", "--seed", str(i)])
        open_part = os.path.join(parts, "p-0003.zspy")
        run([gen, "-o", open_part, "--samples", "2000", "--seed", "3", "--no-trailer"])
        writer = open(open_part, "ab")  # as the recorder holds the part it writes
        srv, url, log = standin(work, "ok")
        servers.append(srv)
        # The command of the push service as installed (build/zeek-spy-push.service).
        unit = os.path.join(build, "zeek-spy-push.service")
        start = [ln.split("=", 1)[1].split() for ln in open(unit) if ln.startswith("ExecStart=")][0]
        subst = {"${ZEEK_SPY_PUSH_URL}": url, "${ZEEK_SPY_PUSH_API}": "pyroscope", "/var/lib/zeek-spy": parts}
        if os.path.basename(start[0]) != "zeek-spy-convert" or not all(k in start for k in subst):
            fail("the push unit's ExecStart is not what this test runs: %s" % start)
        cmd = [convert, "--no-cache"] + [subst.get(w, w) for w in start[1:]] + ["--watch-every", "0.5"]
        watcher = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        servers.append(watcher)

        def wait_for(count):
            for _ in range(300):
                if len(received(log)) >= count:
                    return
                time.sleep(0.1)
            fail("--watch: %d of %d pushes after 30 s" % (len(received(log)), count))
        wait_for(2)
        time.sleep(1)
        if len(received(log)) != 2 or os.path.exists(open_part + ".pushed"):
            fail("--watch pushed the part still being written")
        writer.close()  # its recorder gone: the part is pushed as it is
        wait_for(3)
        watcher.terminate()
        err = watcher.communicate(timeout=20)[1]
        if watcher.returncode != 0 or "stopped watching" not in err or len(received(log)) != 3:
            fail("--watch: exit %d, %d pushes: %s" % (watcher.returncode, len(received(log)), err))
        if not os.path.exists(open_part + ".pushed") or "no trailer" not in err:
            fail("--watch: the abandoned part was not pushed as unfinished: %s" % err)
        print("  the push unit's command (--watch): 2 finished parts pushed; the one held open "
              "left alone, pushed once closed (no trailer: a recorder that died); SIGTERM ends it")

        # --watch against a back end that refuses: one line per try, and the
        # tries of a part spaced out (20 s, doubling), not one every look.
        refused_dir = os.path.join(work, "refused")
        os.mkdir(refused_dir)
        run([gen, "-o", os.path.join(refused_dir, "p-0001.zspy"), "--samples", "500", "--seed", "4"])
        srv, url, _ = standin(work, "refuse")
        servers.append(srv)
        watcher = subprocess.Popen([convert, "--no-cache", "--push", url, "--watch", refused_dir,
                                    "--watch-every", "0.5"], stderr=subprocess.PIPE, text=True)
        servers.append(watcher)
        time.sleep(5)
        watcher.terminate()
        err = watcher.communicate(timeout=20)[1]
        tries = [l for l in err.splitlines() if " 400 Bad Request" in l]
        if len(tries) != 1 or "tried again in 20 s" not in err or \
                os.path.exists(os.path.join(refused_dir, "p-0001.zspy.pushed")):
            fail("--watch against a refusing back end: %d tries in 5 s (looking every 0.5 s), want 1: %s"
                 % (len(tries), err))
        print("  --watch, back end refusing: 1 try in 5 s of looks every 0.5 s, the next in 20 s: %s"
              % tries[0].strip())

        # Bad URLs: one line each, exit 2.
        for bad in ("https://pyroscope:4040", "pyroscope:4040", "http://:4040", "http://host:port"):
            r = run([convert, "--no-cache", "--push", bad, rec])
            if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1 or bad not in r.stderr:
                fail("--push %s: exit %d: %s" % (bad, r.returncode, r.stderr))
        print("  bad URLs (https, no scheme, no host, bad port): one line each, exit 2")
    finally:
        for s in servers:
            s.kill()
            s.wait()
    print("PASS push")


if __name__ == "__main__":
    main()
