#!/usr/bin/env bash
# numaplan's copy of the shared CI harness (tests/vm.rs runs it with tests/vm/exec-guest.sh).
# qemu-numa.sh - boot Debian's kernel under QEMU (TCG, no KVM needed) with N NUMA nodes and
# an initramfs holding a test binary; report the binary's exit code. Debian 12, root for apt.
#
# Usage: qemu-numa.sh [prepare|run|all|clean] [-- TEST_BINARY [ARGS...]]
#   prepare  install qemu-system-x86/busybox-static/cpio (if missing), unpack the kernel
#   run      build the initramfs and boot; exit code = the guest test's exit code
#   all      (default) prepare + run
#   clean    remove $QEMU_NUMA_DIR
# With no TEST_BINARY the guest runs a built-in check: node count == QEMU_NUMA_NODES and,
# for every node, `numactl --cpunodebind=N --membind=N` gives a task whose
# Cpus_allowed_list is that node's cpulist and whose numa_maps policy is bind:N.
# A dynamic TEST_BINARY gets its shared libraries (ldd) copied in; a static one is best.
# In the guest: /sys/devices/system/node/* is real, numactl is available, the binary
# runs as PID-1's child with /proc, /sys, /dev mounted; QEMU_NUMA_NODES is exported.
#
# Environment (all optional):
#   QEMU_NUMA_DIR       work/cache dir                          [/tmp/qemu-numa]
#   QEMU_NUMA_NODES     NUMA nodes                              [2]
#   QEMU_NUMA_CPUS      vCPUs (multiple of NODES)               [8]
#   QEMU_NUMA_MEM_MB    memory per node, MiB                    [512]
#   QEMU_NUMA_DISTANCE  remote node distance (local = 10)       [20]
#   QEMU_NUMA_ACCEL     tcg | kvm                               [tcg]
#   QEMU_NUMA_TIMEOUT   seconds for the whole boot+test         [180]
#   QEMU_NUMA_KERNEL    vmlinuz to use (skips apt download)     [Debian linux-image-amd64]
#   QEMU_NUMA_INSTALL   1 = apt-get install missing tools       [1]
#   QEMU_NUMA_EXTRA     extra host files/binaries to copy in (space separated, libs follow)
# Added for numaplan's discovery tests (the defaults keep the shared harness's shape):
#   QEMU_NUMA_SOCKETS   packages                                [NODES]
#   QEMU_NUMA_THREADS   hardware threads per core (SMT)         [1]
#   QEMU_NUMA_NODE_CPUS per-node vCPU ranges, space separated, `-` for a memory-only node,
#                       e.g. "0-3 4-7 8-11 -"                  [CPUS split evenly]
#   QEMU_NUMA_DISTANCES full distance matrix, rows separated by `;`, e.g. "10 21;21 10"
#                       (overrides QEMU_NUMA_DISTANCE)
#   QEMU_NUMA_NIC_NODE  add an e1000e NIC behind a pxb-pcie expander bridge on this node
#   QEMU_NUMA_GPU_NODES nodes (space separated) that each get a display device of a GPU vendor
#                       (QEMU's ati-vga: PCI vendor 0x1002, class 0x0300) behind its own
#                       pxb-pcie expander bridge, in that order of bus numbers
#   QEMU_NUMA_TREE      a directory copied to the guest's / as it is (its executables' libraries
#                       follow), e.g. an interpreter staged at its own path
#   QEMU_GUEST_*        exported to the guest's test as they are
set -euo pipefail

DIR=${QEMU_NUMA_DIR:-/tmp/qemu-numa}
NODES=${QEMU_NUMA_NODES:-2}
CPUS=${QEMU_NUMA_CPUS:-8}
MEM_MB=${QEMU_NUMA_MEM_MB:-512}
DIST=${QEMU_NUMA_DISTANCE:-20}
ACCEL=${QEMU_NUMA_ACCEL:-tcg}
TIMEOUT=${QEMU_NUMA_TIMEOUT:-180}
KERNEL=${QEMU_NUMA_KERNEL:-}
INSTALL=${QEMU_NUMA_INSTALL:-1}
EXTRA=${QEMU_NUMA_EXTRA:-}
SOCKETS=${QEMU_NUMA_SOCKETS:-$NODES}
THREADS=${QEMU_NUMA_THREADS:-1}
NODE_CPUS=${QEMU_NUMA_NODE_CPUS:-}
DISTANCES=${QEMU_NUMA_DISTANCES:-}
NIC_NODE=${QEMU_NUMA_NIC_NODE:-}
TREE=${QEMU_NUMA_TREE:-}
GPU_NODES=${QEMU_NUMA_GPU_NODES:-}

log() { printf '[qemu-numa %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

cmd=all
if [ $# -gt 0 ] && [ "$1" != -- ]; then cmd=$1; shift; fi
[ "${1:-}" = -- ] && shift
TEST_BIN=${1:-}
[ $# -gt 0 ] && shift
TEST_ARGS=("$@")

[ "$NODES" -ge 1 ] || die "QEMU_NUMA_NODES must be >= 1"
[ -n "$NODE_CPUS" ] || [ $((CPUS % NODES)) -eq 0 ] || die "QEMU_NUMA_CPUS ($CPUS) must be a multiple of QEMU_NUMA_NODES ($NODES)"
[ $((CPUS % (SOCKETS * THREADS))) -eq 0 ] || die "QEMU_NUMA_CPUS ($CPUS) must be a multiple of SOCKETS x THREADS"

prepare() {
  mkdir -p "$DIR"
  local missing=()
  command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
  command -v busybox >/dev/null || missing+=(busybox-static)
  command -v cpio >/dev/null || missing+=(cpio)
  command -v numactl >/dev/null || missing+=(numactl)
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$INSTALL" = 1 ] || die "missing: ${missing[*]} (QEMU_NUMA_INSTALL=0)"
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -qq || die "apt-get update failed"
    timeout 900 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "apt-get install ${missing[*]} failed"
  fi
  if [ -z "$KERNEL" ]; then
    if [ -z "$(kernel_path)" ]; then
      local pkg
      pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
      [ -n "$pkg" ] || { timeout 600 apt-get update -qq || true
        pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}'); }
      [ -n "$pkg" ] || die "cannot resolve the linux-image-amd64 package"
      log "downloading and unpacking $pkg (no install)"
      rm -rf "$DIR/deb" && mkdir -p "$DIR/deb"
      (cd "$DIR/deb" && timeout 600 apt-get download "$pkg" 2>/dev/null) || die "apt-get download $pkg failed"
      dpkg -x "$DIR"/deb/"$pkg"_*.deb "$DIR/kernel" || die "dpkg -x failed"
      rm -rf "$DIR/deb"
    fi
  fi
}

kernel_path() {
  if [ -n "$KERNEL" ]; then echo "$KERNEL"; else find "$DIR/kernel/boot" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | sort -V | tail -1; fi
}

copy_with_libs() { # copy_with_libs SRC ROOT DEST: binary plus its ldd libraries
  local src=$1 root=$2 dest=$3 lib
  cp -L "$src" "$root$dest"
  # The initramfs lives in the guest's RAM, mostly on node 0: a debug build's 130 MB of
  # debug info would leave node 0's bound ranks short of memory (the OOM killer). Code and
  # behaviour are unchanged by dropping it.
  if [ -f "$root$dest" ] && head -c 4 "$root$dest" | grep -q ELF; then
    strip --strip-debug "$root$dest" 2>/dev/null || true
  fi
  if ldd "$src" >/dev/null 2>&1; then
    for lib in $(ldd "$src" | grep -oE '/[^ ]+'); do
      mkdir -p "$root$(dirname "$lib")"; cp -Ln "$lib" "$root$lib" 2>/dev/null || true
    done
  fi
}

build_initrd() {
  local root=$DIR/initrd
  rm -rf "$root"; mkdir -p "$root"/{bin,proc,sys,dev,tmp,opt}
  copy_with_libs "$(command -v busybox)" "$root" /bin/busybox
  copy_with_libs "$(command -v numactl)" "$root" /bin/numactl
  local f
  for f in $EXTRA; do [ -e "$f" ] || die "QEMU_NUMA_EXTRA: $f not found"; copy_with_libs "$f" "$root" "/opt/$(basename "$f")"; done
  if [ -n "$TREE" ]; then
    [ -d "$TREE" ] || die "QEMU_NUMA_TREE: $TREE is not a directory"
    cp -a "$TREE"/. "$root"/
    while IFS= read -r -d '' f; do copy_with_libs "$f" "$root" "${f#"$TREE"}"; done \
      < <(find "$TREE" -type f -perm -u+x -print0)
  fi
  local test_line='/bin/builtin-check'
  if [ -n "$TEST_BIN" ]; then
    [ -x "$TEST_BIN" ] || die "test binary $TEST_BIN not executable"
    copy_with_libs "$TEST_BIN" "$root" /bin/testbin
    test_line="/bin/testbin$(printf ' %q' "${TEST_ARGS[@]}")"
  fi
  cat > "$root/bin/builtin-check" <<'EOF'
#!/bin/sh
rc=0
n=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
echo "builtin-check: $n NUMA nodes (want $QEMU_NUMA_NODES)"
[ "$n" = "$QEMU_NUMA_NODES" ] || rc=1
for d in /sys/devices/system/node/node[0-9]*; do
  i=${d##*node}; want=$(cat "$d/cpulist")
  out=$(numactl --cpunodebind="$i" --membind="$i" sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2; head -1 /proc/self/numa_maps | cut -d" " -f2')
  cpus=$(echo "$out" | sed -n 1p); pol=$(echo "$out" | sed -n 2p)
  if [ "$cpus" = "$want" ] && [ "$pol" = "bind:$i" ]; then echo "  node$i ok: cpus $cpus, policy $pol"
  else echo "  node$i FAIL: cpus '$cpus' (want '$want'), policy '$pol' (want bind:$i)"; rc=1; fi
done
exit $rc
EOF
  local guest_env="" v
  for v in $(compgen -e | grep '^QEMU_GUEST_' || true); do guest_env+="export $v=$(printf '%q' "${!v}")"$'\n'; done
  cat > "$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null
export PATH=/bin:/opt QEMU_NUMA_NODES=$NODES
${guest_env}echo; echo "QEMU_NUMA_UPTIME=\$(cut -d' ' -f1 /proc/uptime)"
echo "QEMU_NUMA_SYSFS=\$(ls /sys/devices/system/node | tr '\n' ' ')"
numactl --hardware
$test_line
echo "QEMU_NUMA_RC=\$?"
poweroff -f
EOF
  chmod +x "$root/init" "$root/bin/builtin-check"
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$DIR/initrd.cpio.gz"
}

run() {
  local kernel; kernel=$(kernel_path)
  [ -f "$kernel" ] || die "no kernel (run: $0 prepare, or set QEMU_NUMA_KERNEL)"
  build_initrd
  local per=$((CPUS / NODES)) i j args=() node_cpus=() rows=() row=()
  if [ -n "$NODE_CPUS" ]; then
    read -r -a node_cpus <<< "$NODE_CPUS"
    [ "${#node_cpus[@]}" -eq "$NODES" ] || die "QEMU_NUMA_NODE_CPUS needs $NODES entries"
  else
    for ((i = 0; i < NODES; i++)); do node_cpus+=("$((i * per))-$((i * per + per - 1))"); done
  fi
  for ((i = 0; i < NODES; i++)); do
    local cpus_opt=""
    [ "${node_cpus[$i]}" = - ] || cpus_opt=",cpus=${node_cpus[$i]}"
    args+=(-object "memory-backend-ram,id=m$i,size=${MEM_MB}M"
           -numa "node,nodeid=$i${cpus_opt},memdev=m$i")
  done
  if [ -n "$DISTANCES" ]; then
    IFS=';' read -r -a rows <<< "$DISTANCES"
    [ "${#rows[@]}" -eq "$NODES" ] || die "QEMU_NUMA_DISTANCES needs $NODES rows"
    for ((i = 0; i < NODES; i++)); do
      read -r -a row <<< "${rows[$i]}"
      for ((j = 0; j < NODES; j++)); do
        [ "$i" = "$j" ] || args+=(-numa "dist,src=$i,dst=$j,val=${row[$j]}"); done; done
  elif [ "$NODES" -gt 1 ]; then
    for ((i = 0; i < NODES; i++)); do for ((j = 0; j < NODES; j++)); do
      [ "$i" = "$j" ] || args+=(-numa "dist,src=$i,dst=$j,val=$DIST"); done; done
  fi
  if [ -n "$NIC_NODE" ]; then
    # An expander bridge's NUMA node reaches the guest through ACPI _PXM: the kernel gives every
    # device behind it that node (no driver needed: the PCI device itself is what counts).
    args+=(-device "pxb-pcie,id=pxb1,bus_nr=64,numa_node=$NIC_NODE,bus=pcie.0"
           -device "pcie-root-port,id=rp1,bus=pxb1,chassis=1,slot=1"
           -device "e1000e,bus=rp1,mac=52:54:00:12:34:56")
  fi
  local g=0
  for node in $GPU_NODES; do
    g=$((g + 1))
    args+=(-device "pxb-pcie,id=gpx$g,bus_nr=$((64 + 16 * g)),numa_node=$node,bus=pcie.0"
           -device "pcie-root-port,id=grp$g,bus=gpx$g,chassis=$((1 + g)),slot=1"
           -device "ati-vga,bus=grp$g")
  done
  local cpu=${QEMU_NUMA_CPU_MODEL:-max}; [ "$ACCEL" = kvm ] && cpu=host
  local out=$DIR/serial.log start=$SECONDS
  log "booting $(basename "$kernel"): $CPUS vCPUs ($SOCKETS sockets, SMT$THREADS), $NODES nodes x ${MEM_MB} MiB, accel=$ACCEL, timeout ${TIMEOUT}s"
  set +e
  timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 -machine q35 -accel "$ACCEL" -cpu "$cpu" \
    -smp "$CPUS,sockets=$SOCKETS,cores=$((CPUS / SOCKETS / THREADS)),threads=$THREADS" -m "$((MEM_MB * NODES))M" "${args[@]}" \
    -kernel "$kernel" -initrd "$DIR/initrd.cpio.gz" \
    -append "console=ttyS0 panic=-1 loglevel=3" \
    -nographic -nodefaults -serial stdio -no-reboot </dev/null > "$out" 2>&1
  local qrc=$?
  set -e
  tr -d '\r' < "$out" | grep -vE '^\s*$' | grep -v 'Probing EDD' | sed 's/^/  guest| /' >&2 || true
  local grc
  grc=$(tr -d '\r' < "$out" | sed -n 's/.*QEMU_NUMA_RC=\([0-9]*\).*/\1/p' | tail -1)
  if [ -z "$grc" ]; then
    if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then die "guest timed out after ${TIMEOUT}s (see $out)"; fi
    die "guest did not report a result (qemu rc=$qrc; see $out)"
  fi
  log "guest boot+test took $((SECONDS - start))s (guest uptime at init: $(tr -d '\r' < "$out" | sed -n 's/.*QEMU_NUMA_UPTIME=//p')s); test rc=$grc"
  return "$grc"
}

case "$cmd" in
  prepare) prepare ;;
  run) run ;;
  all) prepare; run ;;
  clean) rm -rf "$DIR"; log "removed $DIR" ;;
  -h|--help|help) sed -n '2,30p' "$0" ;;
  *) echo "unknown command: $cmd (try --help)" >&2; exit 2 ;;
esac
