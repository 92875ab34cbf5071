#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make-initramfs.sh BUILD_DIR OUT.gz: the guest's whole root file system, a
# gzipped cpio (newc) archive the kernel unpacks into its rootfs: busybox,
# the recorder, the test doubles, bpftool, every shared library they load,
# and tests/kernels/guest-init.sh as /init.
#
# The layout is the host's merged /usr (/lib -> usr/lib, ...), so each
# library sits at the path ldd printed and the recorder's native unwinder
# finds the doubles' libc and libstdc++ where /proc/PID/maps says they are.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: make-initramfs.sh BUILD_DIR OUT.gz}" && pwd)
out=${2:?usage: make-initramfs.sh BUILD_DIR OUT.gz}
die() { echo "make-initramfs: $*" >&2; exit 1; }

busybox=/bin/busybox
bpftool=/usr/sbin/bpftool
record=$build/zeek-spy-record
doubles=()
for gen in 3.0 8.0 8.2; do
  doubles+=("$build/tests/target/zeek-double-$gen" "$build/tests/target/zeek-double-$gen-stripped")
done
for f in "$record" "${doubles[@]}" "$bpftool"; do
  [ -x "$f" ] || die "$f missing (build $build first; bpftool: apt-get install bpftool)"
done
# The guest has no libc for busybox: it must be the static one.
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
  die "$busybox is not static (apt-get install busybox-static)"

stage=$(mktemp -d "${TMPDIR:-/tmp}/zs-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/usr/{bin,sbin,lib,lib64} "$stage"/{dev,proc,sys,tmp,run,etc,zs/target,root}
for d in bin sbin lib lib64; do ln -s "usr/$d" "$stage/$d"; done

# Busybox and its applets (sh, mount, awk, base64, usleep, poweroff, ...).
cp "$busybox" "$stage/usr/bin/busybox"
"$busybox" --list-full | while read -r applet; do
  # merged /usr: bin/x and usr/bin/x are one place
  dest="$stage/usr/${applet#usr/}"
  [ -e "$dest" ] || [ -L "$dest" ] || ln -s /usr/bin/busybox "$dest"
done

cp "$record" "$stage/zs/zeek-spy-record"
cp "${doubles[@]}" "$stage/zs/target/"
cp "$bpftool" "$stage/usr/sbin/bpftool"

# Every library the programs load, and the dynamic loader, at their paths.
for f in "$record" "${doubles[@]}" "$bpftool"; do
  ldd "$f" | awk '/=> \// { print $3 } /^[ \t]*\/[^ ]+ \(0x/ { print $1 }'
done | sort -u | while read -r lib; do
  mkdir -p "$stage$(dirname "$lib")"
  cp -L "$lib" "$stage$lib"
done
# The loader's cache, for the libraries' own search path.
printf '/usr/lib/x86_64-linux-gnu\n' >"$stage/etc/ld.so.conf"
ldconfig -r "$stage" 2>/dev/null || die "ldconfig -r $stage failed"

cp "$here/guest-init.sh" "$stage/init"
chmod 755 "$stage/init"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
printf 'root:x:0:\n' >"$stage/etc/group"

mkdir -p "$(dirname "$out")"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "make-initramfs: $out ($(du -h "$out" | cut -f1))" >&2
