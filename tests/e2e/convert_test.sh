#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# End-to-end test of zeek-spy-convert on recordings written by zs-gen (the
# test generator, tests/tools/zs_gen.c), whose ground truth is known:
#   - folded output equals the generator's expected stacks, through the cache;
#   - the pprof profile, read by the real `go tool pprof`, has every sample
#     and the generator's most frequent leaf on top;
#   - a second conversion is served from the cache, with the same output;
#   - bad recordings fail with one line naming the file and leave no output;
#     a truncated one converts with a warning;
#   - Funcs missing from the snapshot show as [unresolved 0x...] and are
#     counted in the summary.
#   - -o naming a FIFO writes into it and leaves it a FIFO.
#
# usage: tests/e2e/convert_test.sh BUILD_DIR
# ZS_E2E_SEED and ZS_E2E_CUT override the generator seed and the truncation
# point (both are printed, to replay a failure).
set -euo pipefail

build=${1:?usage: convert_test.sh BUILD_DIR}
source "$(dirname "$0")/convert_lib.sh" convert
seed=${ZS_E2E_SEED:-20240611}
samples=200000

# Sum of the counts of a folded file (the count is after the last space).
folded_total() { awk '{ n += $NF } END { print n + 0 }' "$1"; }

# The leaf with the most samples in a folded file: "count<TAB>name".
top_leaf() {
    awk '{ c = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); leaf[f[n]] += c }
         END { for (l in leaf) print leaf[l] "\t" l }' "$1" | sort -t "$(printf '\t')" -k1,1nr -k2 | head -2
}

step "generate $samples samples over 1000 stacks (seed $seed)"
"$gen" -o rec.zspy --samples "$samples" --stacks 1000 --seed "$seed" --expect expected.folded
[[ $(folded_total expected.folded) == "$samples" ]] || fail "the generator's expected total is wrong"

step "folded output equals the generator's stacks"
"$convert" --cache "$cache" -v -f folded -o first.folded rec.zspy 2>first.err
if grep -q "served from the cache" first.err; then fail "first conversion claims a cache hit"; fi
[[ -s $cache ]] || fail "no cache file written at $cache"
sort first.folded >first.sorted
sort expected.folded >expected.sorted
diff -u expected.sorted first.sorted >folded.diff || { head -20 folded.diff >&2; fail "folded output differs from the expectation"; }
grep -q '^empty_call_stack [0-9]*$' first.sorted || fail "no empty_call_stack line"
grep -q 'connection_state_remove base/protocols/conn/main.zeek:290' first.sorted ||
    fail "no per-body name for the two-body event"

step "second conversion is served from the cache, same output"
"$convert" --cache "$cache" -v -f folded -o second.folded rec.zspy 2>second.err
grep -q "served from the cache" second.err || { cat second.err >&2; fail "second conversion did not use the cache"; }
sort second.folded | cmp -s - first.sorted || fail "output from the cache differs"

step "pprof profile checked with go tool pprof"
"$convert" --cache "$cache" -o rec.pb.gz rec.zspy 2>/dev/null
"$convert" --no-cache -o nocache.pb.gz rec.zspy 2>/dev/null
go tool pprof -raw rec.pb.gz >raw.txt 2>raw.err || { cat raw.err >&2; fail "go tool pprof -raw rejects the profile"; }
# -raw lists each sample as "<samples> <cpu ns>: <location ids>"
raw_total=$(awk '/^ *[0-9]+ +[0-9]+: / { n += $1 } END { print n + 0 }' raw.txt)
[[ $raw_total == "$samples" ]] || fail "pprof -raw counts $raw_total samples, expected $samples"
go tool pprof -top -nodecount=3 rec.pb.gz >top.txt 2>top.err || { cat top.err >&2; fail "go tool pprof -top failed"; }
grep -q "of $samples total" top.txt || { cat top.txt >&2; fail "pprof -top total is not $samples"; }
top_row=$(awk 'found { print; exit } / flat%/ { found = 1 }' top.txt)
pprof_top=$(sed -E 's/^ *[0-9.]+ +[0-9.]+% +[0-9.]+% +[0-9.]+ +[0-9.]+% +//' <<<"$top_row")
pprof_flat=$(awk '{ print $1 }' <<<"$top_row")
mapfile -t leaves < <(top_leaf expected.folded)
want_count=${leaves[0]%%$'\t'*}
want_name=${leaves[0]#*$'\t'}
second_count=${leaves[1]%%$'\t'*}
((want_count > second_count)) || fail "the generator made a tie for the top leaf; pick another seed"
[[ $pprof_top == "$want_name" ]] || { cat top.txt >&2; fail "pprof top function is '$pprof_top', expected '$want_name'"; }
[[ $pprof_flat == "$want_count" ]] || fail "pprof flat of $want_name is $pprof_flat, expected $want_count"
go tool pprof -top rec.pb.gz >top-cache.txt 2>/dev/null
go tool pprof -top nocache.pb.gz >top-nocache.txt 2>/dev/null
cmp -s top-cache.txt top-nocache.txt || fail "pprof from the cache differs from pprof without it"

step "recordings laid out for the other layout generations (8.0, 8.2)"
for version in 8.0.10 8.2.2; do
    "$gen" -o "zeek-$version.zspy" --samples 20000 --stacks 200 --seed "$seed" --zeek-version "$version" \
        --expect "zeek-$version.expected" 2>/dev/null
    "$convert" --no-cache -q -f folded -o - "zeek-$version.zspy" | sort |
        diff -u <(sort "zeek-$version.expected") - >/dev/null ||
        fail "Zeek $version layout: folded output differs from the expectation"
done

# A conversion that must fail: non-zero exit, exactly one line on stderr,
# naming the file (and want, when given), and no output file at all.
expect_error() {
    local what=$1 file=$2 want=${3:-}
    for format in folded pprof; do
        local out=$work/out-$what.$format
        local status=0
        "$convert" --cache "$cache" -f "$format" -o "$out" "$file" 2>err.txt || status=$?
        ((status != 0)) || fail "$what ($format): exit status 0"
        [[ $(wc -l <err.txt) == 1 ]] || { cat err.txt >&2; fail "$what ($format): not a one-line error"; }
        grep -q '^zeek-spy-convert: error: ' err.txt || { cat err.txt >&2; fail "$what: not an error line"; }
        grep -qF "$file" err.txt || { cat err.txt >&2; fail "$what: the error does not name $file"; }
        if [[ -n $want ]]; then
            grep -qF -- "$want" err.txt || { cat err.txt >&2; fail "$what: the error does not say '$want'"; }
        fi
        compgen -G "$out*" >/dev/null && fail "$what ($format): left an output file: $(ls "$out"*)"
    done
    echo "   $what: $(cat err.txt)"
}

step "bad recordings: one-line errors, no output"
if [[ -r /etc/hostname ]]; then cp /etc/hostname hostname.zspy; else echo "sensor-1" >hostname.zspy; fi
expect_error not-a-recording "$work/hostname.zspy" "offset 0"
: >empty.zspy
expect_error empty "$work/empty.zspy"
"$gen" -o magic.zspy --samples 2000 --stacks 20 --seed 1 --damage magic 2>/dev/null
expect_error wrong-magic "$work/magic.zspy" "offset 0"
"$gen" -o version.zspy --samples 2000 --stacks 20 --seed 1 --damage version 2>/dev/null
expect_error newer-version "$work/version.zspy" "format version"
bad_offset=$("$gen" -o frame.zspy --samples 20000 --stacks 100 --seed 1 --damage frame 2>/dev/null)
expect_error corrupt-frame "$work/frame.zspy" "offset $bad_offset"
expect_error missing "$work/no-such-recording.zspy"
# Several inputs, none readable: each named, and exit 1 (2 is for bad usage).
status=0
"$convert" --no-cache -f folded -o "$work/none.folded" "$work/empty.zspy" "$work/hostname.zspy" 2>err.txt || status=$?
((status == 1)) || { cat err.txt >&2; fail "every input unreadable: exit $status, expected 1"; }
grep -qF "$work/empty.zspy" err.txt && grep -qF "$work/hostname.zspy" err.txt ||
    { cat err.txt >&2; fail "every input unreadable: not each one named"; }
echo "   every input unreadable: exit 1, $(wc -l <err.txt) lines"

step "a truncated recording converts, with a warning"
size=$(stat -c %s rec.zspy)
# Past the first frame (header and snapshot), anywhere else.
cut=${ZS_E2E_CUT:-$(( size / 10 + (RANDOM * 32768 + RANDOM) % (size - size / 10 - 1) ))}
echo "   cut at byte $cut of $size"
head -c "$cut" rec.zspy >cut.zspy
status=0
"$convert" --cache "$cache" -f folded -o cut.folded cut.zspy 2>cut.err || status=$?
((status == 0)) || { cat cut.err >&2; fail "truncated recording: exit status $status"; }
[[ -s cut.folded ]] || fail "truncated recording: no output"
recovered=$(folded_total cut.folded)
((recovered > 0 && recovered <= samples)) || fail "truncated recording: $recovered samples"
grep -q "warning: .*cut.zspy.*recovered $recovered samples" cut.err ||
    { cat cut.err >&2; fail "truncated recording: no warning with the recovered count $recovered"; }
# Every recovered stack is one of the generator's, with no more samples.
awk 'NR == FNR { c = $NF; sub(/ [0-9]+$/, ""); want[$0] = c; next }
     { c = $NF; sub(/ [0-9]+$/, ""); if (!($0 in want) || c > want[$0]) { print "unexpected: " $0 " " c; bad = 1 } }
     END { exit bad }' expected.folded cut.folded || fail "truncated recording: stacks not in the expectation"

step "a recording without a trailer (recorder killed) converts, with a warning"
"$gen" -o killed.zspy --samples 5000 --stacks 50 --seed 2 --no-trailer 2>/dev/null
"$convert" --no-cache -f folded -o killed.folded killed.zspy 2>killed.err
grep -q "no trailer.*recovered 5000 samples" killed.err || { cat killed.err >&2; fail "no warning for a missing trailer"; }

step "Funcs missing from the snapshot are [unresolved 0x...] and counted"
"$gen" -o omit.zspy --samples 50000 --stacks 300 --seed "$seed" --omit-snapshot-for Conn::set_conn \
    --expect omit.expected 2>/dev/null
"$convert" --cache "$cache" -f folded -o omit.folded omit.zspy 2>omit.err
sort omit.folded | diff -u <(sort omit.expected) - >omit.diff || { head omit.diff >&2; fail "unresolved: folded output differs"; }
unresolved=$(awk '/\[unresolved 0x[0-9a-f]+\]/ { n += $NF } END { print n + 0 }' omit.expected)
((unresolved > 0)) || fail "the omitted function was never sampled; pick another seed"
grep -q "Conn::set_conn" omit.folded && fail "the omitted function was resolved anyway"
grep -q "warning: .*omit.zspy: $unresolved samples have frames missing" omit.err ||
    { cat omit.err >&2; fail "no warning counting $unresolved unresolved samples"; }
"$convert" --cache "$cache" -f summary --top 5 -o - omit.zspy 2>/dev/null >omit.summary
grep -q "; $unresolved unresolved samples" omit.summary || { cat omit.summary >&2; fail "summary does not count $unresolved unresolved samples"; }

step "-o a FIFO (or a device, /dev/stdout): written to, not replaced by a file"
mkfifo out.fifo
cat out.fifo >fifo.folded &
reader=$!
"$convert" --cache "$cache" -f folded -o out.fifo omit.zspy 2>/dev/null || { kill "$reader"; fail "-o FIFO: convert failed"; }
[[ -p out.fifo ]] || { kill "$reader"; fail "-o FIFO: the FIFO was replaced ($(stat -c %F out.fifo))"; }
wait "$reader"
sort fifo.folded | diff -q - <(sort omit.folded) >/dev/null || fail "-o FIFO: other output than to a file"

echo "PASS"
