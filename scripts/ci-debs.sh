#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the two Debian packages (scripts/build-debs.sh) into a clean
# Debian 12 minbase system and uses them there: apt-get resolves the
# converter's Depends from the Debian mirror, the installed converter turns
# a recording made on this machine into a summary and a pprof profile, and
# the installed static recorder records in the clean system.
#
#   scripts/ci-debs.sh
#
# Needs root. The minbase system is scripts/ci-fresh-debian.sh's tarball
# (ZS_FRESH_CACHE), made here too if it is missing, unpacked into a tmpfs
# and thrown away on exit. Prints one line and exits non-zero on the first
# step that fails.
# shellcheck disable=SC2016 # the commands for the chroot expand there
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ZS_FRESH_CACHE:-/var/cache/zeek-spy/bookworm-minbase.tar}
mirror=${ZS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
build=${BUILD_DIR:-$top/build-pkg}
work=$(mktemp -d /var/tmp/zeek-spy-debs.XXXXXX)
root=$work/root
start=$SECONDS

# shellcheck source=scripts/chroot-lib.sh
. "$top/scripts/chroot-lib.sh"
cleanup() {
  leave "$root"
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

fail() {
  echo "ci-debs: FAILED: $*" >&2
  exit 1
}
# try WHAT COMMAND...: runs COMMAND quietly; if it fails, shows the end of
# its output and fails with WHAT.
try() {
  local what=$1 out
  shift
  if ! out=$("$@" 2>&1); then
    [ -z "$out" ] || printf '%s\n' "$out" | tail -n 25 | sed 's/^/  | /' >&2
    fail "$what"
  fi
}
in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TERM=dumb DEBIAN_FRONTEND=noninteractive \
    bash -c "set -euo pipefail; cd /tmp/zs; $1" ci-debs "${@:2}"
}

# 1. The packages, and a recording made on this machine with the recorder
#    they hold, of the test double of Zeek 8.0.
try "scripts/build-debs.sh" bash "$top/scripts/build-debs.sh" "$work/debs"
debs=("$work"/debs/zeek-spy-record_*.deb "$work"/debs/zeek-spy-convert_*.deb)
if [ ! -s "${debs[0]}" ] || [ ! -s "${debs[1]}" ]; then
  fail "scripts/build-debs.sh made no packages"
fi
version=$(dpkg-deb -f "${debs[0]}" Version)
[ -z "$(dpkg-deb -f "${debs[0]}" Depends)" ] ||
  fail "zeek-spy-record's package has Depends: $(dpkg-deb -f "${debs[0]}" Depends)"
for deb in "${debs[@]}"; do
  pkg=$(dpkg-deb -f "$deb" Package)
  # Read whole before grep: grep -q closing the pipe at its match would
  # kill tar with SIGPIPE when it writes the file in two parts (pipefail).
  copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - "./usr/share/doc/$pkg/copyright" 2>/dev/null) ||
    copyright=
  grep -qx 'License: BSD-3-Clause' <<<"$copyright" || fail "$pkg's package has no copyright file naming its license"
done
double=${ZS_DOUBLE:-$top/build/tests/target/zeek-double-8.0}
if [ ! -x "$double" ]; then
  try "building zeek-double-8.0" cmake --build "$build" -j"${JOBS:-$(nproc)}" --target zeek-double-8.0
  double=$build/tests/target/zeek-double-8.0
fi
try "recording zeek-double-8.0 on this machine" \
  "$build/zeek-spy-record" -q -r 200 -o "$work/host.zspy" -- "$double" --seconds 2 --quiet

# 2. A clean Debian 12 in memory, with this machine's package sources and
#    downloaded packages (apt's cache), as in scripts/ci-fresh-debian.sh.
try "making the minbase system" make_minbase "$cache" "$mirror" "$work/new"
mkdir "$root"
mount -t tmpfs -o size=2g,mode=0755 zeek-spy-debs "$root"
try "unpacking $cache" tar -C "$root" -xf "$cache"
enter_ready "$root"
mkdir -m 0755 "$root/tmp/zs"
cp "${debs[@]}" "$work/host.zspy" "$double" "$root/tmp/zs/"
chmod -R a+rX "$root/tmp/zs"
double=/tmp/zs/$(basename "$double")

# 3. apt-get installs the packages and what they depend on.
before=$(in_root 'dpkg-query -W -f="\${Package}\n"' | sort)
try "apt-get update in the chroot" in_root 'apt-get -qq update'
try "apt-get install ./zeek-spy-*.deb in the chroot" \
  in_root 'apt-get install -y -q ./zeek-spy-*.deb'
try "dpkg does not list both packages as installed in the chroot" \
  in_root 'for p in zeek-spy-record zeek-spy-convert; do
      dpkg-query -W -f="\${Status}\n" $p | grep -qx "install ok installed"
    done'
added=$(comm -13 <(echo "$before") <(in_root 'dpkg-query -W -f="\${Package}\n"' | sort) |
  { grep -vx 'zeek-spy-record\|zeek-spy-convert' || true; } | tr '\n' ' ')
echo "ci-debs: apt-get installed the packages and ${added:-nothing else}" >&2

# 4. The installed programs, their man pages, a conversion of the recording
#    made on this machine and a recording made in the chroot.
try "zeek-spy-record --version in the chroot" \
  in_root 'command -v zeek-spy-record | grep -qx /usr/bin/zeek-spy-record
    zeek-spy-record --version | grep -qx "zeek-spy-record $1"' "$version"
try "zeek-spy-convert --version in the chroot" \
  in_root 'command -v zeek-spy-convert | grep -qx /usr/bin/zeek-spy-convert
    zeek-spy-convert --version | grep -q "^zeek-spy-convert $1 "' "$version"
try "the man pages in the chroot" \
  in_root 'for p in zeek-spy-record zeek-spy-convert; do
      f=/usr/share/man/man1/$p.1
      test -s $f || { echo "no $f"; exit 1; }
      dpkg -S $f | grep -q "^$p:" || { echo "$f not owned by $p"; exit 1; }
    done'
try "the systemd units in the chroot" \
  in_root 'f=$(dpkg -L zeek-spy-record | grep "/systemd/system/zeek-spy-record.service$")
    grep -qx "ExecStart=/usr/bin/zeek-spy-record --all .*" $f || { cat $f; exit 1; }
    f=$(dpkg -L zeek-spy-convert | grep "/systemd/system/zeek-spy-push.service$")
    grep -qx "ExecStart=/usr/bin/zeek-spy-convert --push .* --watch /var/lib/zeek-spy" $f || { cat $f; exit 1; }'
try "converting the host's recording to a summary in the chroot" \
  in_root 'zeek-spy-convert -q -f summary host.zspy >host.txt
    grep -q "HTTP::parse_request" host.txt || { cat host.txt; exit 1; }'
try "converting the host's recording to pprof in the chroot" \
  in_root 'zeek-spy-convert -q -f pprof -o host.pb.gz host.zspy && gzip -t host.pb.gz'
if command -v go >/dev/null; then
  try "go tool pprof reading the chroot's profile" \
    bash -c 'go tool pprof -top "$1" 2>&1 | grep -q "HTTP::parse_request"' _ "$root/tmp/zs/host.pb.gz"
fi
try "recording zeek-double-8.0 with the installed zeek-spy-record in the chroot" \
  in_root 'zeek-spy-record -q -r 200 -o chroot.zspy -- "$1" --seconds 2 --quiet >/dev/null
    zeek-spy-convert -q --no-cache -f summary -o chroot.txt chroot.zspy
    grep -q "HTTP::parse_request" chroot.txt || { cat chroot.txt; exit 1; }' "$double"

deps=$(dpkg-deb -f "${debs[1]}" Depends)
echo "ci-debs: $(basename "${debs[0]}") ($(stat -c %s "${debs[0]}") bytes, no Depends) and" \
  "$(basename "${debs[1]}") ($(stat -c %s "${debs[1]}") bytes, Depends: $deps)" \
  "install on a clean Debian 12, convert and record ($((SECONDS - start)) s)"
