#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of rdmq from Debian packages.
# Idempotent: packages already present are skipped; safe to rerun.
#
# Usage: deploy/install-deps.sh [--with-peers]
#   --with-peers   also install the peer brokers used by bench/peers (Redis, NATS)
set -euo pipefail

with_peers=0
for arg in "$@"; do
  case "$arg" in
    --with-peers) with_peers=1 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

pkgs=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config git
  # clang for libFuzzer targets (runtime in libclang-rt-14-dev) and the -Wthread-safety build
  clang libclang-rt-14-dev
  # the lint stage: formatting and static checks (.clang-format, .clang-tidy)
  clang-format clang-tidy
  # RDMA: rdma-core, verbs and rdma_cm development files, providers (rxe), tools
  rdma-core libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils rdmacm-utils perftest
  # persistent memory and checksums
  libpmem-dev libisal-dev
  # record-batch compression codecs (compression/): gzip, snappy, lz4, zstd
  zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev
  # Boost.Asio (headers) for the fabric
  libboost-dev
  nlohmann-json3-dev catch2
  # Soft-RoCE VM for the verbs tests (tests/verbs/softroce-vm.sh)
  qemu-system-x86 busybox-static cpio kmod iproute2 xz-utils zstd
  # plots
  gnuplot-nox
  # rdmq-bench's peer backends link the Redis and NATS C clients (the servers come with --with-peers)
  libhiredis-dev libnats-dev
  # Kafka clients that judge the Kafka listener (tests/kafka_e2e) and drive rdmq-bench --system kafka
  kcat librdkafka-dev python3-confluent-kafka python3-kafka
  # Metrics: promtool checks the /metrics text; tests start a real prometheus server that scrapes it
  prometheus
  # Packaging (tests/deploy): dpkg-shlibdeps for the .deb's Depends, systemd-analyze for the unit
  dpkg-dev systemd
  # TLS (the Kafka listener; OpenSSL through Boost.Asio) and the tests' throwaway CA
  libssl-dev openssl
  # A cluster's metadata and elections: ZooKeeper's C client, and the server the tests and
  # deploy/run-cluster.sh start (Java)
  libzookeeper-mt-dev zookeeper
)
if [[ $with_peers == 1 ]]; then
  pkgs+=(redis-server redis-tools libhiredis-dev nats-server libnats-dev)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The peer brokers must not keep running as system services after install; bench/peers starts
# its own instances on 127.0.0.1 only.
if [[ $with_peers == 1 ]] && command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
  $sudo systemctl disable --now redis-server nats-server >/dev/null 2>&1 || true
fi
echo "install-deps: done"
