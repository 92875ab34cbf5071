#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""End-to-end tests of the converter's SVG flame graph and speedscope
outputs, on recordings of the test double of Zeek (tests/target) and of
zs-gen (tests/tools), checked against the folded stacks of the same
recording.

    outputs_e2e.py BUILD_DIR svg          # frames, widths, paths, kinds, --reverse, elision
    outputs_e2e.py BUILD_DIR render       # headless Chromium draws it, and its script runs
    outputs_e2e.py BUILD_DIR speedscope   # schema, per-process samples and times
    outputs_e2e.py BUILD_DIR names        # hostile names escaped, paths normalized everywhere
    outputs_e2e.py BUILD_DIR cxx-names    # long C++ names short in summary and SVG boxes, full elsewhere

The render test exits 77 (ctest: skipped) only when no Chromium is installed.
"""
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"
HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, check=True):
    r = subprocess.run(cmd, capture_output=True)
    if check and r.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr.decode(errors="replace").strip()))
    return r


class Env:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.convert = os.path.join(self.build, "zeek-spy-convert")
        self.record = os.path.join(self.build, "zeek-spy-record")
        self.gen = os.path.join(self.build, "tests", "zs-gen")
        self.double = os.path.join(self.build, "tests", "target", "zeek-double-8.0")
        self.tmp = tempfile.mkdtemp(prefix="zs-outputs-")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def record_double(self, seconds=3, rate=400, extra=(), name="double.zspy"):
        out = self.path(name)
        run([self.record, "-q", "--sampler", "ptrace", "--no-native", "-r", str(rate), "-o", out, "--", self.double, "--seconds", str(seconds), "--quiet"]
            + list(extra))
        return out

    def generate(self, name, *args):
        out = self.path(name)
        run([self.gen, "-o", out, "--seed", "11"] + list(args))
        return out

    def convert_to(self, rec, fmt, name, *args):
        out = self.path(name)
        run([self.convert, "--no-cache", "-q", "-f", fmt, "-o", out] + list(args) + ([rec] if isinstance(rec, str) else rec))
        return out


def read_folded(path):
    """[(frames tuple, count)] of a folded file (bytes decoded as UTF-8, bad bytes as U+FFFD)."""
    stacks = []
    for line in open(path, "rb").read().decode("utf-8", errors="replace").splitlines():
        body, count = line.rsplit(" ", 1)
        stacks.append((tuple(body.split(";")), int(count)))
    return stacks


def tree_of(stacks, reverse=False):
    """path tuple -> samples, with identical prefixes merged as a flame graph does."""
    tree = collections.Counter()
    for frames, count in stacks:
        frames = tuple(reversed(frames)) if reverse else frames
        for i in range(1, len(frames) + 1):
            tree[frames[:i]] += count
    return tree


def svg_display(name):
    """How the SVG shows a name: control bytes as \\xNN (XML cannot carry them)."""
    return "".join("\\x%02x" % ord(c) if ord(c) < 0x20 or ord(c) == 0x7F else c for c in name)


class Frame:
    pass


def read_svg(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        fail("%s is not well-formed XML: %s" % (path, e))
    frames = []
    for g in root.iter(SVG + "g"):
        cls = (g.get("class") or "").split()
        if "fr" not in cls:
            continue
        f = Frame()
        title = g.find(SVG + "title")
        rect = g.find(SVG + "rect")
        if title is None or rect is None:
            fail("a frame without a <title> or <rect> in %s" % path)
        f.title = title.text
        f.name = title.text.split("\n")[0]
        f.label = g.get("data-l")  # a C++ name's short form, else None
        text = g.find(SVG + "text")
        f.text = "".join(text.itertext()) if text is not None else ""
        f.kind = cls[1] if len(cls) > 1 else ""
        f.root = g.get("id") == "root"
        f.o, f.n = int(g.get("data-o")), int(g.get("data-n"))
        f.x, f.y, f.w = float(rect.get("x")), float(rect.get("y")), float(rect.get("width"))
        frames.append(f)
    notes = {t.get("id"): "".join(t.itertext()) for t in root.iter(SVG + "text") if t.get("id")}
    titles = [t for t in root.iter(SVG + "text") if t.get("class") == "title"]
    return root, frames, notes, "".join(titles[0].itertext()) if titles else ""


def svg_paths(frames):
    """path tuple -> samples, rebuilt from the geometry alone: depth from y
    (the root at the top, callees below: the same with --reverse, whose
    root is the innermost frames), parent = the frame one level closer to
    the root whose samples contain this frame's."""
    roots = [f for f in frames if f.root]
    if len(roots) != 1:
        fail("%d root frames" % len(roots))
    root = roots[0]
    for f in frames:
        f.depth = round((f.y - root.y) / 16)
        if f.depth < 0:
            fail("frame %r is drawn above the root" % f.name)
    by_depth = collections.defaultdict(list)
    for f in frames:
        by_depth[f.depth].append(f)
    paths = {}
    for f in sorted(frames, key=lambda f: f.depth):
        if f.root:
            f.path = ()
            continue
        parents = [p for p in by_depth[f.depth - 1] if p.o <= f.o and f.o + f.n <= p.o + p.n]
        if len(parents) != 1:
            fail("frame %r (depth %d, samples %d..%d) has %d parents" % (f.name, f.depth, f.o, f.o + f.n, len(parents)))
        f.path = parents[0].path + (f.name,)
        if f.path in paths:
            fail("path drawn twice: %r" % (f.path,))
        paths[f.path] = f.n
    return root, paths


def check_geometry(frames, total):
    scale = (1200 - 2 * 10) / total
    for f in frames:
        if abs(f.w - f.n * scale) > 0.006 or abs(f.x - (10 + f.o * scale)) > 0.006:
            fail("frame %r: x %.2f width %.2f, but %d samples at offset %d of %d make x %.3f width %.3f"
                 % (f.name, f.x, f.w, f.n, f.o, total, 10 + f.o * scale, f.n * scale))


def check_svg_against_folded(svg, folded, reverse=False):
    stacks = read_folded(folded)
    total = sum(c for _, c in stacks)
    want = {tuple(svg_display(n) for n in p): c for p, c in tree_of(stacks, reverse).items()}
    _, frames, notes, title = read_svg(svg)
    root, got = svg_paths(frames)
    if root.n != total:
        fail("root frame has %d samples, the folded stacks %d" % (root.n, total))
    check_geometry(frames, total)
    drawn = {p: c for p, c in want.items() if c * 10000 >= total}
    if got != drawn:
        missing = [p for p in drawn if p not in got][:3]
        extra = [p for p in got if p not in drawn][:3]
        wrong = [(p, got[p], drawn[p]) for p in got if p in drawn and got[p] != drawn[p]][:3]
        fail("%s: frames differ from the folded stacks: missing %r, extra %r, wrong counts %r" % (svg, missing, extra, wrong))
    elided = len(want) - len(drawn)
    elided_samples = sum(c for p, c in want.items() if c * 10000 < total and (len(p) == 1 or p[:-1] in drawn))
    note = notes.get("elided", "")
    if elided:
        m = re.match(r"(\d+) frames under 0\.01% of the samples are not drawn \((\d+) samples", note)
        if not m or int(m.group(1)) != elided or int(m.group(2)) != elided_samples:
            fail("elision note %r, expected %d frames (%d samples)" % (note, elided, elided_samples))
    elif "Every frame is drawn" not in note:
        fail("no elision, but the note says %r" % note)
    for name in {n for frames_, _ in stacks for n in frames_}:
        if not any(f.name == svg_display(name) for f in frames) and any(c * 10000 >= total for p, c in want.items() if p[-1] == svg_display(name)):
            fail("function %r has no frame" % name)
    return frames, title, total, elided


def test_svg(env):
    rec = env.record_double()
    folded = env.convert_to(rec, "folded", "double.folded")
    svg = env.convert_to(rec, "svg", "double.svg")
    frames, title, total, _ = check_svg_against_folded(svg, folded)
    print("   %d frames match the folded stacks of %d samples" % (len(frames), total))
    # The title: Zeek version, host, pid, duration, samples.
    summary = run([env.convert, "--no-cache", "-q", "-f", "summary", "-o", "-", rec]).stdout.decode()
    m = re.search(r"(\d+) samples over ([\d.]+) s", summary)
    if not m or "Zeek 8.0.10 on " not in title or "%s samples over %s s" % m.groups() not in title:
        fail("title %r does not give the version, host, samples and duration of the summary (%r)" % (title, m and m.group(0)))
    # Kinds: handler bodies, script functions, BiFs, the empty stack.
    kinds = {f.name: f.kind for f in frames}
    expect = {"connection_state_remove base/protocols/http/main.zeek:329": "h", "HTTP::parse_request": "s",
              "md5_hash": "b", "empty_call_stack": "i"}
    for name, kind in expect.items():
        if kinds.get(name) != kind:
            fail("frame %r has kind %r, expected %r" % (name, kinds.get(name), kind))
    for f in frames:
        if not f.root and not re.search(r"\n.*%d samples, [\d.]+%%$" % f.n, f.title):
            fail("tooltip of %r does not give its samples and share: %r" % (f.name, f.title))
    # --reverse: innermost frames at the root, drawn downwards.
    rsvg = env.convert_to(rec, "svg", "double-reverse.svg", "--reverse")
    check_svg_against_folded(rsvg, folded, reverse=True)
    print("   --reverse matches the reversed stacks")
    # Thousands of stacks: frames under 0.01 % are left out and counted.
    big = env.generate("big.zspy", "--samples", "200000", "--stacks", "3000")
    frames, _, total, elided = check_svg_against_folded(env.convert_to(big, "svg", "big.svg"),
                                                        env.convert_to(big, "folded", "big.folded"))
    if not elided:
        fail("3000 stacks over 200000 samples: nothing was elided; the test no longer covers elision")
    print("   3000 stacks: %d frames drawn, %d elided, as the note says" % (len(frames), elided))
    # Bad input: one line naming the file, no output.
    bad = env.path("bad.zspy")
    open(bad, "w").write("not a recording\n")
    out = env.path("bad.svg")
    r = run([env.convert, "--no-cache", "-f", "svg", "-o", out, bad], check=False)
    err = r.stderr.decode().strip().splitlines()
    if r.returncode == 0 or len(err) != 1 or bad not in err[0] or os.path.exists(out):
        fail("bad input: exit %d, stderr %r, output left: %s" % (r.returncode, err, os.path.exists(out)))


# ---- render ----------------------------------------------------------------

def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif ctype == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, color, _, _, interlace = ihdr
    if depth != 8 or color not in (2, 6) or interlace:
        fail("%s: PNG depth %d colour type %d interlace %d not handled" % (path, depth, color, interlace))
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def screenshot(env, browser, svg, name, fragment="", height=400):
    png = env.path(name)
    run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--user-data-dir=" + env.path("chromium-profile"), "--screenshot=" + png,
         "--window-size=1200,%d" % height, "file://" + svg + fragment])
    if not os.path.exists(png):
        fail("chromium wrote no screenshot of %s" % svg)
    return png_pixels(png)


def colour_counts(rows):
    counts = collections.Counter()
    for row in rows:
        counts.update(row)
    return counts


def test_render(env):
    browser = chromium()
    if not browser:
        print("SKIP: no chromium installed (Debian: apt-get install chromium; scripts/install-deps.sh does)")
        sys.exit(77)
    rec = env.record_double(seconds=2)
    svg = env.convert_to(rec, "svg", "double.svg")
    w, h, rows = screenshot(env, browser, svg, "plain.png")
    counts = colour_counts(rows)
    blue = sum(n for (r, g, b), n in counts.items() if b > 200 and r < 120 and 110 < g < 180)
    green = sum(n for (r, g, b), n in counts.items() if g > 170 and r < 150 and b < 120)
    magenta = sum(n for (r, g, b), n in counts.items() if (r, g, b) == (230, 0, 230))
    print("   %dx%d screenshot: %d colours, %d handler-blue and %d script-green pixels" % (w, h, len(counts), blue, green))
    if len(counts) < 8 or counts.most_common(1)[0][1] > 0.97 * w * h:
        fail("the screenshot is (nearly) blank: %d colours" % len(counts))
    if blue < 500 or green < 500:
        fail("no flame graph in the screenshot (handler-blue %d, script-green %d pixels)" % (blue, green))
    if magenta:
        fail("%d search-highlight pixels without a search" % magenta)
    # The inline script runs: a search given in the URL highlights frames.
    _, _, rows = screenshot(env, browser, svg, "search.png", "#search=parse_request")
    magenta = sum(n for c, n in colour_counts(rows).items() if c == (230, 0, 230))
    if magenta < 200:
        fail("searching parse_request highlighted %d pixels: the inline script did not run" % magenta)
    print("   #search=parse_request: %d highlighted pixels" % magenta)
    # A deep graph (the double's chain of 300 nested script calls, 1 s of
    # the recording): thousands of px tall, and its first screen (1000 px)
    # shows the root (all, in its grey across the whole width) and the
    # handlers and script functions under it.
    deep = env.record_double(seconds=2, extra=["--deep", "300"], name="deep.zspy")
    svg = env.convert_to(deep, "svg", "deep.svg")
    tall = int(ET.parse(svg).getroot().get("height"))
    if tall < 3000:
        fail("the --deep 300 graph is %d px tall: the test no longer covers a deep graph" % tall)
    w, h, rows = screenshot(env, browser, svg, "deep.png", height=1000)
    counts = colour_counts(rows)
    root = counts.get((205, 205, 205), 0)
    blue = sum(n for (r, g, b), n in counts.items() if b > 200 and r < 120 and 110 < g < 180)
    green = sum(n for (r, g, b), n in counts.items() if g > 170 and r < 150 and b < 120)
    if root < 0.8 * 1180 * 15 or blue < 500 or green < 500:
        fail("a %d px graph: its first %d px show %d root-grey, %d handler-blue and %d script-green pixels"
             % (tall, h, root, blue, green))
    print("   a %d px deep graph: the first %d px show the root (%d px) and the frames under it"
          % (tall, h, root))


# ---- speedscope -----------------------------------------------------------

def validate(doc, path):
    try:
        import jsonschema
    except ImportError:
        fail("python3 jsonschema is missing (Debian: python3-jsonschema; scripts/install-deps.sh installs it)")
    schema = json.load(open(os.path.join(HERE, "speedscope-schema.json")))
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as e:
        fail("%s does not follow speedscope's schema: %s" % (path, e.message))


def info_of(env, rec):
    out = run([env.convert, "--info", rec]).stdout.decode()
    # --info's own lines, not those of the recorder's end report it quotes.
    per_pid = {int(p): int(n) for p, n in re.findall(r"^  pid (\d+): (\d+) samples", out, re.M)}
    span = float(re.search(r"samples from \S+ for ([\d.]+) s", out).group(1))
    return per_pid, span


def stacks_of(doc, profile):
    names = [f["name"] for f in doc["shared"]["frames"]]
    return collections.Counter(";".join(names[i] for i in s) for s in profile["samples"])


def test_speedscope(env):
    rec = env.record_double(seconds=3, rate=200)
    gen = env.generate("gen.zspy", "--samples", "5000", "--stacks", "50", "--rate", "100")
    out = env.convert_to([rec, gen], "speedscope", "both.json")
    doc = json.load(open(out, encoding="utf-8"))
    validate(doc, out)
    if len(doc["profiles"]) != 2:
        fail("two recordings of two processes gave %d profiles" % len(doc["profiles"]))
    for r, rate in ((rec, 200), (gen, 100)):
        per_pid, span = info_of(env, r)
        (pid, count), = per_pid.items()
        prof = [p for p in doc["profiles"] if re.match(r"zeek pid %d\b" % pid, p["name"])]
        if len(prof) != 1:
            fail("no profile named for pid %d: %r" % (pid, [p["name"] for p in doc["profiles"]]))
        p = prof[0]
        if p["unit"] != "microseconds" or len(p["samples"]) != count or len(p["weights"]) != count:
            fail("pid %d: %d samples, %d weights; --info counts %d" % (pid, len(p["samples"]), len(p["weights"]), count))
        length = p["endValue"] - p["startValue"]
        if abs(sum(p["weights"]) - length) > 0.01 * count:
            fail("pid %d: the weights add up to %.3f us, the profile spans %.3f" % (pid, sum(p["weights"]), length))
        period = 1e6 / rate
        first_to_last = (length - period) / 1e6
        if abs(first_to_last - span) > 0.0051:
            fail("pid %d: first to last sample %.4f s, --info says %.2f s" % (pid, first_to_last, span))
        summary = run([env.convert, "--no-cache", "-q", "-f", "summary", "-o", "-", r]).stdout.decode()
        duration = float(re.search(r"samples over ([\d.]+) s", summary).group(1))
        if abs(length / 1e6 - duration) > 0.0051:
            fail("pid %d: the profile spans %.4f s, the summary %.2f s" % (pid, length / 1e6, duration))
        folded = collections.Counter()
        for frames, c in read_folded(env.convert_to(r, "folded", "one.folded")):
            folded[";".join(frames)] += c
        if stacks_of(doc, p) != folded:
            fail("pid %d: the stacks of the samples differ from the folded stacks" % pid)
        print("   pid %d: %d samples over %.3f s, stacks as folded, times as --info (%.2f s) and summary (%.2f s)"
              % (pid, count, length / 1e6, span, duration))
    starts = sorted(p["startValue"] for p in doc["profiles"])
    if starts[0] != 0:
        fail("the earliest profile starts at %r, not 0" % starts[0])
    # A time window keeps the samples inside it, and their times.
    win = json.load(open(env.convert_to(gen, "speedscope", "window.json", "--from", "10", "--to", "20"), encoding="utf-8"))
    validate(win, "window.json")
    n = sum(c for _, c in read_folded(env.convert_to(gen, "folded", "window.folded", "--from", "10", "--to", "20")))
    p = win["profiles"][0]
    if len(p["samples"]) != n or not 9.9e6 < p["endValue"] - p["startValue"] < 10.1e6:
        fail("--from 10 --to 20: %d samples over %.0f us; folded has %d" % (len(p["samples"]), p["endValue"] - p["startValue"], n))
    print("   --from 10 --to 20: %d samples over %.2f s" % (n, (p["endValue"] - p["startValue"]) / 1e6))


# ---- hostile names and normalized paths -----------------------------------

ODD_NAMES = ["http_<header> & \"quoted\" 'x'", "HTTP::build_url\x01\x7f\tctl", "fmt]]>\ufffd\ufffd<!--",
             "Files::d\u00e9scribe\u2192\u2713"]
ODD_FILES = ["base/protocols/dns/<main>&\".zeek", "base/utils/site.zeek", "base/protocols/conn/main.zeek"]


def test_names(env):
    expected = env.path("odd.expected")
    rec = env.generate("odd.zspy", "--samples", "30000", "--stacks", "400", "--odd-names", "--expect", expected)
    folded = env.convert_to(rec, "folded", "odd.folded")
    if sorted(open(folded, "rb").read().splitlines()) != sorted(open(expected, "rb").read().splitlines()):
        fail("folded output of the odd names differs from zs-gen's expectation")
    svg = env.convert_to(rec, "svg", "odd.svg")
    check_svg_against_folded(svg, folded)  # parses as XML, every frame where it belongs
    _, frames, _, _ = read_svg(svg)
    titles = {f.name: f.title for f in frames}
    for name in ODD_NAMES:
        if svg_display(name) not in titles:
            fail("the SVG has no frame titled %r" % svg_display(name))
    if not any("base/protocols/dns/<main>&\".zeek:398" in t for t in titles.values()):
        fail("the hostile file name is not in a tooltip")
    doc = json.load(open(env.convert_to(rec, "speedscope", "odd.json"), encoding="utf-8"))
    validate(doc, "odd.json")
    names = {f["name"] for f in doc["shared"]["frames"]}
    files = {f.get("file") for f in doc["shared"]["frames"]}
    for name in ODD_NAMES:
        if name not in names:
            fail("speedscope has no frame named %r" % name)
    for f in ODD_FILES:
        if f not in files:
            fail("speedscope has no frame in %r" % f)
    print("   hostile names: folded as expected, SVG and JSON well-formed, names escaped and intact")
    # One spelling per script in every format: no "./" segment, no "//".
    summary = env.convert_to(rec, "summary", "odd.summary", "--top", "0")
    pprof = env.convert_to(rec, "pprof", "odd.pb.gz")
    raw = run(["go", "tool", "pprof", "-raw", pprof]).stdout
    outputs = {"folded": open(folded, "rb").read(), "summary": open(summary, "rb").read(),
               "svg": open(svg, "rb").read(), "speedscope": open(env.path("odd.json"), "rb").read(), "pprof": raw}
    bad = re.compile(rb"(^|[\s/\"'>])\./|[a-z]//[a-z]")
    for fmt, text in outputs.items():
        m = bad.search(text)
        if m:
            fail("%s output has an unnormalized path near %r" % (fmt, text[max(0, m.start() - 40):m.end() + 40]))
        wants = [b"connection_state_remove base/protocols/conn/main.zeek:290"]
        if fmt != "folded":  # the one format without file names
            wants.append(b"base/utils/site.zeek")
        for want in wants:
            if want not in text:
                fail("%s output lacks %r" % (fmt, want))
    for line in open(summary, encoding="utf-8", errors="replace"):
        m = re.search(r"(\S+\.zeek:\d+)\s+\1\s*$", line)
        if m:
            fail("the summary repeats a location: %r" % line.rstrip())
    print("   paths normalized in folded, summary, SVG, speedscope and pprof; no location said twice")


# ---- long C++ names ---------------------------------------------------------

# What the summary shows of zs-gen --native's longest names (700 to 1,300
# characters demangled), and a piece of each full name that every format
# keeping full names must have.
SHORT_NAMES = {
    "std::_Rb_tree<...>::_M_insert_unique<...>": "std::_Rb_tree<std::__cxx11::basic_string<char",
    "__gnu_cxx::__ops::_Iter_comp_iter<...>::operator()<...>":
        "_Iter_comp_iter<zeek::detail::sort_vals(std::vector<zeek::Val*, std::allocator<zeek::Val*> >&)::"
        "{lambda(zeek::Val*, zeek::Val*)#1}>::operator()<",
    "std::__introsort_loop<...>": "void std::__introsort_loop<__gnu_cxx::__normal_iterator<",
    "zeek::EventHandler::Call": "zeek::EventHandler::Call(std::vector<zeek::IntrusivePtr<zeek::Val>",
}
SUMMARY_ROW = re.compile(r"^ +\d+ +[\d.]+% +\d+ +[\d.]+%  (.*?) *$")


def test_cxx_names(env):
    rec = env.generate("native.zspy", "--samples", "20000", "--stacks", "300", "--native", "--zeek-version", "8.2.2")
    summary = open(env.convert_to(rec, "summary", "native.summary", "--top", "0"), encoding="utf-8").read()
    rows = [m.group(1) for m in map(SUMMARY_ROW.match, summary.splitlines()) if m]
    if len(rows) < 30:
        fail("the summary has %d function rows" % len(rows))
    for short in SHORT_NAMES:
        if short not in rows:
            fail("the summary has no row %r: %r" % (short, rows))
    # The column's bound: 64 characters, a script row's file:line after it.
    for row in rows:
        name = row.split("  ")[0]
        if len(name) > 64 or "basic_string" in row or "(" in name.replace("operator()", ""):
            fail("a summary row not shortened to 64 characters: %r" % row)
    print("   summary: %d rows, the longest C++ names as %s" % (len(rows), ", ".join(SHORT_NAMES)))
    # Everywhere else the names stay whole.
    folded = open(env.convert_to(rec, "folded", "native.folded"), encoding="utf-8").read()
    speedscope = open(env.convert_to(rec, "speedscope", "native.json"), encoding="utf-8").read()
    raw = run(["go", "tool", "pprof", "-raw", env.convert_to(rec, "pprof", "native.pb.gz")]).stdout.decode()
    for fmt, text in (("folded", folded), ("speedscope", speedscope), ("pprof", raw)):
        for short, piece in SHORT_NAMES.items():
            if piece not in text:
                fail("%s output lacks the full name of %s (%r)" % (fmt, short, piece))
    print("   folded, speedscope and pprof keep the full names")
    # The SVG: boxes show the short name (cut to fit), tooltips the full one.
    _, frames, _, _ = read_svg(env.convert_to(rec, "svg", "native.svg"))
    seen = set()
    for f in frames:
        for short, piece in SHORT_NAMES.items():
            if piece not in f.name:
                continue
            seen.add(short)
            if f.label != short:
                fail("SVG frame %r: label %r, not %r" % (f.name[:80], f.label, short))
            if f.text and f.text != short and not (f.text.endswith("..") and short.startswith(f.text[:-2])):
                fail("SVG frame %r shows %r, not (a cut of) %r" % (f.name[:80], f.text, short))
        if f.label is None and len(f.text) > 64:
            fail("SVG frame shows a long unshortened label %r" % f.text)
    if seen != set(SHORT_NAMES):
        fail("the SVG has no frames of %r" % (set(SHORT_NAMES) - seen))
    print("   SVG: short labels in the boxes, full names in the tooltips")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    env = Env(sys.argv[1])
    tests = {"svg": test_svg, "render": test_render, "speedscope": test_speedscope, "names": test_names,
             "cxx-names": test_cxx_names}
    if sys.argv[2] not in tests:
        print(__doc__)
        sys.exit(2)
    try:
        tests[sys.argv[2]](env)
    finally:
        shutil.rmtree(env.tmp, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
