#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job on a fresh machine: install, build, record a running zeek for
# 5 seconds, convert, and show the profile. Uses a real zeek when one is on
# PATH or ZEEK=/path/to/zeek is set, else the bundled test double of Zeek.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
out=${OUT_DIR:-$top/demo-out}
seconds=${SECONDS_TO_RECORD:-5}
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
mkdir -p "$out"
rm -f "$out/recording.zspy"

zeek=${ZEEK:-$(command -v zeek || true)}
if [ -n "$zeek" ]; then
  echo "demo: profiling a real zeek ($zeek) running demo/workload.zeek" >&2
  (cd "$out" && exec "$zeek" -b "$top/demo/workload.zeek") &
else
  echo "demo: no zeek installed; profiling the bundled test double of Zeek (tests/target)" >&2
  "$build/tests/target/zeek-double-8.0" --seconds $((seconds + 3)) --quiet >/dev/null &
fi
target=$!
trap 'kill $target 2>/dev/null || true' EXIT
sleep 1

"$build/zeek-spy-record" -p "$target" -d "$seconds" -o "$out/recording.zspy"
kill "$target" 2>/dev/null || true
wait "$target" 2>/dev/null || true

"$build/zeek-spy-convert" "$out/recording.zspy" -o "$out/profile.pb.gz"
"$build/zeek-spy-convert" -q "$out/recording.zspy" -f folded -o "$out/profile.folded"
"$build/zeek-spy-convert" -q "$out/recording.zspy" -f svg -o "$out/profile.svg"
"$build/zeek-spy-convert" -q "$out/recording.zspy" -f speedscope -o "$out/profile.speedscope.json"
"$build/zeek-spy-convert" -q "$out/recording.zspy" -f summary --top 15
cat <<MSG

Profile:        $out/profile.pb.gz
Flame graph:    $out/profile.svg   (open it in a browser: click to zoom, Ctrl-F to search)
speedscope:     $out/profile.speedscope.json   (https://www.speedscope.app, or npm's speedscope)
Folded stacks:  $out/profile.folded   (flamegraph.pl, inferno)
Open it with:   go tool pprof -http=:8080 $out/profile.pb.gz
           or:  go tool pprof -top -cum $out/profile.pb.gz
MSG
