#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CI step: the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
# Builds with -DZS_SANITIZE=ON into build-asan (or $BUILD_DIR) and runs every
# ctest there: unit tests, fuzz replays, end-to-end and fault tests (which
# then also exercise the sanitized recorder, converter and test double).
#
#   scripts/ci-sanitize.sh [ctest args...]      # e.g. -R fault
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build-asan}
"$top/scripts/install-deps.sh"
cmake -S "$top" -B "$build" -DZS_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}" >/dev/null
echo "zeek-spy: sanitizer build in $build" >&2
# Any report fails the test that triggered it. Leak checking stays on for the
# tools; LeakSanitizer needs ptrace of its own threads at exit, which a
# process being recorded (the test double) cannot allow, so the double opts
# out itself (tests/target/zeek_double.cc, __lsan_is_turned_off).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
# RUN_SERIAL keeps the tests that measure time alone; the others share the cores.
ctest --output-on-failure -j"${CTEST_JOBS:-$(nproc)}" "$@"
