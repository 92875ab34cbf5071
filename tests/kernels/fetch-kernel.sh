#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# fetch-kernel.sh SUITE: Debian's cloud kernel of SUITE (bullseye, bookworm,
# trixie, ...), downloaded and unpacked, never installed. Prints the
# directory that holds it: vmlinuz and version (the package's version line).
#
# apt runs with a private configuration under $ZS_KERNEL_CACHE (its own
# sources.list, state, cache and etc directories), so the host's apt sources
# and package state are untouched. The mirror is the one the host's own
# sources already use (read at run time), so a machine that reaches only its
# own mirror can run this. The .debs and unpacked kernels stay in the cache:
# a second run downloads nothing new unless the suite's kernel changed, and
# when the mirror cannot be reached it uses the newest kernel it has.
set -euo pipefail
suite=${1:?usage: fetch-kernel.sh SUITE}
cache=${ZS_KERNEL_CACHE:-/var/cache/zeek-spy-kernels}
arch=amd64
die() { echo "fetch-kernel: $suite: $*" >&2; exit 1; }

# The URI of the host's main Debian archive: the source that serves the
# host's own codename (not -security, not -updates), in either format.
host_mirror() {
  local codename files
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 1
  files=$(ls /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
             /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$files" ] || return 1
  # shellcheck disable=SC2086
  awk -v want="$codename" '
    # one-line format: deb [options] URI SUITE COMPONENTS...
    /^[ \t]*deb[ \t]/ {
      i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      if ($(i + 1) == want) { print $i; exit }
      next }
    # deb822: a stanza of Key: value lines, stanzas split by blank lines
    /^[ \t]*$/ { if (uris != "" && suites ~ ("(^| )" want "( |$)")) { split(uris, u, " "); print u[1]; exit }
                 uris = ""; suites = ""; next }
    /^URIs:/   { sub(/^URIs:[ \t]*/, ""); uris = $0 }
    /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
    END { if (uris != "" && suites ~ ("(^| )" want "( |$)")) { split(uris, u, " "); print u[1] } }
  ' $files | head -n 1
}

# The newest kernel already unpacked for this suite, for when the mirror
# cannot be reached.
cached_kernel() {
  ls -d "$cache/kernels/$suite"/*/ 2>/dev/null | sort -V | tail -n 1 | sed 's:/$::'
}

apt_dir="$cache/apt/$suite"
mkdir -p "$apt_dir/etc/apt.conf.d" "$apt_dir/etc/preferences.d" "$apt_dir/etc/sources.list.d" \
         "$apt_dir/state/lists/partial" "$apt_dir/cache/archives/partial" "$cache/debs" "$cache/kernels/$suite"
mirror=$(host_mirror) || true
[ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources.list*"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "$keyring missing (apt-get install debian-archive-keyring)"

# bullseye's -updates suite holds its newer point kernels; security
# updates are left out on purpose (another host, and not needed to load BPF).
cat >"$apt_dir/etc/sources.list" <<EOF
deb [signed-by=$keyring] $mirror $suite main
deb [signed-by=$keyring] $mirror $suite-updates main
EOF
touch "$apt_dir/state/status"
cat >"$apt_dir/apt.conf" <<EOF
Dir::Etc "$apt_dir/etc";
Dir::Etc::main "apt.conf";
Dir::Etc::parts "apt.conf.d";
Dir::Etc::sourcelist "sources.list";
Dir::Etc::sourceparts "sources.list.d";
Dir::Etc::preferences "preferences";
Dir::Etc::preferencesparts "preferences.d";
Dir::State "$apt_dir/state";
Dir::State::status "$apt_dir/state/status";
Dir::Cache "$apt_dir/cache";
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
Acquire::Languages "none";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
Debug::NoLocking "true";
// the cache may be where _apt cannot write (a CI workspace)
APT::Sandbox::User "root";
EOF
export APT_CONFIG="$apt_dir/apt.conf"

if ! apt-get -q=2 update >"$apt_dir/update.log" 2>&1; then
  have=$(cached_kernel)
  [ -n "$have" ] || die "apt-get update failed and nothing cached: $(tail -n 1 "$apt_dir/update.log")"
  echo "fetch-kernel: $suite: apt-get update failed; using the cached $(basename "$have")" >&2
  echo "$have"
  exit 0
fi

# The metapackage depends on the versioned image package of the suite's
# current kernel (linux-image-6.1.0-NN-cloud-amd64, ...).
meta=linux-image-cloud-$arch
pkg=$(apt-cache show --no-all-versions "$meta" 2>/dev/null |
      sed -n 's/^Depends:.*\(linux-image-[^ ,(]*-cloud-'"$arch"'\).*/\1/p' | head -n 1)
[ -n "$pkg" ] || die "cannot resolve $meta to a kernel image package"
version=$(apt-cache show --no-all-versions "$pkg" | sed -n 's/^Version: //p' | head -n 1)
dest="$cache/kernels/$suite/$pkg"
if [ -f "$dest/vmlinuz" ] && [ "$(cat "$dest/version" 2>/dev/null)" = "$pkg $version" ]; then
  echo "$dest"
  exit 0
fi

deb=$(ls "$cache/debs/${pkg}_${version//:/%3a}_"*.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
  echo "fetch-kernel: $suite: downloading $pkg $version from $mirror" >&2
  (cd "$cache/debs" && apt-get -q=2 download "$pkg=$version") ||
    die "apt-get download $pkg=$version failed"
  deb=$(ls "$cache/debs/${pkg}_"*"${version##*:}"*.deb | head -n 1)
fi
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
dpkg-deb -x "$deb" "$dest.tmp/root"
image=$(ls "$dest.tmp/root/boot/"vmlinuz-* 2>/dev/null | head -n 1)
[ -n "$image" ] || die "no boot/vmlinuz-* in $deb"
mv "$image" "$dest.tmp/vmlinuz"
# Only the image is needed: the guest loads no modules.
rm -rf "$dest.tmp/root"
echo "$pkg $version" >"$dest.tmp/version"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "$dest"
