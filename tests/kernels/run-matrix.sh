#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run-matrix.sh BUILD_DIR [SUITE...]: the BPF sampler's end-to-end checks on
# Debian's cloud kernels (default: bullseye 5.10, bookworm 6.1, trixie 6.12),
# each booted under qemu with software emulation (TCG: no /dev/kvm needed).
# One guest per kernel, one after the other (TCG is slow enough on its own).
#
# Prints a table (suite, kernel, sampler chosen, result, seconds) and last
# "kernels: N passed, N failed"; exits 1 if any kernel failed.
# run-matrix.sh --fetch-only: only the default suites' kernels, into the cache.
#
# Environment: ZS_KERNEL_CACHE (downloads, default /var/cache/zeek-spy-kernels),
# ZS_MATRIX_OUT (console logs and recordings, default BUILD_DIR/kernel-matrix),
# ZS_MATRIX_RATE and ZS_MATRIX_SECS (each recording's rate and length),
# ZS_MATRIX_TIMEOUT (seconds a guest may take, boot to power-off).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
default_suites=(bullseye bookworm trixie)
# --fetch-only: the kernels downloaded into the cache, nothing run (CI does
# it while other steps run).
if [ "${1:-}" = --fetch-only ]; then
  for suite in "${default_suites[@]}"; do bash "$here/fetch-kernel.sh" "$suite"; done
  exit
fi
build=$(cd "${1:?usage: run-matrix.sh BUILD_DIR [SUITE...] | --fetch-only}" && pwd)
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=("${default_suites[@]}")
out=${ZS_MATRIX_OUT:-$build/kernel-matrix}
rate=${ZS_MATRIX_RATE:-250}
secs=${ZS_MATRIX_SECS:-8}
limit=${ZS_MATRIX_TIMEOUT:-300}
die() { echo "run-matrix: $*" >&2; exit 1; }

# What the host needs, installed where missing (never upgraded).
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked' || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
command -v file >/dev/null || need+=(file)
[ -x /usr/sbin/bpftool ] || need+=(bpftool)
if [ ${#need[@]} -gt 0 ]; then
  echo "run-matrix: installing ${need[*]}" >&2
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${need[@]}" >/dev/null
fi
[ -x "$build/zeek-spy-convert" ] || die "$build/zeek-spy-convert missing: build first"

mkdir -p "$out"
bash "$here/make-initramfs.sh" "$build" "$out/initrd.gz"

passed=0 failed=0 rows=()
for suite in "${suites[@]}"; do
  echo "=== $suite"
  t0=$(date +%s)
  kernel=? sampler=none result=FAIL
  dir=$(bash "$here/fetch-kernel.sh" "$suite") || dir=
  if [ -n "$dir" ]; then
    kernel=$(cut -d' ' -f1 "$dir/version" | sed 's/^linux-image-//')
    rm -rf "${out:?}/$suite"
    mkdir -p "$out/$suite"
    # -cpu max: every feature TCG emulates (the kernels want x86-64-v2 and
    # more); two vCPUs, one host thread each (thread=multi), so the recorder
    # and its target run side by side as on a host. panic=-1 and -no-reboot:
    # a panic ends qemu at once instead of hanging until the timeout.
    # tsc=unstable: under TCG the clocksource watchdog finds the TSC
    # unstable a few seconds after boot, and marking it so switches
    # sched_clock's static keys, patching the scheduler's text while the
    # other vCPU runs it; TCG then hit a half-patched jump (an int3 oops in
    # __schedule, swapper's, at 5.2 s on 6.12, after the guest's first
    # check). Unstable from the start, nothing is patched later.
    # A kernel that dies before it runs the initramfs's init (TCG's
    # emulation of two vCPUs patching kernel text at boot: an int3 oops in
    # the scheduler's clock, seen once in a dozen boots of 6.12) ran none of
    # our code: booted once more, and said so.
    for boot in 1 2; do
      set +e
      nice -n 10 timeout --kill-after=10 "$limit" qemu-system-x86_64 \
        -accel tcg,thread=multi -cpu max -smp 2 -m 2G \
        -nographic -no-reboot \
        -kernel "$dir/vmlinuz" -initrd "$out/initrd.gz" \
        -append "console=ttyS0 quiet panic=-1 tsc=unstable zs.rate=$rate zs.secs=$secs${ZS_MATRIX_ONLY:+ zs.only=$ZS_MATRIX_ONLY}" \
        </dev/null >"$out/$suite/console.log" 2>&1
      qemu_rc=$?
      set -e
      grep -q 'ZS-GUEST kernel ' "$out/$suite/console.log" && break
      [ $boot = 1 ] && echo "  note: the guest's kernel died before its init ran (a boot fault under TCG): booting again" &&
        grep -m 3 -E 'Oops|Kernel panic' "$out/$suite/console.log" | sed 's/^/    /'
    done
    [ $qemu_rc -eq 124 ] && echo "  FAIL guest: no power-off within $limit s (ZS_MATRIX_TIMEOUT)"
    # The checks' verdict is the host checker's: it reads the guest's
    # lines and recordings from the console log.
    if python3 "$here/check_matrix.py" "$build" "$out/$suite/console.log" "$out/$suite" \
         >"$out/$suite/check.txt" 2>&1 && [ $qemu_rc -eq 0 ]; then
      result=PASS
    fi
    sed -n 's/^sampler: //p' "$out/$suite/check.txt" | tail -n 1 | grep . >/dev/null &&
      sampler=$(sed -n 's/^sampler: //p' "$out/$suite/check.txt" | tail -n 1)
    grep -v '^sampler: ' "$out/$suite/check.txt" || true
  else
    echo "  FAIL fetch: no kernel for $suite"
  fi
  if [ $result = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  rows+=("$(printf '%-9s %-32s %-7s %-6s %5d' "$suite" "$kernel" "$sampler" "$result" $(($(date +%s) - t0)))")
done

echo
printf '%-9s %-32s %-7s %-6s %5s\n' suite kernel sampler result secs
printf '%s\n' "${rows[@]}"
echo "console logs and recordings: $out"
echo "kernels: $passed passed, $failed failed"
[ $failed -eq 0 ]
