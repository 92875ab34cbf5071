#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The man pages (man/*.1) against the programs' --help.

usage: man_pages_test.py BUILD_DIR SOURCE_DIR

For each program, every option that `PROGRAM --help` lists (its long form
--xyz and its short form -x) must be documented in OPTIONS of its man page,
written \\-\\-xyz / \\-x in the roff source, with the same argument name; and
every option OPTIONS documents must be in --help (no stale options). With
groff on PATH, `groff -man -Tutf8 -ww -z PAGE` must print nothing; without
groff that check is skipped with a note. Fails with one line naming the
program and the option; prints PASS at the end.
"""
import os
import re
import shutil
import subprocess
import sys

PROGRAMS = ("zeek-spy-record", "zeek-spy-convert")

# An option line of --help: "  -p, --pid PID   text" or "      --all   text".
# Continuation lines are indented further, so a "--native" quoted at the
# start of one is not taken for an option.
HELP_OPTION = re.compile(r"^ {1,8}(?:(-[A-Za-z0-9]), )?(--[A-Za-z0-9][A-Za-z0-9-]*)(?: ([A-Z][A-Z]*))?")

# Options in the roff source: \-\-xyz (each dash of the name written \-) and
# \-x (a single letter, not the second dash of \-\-).
ROFF_LONG = re.compile(r"\\-\\-([A-Za-z0-9]+(?:\\-[A-Za-z0-9]+)*)")
ROFF_SHORT = re.compile(r"(?<!\\-)\\-([A-Za-z0-9])(?![A-Za-z0-9]|\\-)")
ROFF_ARG = re.compile(r"\\fI([A-Z][A-Z]*)\\f[RP]")


class Failure(Exception):
    pass


def help_options(program):
    """{option: argument name or None} from `program --help`."""
    out = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise Failure(f"{os.path.basename(program)}: --help exited {out.returncode}")
    options = {}
    for line in out.stdout.splitlines():
        m = HELP_OPTION.match(line)
        if not m:
            continue
        short, long, arg = m.groups()
        options[long] = arg
        if short:
            options[short] = arg
    if "--help" not in options or "-h" not in options:
        raise Failure(f"{os.path.basename(program)}: no option table found in --help")
    return options


def page_options(page):
    """{option: argument name or None} from the tags of OPTIONS (the line
    after each .TP; nested lists such as -f's formats have no dashes)."""
    lines = open(page, encoding="utf-8").read().splitlines()
    options, in_options = {}, False
    for i, line in enumerate(lines):
        if line.startswith(".SH"):
            in_options = line.split(None, 1)[1:] == ["OPTIONS"]
            continue
        if not in_options or line != ".TP" or i + 1 >= len(lines):
            continue
        tag = lines[i + 1]
        arg = ROFF_ARG.search(tag)
        found = ["--" + m.replace("\\-", "-") for m in ROFF_LONG.findall(tag)]
        found += ["-" + m for m in ROFF_SHORT.findall(tag)]
        for opt in found:
            options[opt] = arg.group(1) if arg else None
    return options


def check_page(program, page, source):
    name = os.path.basename(program)
    rel = os.path.relpath(page, source)
    documented = page_options(page)
    listed = help_options(program)
    if not documented:
        raise Failure(f"{name}: {rel} documents no options (no .TP tags under .SH OPTIONS)")
    for opt, arg in listed.items():
        if opt not in documented:
            dashes = opt.replace("-", "\\-")
            raise Failure(f"{name}: option {opt} of --help is missing from OPTIONS of {rel} "
                          f"(expected {dashes} in a .TP tag)")
        if arg != documented[opt]:
            raise Failure(f"{name}: option {opt} takes {arg or 'no argument'} in --help but "
                          f"{documented[opt] or 'no argument'} in {rel}")
    for opt in documented:
        if opt not in listed:
            raise Failure(f"{name}: option {opt} in OPTIONS of {rel} is not in --help (stale)")
    return len(listed)


def check_groff(page):
    groff = shutil.which("groff")
    if not groff:
        print(f"note: groff not on PATH, rendering of {os.path.basename(page)} not checked")
        return
    out = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", page],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or out.stderr.strip():
        first = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[0]
        raise Failure(f"{os.path.basename(page)}: groff -ww warns: {first}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: man_pages_test.py BUILD_DIR SOURCE_DIR")
    build, source = sys.argv[1], sys.argv[2]
    try:
        for prog in PROGRAMS:
            program = os.path.join(build, prog)
            page = os.path.join(source, "man", prog + ".1")
            if not os.access(program, os.X_OK):
                raise Failure(f"{prog}: no program at {program} (build first)")
            if not os.path.isfile(page):
                raise Failure(f"{prog}: no man page at {page}")
            n = check_page(program, page, source)
            check_groff(page)
            print(f"{prog}: {n} options of --help documented in {os.path.basename(page)}, none stale")
    except Failure as e:
        print(f"FAIL: {e}")
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
