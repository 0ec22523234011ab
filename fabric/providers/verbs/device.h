// The verbs provider's fabric state (docs/fabric.md, "verbs"): the device context and protection
// domain, the bootstrap listener (TCP, served by the agent) and the rdma_cm listener on the same
// IP, connect requests waiting for their Accept, and the registry of local regions.
//
// Files: device.cc (opening the device and the listeners), memory.cc (memory registration and
// the region registry). Threading: thread-safe after Init.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <string>
#include <utility>

#include "fabric/fabric_core.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "resources.h"

namespace rdmq::fabric::internal {

class VerbsRegion;

class VerbsCore : public FabricCore {
 public:
  VerbsCore() : FabricCore(Provider::kVerbs, "rdmq-verbs") {}
  ~VerbsCore();
  // Opens the device (FabricOptions.device or the first with an active port) and, with
  // `listen`, the bootstrap and rdma_cm listeners. kNoDevice naming what it looked for.
  Status Init(const FabricOptions& o);

  // Registers [addr, addr+len) with `access`; falls back to on-demand paging; says which
  // backing to use when nothing works (kRegistration). `window`: the MR a memory window is
  // bound to (always needs MW_BIND). Other MRs get MW_BIND only when writable: the kernel pins
  // MW_BIND memory for writing, which a read-only mapping (a sealed log segment) refuses.
  Result<MrPtr> RegisterMr(void* addr, size_t len, uint32_t access, int fd, bool window = false);

  // Local-buffer registry for work requests that name no region.
  void AddRegion(VerbsRegion* r, std::byte* addr, size_t len);
  void RemoveRegion(std::byte* addr);
  // The region holding [p, p+len), or nullptr.
  VerbsRegion* FindRegion(const void* p, size_t len);

  DeviceListPtr devices;
  ibv_context* ctx = nullptr;
  std::string device_name;
  uint8_t port = 1;
  PdPtr pd;
  ibv_device_attr attr{};
  bool has_mw = false;  // type-2 memory windows (grants)
  std::string ip;       // the IPv4 address this fabric listens on (or the device's)
  CmChannelPtr listen_channel;
  CmIdPtr listen_id;
  uint16_t cm_port = 0;

  // Connect requests read by one Accept but meant for another: token -> id. Accept holds cm_mu
  // while it reads the listener's events.
  Mutex cm_mu;
  std::map<uint64_t, rdma_cm_id*> stashed_requests GUARDED_BY(cm_mu);

 private:
  // Picks the device and port, allocates the protection domain.
  Status OpenDevice(const std::string& wanted_device);
  // The rdma_cm listener on `ip`, any port.
  Status ListenCm();
  // The first IPv4-mapped GID of the port (RoCE v2), as dotted quad; "" if none.
  std::string DeviceIpv4() const;

  std::shared_mutex regions_mu_;
  std::map<std::byte*, std::pair<VerbsRegion*, size_t>> regions_;  // guarded by regions_mu_
};

}  // namespace rdmq::fabric::internal
