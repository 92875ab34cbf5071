#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs tests on a fresh Debian 12: a debootstrap'ed minbase system that gets
# nothing but what scripts/install-deps.sh installs, so that a test which
# leans on a package this machine happens to have (libc6-dbg, say) fails
# here. By default the tests that read the system's own libraries and
# devices (native frames, the terminal, namespaces); pass ctest arguments to
# choose others.
#
#   scripts/ci-fresh-debian.sh [CTEST_ARGS...]
#
# Needs root. The minbase system is made once per machine and kept as a
# tarball (ZS_FRESH_CACHE), and so is that system once install-deps.sh has
# run in it, keyed by install-deps.sh's checksum (a changed list of packages
# starts again from minbase). Each run unpacks a new copy.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ZS_FRESH_CACHE:-/var/cache/zeek-spy/bookworm-minbase.tar}
deps_key=$(sha256sum "$top/scripts/install-deps.sh" | cut -c1-16)
deps_cache=${cache%.tar}-deps-$deps_key.tar
root=$(mktemp -d /var/tmp/zeek-spy-fresh.XXXXXX)
mirror=${ZS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ $# -gt 0 ] || set -- -R '^(e2e\.native|e2e\.zam\..*|e2e\.deep-stack|e2e\.top|e2e\.cluster\.container|fault\.hostile-native|unit\..*)$'

# shellcheck source=scripts/chroot-lib.sh
. "$top/scripts/chroot-lib.sh"
cleanup() {
  leave "$root"
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT

make_minbase "$cache" "$mirror" "$root/.new"
# In memory (the system with the packages is about 3 GB): unpacked and
# thrown away in seconds rather than minutes.
mount -t tmpfs -o size=8g,mode=0755 zeek-spy-fresh "$root"
if [ -s "$deps_cache" ]; then
  tar -C "$root" -xf "$deps_cache"
else
  tar -C "$root" -xf "$cache"
fi

# The project as committed plus what is in the work tree, without builds.
mkdir "$root/src"
tar -C "$top" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$root/src" -xf -
enter_ready "$root"

echo "fresh-debian: $(chroot "$root" dpkg-query -W -f='.\n' | wc -l) packages before install-deps.sh" >&2
in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TERM=dumb bash -c "set -euo pipefail; cd /src; $1" fresh-debian "${@:2}"
}
in_root 'scripts/install-deps.sh
  if dpkg-query -W -f="\${Package}\n" | grep -E -- "-dbg\$|-dbgsym\$"; then
    echo "fresh-debian: a debug package is installed: the test would not be of a fresh system" >&2
    exit 1
  fi'
if [ ! -s "$deps_cache" ]; then
  rm -f "${cache%.tar}"-deps-*.tar
  tar -C "$root" --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' --exclude=./src \
    --exclude='./var/cache/apt/archives/*' -cf "$deps_cache.part" . && mv "$deps_cache.part" "$deps_cache"
fi
in_root 'scripts/build.sh && cd build && ctest --output-on-failure -j$(nproc) "$@"' "$@"
