#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Golden recordings: every recording format version ever released must keep
# converting to exactly the same output. tests/golden/v<N>/ holds a recording
# of format version N, its summary (`-f summary --top 0`) and its sorted
# folded stacks; this re-converts each, without and through a fresh cache
# (first run stores, second run is served from it), and diffs.
#
# usage: tests/e2e/golden_test.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: golden_test.sh BUILD_DIR}
convert=$(cd "$build" && pwd)/zeek-spy-convert
golden=$(cd "$(dirname "$0")/../golden" && pwd)
export LC_ALL=C

fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -x $convert ]] || fail "$convert is not built"

work=$(mktemp -d "${TMPDIR:-/tmp}/zs-golden.XXXXXX")
trap 'rm -rf "$work"' EXIT

checked=0
for dir in "$golden"/v*/; do
    dir=${dir%/}
    version=$(basename "$dir")
    rec=$dir/recording.zspy
    [[ -f $rec ]] || fail "$version: no recording.zspy"
    for run in no-cache cache-store cache-hit; do
        case $run in
        no-cache) opts=(--no-cache) ;;
        *) opts=(--cache "$work/$version.sqlite") ;;
        esac
        "$convert" "${opts[@]}" -q -f summary --top 0 -o - "$rec" >"$work/summary" ||
            fail "$version ($run): summary conversion failed"
        diff -u "$dir/expected-summary.txt" "$work/summary" ||
            fail "$version ($run): the summary changed"
        "$convert" "${opts[@]}" -q -f folded -o - "$rec" | sort >"$work/folded" ||
            fail "$version ($run): folded conversion failed"
        diff -u "$dir/expected.folded" "$work/folded" ||
            fail "$version ($run): the folded stacks changed"
    done
    echo "$version: identical (no cache, cache store, cache hit)"
    checked=$((checked + 1))
done
((checked > 0)) || fail "no golden recordings under $golden"
echo PASS
