#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CI step: builds the libFuzzer targets with clang (-DZS_FUZZ=ON, ASan + UBSan)
# into build-fuzz (or $BUILD_DIR) and runs each for $FUZZ_SECONDS (default 60)
# from the committed seed corpus. Fails when a target finds a crash; the
# crashing input is under build-fuzz/fuzz-work/<target>/crashes/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build-fuzz}
"$top/scripts/install-deps.sh"
CC=clang CXX=clang++ cmake -S "$top" -B "$build" -DZS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}" --target fuzz_reader fuzz_resolver fuzz_layout fuzz_elf fuzz_dwarf \
  fuzz_native >/dev/null
exec "$top/tests/fuzz/run.sh" "$build" "${FUZZ_SECONDS:-60}"
