#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Regenerates the seeds of the ELF and DWARF fuzz targets:

    tests/fuzz/make_elf_corpus.py

dwarf/ seed_zeek.cc built for each test-double generation (g++ -g -O0
       -rdynamic), with the sections the DWARF scan never reads removed
       (line tables, location lists, .symtab, .eh_frame), about 140 KB each
elf/   the same without any debug info (a stripped zeek: .dynsym only),
       and a few hand-made headers: bare, 32-bit, with no sections

The seeds are committed (keep them small); rerun this only when the test
double's classes change.
"""
import os
import shutil
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "..", "target")
UNREAD = [".debug_line", ".debug_line_str", ".debug_loclists", ".debug_rnglists",
          ".debug_aranges", ".comment", ".symtab", ".strtab", ".eh_frame", ".eh_frame_hdr",
          ".gcc_except_table"]


def ehdr(cls=2, machine=62, shnum=0, phnum=0, shoff=0, phoff=0):
    """A bare ELF header (64 bytes; the 32-bit one is read as such)."""
    ident = b"\x7fELF" + bytes([cls, 1, 1, 0]) + bytes(8)
    return ident + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0x1000, phoff, shoff, 0, 64, 56,
                               phnum, 64, shnum, 0)


def main():
    corpus = os.path.join(HERE, "corpus")
    tmp = tempfile.mkdtemp(prefix="zs-elf-corpus-")
    for d in ("elf", "dwarf"):
        shutil.rmtree(os.path.join(corpus, d), ignore_errors=True)
        os.makedirs(os.path.join(corpus, d))
    for gen in ("30", "80", "82"):
        exe = os.path.join(tmp, "seed" + gen)
        subprocess.run(["g++", "-std=c++17", "-g", "-O0", "-rdynamic", "-Wno-invalid-offsetof",
                        "-DZEEK_GEN=" + gen, "-I", TARGET, os.path.join(HERE, "seed_zeek.cc"),
                        "-o", exe], check=True)
        cut = [a for s in UNREAD for a in ("-R", s)]
        subprocess.run(["objcopy"] + cut + [exe, os.path.join(corpus, "dwarf", "seed-%s.elf" % gen)],
                       check=True)
        subprocess.run(["objcopy", "--strip-all", "--keep-symbol=version"] + cut +
                       [exe, os.path.join(corpus, "elf", "stripped-%s.elf" % gen)], check=True)
    crafted = {"bare-header.elf": ehdr(), "elf32-header.elf": ehdr(cls=1),
               "not-x86.elf": ehdr(machine=183),
               "sections-past-end.elf": ehdr(shnum=40, shoff=1 << 40)}
    for name, data in crafted.items():
        with open(os.path.join(corpus, "elf", name), "wb") as f:
            f.write(data)
    shutil.rmtree(tmp)
    for d in ("elf", "dwarf"):
        files = sorted(os.listdir(os.path.join(corpus, d)))
        size = sum(os.path.getsize(os.path.join(corpus, d, f)) for f in files)
        print("%-6s %d bytes: %s" % (d, size, " ".join(files)))


if __name__ == "__main__":
    main()
