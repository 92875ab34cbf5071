# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the converter's shell tests (convert_test.sh, views_test.sh)
# after they set $build: the binaries, fail and step, the checks that
# what they need is there, and a work directory removed on exit ($work,
# its cache $cache; $1 names it).
build=$(cd "$build" && pwd)
convert=$build/zeek-spy-convert
gen=$build/tests/zs-gen
export LC_ALL=C

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "-- $*"; }

for bin in "$convert" "$gen"; do
    [[ -x $bin ]] || fail "$bin is not built (make -C $build)"
done
# Profiles are checked with the real pprof client: its absence is a failure.
go version >/dev/null 2>&1 ||
    fail "'go version' does not work: install Go (Debian: golang-go) to check profiles with go tool pprof"

work=$(mktemp -d "${TMPDIR:-/tmp}/zs-e2e-$1.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
cache=$work/cache.sqlite
