# SPDX-License-Identifier: BSD-3-Clause
# Sourced by scripts/ci-fresh-debian.sh and scripts/ci-debs.sh: a clean
# Debian 12 minbase system in memory, for tests that must not lean on what
# this machine happens to have. Needs root.

# make_minbase CACHE MIRROR SCRATCH: the minbase tarball CACHE, made once
# per machine with debootstrap (in SCRATCH, removed after).
make_minbase() {
  local cache=$1 mirror=$2 scratch=$3
  [ ! -s "$cache" ] || return 0
  echo "$(basename "$0"): making a Debian 12 minbase system (once per machine)" >&2
  command -v debootstrap >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 debootstrap >/dev/null
  mkdir -p "$(dirname "$cache")" "$scratch"
  debootstrap --variant=minbase bookworm "$scratch" "$mirror" >/dev/null
  tar -C "$scratch" -cf "$cache.part" . && mv "$cache.part" "$cache"
  rm -rf --one-file-system "$scratch"
}

# enter_ready ROOT: this machine's resolver, package sources and downloaded
# packages (apt's cache: the same versions, not fetched again), and /proc,
# /sys, /dev in the unpacked system at ROOT.
enter_ready() {
  local root=$1
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    rm -f "$root/etc/apt/sources.list"
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  fi
  mkdir -p /var/cache/apt/archives/partial
  mount --bind /var/cache/apt/archives "$root/var/cache/apt/archives"
  mount -t proc proc "$root/proc"
  mount -t sysfs sys "$root/sys"
  mount --bind /dev "$root/dev"
  mount --bind /dev/pts "$root/dev/pts"
}

# leave ROOT: every mount of enter_ready and the tmpfs at ROOT undone.
leave() {
  local root=$1 m
  for m in dev/pts dev sys proc var/cache/apt/archives; do
    if mountpoint -q "$root/$m"; then umount -l "$root/$m"; fi
  done
  if mountpoint -q "$root"; then umount -l "$root"; fi
}
