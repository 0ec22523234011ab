#!/usr/bin/env bash
# Sets up Soft-RoCE (rdma_rxe) on this host so that rdmq's verbs provider and its [verbs] tests
# run directly, without the VM of tests/verbs/softroce-vm.sh. Needs root and a kernel that has
# the rdma_rxe module (Debian's does; many container and cloud kernels do not).
#
#   deploy/softroce.sh [NETDEV]        create rxe0 on NETDEV (default: the default route's device)
#   deploy/softroce.sh --remove        delete rxe0
#   deploy/softroce.sh --status        show RDMA links and devices
#
# Afterwards: `ibv_devices` lists rxe0, and the verbs tests run with
#   RDMQ_VERBS_LISTEN=<NETDEV's IPv4>:0 ctest --preset release -L verbs
# (rdma_cm needs the netdev's address; 127.0.0.1 does not work with rxe).
set -euo pipefail

name=rxe0
case ${1:-} in
  --status)
    rdma link show || true
    ibv_devices || true
    exit 0 ;;
  --remove)
    rdma link delete "$name"
    echo "softroce: removed $name"
    exit 0 ;;
  -h|--help)
    sed -n '2,15p' "$0"; exit 0 ;;
esac

[[ $(id -u) == 0 ]] || { echo "softroce: run as root (modprobe and rdma link need it)" >&2; exit 1; }
for tool in rdma modprobe ip; do
  command -v "$tool" >/dev/null || { echo "softroce: $tool is missing (apt-get install iproute2 kmod rdma-core)" >&2; exit 1; }
done

netdev=${1:-$(ip -o route show default | awk '{for (i = 1; i < NF; ++i) if ($i == "dev") {print $(i + 1); exit}}')}
[[ -n $netdev ]] || { echo "softroce: no NETDEV given and no default route" >&2; exit 1; }
ip link show "$netdev" >/dev/null || { echo "softroce: no network device $netdev" >&2; exit 1; }

if ! modprobe rdma_rxe 2>/dev/null; then
  echo "softroce: this kernel ($(uname -r)) has no rdma_rxe module; use tests/verbs/softroce-vm.sh," \
       "which boots Debian's kernel in qemu, or a real RDMA NIC" >&2
  exit 1
fi
modprobe rdma_ucm 2>/dev/null || true

if rdma link show "$name/1" >/dev/null 2>&1; then
  echo "softroce: $name already exists"
else
  rdma link add "$name" type rxe netdev "$netdev"
  echo "softroce: created $name on $netdev"
fi
ip4=$(ip -o -4 addr show dev "$netdev" | awk '{print $4}' | cut -d/ -f1 | head -1)
rdma link show "$name/1"
if [[ $(ulimit -l) != unlimited ]]; then
  echo "softroce: note: the locked-memory limit is $(ulimit -l) KiB; RDMA registration needs more" \
       "(ulimit -l unlimited, or memlock in /etc/security/limits.conf)"
fi
echo "softroce: run the verbs tests with RDMQ_VERBS_LISTEN=${ip4:-<ip of $netdev>}:0 ctest --preset release -L verbs"
