#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The compiled unwind rules against libdwfl's unwinder on the doubles:
# DWARF and stripped, the frame-stack and CallInfo generations, a Spicy
# fiber. Every unwind the compiled rules make must equal libdwfl's, and
# nearly all must be theirs (the general path is for signal frames, PLT
# stubs and code without CFI).
#   unwind_compare.sh BUILD_DIR
set -euo pipefail
build=$1
tool=$build/tests/unwind-compare
samples=300
status=0
for double in zeek-double-8.0 zeek-double-8.2 zeek-double-8.2-stripped "zeek-double-8.2-stripped --spicy-fiber"; do
  # shellcheck disable=SC2086
  set -- $double
  exe=$build/tests/target/$1
  shift
  "$exe" --seconds 20 --quiet "$@" >/dev/null &
  pid=$!
  sleep 0.3
  if ! out=$("$tool" "$pid" "$samples"); then
    echo "FAIL: $double: the compiled rules and libdwfl disagree: $out"
    status=1
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "  $double: $out"
  general=$(sed -n 's/.* general \([0-9]*\) .*/\1/p' <<<"$out")
  frames=$(sed -n 's/.*frames_avg \([0-9.]*\) .*/\1/p' <<<"$out")
  if [ -z "$general" ] || [ "$general" -gt $((samples / 20)) ]; then
    echo "FAIL: $double: $general of $samples unwinds needed the general path (want at most 5 %)"
    status=1
  fi
  if [ "${frames%.*}" -lt 5 ]; then
    echo "FAIL: $double: $frames frames a stack: nothing was unwound"
    status=1
  fi
done
[ $status -eq 0 ] && echo "PASS unwind-compare"
exit $status
