#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the dependencies, builds, and runs the whole test suite with ctest.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
cd "${BUILD_DIR:-$top/build}"
# RUN_SERIAL keeps the tests that measure time alone; the others share the cores.
ctest --output-on-failure -j"${CTEST_JOBS:-$(nproc)}" "$@"
