#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Converter benchmark on recordings written by zs-gen (tests/tools/zs_gen.c):
#   - throughput: samples per second converting a 10M-sample recording of
#     ~1,000 distinct stacks to pprof, without the cache (best of 3 runs);
#   - peak RSS of that conversion (it must not grow with the samples);
#   - cache speedup: converting a 1M-sample recording with an empty cache vs
#     the second conversion, served from the cache (best of 3 each).
# Prints `metric | target | measured | ok` and exits non-zero when a target
# is missed. Not part of ctest: timings depend on the machine.
#
# usage: tests/bench/convert_bench.sh BUILD_DIR
# ZS_BENCH_SAMPLES (default 10000000) and ZS_BENCH_RUNS (default 3) scale it.
set -euo pipefail

build=${1:?usage: convert_bench.sh BUILD_DIR}
build=$(cd "$build" && pwd)
convert=$build/zeek-spy-convert
gen=$build/tests/zs-gen
samples=${ZS_BENCH_SAMPLES:-10000000}
cache_samples=1000000
runs=${ZS_BENCH_RUNS:-3}
export LC_ALL=C

fail() { echo "convert_bench: $*" >&2; exit 2; }
for bin in "$convert" "$gen"; do
    [[ -x $bin ]] || fail "$bin is not built (make -C $build)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/zs-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

now_ns() { date +%s%N; }

# run_measured CMD...: runs CMD, sets elapsed (seconds) and rss_kb (peak
# resident set). /usr/bin/time (Debian package `time`) when present, else
# python3's getrusage of the child, an upper bound: a child's peak includes
# the forked python it was before exec (~10 MB).
run_measured() {
    local t0 t1
    if [[ -x /usr/bin/time ]]; then
        t0=$(now_ns)
        /usr/bin/time -f '%M' -o "$work/rss" "$@" >/dev/null 2>"$work/stderr" ||
            { cat "$work/stderr" >&2; fail "failed: $*"; }
        t1=$(now_ns)
        rss_kb=$(tail -1 "$work/rss")
    else
        t0=$(now_ns)
        python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$@" >"$work/rss" || fail "failed: $*"
        t1=$(now_ns)
        rss_kb=$(tail -1 "$work/rss")
    fi
    elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
}

min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

echo "generating $samples samples over 1000 stacks ..."
t0=$(now_ns)
"$gen" -o "$work/big.zspy" --samples "$samples" --stacks 1000 --seed 42 2>/dev/null
t1=$(now_ns)
echo "  $(stat -c %s "$work/big.zspy") bytes in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s"

# The output must be right before its speed means anything.
"$convert" --no-cache -q -f folded -o "$work/big.folded" "$work/big.zspy"
total=$(awk '{ n += $NF } END { print n + 0 }' "$work/big.folded")
[[ $total == "$samples" ]] || fail "the conversion has $total samples, not $samples"

best=999999 peak=0
for ((i = 1; i <= runs; i++)); do
    rm -f "$work/big.pb.gz"
    run_measured "$convert" --no-cache -q -o "$work/big.pb.gz" "$work/big.zspy"
    echo "  run $i: $elapsed s, peak RSS $((rss_kb / 1024)) MiB"
    best=$(min "$best" "$elapsed")
    peak=$(max "$peak" "$rss_kb")
done
throughput=$(awk -v n="$samples" -v t="$best" 'BEGIN { printf "%d", n / t }')
peak_mb=$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')

echo "generating $cache_samples samples for the cache ..."
"$gen" -o "$work/small.zspy" --samples "$cache_samples" --stacks 1000 --seed 43 2>/dev/null
cold=999999 warm=999999
for ((i = 1; i <= runs; i++)); do
    rm -f "$work/cache.sqlite"*
    run_measured "$convert" --cache "$work/cache.sqlite" -q -o "$work/small.pb.gz" "$work/small.zspy"
    cold=$(min "$cold" "$elapsed")
    run_measured "$convert" --cache "$work/cache.sqlite" -v -o "$work/small.pb.gz" "$work/small.zspy"
    grep -q "served from the cache" "$work/stderr" 2>/dev/null || [[ ! -x /usr/bin/time ]] ||
        fail "the second conversion was not served from the cache"
    warm=$(min "$warm" "$elapsed")
    echo "  run $i: empty cache $cold s, from the cache $warm s (best so far)"
done
speedup=$(awk -v a="$cold" -v b="$warm" 'BEGIN { printf "%.1f", a / b }')

ok() { awk "BEGIN { exit !($1) }" && echo yes || echo NO; }
t_ok=$(ok "$throughput >= 1000000")
r_ok=$(ok "$peak_mb < 200")
c_ok=$(ok "$speedup >= 5")

echo
printf '%-58s | %-10s | %-12s | %s\n' metric target measured ok
printf '%-58s | %-10s | %-12s | %s\n' "throughput, samples/s (--no-cache, $samples samples)" ">= 1000000" "$throughput" "$t_ok"
printf '%-58s | %-10s | %-12s | %s\n' "peak RSS, MB (same conversion)" "< 200" "$peak_mb" "$r_ok"
printf '%-58s | %-10s | %-12s | %s\n' "cache speedup ($cache_samples samples: empty cache vs hit)" ">= 5x" "${speedup}x" "$c_ok"
printf '  (best of %d: %s s for %s samples; empty cache %s s, from the cache %s s)\n' \
    "$runs" "$best" "$samples" "$cold" "$warm"

[[ $t_ok == yes && $r_ok == yes && $c_ok == yes ]]
