#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of the kernel matrix's guest (tests/kernels/make-initramfs.sh puts it
# there): the guest half of the BPF sampler's end-to-end checks, on the
# kernel qemu booted. Busybox sh only: no Python, no go, no converter here.
#
# Each check prints one line "ZS-CHECK NAME PASS|FAIL what was seen"; the
# recordings, the doubles' ground truth and the recorder's stderr go to the
# console between markers for the host to analyse (check_matrix.py):
#   ZS-FILE-BEGIN NAME / base64 of NAME.gz / ZS-FILE-END NAME SHA256-of-NAME.gz
#   ZS-LOG-BEGIN NAME / "| " + each line / ZS-LOG-END NAME
# Then "ZS-GUEST-DONE" and a power-off: qemu exits (-no-reboot, panic=-1).
#
# Under TCG each start of the BPF sampler costs 10-20 s (libbpf and the
# verifier emulated), so each one is made to count: four in all.
#
# Kernel command line knobs (run-matrix.sh sets them): zs.rate=HZ, zs.secs=S
# (each recording's length), zs.only=CHECK (one check, for debugging).
export PATH=/zs:/usr/sbin:/usr/bin
rate=250 secs=8 only=
umask 022

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t bpf bpffs /sys/fs/bpf
# Neither is needed by the recorder (BTF tracepoints, no kprobes); mounted as
# on a real host, for bpftool and for looking around.
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null

for arg in $(cat /proc/cmdline); do
  case $arg in
    zs.rate=*) rate=${arg#zs.rate=} ;;
    zs.secs=*) secs=${arg#zs.secs=} ;;
    zs.only=*) only=${arg#zs.only=} ;;
  esac
done

T=/zs/target
W=/tmp/work
mkdir -p $W
cd $W || exit 1

say() { echo "ZS-$*"; }
# Seconds since boot: each check's line says when it ended.
now() { cut -d' ' -f1 /proc/uptime; }
check() { say "CHECK $1 $2 ${3:-} (at $(now) s)"; }
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

# A file to the host: gzipped (the switch logs are large), base64, checksummed.
send_file() {
  [ -s "$W/$1" ] || return 0
  gzip -c "$W/$1" >"$W/$1.gz"
  say "FILE-BEGIN $1"
  base64 "$W/$1.gz"
  say "FILE-END $1 $(sha256sum "$W/$1.gz" | cut -d' ' -f1)"
}
send_log() {
  say "LOG-BEGIN $1"
  sed 's/^/| /' "$W/$1"
  say "LOG-END $1"
}

# How many of our programs are loaded in the kernel (their names start zs_).
zs_programs() { bpftool prog show 2>/dev/null | grep -c ' name zs_'; }

# TracerPid and the state of $1 every 20 ms until $W/watch.on goes: the BPF
# sampler must never trace nor stop the target. Writes "LOOKS BAD" to $2.
watch_target() {
  n=0 bad=0
  while [ -e $W/watch.on ] && [ -d /proc/$1 ]; do
    t= s=
    while read -r k v _; do
      case $k in TracerPid:) t=$v ;; State:) s=$v ;; esac
    done </proc/$1/status 2>/dev/null
    [ -n "$t" ] || break
    n=$((n + 1))
    if [ "$t" != 0 ] || [ "$s" = t ] || [ "$s" = T ]; then bad=$((bad + 1)); fi
    usleep 20000
  done
  echo "$n $bad" >"$2"
}
watch_start() { touch $W/watch.on; watch_target "$1" "$W/$2" & watcher=$!; }
# Sets $seen; fails unless the target was looked at and never traced.
watch_end() {
  rm -f $W/watch.on
  wait $watcher
  looks=0 bad=0
  read -r looks bad <"$W/$1"
  seen="$looks looks, $bad traced or stopped"
  [ "$looks" -ge 10 ] && [ "$bad" -eq 0 ]
}

# Starts a double that logs its ground truth; $pid is its pid. It runs until
# stop_target (SIGTERM ends its current iteration and writes the truth).
start_target() { # BINARY NAME
  "$T/$1" --seconds 600 --quiet --ground-truth "$W/$2.truth" --switch-log "$W/$2.truth.switches" >/dev/null &
  pid=$!
  sleep 1
}
stop_target() { kill -TERM "$pid"; wait "$pid"; }

# The default sampler (no --sampler: auto) must choose BPF on every kernel
# of the matrix; falling back to ptrace is a failure here, not a skip.
said_bpf() { grep -q 'with the BPF sampler' "$W/$1" && ! grep -q 'note: sampling with ptrace' "$W/$1"; }

# Waits (at most 60 s) until the recorder writing $1 samples: its programs
# are loaded by then.
wait_sampling() {
  for _ in $(seq 600); do grep -q 'sampling 1 process' "$W/$1" && return 0; sleep 0.1; done
  return 1
}

# Records $pid with the default sampler, -v, the target watched; $1 name,
# the rest options. With kill=1, no -d: SIGKILLed after $secs of sampling,
# and then nothing of ours may be left in the kernel (everything the
# recorder put there hangs on its file descriptors).
record_auto() {
  name=$1; shift
  watch_start "$pid" "$name.watch"
  t0=$(now)
  if [ "${kill:-0}" = 1 ]; then
    zeek-spy-record -v -r "$rate" -p "$pid" -o "$W/$name.zspy" "$@" 2>"$W/$name.err" &
    rec=$!
    wait_sampling "$name.err"
    sleep "$secs"
    held=$(zs_programs)
    kill -KILL $rec
    wait $rec
    rc=0
    left=$held
    for _ in $(seq 100); do left=$(zs_programs); [ "$left" -eq 0 ] && break; sleep 0.1; done
  else
    zeek-spy-record -v -r "$rate" -d "$secs" -p "$pid" -o "$W/$name.zspy" "$@" 2>"$W/$name.err"
    rc=$?
  fi
  say "GUEST $name: the recorder ran $(awk "BEGIN { print $(now) - $t0 }") s"
  watch_end "$name.watch"; watched=$?
  send_log "$name.err"
  if [ $rc -ne 0 ]; then check "$name" FAIL "recorder exited $rc"
  elif ! said_bpf "$name.err"; then check "$name" FAIL "the default sampler did not choose BPF"
  elif [ $watched -ne 0 ]; then check "$name" FAIL "target: $seen"
  else check "$name" PASS "BPF sampler; target: $seen"; fi
  if [ "${kill:-0}" = 1 ]; then
    tracer=$(sed -n 's/^TracerPid:[[:space:]]*//p' /proc/$pid/status)
    state=$(sed -n 's/^State:[[:space:]]*\([A-Za-z]\).*/\1/p' /proc/$pid/status)
    if [ "$held" -eq 0 ]; then check kill FAIL "no zs_ program loaded while the recorder ran"
    elif [ "$left" -ne 0 ]; then check kill FAIL "$left zs_ programs left 10 s after SIGKILL"; bpftool prog show
    elif [ "$tracer" != 0 ] || [ "$state" = t ] || [ "$state" = T ]; then
      check kill FAIL "target left traced or stopped (TracerPid $tracer, state $state)"
    else check kill PASS "$held zs_ programs while recording, none after SIGKILL; target untraced ($state)"; fi
  fi
  send_file "$name.zspy"
}

# The same with --sampler ptrace, right after: the host's reference. Half
# as long again: under TCG ptrace's stops are late, and about half its
# samples repeat the stack of one stop (credited ticks), so it has fewer
# independent samples than BPF; its start costs a second, not BPF's 10-20.
record_ptrace() {
  name=$1; shift
  zeek-spy-record -v --sampler ptrace -r "$rate" -d "$((secs * 3 / 2))" -p "$pid" -o "$W/$name.zspy" "$@" \
    2>"$W/$name.err"
  rc=$?
  send_log "$name.err"
  if [ $rc -eq 0 ]; then check "$name" PASS "ptrace recording for comparison"
  else check "$name" FAIL "recorder --sampler ptrace exited $rc"; fi
  send_file "$name.zspy"
}

# Where auto fell back: the reason in full (--sampler bpf -v prints libbpf's
# and the verifier's messages), once.
explain_refusal() {
  [ -e $W/explained ] && return
  touch $W/explained
  zeek-spy-record -v --sampler bpf -r "$rate" -d 1 -p "$pid" -o "$W/refused.zspy" 2>"$W/bpf-refused.err"
  send_log bpf-refused.err
}

# One double, recorded by the default sampler then by ptrace, its truth sent.
# (sh has no locals: record_* set $name, so this one keeps $double.)
pair() { # BINARY NAME [RECORDER OPTIONS...]
  binary=$1 double=$2
  shift 2
  start_target "$binary" "$double"
  record_auto "$double-bpf" "$@"
  said_bpf "$double-bpf.err" || explain_refusal
  record_ptrace "$double-ptrace" "$@"
  stop_target
  send_file "$double.truth"
  send_file "$double.truth.switches"
}

say "GUEST kernel $(uname -r) rate $rate secs $secs"
[ -r /sys/kernel/btf/vmlinux ] || say "GUEST note: no /sys/kernel/btf/vmlinux"
start=$(cut -d. -f1 /proc/uptime)

# Nothing of ours in the kernel before the checks: the kill check's count
# after means something.
n=$(zs_programs)
if [ "$n" -eq 0 ]; then check clean PASS "no zs_ program loaded at boot"
else check clean FAIL "$n zs_ programs loaded at boot"; fi

# The stripped 8.2 double with native frames (the default): the host
# compares the script shares of the two samplers, each against the truth of
# its own seconds (the switch log), and their native leaves.
want native-8.2 && pair zeek-double-8.2-stripped native-8.2
# The older generations, script frames only, with DWARF; the 8.0 double's
# recorder is SIGKILLed instead of stopping at -d, and has no ptrace
# reference (its kernel-side reads are the 3.0 double's model: the
# comparison there stands for both, in CI's time).
want attach-3.0 && pair zeek-double-3.0 attach-3.0 --no-native
if want attach-8.0; then
  kill=1
  start_target zeek-double-8.0 attach-8.0
  record_auto attach-8.0-bpf --no-native
  said_bpf attach-8.0-bpf.err || explain_refusal
  stop_target
  kill=0
fi

# --cpu-only: the tick alone, no program on the host's switches.
if want cpu-only; then
  start_target zeek-double-8.2 cpu-only
  zeek-spy-record -v --cpu-only --no-native -r "$rate" -d "$secs" -p "$pid" -o "$W/cpu-only.zspy" \
    2>"$W/cpu-only.err" &
  rec=$!
  wait_sampling cpu-only.err
  programs=$(zs_programs)
  wait $rec
  rc=$?
  stop_target
  send_log cpu-only.err
  if [ $rc -ne 0 ]; then check cpu-only FAIL "recorder --cpu-only exited $rc"
  elif ! grep -q 'on-CPU time only' "$W/cpu-only.err"; then check cpu-only FAIL "no 'on-CPU time only' from the recorder"
  elif [ "$programs" -ne 1 ]; then check cpu-only FAIL "$programs zs_ programs loaded while recording, want the tick alone"
  else check cpu-only PASS "one zs_ program while recording; on-CPU time only"; fi
  send_file cpu-only.zspy
fi

say "GUEST checks took $(($(cut -d. -f1 /proc/uptime) - start)) s"
say "GUEST-DONE"
sync
poweroff -f
