#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for the ingest APIs of Grafana Pyroscope and Parca on
loopback, for tests: neither can be installed here (not in Debian 12). It
takes what each documents:
  - Pyroscope, POST /ingest (query: name, from, until, format, sampleRate;
    body: multipart/form-data with the pprof in field "profile");
  - Parca, POST /profiles/writeraw (the JSON form of
    ProfileStoreService.WriteRaw: series[].labels.labels[] {name, value},
    series[].samples[].rawProfile, base64);
saves each accepted profile with its query or labels as JSON lines in
--log, and can misbehave on demand:

    push_standin.py --port-file F --log L [--mode ok|fail-first:N|refuse|slow]

  ok           answer 200 to every well-formed request (400 otherwise)
  fail-first:N answer 503 to the first N requests, then as ok
  refuse       answer 400 with a reason to everything
  slow         accept the connection and never answer
"""
import argparse
import base64
import re
import json
import os
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--mode", default="ok")
    a = ap.parse_args()
    seen = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, code, text):
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            seen["n"] += 1
            if a.mode == "slow":
                time.sleep(3600)
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            if a.mode.startswith("fail-first:") and seen["n"] <= int(a.mode.split(":")[1]):
                return self.answer(503, "overloaded, try again")
            if a.mode == "refuse":
                return self.answer(400, "invalid name")
            url = urllib.parse.urlparse(self.path)
            if url.path == "/profiles/writeraw":
                return self.parca(body)
            q = dict(urllib.parse.parse_qsl(url.query))
            missing = [k for k in ("name", "from", "until") if k not in q]
            if url.path != "/ingest" or missing or q.get("format") != "pprof":
                return self.answer(400, "bad request: path %s, missing %s" % (url.path, missing))
            m = re.match(r"multipart/form-data;\s*boundary=(\S+)$", self.headers.get("Content-Type", ""))
            if not m:
                return self.answer(400, "not multipart/form-data")
            profile = None
            for part in body.split(b"--" + m.group(1).encode())[1:]:
                head, sep, content = part.partition(b"\r\n\r\n")
                if sep and b'name="profile"' in head and content.endswith(b"\r\n"):
                    profile = content[:-2]
            if profile is None:
                return self.answer(400, "no profile field")
            path = os.path.join(os.path.dirname(a.log), "profile-%d.pb.gz" % seen["n"])
            with open(path, "wb") as f:
                f.write(profile)
            with open(a.log, "a") as f:
                f.write(json.dumps({"query": q, "profile": path}) + "\n")
            self.answer(200, "")

        def parca(self, body):
            try:
                req = json.loads(body)
                series = req["series"]
                labels = {lb["name"]: lb["value"] for lb in series[0]["labels"]["labels"]}
                raw = base64.b64decode(series[0]["samples"][0]["rawProfile"], validate=True)
            except (ValueError, KeyError, IndexError, TypeError) as e:
                return self.answer(400, "bad WriteRaw request: %s" % e)
            if self.headers.get("Content-Type") != "application/json" or "__name__" not in labels:
                return self.answer(400, "not JSON, or no __name__ label")
            path = os.path.join(os.path.dirname(a.log), "profile-%d.pb.gz" % seen["n"])
            with open(path, "wb") as f:
                f.write(raw)
            with open(a.log, "a") as f:
                f.write(json.dumps({"labels": labels, "profile": path}) + "\n")
            self.answer(200, "{}")

    server = HTTPServer(("127.0.0.1", 0), Handler)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(a.port_file + ".tmp", a.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
