#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# End-to-end test of zeek-spy-convert --view on recordings written by zs-gen
# (tests/tools/zs_gen.c) as the BPF sampler writes them (format 7, runs of
# off-CPU samples among the on-CPU ones), whose ground truth is known:
#   - the wall view (the default) counts every sample, the cpu view only the
#     on-CPU ones: exact counts per stack, in folded output;
#   - pprof of both views loads in `go tool pprof -raw`, with the sample type
#     of the view (wall or cpu nanoseconds) and its total;
#   - the summary says which view and how many samples were off the CPU; the
#     view combines with a time window; every other format takes it;
#   - --view cpu on a ptrace recording (the golden v6, a zs-gen one of format
#     7) fails with one line naming the file, and leaves no output;
#   - the cache keeps the views apart;
#   - --info shows the sampler and the on- and off-CPU counts.
#
# usage: tests/e2e/views_test.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: views_test.sh BUILD_DIR}
golden=$(cd "$(dirname "$0")/../golden" && pwd)
source "$(dirname "$0")/convert_lib.sh" views
samples=50000

folded_total() { awk '{ n += $NF } END { print n + 0 }' "$1"; }
# The samples column of `go tool pprof -raw` ("<count> <ns>: <location ids>").
raw_total() { awk '/^ *[0-9]+ +[0-9]+: / { n += $1 } END { print n + 0 }' "$1"; }

step "generate $samples samples, about 30 % off the CPU"
"$gen" -o bpf.zspy --samples "$samples" --stacks 300 --seed 4711 --off-cpu 30 \
    --expect wall.expected --expect-cpu cpu.expected 2>gen.err
off=$(sed -nE 's/.*samples \(([0-9]+) off-CPU\).*/\1/p' gen.err)
on=$((samples - off))
((off > samples / 5 && off < samples * 2 / 5)) || { cat gen.err >&2; fail "the generator wrote $off off-CPU samples"; }
[[ $(folded_total wall.expected) == "$samples" ]] || fail "the generator's wall total is wrong"
[[ $(folded_total cpu.expected) == "$on" ]] || fail "the generator's cpu total is not $on"
echo "   $on on-CPU, $off off-CPU"

step "folded: the wall view (the default) has every sample, the cpu view the on-CPU ones"
"$convert" --no-cache -q -f folded -o - bpf.zspy | sort >wall.folded
"$convert" --no-cache -q --view wall -f folded -o - bpf.zspy | sort | cmp -s - wall.folded ||
    fail "--view wall is not the default"
diff -u <(sort wall.expected) wall.folded >wall.diff || { head -20 wall.diff >&2; fail "wall view: folded differs"; }
"$convert" --no-cache -q --view cpu -f folded -o - bpf.zspy | sort >cpu.folded
diff -u <(sort cpu.expected) cpu.folded >cpu.diff || { head -20 cpu.diff >&2; fail "cpu view: folded differs"; }
grep -q '^empty_call_stack ' wall.folded || fail "no empty_call_stack in the wall view"

step "pprof of both views in go tool pprof -raw: sample type and total"
for view in wall cpu; do
    "$convert" --no-cache -q --view "$view" -o "$view.pb.gz" bpf.zspy
    go tool pprof -raw "$view.pb.gz" >"$view.raw" 2>raw.err || { cat raw.err >&2; fail "$view: go tool pprof -raw rejects it"; }
    want=$([[ $view == wall ]] && echo "$samples" || echo "$on")
    grep -q "^samples/count\[dflt\] $view/nanoseconds$" "$view.raw" ||
        { head -12 "$view.raw" >&2; fail "$view: sample type is not samples/count, $view/nanoseconds"; }
    grep -q "^PeriodType: $view nanoseconds$" "$view.raw" || fail "$view: period type is not $view nanoseconds"
    [[ $(raw_total "$view.raw") == "$want" ]] || fail "$view: pprof -raw counts $(raw_total "$view.raw"), expected $want"
    echo "   $view: $want samples, $view/nanoseconds"
done

step "the summary names the view and counts the off-CPU samples"
"$convert" --no-cache -f summary --top 3 -o wall.summary bpf.zspy 2>/dev/null
"$convert" --no-cache --view cpu -f summary --top 3 -o cpu.summary bpf.zspy 2>/dev/null
pct=$(awk -v o="$off" -v n="$samples" 'BEGIN { printf "%.1f", 100 * o / n }')
grep -qxF "wall-clock view: on- and off-CPU samples; $off of them ($pct%) off-CPU" wall.summary ||
    { head -3 wall.summary >&2; fail "wall summary: no view line with $off off-CPU"; }
grep -qxF "on-CPU view: on-CPU samples only; $off off-CPU samples left out" cpu.summary ||
    { head -3 cpu.summary >&2; fail "cpu summary: no view line"; }
grep -q "^$samples samples over" wall.summary || fail "wall summary: not $samples samples"
grep -q "^$on samples over" cpu.summary || fail "cpu summary: not $on samples"

step "the view with a time window: the window's off-CPU samples are the difference"
"$convert" --no-cache -q --from 20 --to 80 -f folded -o win-wall.folded bpf.zspy
"$convert" --no-cache -q --view cpu --from 20 --to 80 -f folded -o win-cpu.folded bpf.zspy
"$convert" --no-cache -q --view cpu --from 20 --to 80 -f summary -o win-cpu.summary bpf.zspy
win_off=$(( $(folded_total win-wall.folded) - $(folded_total win-cpu.folded) ))
((win_off > 0 && win_off < off)) || fail "window: $win_off off-CPU samples"
grep -qxF "on-CPU view: on-CPU samples only; $win_off off-CPU samples left out" win-cpu.summary ||
    { head -3 win-cpu.summary >&2; fail "window: the summary does not count $win_off off-CPU samples"; }

step "every other format takes the view"
"$convert" --no-cache -q --view cpu -f svg -o cpu.svg bpf.zspy
grep -q "<svg" cpu.svg || fail "cpu view: no svg"
"$convert" --no-cache -q --view cpu -f speedscope -o cpu.speedscope.json bpf.zspy
got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(sum(len(p["samples"]) for p in d["profiles"]))' cpu.speedscope.json)
[[ $got == "$on" ]] || fail "cpu view: speedscope has $got samples, expected $on"
"$convert" --no-cache -q --view cpu -f summary --base bpf.zspy -o base.summary bpf.zspy ||
    fail "cpu view: --base failed"
grep -q "^Largest changes against the base ($on samples" base.summary || fail "cpu view: the base is not of the cpu view"

# A conversion that must fail: non-zero exit, one line naming the file and
# saying why, no output file.
refused() {
    local what=$1 file=$2 out=$work/refused.$RANDOM
    for opts in "--no-cache" "--cache $cache"; do
        local status=0
        # shellcheck disable=SC2086
        "$convert" $opts --view cpu -f folded -o "$out" "$file" 2>err.txt || status=$?
        ((status != 0)) || fail "$what ($opts): exit status 0"
        [[ $(wc -l <err.txt) == 1 ]] || { cat err.txt >&2; fail "$what ($opts): not a one-line error"; }
        grep -qxF "zeek-spy-convert: error: bad usage: $file: recorded by the ptrace sampler: its samples are wall-clock only; --view cpu needs a recording made with --sampler bpf" err.txt ||
            { cat err.txt >&2; fail "$what ($opts): not the expected message"; }
        [[ -e $out ]] && fail "$what ($opts): left an output file"
    done
    echo "   $what: exit $status, $(cat err.txt)"
}

step "--view cpu on the ptrace sampler's recordings: refused"
refused "golden v6" "$golden/v6/recording.zspy"
refused "golden v1" "$golden/v1/recording.zspy"
"$gen" -o ptrace.zspy --samples 2000 --stacks 20 --seed 3 --expect ptrace.expected 2>/dev/null
refused "zs-gen ptrace (format 7)" "$work/ptrace.zspy"
"$convert" --no-cache -q -f summary -o ptrace.summary ptrace.zspy
grep -q "view" ptrace.summary && fail "a ptrace recording's summary names a view"
"$convert" --no-cache -q -o ptrace.pb.gz ptrace.zspy
# grep reads a file, not a pipe: grep -q would close the pipe at its match and
# pipefail would count go's SIGPIPE as a failure.
go tool pprof -raw ptrace.pb.gz >ptrace.raw 2>/dev/null
grep -q "^samples/count\[dflt\] cpu/nanoseconds$" ptrace.raw ||
    fail "a ptrace recording's pprof type is no longer cpu/nanoseconds"
# Merged with a BPF recording: refused and named, the other one converted.
status=0
"$convert" --no-cache --view cpu -f folded -o merged.folded bpf.zspy ptrace.zspy 2>merged.err || status=$?
((status == 1)) || { cat merged.err >&2; fail "merged: exit $status, expected 1"; }
grep -qF "error: bad usage: ptrace.zspy: recorded by the ptrace sampler" merged.err || { cat merged.err >&2; fail "merged: not named"; }
[[ $(folded_total merged.folded) == "$on" ]] || fail "merged: the BPF recording's $on on-CPU samples not written"
"$convert" --no-cache -q -f summary -o merged.summary bpf.zspy ptrace.zspy
grep -q "view" merged.summary && fail "merged with a ptrace recording, the summary still names a view"
status=0
"$convert" --no-cache --view bogus bpf.zspy 2>err.txt || status=$?
((status == 2)) && grep -q "'bogus' is not wall or cpu" err.txt || { cat err.txt >&2; fail "--view bogus: exit $status"; }

step "the cache keeps the views apart"
rm -f "$cache"
for run in store hit; do
    for view in wall cpu; do
        "$convert" --cache "$cache" -v --view "$view" -f folded -o "cached-$view.folded" bpf.zspy 2>cache.err
        served=$(grep -c "served from the cache" cache.err || true)
        [[ $run == store && $served != 0 ]] && fail "$view: served from the cache the first time (the other view's entry?)"
        [[ $run == hit && $served != 1 ]] && { cat cache.err >&2; fail "$view: not served from the cache the second time"; }
        sort "cached-$view.folded" | cmp -s - "$view.folded" || fail "$view ($run): other output than without the cache"
    done
    "$convert" --cache "$cache" -q --view cpu -f summary --top 3 -o cached-cpu.summary bpf.zspy
    cmp -s cached-cpu.summary cpu.summary || fail "cpu ($run): the summary from the cache differs"
    echo "   $run: wall and cpu each their own"
done

step "--info: the sampler and the on- and off-CPU counts"
"$convert" --info bpf.zspy >info.txt
grep -qx "  sampler: bpf" info.txt || { cat info.txt >&2; fail "--info: no 'sampler: bpf'"; }
grep -qF "  $on on-CPU samples, $off off-CPU samples ($pct% off-CPU)" info.txt ||
    { cat info.txt >&2; fail "--info: no on- and off-CPU counts"; }
grep -q "format version 8" info.txt || fail "--info: not format version 8"
"$convert" --info ptrace.zspy "$golden/v6/recording.zspy" >info-ptrace.txt
[[ $(grep -cx "  sampler: ptrace" info-ptrace.txt) == 2 ]] || { cat info-ptrace.txt >&2; fail "--info: no 'sampler: ptrace'"; }
grep -q "off-CPU samples" info-ptrace.txt && fail "--info counts off-CPU samples of a ptrace recording"
grep -q "samples not marked on or off the CPU: all wall-clock" info-ptrace.txt ||
    fail "--info: a format-7 ptrace recording is not said to be wall-clock"

echo "PASS"
