#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs every build and test dependency of zeek-spy on Debian 12.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
packages=(build-essential cmake pkg-config g++
          libzstd-dev zstd libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
          libelf-dev libdw-dev libsqlite3-dev sqlite3 golang-go
          python3 time binutils procps
          # the load test's network namespace and veth pair
          iproute2
          # the --top test drives a terminal
          tmux
          # the converter's SVG and speedscope tests: headless rendering, JSON schema
          chromium python3-jsonschema
          # clang with its libFuzzer and sanitizer runtimes (scripts/ci-fuzz.sh)
          clang libclang-rt-14-dev
          # the BPF sampler (recorder/bpf): libbpf, and bpftool for vmlinux.h and the skeleton
          libbpf-dev bpftool)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "zeek-spy: installing ${missing[*]}" >&2
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi
