#!/usr/bin/env bash
# Runs rdmq's [verbs] tests on a real kernel RDMA stack: Debian's own kernel booted under qemu
# (TCG by default; no KVM, no root needed), with Soft-RoCE (rdma_rxe) on the VM's virtio NIC.
#
#   tests/verbs/softroce-vm.sh            build/release's verbs-labelled test binaries
#
# What it does:
#   1. finds the test binaries CTest labels `verbs` (plus the helper binaries they spawn);
#   2. fetches the kernel package that Debian's linux-image-amd64 depends on with
#      `apt-get download` (cached; the only network access) and unpacks it with dpkg -x;
#   3. builds a busybox initramfs holding the rdma_rxe module closure, the binaries, their
#      shared libraries (ldd), the libibverbs provider plugins and their driver files;
#   4. boots it: /init loads the modules, gives eth0 10.0.2.15/24, runs
#      `rdma link add rxe0 type rxe netdev eth0`, then each test binary with
#      RDMQ_VERBS_LISTEN=10.0.2.15:0, and reports every binary's exit status;
#   5. exits 0 only if every binary passed.
# The cluster's tests need ZooKeeper, which (Java) does not fit in the VM: when Debian's zookeeper
# is installed, a server is started on the host's loopback for the VM's run and the binaries find
# it in $RDMQ_TEST_ZOOKEEPER (10.0.2.2:PORT, the host as qemu's user network shows it).
#
# Environment:
#   RDMQ_RXE_CACHE    download cache (default build/rxe-cache)
#   RDMQ_RXE_PRESET   build preset whose binaries run (default release)
#   RDMQ_RXE_ACCEL    tcg (default), kvm, or auto (try kvm for 20 s, then tcg)
#   RDMQ_RXE_SMP      vCPUs (default 2); RDMQ_RXE_MEM (default 1G)
#   RDMQ_RXE_TIMEOUT  wall-clock limit for the VM in seconds (default 900)
#   RDMQ_RXE_SCALE    RDMQ_TEST_SCALE inside the VM (default 0.25: TCG is slow)
#   RDMQ_RXE_HELPERS  helper binaries copied beside the tests (default fabric_test_peer rpc_test_server
#                     rdmq-broker rdmq_e2e_peer rdmq rdmq-produce rdmq-consume)
#   RDMQ_RXE_ONLY     run only the test binaries whose name matches this regular expression
#   RDMQ_RXE_ARGS     extra arguments for every test binary (e.g. a Catch2 test name filter)
#   RDMQ_RXE_EXTRA    a command run in the VM after the tests, e.g.
#                     RDMQ_RXE_HELPERS="fabric_test_peer rdmq-fabric-bench"
#                     RDMQ_RXE_EXTRA="rdmq-fabric-bench --providers verbs --quick"
#                     (its failure counts as a failing binary)
#   RDMQ_RXE_KPKG     kernel package to use instead of linux-image-amd64's dependency
set -euo pipefail
cd "$(dirname "$0")/../.."
root_dir=$(pwd)

preset=${RDMQ_RXE_PRESET:-release}
bin_dir=build/$preset/bin
cache=${RDMQ_RXE_CACHE:-$root_dir/build/rxe-cache}
accel=${RDMQ_RXE_ACCEL:-tcg}
smp=${RDMQ_RXE_SMP:-2}
mem=${RDMQ_RXE_MEM:-1G}
vm_timeout=${RDMQ_RXE_TIMEOUT:-900}
scale=${RDMQ_RXE_SCALE:-0.25}
helpers=${RDMQ_RXE_HELPERS:-fabric_test_peer rpc_test_server rdmq-broker rdmq_e2e_peer rdmq rdmq-produce rdmq-consume}
only=${RDMQ_RXE_ONLY:-}
t_start=$SECONDS

say() { echo "[softroce-vm +$((SECONDS - t_start))s] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- prerequisites
missing=()
for tool in qemu-system-x86_64 busybox cpio depmod modprobe xz zstd dpkg apt-get apt-cache ldd ctest; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) || die "missing tools: ${missing[*]} (deploy/install-deps.sh installs them)"
busybox_bin=$(command -v busybox)
if ldd "$busybox_bin" >/dev/null 2>&1; then die "$busybox_bin is not static (install busybox-static)"; fi

# ---------------------------------------------------------------- test binaries
[[ -d build/$preset ]] || die "build/$preset does not exist: build first (cmake --preset $preset && cmake --build --preset $preset)"
mapfile -t tests < <(ctest --preset "$preset" -L verbs --show-only=json-v1 2>/dev/null |
  grep -o "\"$root_dir/$bin_dir/[^\"]*\"" | tr -d '"' | sort -u)
if [[ -n $only ]]; then
  mapfile -t tests < <(printf '%s\n' "${tests[@]}" | grep -E "/[^/]*(${only})[^/]*$" || true)
fi
((${#tests[@]} > 0)) || die "no test labelled 'verbs' in build/$preset${only:+ matching \"$only\"}"
for t in "${tests[@]}"; do [[ -x $t ]] || die "$t is not built"; done
say "verbs test binaries: ${tests[*]##*/}"

# ---------------------------------------------------------------- kernel (cached)
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1
}
kpkg=${RDMQ_RXE_KPKG:-$(kernel_package)}
if [[ -z $kpkg && $(id -u) == 0 ]]; then  # empty package lists (a fresh image): fetch them once
  say "apt-get update (package lists are empty)"
  apt-get update -qq >&2 || true
  kpkg=$(kernel_package)
fi
[[ -n $kpkg ]] || die "cannot tell which kernel package linux-image-amd64 needs (run apt-get update)"
kdir=$cache/$kpkg
if [[ ! -f $kdir/.unpacked ]]; then
  say "downloading $kpkg with apt-get download"
  rm -rf "$kdir" && mkdir -p "$kdir/deb"
  (cd "$kdir/deb" && apt-get download "$kpkg" >&2) || die "apt-get download $kpkg failed"
  dpkg -x "$kdir"/deb/*.deb "$kdir/x"
  rm -rf "$kdir/deb"
  touch "$kdir/.unpacked"
fi
kver=$(ls "$kdir/x/lib/modules" | head -1)
[[ -f $kdir/x/lib/modules/$kver/modules.dep ]] || depmod -b "$kdir/x" "$kver"
kernel=$kdir/x/boot/vmlinuz-$kver
# An uncompressed ELF kernel boots through its PVH entry, sparing the guest the decompression
# (seconds under TCG).
if grep -q '^CONFIG_PVH=y' "$kdir/x/boot/config-$kver" 2>/dev/null; then
  if [[ ! -s $kdir/vmlinux ]]; then
    off=$(LC_ALL=C grep -abo $'\xfd7zXZ\x00' "$kernel" | head -1 | cut -d: -f1 || true)
    if [[ -n $off ]]; then
      tail -c +$((off + 1)) "$kernel" | xz -dc --single-stream >"$kdir/vmlinux" 2>/dev/null || true
      head -c4 "$kdir/vmlinux" | grep -q ELF || rm -f "$kdir/vmlinux"
    fi
  fi
  [[ -s $kdir/vmlinux ]] && kernel=$kdir/vmlinux
fi

# ---------------------------------------------------------------- initramfs
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmq-rxe.XXXXXX")
zookeeper=""
declare -A pid=()
cleanup() {
  if [[ -n ${pid[zk]:-} ]]; then kill -KILL "${pid[zk]}" 2>/dev/null || true; wait "${pid[zk]}" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
if command -v java >/dev/null && [[ -r /usr/share/java/zookeeper.jar ]]; then
  # shellcheck source=deploy/local-cluster.sh
  source deploy/local-cluster.sh  # start_zookeeper: a server on a free loopback port, data in $work/zk
  start_zookeeper
  zookeeper=10.0.2.2:$zk_port
  say "ZooKeeper for the VM on the host's 127.0.0.1:$zk_port (10.0.2.2:$zk_port inside)"
else
  say "no ZooKeeper here (deploy/install-deps.sh installs it): the cluster's verbs tests will skip"
fi
rootfs=$work/root
mkdir -p "$rootfs"/{usr/bin,usr/sbin,usr/lib,usr/lib64,proc,sys,dev,tmp,run,etc,extra}
ln -s usr/bin "$rootfs/bin"; ln -s usr/sbin "$rootfs/sbin"; ln -s usr/lib "$rootfs/lib"; ln -s usr/lib64 "$rootfs/lib64"
cp "$busybox_bin" "$rootfs/usr/bin/busybox"
for applet in $("$busybox_bin" --list-full); do
  mkdir -p "$rootfs/$(dirname "$applet")"
  [[ -e $rootfs/$applet || -L $rootfs/$applet ]] || ln -s /usr/bin/busybox "$rootfs/$applet"
done

# put FILE at its own absolute path inside the image (symlinks resolved)
place() {
  local dst=$rootfs$1
  [[ -e $dst && ! -L $dst ]] && return 0
  mkdir -p "$(dirname "$dst")"
  rm -f "$dst"
  cp -L "$1" "$dst"
}
# FILE plus every shared library it needs
place_with_libs() {
  place "$1"
  local lib
  while read -r lib; do [[ -n $lib ]] && place "$lib"; done < <(ldd "$1" 2>/dev/null |
    awk '/=> \//{print $3} /^[[:space:]]*\/[^ ]+ \(/{print $1}')
  if ldd "$1" 2>/dev/null | grep -q 'not found'; then die "unresolved libraries for $1"; fi
}

for t in "${tests[@]}"; do
  cp "$t" "$rootfs/extra/"
  place_with_libs "$t"
done
for h in $helpers; do
  [[ -x $bin_dir/$h ]] || die "helper $bin_dir/$h is not built"
  cp "$bin_dir/$h" "$rootfs/extra/"
  place_with_libs "$bin_dir/$h"
done
# The rdma tool and ip for setting up the link, libibverbs' provider plugins (loaded with
# dlopen, so ldd never sees them) and glibc's libgcc_s (dlopen'ed for thread cancellation).
for tool in rdma ip; do place_with_libs "$(command -v "$tool")"; done
rm -f "$rootfs/usr/bin/ip" "$rootfs/usr/sbin/ip"
ln -sf "$(command -v ip)" "$rootfs/usr/bin/ip"
for so in /usr/lib/x86_64-linux-gnu/libibverbs/*.so /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
  [[ -e $so ]] && place_with_libs "$so"
done
mkdir -p "$rootfs/etc/libibverbs.d"
cp /etc/libibverbs.d/*.driver "$rootfs/etc/libibverbs.d/"
echo "root:x:0:0:root:/root:/bin/sh" >"$rootfs/etc/passwd"
echo "root:x:0:" >"$rootfs/etc/group"
printf '127.0.0.1 localhost\n10.0.2.15 rxe-vm\n' >"$rootfs/etc/hosts"

# Kernel modules for virtio networking and Soft-RoCE with rdma_cm, in load order.
: >"$rootfs/etc/modules.order"
declare -A have=()
for m in crc32_generic virtio_pci virtio_net rdma_rxe rdma_ucm; do
  while read -r _ path _; do
    [[ -n ${have[$path]:-} ]] && continue
    have[$path]=1
    rel=${path#*/lib/modules/$kver/}
    dst=$rootfs/lib/modules/$kver/$rel
    mkdir -p "$(dirname "$dst")"
    case $path in
      *.ko.xz) xz -dc "$path" >"${dst%.xz}"; rel=${rel%.xz} ;;
      *.ko.zst) zstd -qdc "$path" >"${dst%.zst}"; rel=${rel%.zst} ;;
      *) cp "$path" "$dst" ;;
    esac
    echo "$rel" >>"$rootfs/etc/modules.order"
  done < <(modprobe -d "$kdir/x" -S "$kver" --show-depends "$m" 2>/dev/null | grep '^insmod ')
done
grep -q rdma_rxe "$rootfs/etc/modules.order" || die "rdma_rxe not found in $kpkg"

{
  echo "#!/bin/sh"
  echo "KVER=$kver"
  echo "SCALE=$scale"
  printf 'TESTS="%s"\n' "$(for t in "${tests[@]}"; do printf '%s ' "${t##*/}"; done)"
  printf 'ARGS=%q\n' "${RDMQ_RXE_ARGS:-}"
  printf 'EXTRA=%q\n' "${RDMQ_RXE_EXTRA:-}"
  printf 'ZOOKEEPER=%q\n' "$zookeeper"
  cat <<'EOF'
export PATH=/extra:/usr/bin:/usr/sbin HOME=/tmp
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /dev/pts; mount -t tmpfs tmpfs /dev/shm; mount -t tmpfs tmpfs /tmp
mount -t devpts devpts /dev/pts
up() { cut -d' ' -f1 /proc/uptime; }
echo "RXE: init at ${up}s"
while read -r m; do
  insmod /lib/modules/$KVER/$m 2>/tmp/insmod.err || grep -q 'File exists' /tmp/insmod.err || cat /tmp/insmod.err
done </etc/modules.order
ip link set lo up
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0
ulimit -l unlimited
if ! rdma link add rxe0 type rxe netdev eth0; then echo "RXE: rdma link add failed"; echo "RXE_RC=97"; poweroff -f; fi
i=0
while [ $i -lt 100 ] && ! grep -q ffff /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null; do sleep 0.05; i=$((i+1)); done
echo "RXE: rxe0 up at $(up)s, gid1 $(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)"
export RDMQ_VERBS_LISTEN=10.0.2.15:0 RDMQ_TEST_SCALE=$SCALE RDMQ_TEST_ZOOKEEPER=$ZOOKEEPER
cd /extra
failed=0
failing=
for t in $TESTS; do
  s=$(up)
  echo "RXE: ==== $t"
  { ./$t $ARGS; echo $? >/tmp/$t.rc; } 2>&1 | tee /tmp/$t.out
  rc=$(cat /tmp/$t.rc)
  echo "RXE: ==== $t exit $rc after $(echo "$s $(up)" | awk '{printf "%.1f", $2-$1}')s"
  [ $rc -eq 0 ] || { failed=$((failed+1)); failing="$failing $t"; }
done
# The failing binaries' assertions again, last, where a truncated CI log still shows them.
for t in $failing; do
  echo "RXE: ==== $t failed; its failing checks:"
  grep -v -E ' (INFO|WARN|DEBUG) ' /tmp/$t.out | grep -B14 -A10 -E 'FAILED|with message|Sanitizer|Segmentation|Aborted|terminate' | tail -120
done
if [ -n "$EXTRA" ]; then
  echo "RXE: ==== $EXTRA"
  sh -c "$EXTRA" || failed=$((failed+1))
fi
echo "RXE_RC=$failed"
poweroff -f
EOF
} >"$rootfs/init"
chmod +x "$rootfs/init"
(cd "$rootfs" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$work/initrd.gz"
say "initramfs $(du -h "$work/initrd.gz" | cut -f1) with kernel $kver"

# ---------------------------------------------------------------- boot
log=$work/console.log
boot() {  # boot ACCEL PROBE_SECONDS; 0 = the VM finished, 2 = it did not reach /init in time
  local acc=$1 probe=$2 cpu=max pid t0=$SECONDS
  [[ $acc == kvm ]] && cpu=host
  [[ $acc == tcg ]] && acc=tcg,thread=multi
  : >"$log"
  say "booting ($acc, $smp vCPUs, $mem)"
  qemu-system-x86_64 -accel "$acc" -cpu "$cpu" -smp "$smp" -m "$mem" -nographic -no-reboot -nodefaults \
    -serial stdio -kernel "$kernel" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init" \
    -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile= </dev/null >"$log" 2>&1 &
  pid=$!
  tail -n +1 -f "$log" --pid=$pid | tr -d '\r' >&2 &
  local tail_pid=$!
  local rc=0
  while kill -0 $pid 2>/dev/null; do
    if ((probe > 0 && SECONDS - t0 >= probe)) && ! grep -q 'RXE: init' "$log"; then
      kill $pid; rc=2; break
    fi
    if ((SECONDS - t0 >= vm_timeout)); then
      say "VM still running after ${vm_timeout}s; stopping it"
      kill $pid; rc=3; break
    fi
    sleep 0.2
  done
  wait $pid 2>/dev/null || true
  wait $tail_pid 2>/dev/null || true
  return $rc
}
case $accel in
  tcg | kvm) boot "$accel" 0 || true ;;
  auto)
    used=tcg
    if [[ -w /dev/kvm ]]; then
      boot kvm 20 || true
      grep -q 'RXE: init' "$log" && used=kvm
    fi
    if [[ $used != kvm ]]; then
      say "KVM unusable here; using TCG"
      boot tcg 0 || true
    fi ;;
  *) die "RDMQ_RXE_ACCEL must be tcg, kvm or auto" ;;
esac

rc=$(tr -d '\r' <"$log" | sed -n 's/^RXE_RC=\([0-9]*\).*/\1/p' | tail -1)
if [[ -z $rc ]]; then
  say "the VM reported no result (crash or timeout); console log above"
  exit 1
fi
tr -d '\r' <"$log" | grep -a '^RXE: ==== .* exit ' >&2 || true
say "done: $rc failing test binaries"
((rc == 0))
