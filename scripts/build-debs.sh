#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the two Debian packages into OUTDIR (default dist/):
#   zeek-spy-record_<version>_<arch>.deb   the static recorder, for sensors
#   zeek-spy-convert_<version>_<arch>.deb  the converter, Depends from dpkg-shlibdeps
# One Release configuration with -DZS_STATIC_RECORDER=ON (the converter is
# linked dynamically in any configuration), packaged by CPack, one
# component per package. Needs what scripts/install-deps.sh installs
# (dpkg-shlibdeps comes with build-essential).
#
#   scripts/build-debs.sh [OUTDIR]
#
# BUILD_DIR (default build-pkg/) is this script's own build directory.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$top/dist}" && cd "${1:-$top/dist}" && pwd)
build=${BUILD_DIR:-$top/build-pkg}
jobs=${JOBS:-$(nproc)}

log=$build/build-debs.log
mkdir -p "$build"
: >"$log"
run() {
  "$@" >>"$log" 2>&1 || {
    tail -n 30 "$log" >&2
    echo "build-debs: failed: $* (whole output: $log)" >&2
    exit 1
  }
}
# CMAKE_SKIP_INSTALL_ALL_DEPENDENCY: cpack installs the two programs built
# below, without building the tests' targets first.
run cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release -DZS_STATIC_RECORDER=ON -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON
run cmake --build "$build" -j"$jobs" --target zeek-spy-record zeek-spy-convert
if ldd "$build/zeek-spy-record" >/dev/null 2>&1; then
  echo "build-debs: $build/zeek-spy-record is dynamically linked (ZS_STATIC_RECORDER)" >&2
  exit 1
fi
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
arch=$(dpkg --print-architecture)
rm -rf "$build/_cpack"
rm -f "$out"/zeek-spy-record_*.deb "$out"/zeek-spy-convert_*.deb
(cd "$build" && run cpack -G DEB -B "$build/_cpack")
for p in zeek-spy-record zeek-spy-convert; do
  deb="$build/_cpack/${p}_${version}_${arch}.deb"
  if [ ! -s "$deb" ]; then
    echo "build-debs: cpack made no $(basename "$deb")" >&2
    exit 1
  fi
  mv "$deb" "$out/"
  echo "build-debs: $out/$(basename "$deb")" >&2
done
