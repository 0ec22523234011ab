#!/usr/bin/env bash
# The .deb that CPack builds, installed and used without touching this machine: CPack builds it
# from BUILD_DIR; its control data must name the shared libraries it needs. Then, in a private
# mount namespace and a fresh network namespace (only its own loopback), an overlay of this
# machine's root file system is the root of a chroot in which the test
#   1. checks that nothing of rdmq is installed, installs the package with dpkg -i;
#   2. checks the rdmq system user, `rdmq-broker --help`, and the systemd unit with
#      `systemd-analyze verify` (systemd is not running here, so the unit is verified, not started);
#   3. starts rdmq-broker as the unit would (user rdmq, /etc/rdmq/broker.json), waits for /readyz;
#   4. builds tests/deploy/find_package against the installed files (find_package(rdmq)) and runs
#      it: a topic, 500 records produced and read back; then rdmq-produce and rdmq-consume;
#   5. stops the broker with SIGTERM and checks its exit status.
# Everything written lands in the overlay's upper directory, which is deleted afterwards.
#
#   tests/deploy/package_test.sh BUILD_DIR SOURCE_DIR
# Exit 77 (skipped) when not root or when namespaces or overlayfs are not available.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
skip() { echo "SKIPPED: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root (mount and network namespaces, chroot)"
for tool in cpack dpkg-deb unshare chroot setpriv; do
  command -v "$tool" >/dev/null || { echo "package_test: $tool is missing (deploy/install-deps.sh installs it)"; exit 1; }
done

work=$(mktemp -d -t rdmq-package-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "== cpack"
(cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/pkg/rdmq_*.deb)
echo "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg-deb -f "$deb" Package Version Architecture Depends
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libibverbs1 librdmacm1 libpmem1 libisal2 libstdc++6 passwd; do
  [[ $depends == *"$lib"* ]] || { echo "FAIL: Depends does not name $lib"; exit 1; }
done
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/rdmq-broker ./usr/bin/rdmq ./usr/bin/rdmq-produce ./usr/bin/rdmq-consume \
  ./lib/systemd/system/rdmq-broker.service ./etc/rdmq/broker.json ./usr/include/rdmq/producer/producer.h \
  ./usr/lib/cmake/rdmq/rdmqConfig.cmake ./usr/lib/librdmq_producer.a; do
  grep -q " $f\$" <<<"$contents" || { echo "FAIL: the package lacks $f"; exit 1; }
done

mkdir -p "$work/upper" "$work/wd" "$work/root"
cp "$deb" "$work/rdmq.deb"
unshare --mount --net bash -euo pipefail -s "$work" "$src" <<'NS' || exit $?
work=$1 src=$2
mount --make-rprivate /
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/wd" "$work/root" ||
  { echo "SKIPPED: overlayfs over / is not available here"; exit 77; }
root=$work/root
for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done
mount -t tmpfs tmpfs "$root/tmp"
mkdir -p "$root/tmp/src"
cp -r "$src/tests/deploy/find_package" "$root/tmp/src/"
cp "$work/rdmq.deb" "$root/tmp/"
ip link set lo up
chroot "$root" /bin/bash -euo pipefail <<'CHROOT'
say() { echo "== $*"; }
say "nothing of rdmq installed yet"
if command -v rdmq-broker; then echo "FAIL: rdmq-broker is installed before the package"; exit 1; fi
say "dpkg -i"
dpkg -i /tmp/rdmq.deb
dpkg -s rdmq >/tmp/status.txt
grep -q '^Status: install ok installed' /tmp/status.txt
getent passwd rdmq
rdmq-broker --help >/tmp/help.txt
grep -q listen.http /tmp/help.txt
say "systemd-analyze verify"
systemd-analyze verify /lib/systemd/system/rdmq-broker.service
say "rdmq-broker as the unit starts it"
install -d -o rdmq -g rdmq -m 0750 /var/lib/rdmq
setpriv --reuid rdmq --regid rdmq --init-groups rdmq-broker --config /etc/rdmq/broker.json >/tmp/broker.log 2>&1 &
pid=$!
ready=""
for _ in $(seq 200); do
  ready=$(python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9194/readyz", timeout=2).read().decode().strip())' 2>/dev/null || true)
  [[ $ready == ready ]] && break
  kill -0 "$pid" || { cat /tmp/broker.log; exit 1; }
  sleep 0.1
done
[[ $ready == ready ]] || { echo "FAIL: /readyz never said ready"; cat /tmp/broker.log; exit 1; }
export RDMQ_BROKER=unix:/var/lib/rdmq/rdmq.sock
say "a project built with find_package(rdmq)"
cmake -S /tmp/src/find_package -B /tmp/fp -DCMAKE_BUILD_TYPE=Release >/tmp/fp.log 2>&1 || { cat /tmp/fp.log; exit 1; }
cmake --build /tmp/fp -j 2 >>/tmp/fp.log 2>&1 || { tail -50 /tmp/fp.log; exit 1; }
/tmp/fp/roundtrip "$RDMQ_BROKER" fp 500
say "rdmq-produce | rdmq-consume"
rdmq topic create lines --partitions 1
seq 1 100 | rdmq-produce lines
got=$(rdmq-consume -e lines | wc -l)
[[ $got == 100 ]] || { echo "FAIL: rdmq-consume read $got lines, not 100"; exit 1; }
say "SIGTERM"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[[ $status == 0 ]] || { echo "FAIL: rdmq-broker exited $status"; tail -20 /tmp/broker.log; exit 1; }
echo "package test: ok"
CHROOT
NS
