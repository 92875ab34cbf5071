#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs every libFuzzer target for SECONDS each (default 60), starting from the
# committed seed corpus; fails when any finds a crash. (The saved regressions
# are replayed by ctest instead: the decompression bombs among them would make
# the reader's fuzzer spend its time decompressing.)
#
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DZS_FUZZ=ON
#   make -C build-fuzz fuzz_reader fuzz_resolver fuzz_layout fuzz_elf fuzz_dwarf fuzz_native
#   tests/fuzz/run.sh build-fuzz 60
#
# FUZZ_TARGETS picks targets, FUZZ_JOBS how many run at once (default: one a
# core), FUZZ_SEED libFuzzer's seed.
#
# New corpus entries go to BUILD_DIR/fuzz-work/<target>/corpus, crash inputs to
# BUILD_DIR/fuzz-work/<target>/crashes/ (fix the bug, then copy the input to
# tests/fuzz/regressions/<target>/ so that ctest replays it forever).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [SECONDS]}" && pwd)
seconds=${2:-60}
declare -A max_len=([reader]=32768 [resolver]=16384 [layout]=4096 [elf]=65536 [dwarf]=262144
                   [native]=16384)
# One target: its RESULT line on stdout, its errors on stderr; exit 1 on a crash.
fuzz_one() {
  local name=$1 bin="$build/tests/fuzz/fuzz_$1" work="$build/fuzz-work/$1"
  mkdir -p "$work/corpus" "$work/crashes"
  local log="$work/log.txt"
  "$bin" -seed="${FUZZ_SEED:-0}" -max_total_time="$seconds" -max_len="${max_len[$name]}" -timeout=20 \
         -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$work/crashes/" \
         "$work/corpus" "$here/corpus/$name" >"$log" 2>&1
  local rc=$?
  local execs rate cov crashes
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  crashes=$(find "$work/crashes" -type f | wc -l)
  printf 'RESULT fuzz.%-8s %s: %ss, %s execs (%s/s), %s, %d crash file(s), exit %d\n' "$name" \
         "$([ $rc -eq 0 ] && [ "$crashes" -eq 0 ] && echo PASS || echo FAIL)" "$seconds" \
         "${execs:-?}" "${rate:-?}" "${cov:-cov: ?}" "$crashes" "$rc"
  if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
    grep -E -A12 '^==[0-9]+==ERROR|runtime error|invariant broken|^SUMMARY' "$log" | head -40 >&2
    find "$work/crashes" -type f | sed 's/^/  crash input: /' >&2
    return 1
  fi
}

targets=(${FUZZ_TARGETS:-reader resolver layout elf dwarf native})
for name in "${targets[@]}"; do
  if [ ! -x "$build/tests/fuzz/fuzz_$name" ]; then
    echo "fuzz: $build/tests/fuzz/fuzz_$name is missing (configure with CC=clang -DZS_FUZZ=ON and build it)" >&2
    exit 2
  fi
done
echo "fuzz: -seed=${FUZZ_SEED:-0} (0: libFuzzer picks one and prints it), ${FUZZ_JOBS:=$(nproc)} at a time"
# FUZZ_JOBS targets at a time (each libFuzzer process uses one core); each
# one's output is kept apart and printed when it ends.
failed=0
out=$(mktemp -d)
for ((i = 0; i < ${#targets[@]}; i += FUZZ_JOBS)); do
  pids=()
  for name in "${targets[@]:i:FUZZ_JOBS}"; do
    fuzz_one "$name" >"$out/$name.out" 2>"$out/$name.err" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
  done
  for name in "${targets[@]:i:FUZZ_JOBS}"; do
    cat "$out/$name.out"
    cat "$out/$name.err" >&2
  done
done
rm -rf "$out"
exit $failed
